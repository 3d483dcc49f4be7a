//! venusc: compile and simulate Megatron-LM-style training runs described in `.venus` files.
//!
//! The pipeline, one module per stage, data flowing one way (ARCHITECTURE.md has the map, the
//! module graph the tidy test holds, and each stage's input and output):
//! `syntax` (text → AST) → `resolve` (names, `use`, stdlib, inheritance) → `ty` (units, typed
//! definitions) → `plan` (validated scenario, rank layout, memory) → `schedule` (per-rank op
//! order) → `trace::lower` with `cost` (scenario → per-rank trace DAG and network) → `engine`
//! (discrete-event simulation → timeline) → `report` (metrics, text, JSON, Perfetto).
//!
//! Below every stage: `base` (unit newtypes, shared plain enums, integer helpers) and `diag`
//! (diagnostics as data, rendered only at the edge). Facades: `db` ties the front end into
//! salsa queries, `session` loads and checks a program, `simulate` runs a scenario end to end.
//! Applications on top: `emit` (VenusSim and Astra-Sim files, import, trace reader), `sweep`
//! (candidate plans, ranked), `published` (`venusc validate`: predictions against published runs), `fmt` (the
//! canonical layout) and `lsp` (the language server).
//!
//! I/O: only the binary's `cli` and `lsp`'s stdio loop read files or print; everything here
//! takes bytes and returns data.

pub mod base;
pub mod cost;
pub mod db;
pub mod diag;
pub mod emit;
pub mod engine;
pub mod fmt;
pub mod ide;
pub mod lower;
pub mod lsp;
pub mod plan;
pub mod published;
pub mod report;
pub mod resolve;
pub mod schedule;
pub mod session;
pub mod simulate;
pub mod sweep;
pub mod syntax;
pub mod trace;
pub mod ty;
pub use session::Session;
