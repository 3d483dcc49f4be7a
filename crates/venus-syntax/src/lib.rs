//! venus-syntax: `.venus` source text → AST, with the schema of every block.
//!
//! Input: the bytes of one file. Output: [`syntax`], the AST, its comments and token roles, and
//! the syntax diagnostics (E01xx).
//! Invariants: pest is used here and nowhere else, and no pest type leaves this crate; parsing
//! never fails as a `Result`, it recovers and reports.

pub mod syntax;
