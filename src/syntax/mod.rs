//! Syntax: text → [`ast::File`] + diagnostics (E0001–E0003). The only user of pest.
//!
//! Two steps: [`lex`] turns the text into flat tokens with pest (grammar in
//! `grammar/venus.pest`, no recursive rule), then [`parse`] builds blocks, items and values by
//! hand, with the key table for arity and an explicit nesting limit.
//!
//! Invariants: parsing never fails and never panics: malformed regions become diagnostics and
//! the builder recovers at the next item or top-level definition, so one run reports every
//! syntax error of a file, each once. Time and memory are linear in the input. Every
//! `Quantity` unit in the tree is one of [`UNITS`] unless an E0003 was reported for it.

pub mod ast;
mod lex;
mod parse;
pub mod schema;

#[cfg(test)]
mod tests;

use crate::diag::{Code, Diagnostic, FileId, Loc, Span};

pub use lex::{suggest_unit, tokens, Token, TokenKind};
pub use parse::MAX_DEPTH;

/// Every unit spelling of the language (the spec's unit table). Case matters: `Gb/s` is bits.
pub const UNITS: &[&str] = &[
    "B", "KB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB", // bytes
    "B/s", "KB/s", "MB/s", "GB/s", "TB/s", // bandwidth in bytes
    "b/s", "Kb/s", "Mb/s", "Gb/s", "Tb/s", // bandwidth in bits
    "ns", "us", "ms", "s", // time
    "FLOP/s", "GFLOP/s", "TFLOP/s", "PFLOP/s", // compute rate
    "%",       // ratio
];

/// The result of parsing one file: always a tree, plus the syntax errors found on the way.
#[derive(Clone, Debug, PartialEq)]
pub struct Parsed {
    pub file: ast::File,
    /// E0001–E0003, in source order.
    pub diagnostics: Vec<Diagnostic>,
}

/// Parses one file. Never panics, never fails.
pub fn parse(text: &str, file: FileId) -> Parsed {
    let lexed = lex::lex(text, file);
    let (tree, structural) = parse::build(text, file, &lexed.tokens);
    let mut diagnostics = lexed.diagnostics;
    diagnostics.extend(structural);
    // Stable: a lexical and a structural diagnostic at the same place keep that order.
    diagnostics.sort_by_key(|d| d.primary.loc.span.start);
    Parsed {
        file: tree,
        diagnostics,
    }
}

/// Decodes a file's bytes. Each maximal run of bytes that is not UTF-8 gets one E0001 and
/// every such byte becomes a space, so byte offsets (and spans) match the original file.
pub fn decode(bytes: &[u8], file: FileId) -> (String, Vec<Diagnostic>) {
    let mut text = String::with_capacity(bytes.len());
    let mut bad_runs: Vec<(usize, usize)> = Vec::new();
    let mut rest = bytes;
    let mut offset = 0;
    loop {
        match std::str::from_utf8(rest) {
            Ok(valid) => {
                text.push_str(valid);
                break;
            }
            Err(e) => {
                let valid = e.valid_up_to();
                text.push_str(std::str::from_utf8(&rest[..valid]).unwrap_or_default());
                let bad = e.error_len().unwrap_or(rest.len() - valid);
                let start = offset + valid;
                match bad_runs.last_mut() {
                    Some(run) if run.1 == start => run.1 = start + bad,
                    _ => bad_runs.push((start, start + bad)),
                }
                text.extend(std::iter::repeat_n(' ', bad));
                rest = &rest[valid + bad..];
                offset = start + bad;
            }
        }
    }
    let diagnostics = bad_runs
        .into_iter()
        .map(|(start, end)| {
            let shown: Vec<String> = bytes[start..end]
                .iter()
                .take(8)
                .map(|b| format!("{b:02x}"))
                .collect();
            let more = if end - start > 8 { " …" } else { "" };
            let (noun, verb) = if end - start == 1 {
                ("byte", "is")
            } else {
                ("bytes", "are")
            };
            let label = format!("{noun} `{}{more}` {verb} not UTF-8", shown.join(" "));
            Diagnostic::new(
                Code::E0001,
                "invalid UTF-8 in source",
                Loc::new(file, Span::new(start, end)),
                label,
            )
            .with_help("save the file as UTF-8")
        })
        .collect();
    (text, diagnostics)
}
