//! Lexing: text → flat tokens + lexical diagnostics. The only code that calls pest.
//!
//! Input: the decoded text of one file. Output: every token in source order (comments and
//! error runs included) and the problems that a single token can prove on its own: stray
//! characters and bad strings (E0001), malformed numbers and units (E0003), as typed
//! [`LexProblem`]s (rendered in `problem.rs`).
//! Invariants: tokens are disjoint, in order, and their spans lie on char boundaries of the
//! text; lexing is linear in the text length; memory is bounded per chunk (see [`chunk_end`]).

use pest::Parser;

use super::ast::Number;
use super::problem::LexProblem;
use super::{COUNT_SUFFIXES, UNITS};
use venus_diag::diag::{edit_distance, Span};

#[derive(pest_derive::Parser)]
#[grammar = "../../../grammar/venus.pest"]
struct VenusLexer;

/// What a token is. Whitespace is not a token: it is the gap between two token spans.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TokenKind {
    /// `# ...` to the end of the line.
    Comment,
    /// `hidden`, `llama2_7b`, `on`.
    Name,
    /// `4096`, `0.55`, `1e-3` (also a malformed `4__096` or `_4`, already reported).
    Number,
    /// `450GB/s`, or a reported `450 GB/s`; [`Token::unit`] is the unit's span.
    Quantity,
    /// `"path.venus"`, quotes included (possibly unterminated, already reported).
    Str,
    Lt,
    Gt,
    LBracket,
    RBracket,
    Colon,
    Semi,
    /// A run of characters that start no token (already reported as E0001).
    Error,
}

/// One token of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Token {
    pub kind: TokenKind,
    pub span: Span,
    /// For [`TokenKind::Quantity`]: the unit part (`GB/s`); `None` for every other kind.
    pub unit: Option<Span>,
}

pub(crate) struct Lexed {
    pub tokens: Vec<Token>,
    pub problems: Vec<LexProblem>,
}

/// The tokens of `text`, comments and error runs included, in source order.
pub fn tokens(text: &str) -> Vec<Token> {
    lex(text).tokens
}

/// How many bytes one pest call sees at most (unless a single line without a safe split point
/// is longer). pest keeps a queue entry per token start and end for the whole input of one
/// call, so chunking keeps that transient memory small on large hostile files.
const CHUNK: usize = 32 * 1024;

pub(crate) fn lex(text: &str) -> Lexed {
    let mut lexer = Lexer {
        text,
        tokens: Vec::new(),
        problems: Vec::new(),
    };
    let bytes = text.as_bytes();
    let mut start = 0;
    while start < bytes.len() {
        let end = chunk_end(bytes, start);
        lexer.lex_chunk(start, end);
        start = end;
    }
    Lexed {
        tokens: lexer.tokens,
        problems: lexer.problems,
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ScanState {
    Normal,
    Str,
    Comment,
}

/// Where the chunk that starts at `start` ends: the first safe split point at least [`CHUNK`]
/// bytes in, or the end of the text. A point is safe when no token can span it: before a
/// line break, or before one of `< > [ ] ; : " #` outside strings and comments (those
/// characters are tokens of their own or start one; see the grammar's invariants).
fn chunk_end(bytes: &[u8], start: usize) -> usize {
    let len = bytes.len();
    if len.saturating_sub(start) <= CHUNK {
        return len;
    }
    let min_end = start + CHUNK;
    let mut state = ScanState::Normal;
    let mut i = start;
    while i < len {
        let b = bytes[i];
        if i >= min_end {
            let line_break = matches!(b, b'\n' | b'\r');
            let punct = matches!(b, b'<' | b'>' | b'[' | b']' | b';' | b':' | b'"' | b'#');
            if line_break || (state == ScanState::Normal && punct) {
                return i;
            }
        }
        match state {
            ScanState::Normal => match b {
                b'"' => state = ScanState::Str,
                b'#' => state = ScanState::Comment,
                _ => {}
            },
            ScanState::Str => match b {
                // An escape takes the next character, unless it is a line break (the string
                // then ends there, unterminated).
                b'\\' if !matches!(bytes.get(i + 1), None | Some(b'\n') | Some(b'\r')) => i += 1,
                b'"' | b'\n' | b'\r' => state = ScanState::Normal,
                _ => {}
            },
            ScanState::Comment => {
                if matches!(b, b'\n' | b'\r') {
                    state = ScanState::Normal;
                }
            }
        }
        i += 1;
    }
    len
}

struct Lexer<'t> {
    text: &'t str,
    tokens: Vec<Token>,
    problems: Vec<LexProblem>,
}

impl<'t> Lexer<'t> {
    fn lex_chunk(&mut self, start: usize, end: usize) {
        let Some(chunk) = self.text.get(start..end) else {
            return;
        };
        let pairs = match VenusLexer::parse(Rule::chunk, chunk) {
            Ok(pairs) => pairs,
            Err(_) => {
                // Unreachable by the grammar's invariant (`error` matches every other
                // character); kept so that a grammar mistake degrades to a diagnostic.
                let span = Span::new(start, end);
                self.push(TokenKind::Error, span, None);
                self.problems.push(LexProblem::Untokenizable { span });
                return;
            }
        };
        for pair in pairs {
            let sp = pair.as_span();
            let span = Span::new(start + sp.start(), start + sp.end());
            match pair.as_rule() {
                Rule::comment => self.push(TokenKind::Comment, span, None),
                Rule::name => self.name(span),
                Rule::numeric => {
                    let number_end = pair
                        .into_inner()
                        .next()
                        .map_or(span.end as usize, |n| start + n.as_span().end());
                    let number = Span::new(span.start as usize, number_end);
                    let rest = self.slice(Span::new(number_end, span.end as usize));
                    let unit_start = span.end as usize - rest.trim_start().len();
                    let unit = (unit_start < span.end as usize)
                        .then(|| Span::new(unit_start, span.end as usize));
                    self.numeric(span, number, unit, unit_start > number_end);
                }
                Rule::string => self.string(span),
                Rule::punct => {
                    let kind = match self.slice(span) {
                        "<" => TokenKind::Lt,
                        ">" => TokenKind::Gt,
                        "[" => TokenKind::LBracket,
                        "]" => TokenKind::RBracket,
                        ":" => TokenKind::Colon,
                        _ => TokenKind::Semi,
                    };
                    self.push(kind, span, None);
                }
                Rule::error => self.stray(span),
                _ => {}
            }
        }
    }

    fn push(&mut self, kind: TokenKind, span: Span, unit: Option<Span>) {
        self.tokens.push(Token { kind, span, unit });
    }

    fn slice(&self, span: Span) -> &'t str {
        self.text.get(span.range()).unwrap_or("")
    }

    /// A name, or a malformed number that starts with `_` (`_4`, `__4_096`).
    fn name(&mut self, span: Span) {
        let raw = self.slice(span);
        let numeric = raw.bytes().all(|b| b == b'_' || b.is_ascii_digit())
            && raw.bytes().any(|b| b.is_ascii_digit());
        if !numeric {
            self.push(TokenKind::Name, span, None);
            return;
        }
        let (_, fixed) = scan_number(raw);
        let fixed = fixed.unwrap_or_else(|| raw.replace('_', ""));
        self.problems.push(LexProblem::LeadingUnderscore {
            span,
            raw: raw.to_string(),
            fixed,
        });
        self.push(TokenKind::Number, span, None);
    }

    fn numeric(&mut self, span: Span, number: Span, unit: Option<Span>, spaced: bool) {
        let raw_number = self.slice(number);
        if let (_, Some(fixed)) = scan_number(raw_number) {
            self.problems.push(LexProblem::MisplacedUnderscore {
                span: number,
                raw: raw_number.to_string(),
                fixed,
            });
        }
        let Some(unit) = unit else {
            self.push(TokenKind::Number, span, None);
            return;
        };
        let raw_unit = self.slice(unit);
        if !spaced && !is_unit(raw_unit) && is_digit_word(self.slice(span)) {
            // `schedule 1f1b`: an enum word that starts with a digit is a name, and so is a
            // typo of one (`1f1f`), for `ty` to report as an unknown word with the fix.
            self.push(TokenKind::Name, span, None);
            return;
        }
        if spaced {
            self.problems.push(LexProblem::SpacedUnit {
                span,
                number: raw_number.to_string(),
                unit: raw_unit.to_string(),
            });
        } else if !is_unit(raw_unit) {
            self.problems.push(LexProblem::UnknownUnit {
                span: unit,
                number: raw_number.to_string(),
                unit: raw_unit.to_string(),
                suggestion: suggest_unit(raw_unit),
            });
        }
        self.push(TokenKind::Quantity, span, Some(unit));
    }

    fn string(&mut self, span: Span) {
        let raw = self.slice(span);
        let (_, end) = string_contents(raw);
        // Unknown escapes, each reported once.
        let bytes = raw.as_bytes();
        let mut i = 1;
        while i < end {
            if bytes[i] == b'\\' {
                let esc_len = raw[i + 1..].chars().next().map_or(0, char::len_utf8);
                if esc_len == 0 {
                    break;
                }
                let esc = &raw[i..i + 1 + esc_len];
                if esc != "\\\"" && esc != "\\\\" {
                    let at = span.start as usize + i;
                    self.problems.push(LexProblem::UnknownEscape {
                        span: Span::new(at, at + esc.len()),
                        escape: esc.to_string(),
                    });
                }
                i += 1 + esc_len;
            } else {
                i += 1;
            }
        }
        if end >= raw.len() {
            self.problems.push(LexProblem::UnterminatedString {
                span,
                raw: raw.to_string(),
            });
        }
        self.push(TokenKind::Str, span, None);
    }

    /// A run of characters that start no token.
    fn stray(&mut self, span: Span) {
        let next = self
            .text
            .get(span.end as usize..)
            .and_then(|s| s.chars().next());
        self.problems.push(LexProblem::Stray {
            span,
            text: self.slice(span).to_string(),
            next,
        });
        self.push(TokenKind::Error, span, None);
    }
}

/// A unit, or a count suffix joined to its number (`15T`).
fn is_unit(text: &str) -> bool {
    UNITS.contains(&text) || COUNT_SUFFIXES.contains(&text)
}

/// True for the enum words of the key table that start with a digit (`1f1b`) and their typos
/// (`1f1f`, within [`venus_diag::diag::suggest`] distance), which the
/// grammar lexes as a number with a unit.
fn is_digit_word(word: &str) -> bool {
    use super::ast::DefKind;
    use super::schema::{keys, ArgType, BlockKind};
    let blocks = DefKind::ALL.into_iter().map(BlockKind::Def).chain([
        BlockKind::Measured,
        BlockKind::Expect,
        BlockKind::Train,
    ]);
    let digit_words = blocks
        .flat_map(keys)
        .flat_map(|sig| sig.args)
        .filter_map(|arg| match arg {
            ArgType::Enum(words) => Some(*words),
            _ => None,
        })
        .flatten()
        .copied()
        .filter(|w| w.starts_with(|c: char| c.is_ascii_digit()));
    venus_diag::diag::suggest(word, digit_words).is_some()
}

/// A string literal's contents with escapes resolved, and the byte offset of its closing quote
/// in `raw` (`raw.len()` when unterminated). `raw` starts with the opening quote.
pub(crate) fn string_contents(raw: &str) -> (String, usize) {
    let mut out = String::new();
    let mut chars = raw.char_indices().skip(1);
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return (out, i),
            '\\' => match chars.next() {
                Some((_, e @ ('"' | '\\'))) => out.push(e),
                Some((_, e)) => {
                    out.push('\\');
                    out.push(e);
                }
                None => out.push('\\'),
            },
            c => out.push(c),
        }
    }
    (out, raw.len())
}

/// The value of a numeric literal (digits, `_`, optional fraction and exponent) and, when an
/// underscore is misplaced, the corrected spelling: a run of underscores between two digits
/// becomes one, any other underscore is dropped (`4__096` → `4_096`, `4_` → `4`).
/// Linear in the literal's length; integers beyond `u64` are [`Number::IntTooLarge`].
pub(crate) fn scan_number(raw: &str) -> (Number, Option<String>) {
    let bytes = raw.as_bytes();
    let well_placed = |i: usize| {
        // An underscore is fine when it is alone and has a digit on each side.
        i > 0 && bytes[i - 1].is_ascii_digit() && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)
    };
    let misplaced = bytes
        .iter()
        .enumerate()
        .any(|(i, &b)| b == b'_' && !well_placed(i));
    let fixed = misplaced.then(|| {
        let mut out = String::with_capacity(raw.len());
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'_' {
                let run_end = bytes[i..]
                    .iter()
                    .position(|&b| b != b'_')
                    .map_or(bytes.len(), |p| i + p);
                let between = out.as_bytes().last().is_some_and(u8::is_ascii_digit)
                    && bytes.get(run_end).is_some_and(u8::is_ascii_digit);
                if between {
                    out.push('_');
                }
                i = run_end;
            } else {
                out.push(char::from(bytes[i]));
                i += 1;
            }
        }
        out
    });
    let is_float = bytes.iter().any(|&b| matches!(b, b'.' | b'e' | b'E'));
    let number = if is_float {
        let digits: String = raw.chars().filter(|&c| c != '_').collect();
        // The grammar only lets valid float spellings through; infinity (out of range for
        // every key) is the safe fallback.
        Number::Float(digits.parse().unwrap_or(f64::INFINITY))
    } else {
        let mut value: Option<u64> = Some(0);
        for &b in bytes {
            if b.is_ascii_digit() {
                value = value
                    .and_then(|v| v.checked_mul(10))
                    .and_then(|v| v.checked_add(u64::from(b - b'0')));
            }
        }
        value.map_or(Number::IntTooLarge, Number::Int)
    };
    (number, fixed)
}

/// The unit a misspelled one most likely meant: a case-insensitive match first (`gib` →
/// `GiB`), then the closest by edit distance, preferring a unit the word is a subsequence of
/// (`GBs` → `GB/s`, not `GB`). `None` when nothing is plausibly close.
pub fn suggest_unit(word: &str) -> Option<&'static str> {
    let lower = word.to_ascii_lowercase();
    let limit = (word.chars().count() / 3).max(1);
    UNITS
        .iter()
        .enumerate()
        .filter_map(|(index, &unit)| {
            let d = edit_distance(&lower, &unit.to_ascii_lowercase());
            (d <= limit).then(|| {
                let subsequence = is_subsequence(&lower, &unit.to_ascii_lowercase());
                ((d, !subsequence, edit_distance(word, unit), index), unit)
            })
        })
        .min_by(|a, b| a.0.cmp(&b.0))
        .map(|(_, unit)| unit)
}

fn is_subsequence(needle: &str, hay: &str) -> bool {
    let mut hay = hay.chars();
    needle.chars().all(|c| hay.any(|h| h == c))
}

/// `s` shortened for a message: long literals (a 2 MB number) are cut with an ellipsis.
pub(crate) fn excerpt(s: &str) -> String {
    const MAX: usize = 40;
    match s.char_indices().nth(MAX) {
        None => s.to_string(),
        Some((cut, _)) => format!("{}…", &s[..cut]),
    }
}
