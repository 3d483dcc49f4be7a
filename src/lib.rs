//! venusc: compile and simulate Megatron-LM-style training runs described in `.venus` files.
//!
//! The pipeline, one module per stage, data flowing one way:
//! `syntax` (text → AST) → `resolve` (names, `use`, stdlib, inheritance) → `ty` (units, typed
//! definitions) → `plan` (validated scenario, rank layout, memory) → `schedule` (per-rank op
//! order). `diag` holds diagnostics as data; `db` ties the stages into salsa queries; `cli`
//! is the only place that does I/O. See `ARCHITECTURE.md`.

pub mod base;
pub mod cost;
pub mod db;
pub mod diag;
pub mod emit;
pub mod engine;
pub mod fmt;
pub mod ide;
pub mod lsp;
pub mod plan;
pub mod report;
pub mod resolve;
pub mod schedule;
pub mod session;
pub mod simulate;
pub mod sweep;
pub mod syntax;
pub mod trace;
pub mod ty;
pub mod validate;
pub use session::Session;
