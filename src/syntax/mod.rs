//! Syntax: text → [`ast::File`] + diagnostics (E0001–E0003). The only user of pest.
//!
//! Parsing never fails: malformed regions become diagnostics and the parser recovers at the
//! next item or block, so one run reports every syntax error of a file.

pub mod ast;
pub mod schema;
