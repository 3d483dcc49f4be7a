//! Discrete-event engine.
