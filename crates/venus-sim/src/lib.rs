//! venus-sim: per-rank trace DAGs and the discrete-event engine that runs them.
//!
//! Input: a [`trace::Trace`] (built by lowering, or synthetic) and an [`engine::Network`].
//! Output: [`trace`] (the DAG, its builders and checks) and [`engine`] (the simulation →
//! timeline).
//! Invariants: depends on `venus-base` only, so the engine never sees a span, a source name or a
//! diagnostic; same input, same output (no hash-map order, no wall clock).

pub mod engine;
pub mod trace;
