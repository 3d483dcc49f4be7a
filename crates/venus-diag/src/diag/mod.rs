//! Diagnostics as plain data.
//!
//! Every stage reports problems as [`Diagnostic`] values; nothing below the CLI renders or
//! prints them. Rendering (human, JSON, GitHub) lives in [`render`] and is called at the edge.
//! Invariants: a diagnostic has exactly one primary label; codes are stable once released
//! (see `DIAGNOSTICS.md` in the spec); `help` is computed from the input, never generic.

use std::fmt;

pub mod code;
pub mod level;
pub mod render;

pub use code::Code;
pub use level::Levels;

/// Index of a source file in the driver's file table (user files and stdlib alike).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct FileId(pub u32);

/// A byte range in one source file. `u32` keeps spans small; files over 4 GiB are rejected
/// before parsing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Span {
        Span {
            start: start as u32,
            end: end as u32,
        }
    }
    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
    pub fn is_empty(self) -> bool {
        self.start >= self.end
    }
}

/// A span in a specific file: what a label points at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Loc {
    pub file: FileId,
    pub span: Span,
}

impl Loc {
    pub fn new(file: FileId, span: Span) -> Loc {
        Loc { file, span }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Severity {
    Error,
    Warning,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        })
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Label {
    pub loc: Loc,
    pub message: String,
}

impl Label {
    pub fn new(loc: Loc, message: impl Into<String>) -> Label {
        Label {
            loc,
            message: message.into(),
        }
    }
}

/// A machine-applicable fix: replace the text at `loc` with `replacement`. Set only where the
/// `help` names exactly one mechanical edit (an editor offers it as a quick fix).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Fix {
    pub loc: Loc,
    pub replacement: String,
}

/// One problem found in the input.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Diagnostic {
    pub code: Code,
    pub severity: Severity,
    /// One line, lowercase, no trailing period, names in backticks.
    pub message: String,
    /// Where the problem is.
    pub primary: Label,
    /// Where the other factors were declared.
    pub secondary: Vec<Label>,
    /// One computed, actionable fix.
    pub help: Option<String>,
    /// Extra facts (e.g. a memory breakdown).
    pub notes: Vec<String>,
    /// The edit that `help` describes, when it is mechanical.
    pub fix: Option<Fix>,
    /// The typed problem this diagnostic renders, when a stage built it from one: what tells
    /// two diagnostics of one code at one place apart (see [`Identity`]).
    pub identity: Option<Identity>,
}

/// The fingerprint of a typed problem value (its variant and every field, through its `Debug`
/// form, hashed with FNV-1a: stable across runs and platforms). Two diagnostics of one code at
/// one place with the same identity are one problem reported twice (an item inherited by two
/// definitions is checked twice); deduplication compares this, never the rendered message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Identity(u64);

impl Identity {
    /// The identity of `problem`.
    pub fn of(problem: &impl fmt::Debug) -> Identity {
        let mut hasher = Fnv1a(0xcbf2_9ce4_8422_2325);
        // Writing into the hasher cannot fail: `write_str` always returns `Ok`.
        let _ = fmt::write(&mut hasher, format_args!("{problem:?}"));
        Identity(hasher.0)
    }
}

/// FNV-1a over the bytes written to it (64-bit offset basis and prime, as published by Fowler,
/// Noll and Vo).
struct Fnv1a(u64);

impl fmt::Write for Fnv1a {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for b in s.bytes() {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        Ok(())
    }
}

impl Diagnostic {
    /// A diagnostic with the code's default severity.
    pub fn new(
        code: Code,
        message: impl Into<String>,
        loc: Loc,
        label: impl Into<String>,
    ) -> Diagnostic {
        Diagnostic {
            code,
            severity: code.severity(),
            message: message.into(),
            primary: Label::new(loc, label),
            secondary: Vec::new(),
            help: None,
            notes: Vec::new(),
            fix: None,
            identity: None,
        }
    }
    pub fn with_secondary(mut self, loc: Loc, message: impl Into<String>) -> Diagnostic {
        self.secondary.push(Label::new(loc, message));
        self
    }
    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }
    pub fn with_fix(mut self, loc: Loc, replacement: impl Into<String>) -> Diagnostic {
        self.fix = Some(Fix {
            loc,
            replacement: replacement.into(),
        });
        self
    }
    /// Marks the diagnostic as the rendering of the typed problem of this identity.
    pub fn with_identity(mut self, identity: Identity) -> Diagnostic {
        self.identity = Some(identity);
        self
    }
    /// Whether `other` is this diagnostic reported again: the same code at the same place, and
    /// the same typed problem (or, for a diagnostic built without one, the same in every field).
    pub fn is_same_problem(&self, other: &Diagnostic) -> bool {
        self.code == other.code
            && self.primary.loc == other.primary.loc
            && match (self.identity, other.identity) {
                (Some(a), Some(b)) => a == b,
                (None, None) => self == other,
                _ => false,
            }
    }
    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// Text from an input shown in a message or a snippet: control characters (ESC, BEL, NUL,
/// CR...) written as `\u{1b}` so they cannot drive the terminal, and at most `max_chars`
/// characters shown (an escape counts its width), the cut marked with `…`. Tabs stay (they
/// are layout, not control); any other text comes back unchanged, so ordinary messages and
/// snippets do not change.
pub fn escape_excerpt(text: &str, max_chars: usize) -> String {
    let mut out = String::new();
    let mut shown = 0;
    let mut piece = String::new();
    for c in text.chars() {
        piece.clear();
        push_escaped(&mut piece, c);
        let width = piece.chars().count();
        if shown + width > max_chars {
            out.push('…');
            break;
        }
        out.push_str(&piece);
        shown += width;
    }
    out
}

/// Whether `text` holds a character [`escape_excerpt`] would rewrite.
pub fn has_control(text: &str) -> bool {
    text.chars().any(is_shown_escaped)
}

fn is_shown_escaped(c: char) -> bool {
    c.is_control() && c != '\t' && c != '\n'
}

/// Pushes `c`, escaped when it is a control character (`\u{1b}`).
pub fn push_escaped(out: &mut String, c: char) {
    if is_shown_escaped(c) {
        out.push_str(&format!("\\u{{{:x}}}", c as u32));
    } else {
        out.push(c);
    }
}

/// Levenshtein distance, for "did you mean" suggestions.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The candidate closest to `word` by edit distance, if close enough to be a plausible typo
/// (at most a third of the word's length, and at least 1 edit allowed).
pub fn suggest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (word.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .map(|c| (edit_distance(word, c), c))
        .filter(|&(d, _)| d <= limit)
        .min_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(b.1)))
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_excerpt_escapes_control_characters_and_cuts_long_text() {
        assert_eq!(
            escape_excerpt("a\u{1b}[31mb\u{7}", 80),
            "a\\u{1b}[31mb\\u{7}"
        );
        assert_eq!(escape_excerpt("plain text\tok", 80), "plain text\tok");
        assert_eq!(escape_excerpt(&"x".repeat(100), 64).chars().count(), 65);
        assert!(escape_excerpt(&"x".repeat(100), 64).ends_with("x…"));
        assert!(has_control("\0") && !has_control("tab\there"));
    }

    #[test]
    fn suggest_finds_kv_groups_for_a_typo() {
        assert_eq!(
            suggest("kv_gropus", ["hidden", "kv_groups", "heads"]),
            Some("kv_groups")
        );
        assert_eq!(suggest("zzzz", ["hidden", "heads"]), None);
    }

    #[test]
    fn edit_distance_counts_single_edits() {
        assert_eq!(edit_distance("tp", "pp"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("swiglu", "swiglu"), 0);
    }
}
