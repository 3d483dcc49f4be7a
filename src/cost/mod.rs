//! Cost model: what each scheduled compute op costs, and the sizes of the messages around it.
//!
//! Input: a validated [`crate::plan::Scenario`]. Output: durations ([`crate::ty::Seconds`]) and
//! byte counts. [`venussim`] reproduces VenusSim's FLOPs and message sizes exactly.
//! Invariant: pure functions of the scenario; no I/O, no panics on user numbers.

pub mod venussim;
