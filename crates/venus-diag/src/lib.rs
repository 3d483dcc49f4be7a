//! venus-diag: diagnostics as plain data, beside `base` so the simulator cannot see a span.
//!
//! Input: spans, codes and messages from every stage. Output: [`diag`], the [`diag::Diagnostic`]
//! values, the stable code table with its explanations, and their rendering (human, JSON,
//! GitHub), called only at the edge.
//! Invariants: a diagnostic has exactly one primary label; nothing here prints or reads files.

pub mod diag;
