//! venus-syntax: `.venus` source text → AST, with the key table of every block.
//!
//! Input: the bytes of one file. Output: [`syntax`], the AST, its comments and token roles, the
//! syntax diagnostics (E0001–E0003), the key table (`syntax::schema`: every key once) and the
//! flags of Megatron-LM's arguments.py (`syntax::megatron_flags`).
//! Invariants: pest is used here and nowhere else, and no pest type leaves this crate; parsing
//! never fails as a `Result`, it recovers and reports.

pub mod syntax;
