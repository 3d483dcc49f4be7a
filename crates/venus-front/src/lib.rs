//! venus-front: the front end, source files → typed definitions → validated scenarios.
//!
//! Input: source text (user files and the embedded stdlib). Output: [`resolve`] (names, `use`,
//! inheritance), [`ty`] (units and typed definitions), [`db`] (the salsa queries that tie them
//! together), [`session`] (a loaded and checked program) and [`validate`] (Megatron-LM's plan
//! rules: typed scenario → [`venus_plan::plan::Scenario`] and diagnostics, with the repairs).
//! Invariants: no file I/O (files come through a reader the caller of [`session`] supplies);
//! problems are diagnostics, never a `Result`; no arithmetic on user numbers can overflow or
//! panic.

pub mod db;
pub mod resolve;
pub mod session;
pub mod ty;
pub mod validate;

/// Scenario builders for unit tests (here and in the crates above, through the `testutil`
/// feature): typed definitions without parsing a file.
#[cfg(any(test, feature = "testutil"))]
#[doc(hidden)]
pub mod testutil;

pub use session::Session;
pub use validate::{
    provenance, resolved_schedule, validate, validate_in, validate_partial, validate_partial_in,
    MAX_WORLD,
};
