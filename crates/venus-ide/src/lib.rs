//! venus-ide: the canonical layout and the editor features, as plain data.
//!
//! Input: a parsed file or a checked program (`venus-front`). Output: [`fmt`] (the canonical
//! text of a file) and [`ide`] (hover, completion, definitions, symbols, formatting edits and
//! quick fixes, on the parser's token roles), each as plain values the language server
//! converts.
//! Invariants: no lsp-types here (only `lsp/` in the root package converts); formatting never
//! changes what a file means.

pub mod fmt;
pub mod ide;
