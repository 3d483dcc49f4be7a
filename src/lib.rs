//! venusc: compile and simulate Megatron-LM-style training runs described in `.venus` files.
//!
//! The pipeline, one module per stage, data flowing one way (ARCHITECTURE.md has the map, the
//! module graph the tidy test holds, and each stage's input and output):
//! `syntax` (text → AST) → `resolve` (names, `use`, stdlib, inheritance) → `ty` (units, typed
//! definitions) → `plan` (the rules of `validate`: typed scenario → plain-data scenario, rank
//! layout, memory) → `schedule` (per-rank op order) → `lower` with `cost` (scenario → per-rank
//! trace DAG and network) → `engine` (discrete-event simulation → timeline) → `report`
//! (metrics, text, JSON, HTML, Perfetto).
//!
//! Below every stage: `base` (unit newtypes, shared plain enums, integer helpers, the seeded
//! generator) and `diag` (diagnostics as data, rendered only at the edge). Facades: `db` ties
//! the front end into salsa queries, `session` loads and checks a program, `simulate` runs a
//! scenario end to end, `api` holds the steps the CLI and the Python binding share.
//! Applications on top: `emit` (VenusSim and Astra-Sim files, Megatron-LM launch scripts in and
//! out, import, trace reader), `sweep` (candidate plans, ranked), `published` (`venusc
//! validate`: predictions against published runs), `calibrate` (fits from measurements), `fmt`
//! (the canonical layout), `ide` (editor answers as plain data) and `lsp` (the language
//! server); `files` is the one reader and writer of files.
//!
//! The stages live in the workspace's crates (`crates/venus-*`, one per row of ARCHITECTURE.md's
//! module graph, so the compiler holds the graph); this crate re-exports each under its module
//! name (`venusc::engine` is `venus_sim::engine`) and holds the applications.
//!
//! I/O: only the binary's `cli`, `lsp`'s stdio loop and `files` read or write files or print;
//! everything else here takes bytes and returns data.

pub use venus_base::base;
pub use venus_diag::diag;
pub use venus_front::{db, resolve, session, ty};
pub use venus_ide::{fmt, ide};
pub use venus_lower::{cost, lower};
pub use venus_out::{emit, report, simulate};
pub use venus_plan::schedule;
pub use venus_sim::{engine, trace};
pub use venus_syntax::syntax;

/// The plan: `venus_plan::plan` (plain data) with the rules of `venus_front::validate` that
/// build it from a typed scenario, under the one name they had before the split.
pub mod plan {
    pub use venus_front::validate::{
        model_spec, provenance, resolved_schedule, validate, validate_partial, MAX_WORLD,
    };
    pub use venus_plan::plan::*;
}

pub mod api;
pub mod calibrate;
pub mod files;
pub mod lsp;
pub mod published;
pub mod sweep;

pub use venus_front::Session;
