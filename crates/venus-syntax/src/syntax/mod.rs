//! Syntax: text → [`ast::File`] + diagnostics (E0001–E0003). The only user of pest.
//!
//! Two steps: [`lex`] turns the text into flat tokens with pest (grammar in
//! `grammar/venus.pest`, no recursive rule), then [`parse`] builds blocks, items and values by
//! hand, with the key table for arity and an explicit nesting limit, recording the [`role`] of
//! every token on the way.
//!
//! Every problem is a typed value ([`problem::LexProblem`], [`problem::ParseProblem`]) that
//! becomes a diagnostic here, through its one rendering function in [`problem`].
//!
//! Invariants: parsing never fails and never panics: malformed regions become diagnostics and
//! the builder recovers at the next item or top-level definition, so one run reports every
//! syntax error of a file, each once. Time and memory are linear in the input. Every
//! `Quantity` unit in the tree is one of [`UNITS`] or [`COUNT_SUFFIXES`] unless an E0003 was
//! reported for it.

pub mod ast;
mod lex;
pub mod megatron_flags;
mod parse;
pub mod problem;
pub mod role;
pub mod schema;

#[cfg(test)]
mod tests;

use problem::LexProblem;
use venus_diag::diag::{Diagnostic, FileId, Span};

pub use lex::{suggest_unit, tokens, Token, TokenKind};
pub use parse::MAX_DEPTH;

/// Every unit spelling of the language (the spec's unit table). Case matters: `Gb/s` is bits.
pub const UNITS: &[&str] = &[
    "B", "KB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB", // bytes
    "B/s", "KB/s", "MB/s", "GB/s", "TB/s", // bandwidth in bytes
    "b/s", "Kb/s", "Mb/s", "Gb/s", "Tb/s", // bandwidth in bits
    "ns", "us", "ms", "s", "min", "h", // time (minutes and hours: MTBFs, restarts)
    "FLOP/s", "GFLOP/s", "TFLOP/s", "PFLOP/s", // compute rate
    "%",       // ratio
];

/// The suffixes a large count may carry, joined to it (`tokens 15T`): thousand, million,
/// billion, trillion. Not units: a spaced `15 T` stays a number and a name, and only a count
/// typed as such accepts them (`ty` reports one anywhere else).
pub const COUNT_SUFFIXES: &[&str] = &["K", "M", "B", "T"];

/// The result of parsing one file: always a tree, plus the syntax errors found on the way.
#[derive(Clone, Debug, PartialEq)]
pub struct Parsed {
    pub file: ast::File,
    /// Where the parser put every token (block kind, item, slot): what the formatter and the
    /// IDE read instead of re-deriving the grouping.
    pub roles: role::Roles,
    /// E0001–E0003, in source order.
    pub diagnostics: Vec<Diagnostic>,
}

/// Parses one file. Never panics, never fails.
pub fn parse(text: &str, file: FileId) -> Parsed {
    let lexed = lex::lex(text);
    let (tree, roles, structural) = parse::build(text, &lexed.tokens);
    let mut diagnostics: Vec<Diagnostic> = lexed
        .problems
        .into_iter()
        .map(|p| p.diagnostic(file))
        .collect();
    diagnostics.extend(structural.into_iter().map(|p| p.diagnostic(file)));
    // Stable: a lexical and a structural diagnostic at the same place keep that order.
    diagnostics.sort_by_key(|d| d.primary.loc.span.start);
    Parsed {
        file: tree,
        roles,
        diagnostics,
    }
}

/// How many runs of invalid UTF-8 make a file "clearly binary" (with [`BINARY_SHARE`]).
const BINARY_RUNS: usize = 16;
/// The share of invalid bytes (in percent) that, with [`BINARY_RUNS`] runs, makes a file
/// binary: a Latin-1 comment has a few bad bytes, an image or an archive has many.
const BINARY_SHARE: usize = 5;

/// Where a file stops being text: its first NUL byte, or its first invalid UTF-8 byte when
/// invalid bytes are many ([`BINARY_RUNS`] runs and [`BINARY_SHARE`]% of the file).
fn binary_start(bytes: &[u8]) -> Option<usize> {
    let nul = bytes.iter().position(|&b| b == 0);
    let mut runs = 0usize;
    let mut bad = 0usize;
    let mut first_bad = None;
    let mut rest = bytes;
    let mut offset = 0;
    while let Err(e) = std::str::from_utf8(rest) {
        let valid = e.valid_up_to();
        let len = e.error_len().unwrap_or(rest.len() - valid);
        first_bad.get_or_insert(offset + valid);
        runs += 1;
        bad += len;
        offset += valid + len;
        rest = rest.get(valid + len..).unwrap_or_default();
    }
    let many = runs >= BINARY_RUNS && bad.saturating_mul(100) >= bytes.len() * BINARY_SHARE;
    match (nul, first_bad.filter(|_| many)) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Decodes a file's bytes. Each maximal run of bytes that is not UTF-8 gets one E0001 and
/// every such byte becomes a space, so byte offsets (and spans) match the original file.
/// A binary file (see [`binary_start`]) is one E0001 "not a text file" at the byte where it
/// stops being text, and everything from there on becomes spaces: reporting every stray byte
/// of an image would be thousands of errors saying the same thing.
pub fn decode(bytes: &[u8], file: FileId) -> (String, Vec<Diagnostic>) {
    if let Some(at) = binary_start(bytes) {
        let prefix = bytes.get(..at).unwrap_or_default();
        let (mut text, mut diagnostics) = decode_text(prefix, file);
        text.extend(std::iter::repeat_n(' ', bytes.len() - at));
        let nul = bytes.get(at) == Some(&0);
        diagnostics.push(LexProblem::NotText { at, nul }.diagnostic(file));
        return (text, diagnostics);
    }
    decode_text(bytes, file)
}

fn decode_text(bytes: &[u8], file: FileId) -> (String, Vec<Diagnostic>) {
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
            LexProblem::InvalidUtf8 {
                span: Span::new(start, end),
                shown: bytes[start..end].iter().take(8).copied().collect(),
                len: end - start,
            }
            .diagnostic(file)
        })
        .collect();
    (text, diagnostics)
}
