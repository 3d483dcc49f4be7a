//! The problems the syntax stage finds, as typed values, and the one place they become
//! diagnostics.
//!
//! Input: what decoding and the lexer detected ([`LexProblem`]: bytes that are not text, stray
//! characters, bad strings, malformed numbers and units) and what the tree builder detected
//! ([`ParseProblem`]: misplaced tokens, unclosed blocks and lists), each with the spans, token
//! kinds, texts and names its message needs. Output: [`LexProblem::diagnostic`] and
//! [`ParseProblem::diagnostic`], the E0001–E0003 diagnostics with their wording, labels, helps
//! and fixes.
//! Invariant: nothing else in `syntax` builds a `Diagnostic` or decides by reading one's text;
//! the decisions (which unit to suggest, which keyword a typo meant) are made where the
//! problem is found and carried here as typed values. Every diagnostic carries the problem's
//! [`Identity`].

use super::ast::DefKind;
use super::lex::{excerpt, TokenKind};
use super::parse::MAX_DEPTH;
use super::UNITS;
use venus_diag::diag::{Code, Diagnostic, FileId, Identity, Loc, Span};

/// One problem of decoding or lexing a file.
#[derive(Clone, Debug, PartialEq)]
pub enum LexProblem {
    /// E0001: the file stops being text at `at` (a NUL byte when `nul`, else invalid UTF-8
    /// among many invalid bytes); the rest is not read.
    NotText { at: usize, nul: bool },
    /// E0001: a run of bytes that is not UTF-8: its first (at most eight) bytes, and its
    /// length `len`.
    InvalidUtf8 {
        span: Span,
        shown: Vec<u8>,
        len: usize,
    },
    /// E0001: pest could not tokenize a chunk (unreachable by the grammar's invariant).
    Untokenizable { span: Span },
    /// E0003: a number that starts with `_` (`_4`); `fixed`: its correct spelling.
    LeadingUnderscore {
        span: Span,
        raw: String,
        fixed: String,
    },
    /// E0003: a number with a misplaced `_` (`4__096`); `fixed`: its correct spelling.
    MisplacedUnderscore {
        span: Span,
        raw: String,
        fixed: String,
    },
    /// E0003: `450 GB/s`: a space between the number and its unit (`span`: both).
    SpacedUnit {
        span: Span,
        number: String,
        unit: String,
    },
    /// E0003: a unit that is not one of [`UNITS`] (`span`: the unit); `suggestion`: the unit
    /// it most likely meant.
    UnknownUnit {
        span: Span,
        number: String,
        unit: String,
        suggestion: Option<&'static str>,
    },
    /// E0001: an escape other than `\"` and `\\` in a string (`escape`: the backslash and
    /// the character after it).
    UnknownEscape { span: Span, escape: String },
    /// E0001: a string never closed (`raw`: the string as written, opening quote included).
    UnterminatedString { span: Span, raw: String },
    /// E0001: a run of characters that start no token; `next`: the character after the run.
    Stray {
        span: Span,
        text: String,
        next: Option<char>,
    },
}

impl LexProblem {
    /// The diagnostic users see, in `file`, carrying the problem's identity.
    pub fn diagnostic(self, file: FileId) -> Diagnostic {
        let identity = Identity::of(&self);
        self.render(file).with_identity(identity)
    }

    fn render(self, file: FileId) -> Diagnostic {
        let at = |span: Span| Loc::new(file, span);
        match self {
            LexProblem::NotText { at: offset, nul } => {
                let what = if nul { "a NUL byte" } else { "invalid UTF-8" };
                Diagnostic::new(
                    Code::E0001,
                    "this is not a text file",
                    at(Span::new(offset, offset + 1)),
                    format!("{what} here; the rest of the file is not read"),
                )
                .with_help("check the path: a `.venus` file is UTF-8 text")
            }
            LexProblem::InvalidUtf8 { span, shown, len } => {
                let shown: Vec<String> = shown.iter().map(|b| format!("{b:02x}")).collect();
                let more = if len > 8 { " …" } else { "" };
                let (noun, verb) = if len == 1 {
                    ("byte", "is")
                } else {
                    ("bytes", "are")
                };
                Diagnostic::new(
                    Code::E0001,
                    "invalid UTF-8 in source",
                    at(span),
                    format!("{noun} `{}{more}` {verb} not UTF-8", shown.join(" ")),
                )
                .with_help("save the file as UTF-8")
            }
            LexProblem::Untokenizable { span } => Diagnostic::new(
                Code::E0001,
                "input could not be tokenized",
                at(span),
                "not understood",
            ),
            LexProblem::LeadingUnderscore { span, raw, fixed } => Diagnostic::new(
                Code::E0003,
                format!("malformed number `{}`", excerpt(&raw)),
                at(span),
                "a number cannot start with `_`",
            )
            .with_help(format!("write `{}`", excerpt(&fixed))),
            LexProblem::MisplacedUnderscore { span, raw, fixed } => Diagnostic::new(
                Code::E0003,
                format!("malformed number `{}`", excerpt(&raw)),
                at(span),
                "`_` must sit between two digits",
            )
            .with_help(format!("write `{}`", excerpt(&fixed))),
            LexProblem::SpacedUnit { span, number, unit } => Diagnostic::new(
                Code::E0003,
                "space between number and unit",
                at(span),
                "the unit must follow the number directly",
            )
            .with_help(format!("write `{}{unit}`", excerpt(&number)))
            .with_fix(at(span), format!("{number}{unit}")),
            LexProblem::UnknownUnit {
                span,
                number,
                unit,
                suggestion,
            } => {
                let help = match suggestion {
                    Some(u) => format!("did you mean `{}{u}`?", excerpt(&number)),
                    None => format!(
                        "units are {}",
                        UNITS
                            .iter()
                            .map(|u| format!("`{u}`"))
                            .collect::<Vec<_>>()
                            .join(" ")
                    ),
                };
                let d = Diagnostic::new(
                    Code::E0003,
                    format!("unknown unit `{}`", excerpt(&unit)),
                    at(span),
                    "unknown unit",
                )
                .with_help(help);
                match suggestion {
                    Some(u) => d.with_fix(at(span), u),
                    None => d,
                }
            }
            LexProblem::UnknownEscape { span, escape } => Diagnostic::new(
                Code::E0001,
                format!("unknown escape `{}` in string", escape.escape_debug()),
                at(span),
                "unknown escape",
            )
            .with_help(format!(
                "the escapes are `\\\"` and `\\\\`; write `\\{escape}` for a backslash"
            )),
            LexProblem::UnterminatedString { span, raw } => Diagnostic::new(
                Code::E0001,
                "unterminated string",
                at(span),
                "this string is never closed",
            )
            .with_help(format!("add `\"` at the end: `{}\"`", excerpt(&raw))),
            LexProblem::Stray { span, text, next } => {
                let mut chars = text.chars();
                let first = chars.next().unwrap_or(' ');
                let single = chars.next().is_none();
                let message = if single {
                    format!("unexpected character `{}`", first.escape_debug())
                } else {
                    format!(
                        "unexpected characters `{}`",
                        excerpt(&text.escape_debug().to_string())
                    )
                };
                let help = match first {
                    _ if !single => None,
                    '{' => Some("blocks are written `< ... >`: write `<` instead of `{`"),
                    '}' => Some("blocks are written `< ... >`: write `>` instead of `}`"),
                    '=' => Some("write the key and its value separated by a space, without `=`"),
                    ',' => Some("separate values with spaces, without `,`"),
                    '-' if next.is_some_and(|c| c.is_ascii_digit()) => {
                        Some("values cannot be negative: remove the `-`")
                    }
                    '\'' => Some("strings are written with double quotes: `\"...\"`"),
                    _ => None,
                };
                let d = Diagnostic::new(Code::E0001, message, at(span), "not part of the language");
                match help {
                    Some(help) => d.with_help(help),
                    None => d,
                }
            }
        }
    }
}

/// A token a message names (`found number `4096``): its kind and its text as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    pub kind: TokenKind,
    pub text: String,
}

impl Found {
    /// How the token is named in a message: `` `hidden` ``, ``number `4096` ``.
    fn describe(&self) -> String {
        let text = excerpt(&self.text);
        match self.kind {
            TokenKind::Number => format!("number `{text}`"),
            TokenKind::Quantity => format!("quantity `{text}`"),
            TokenKind::Str => format!("string `{text}`"),
            _ => format!("`{text}`"),
        }
    }
}

/// What kind of bracketed value a message is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nest {
    /// `< ... >`.
    Block,
    /// `[ ... ]`.
    List,
}

impl Nest {
    fn noun(self) -> &'static str {
        match self {
            Nest::Block => "block",
            Nest::List => "list",
        }
    }
}

/// What was left open (E0002).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Opened {
    /// A list, opened with `[`.
    List,
    /// A block, opened with `<`, named by its definition keyword or the key it is the value
    /// of (`model`, `dims`).
    Block(String),
}

/// What the help of an unknown top-level word proposes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TopHint {
    /// A top-level keyword within two edits (`modle`).
    DidYouMean(&'static str),
    /// The word is a key of this definition kind's blocks.
    KeyOf(DefKind),
    /// Nothing close.
    Nothing,
}

/// One problem of building the tree from the tokens.
#[derive(Clone, Debug, PartialEq)]
pub enum ParseProblem {
    /// E0001: a top-level `<` with no definition keyword before it.
    BlockWithoutKeyword { span: Span },
    /// E0001: a top-level token that starts no definition (not a name, not a bracket).
    ExpectedDefinition { span: Span, found: Found },
    /// E0001: one closer (`>`, `]`, or a `}` read as `>`) that closes nothing.
    StrayCloser {
        span: Span,
        closer: char,
        closes: Nest,
    },
    /// E0001: a run of `count` closers that close nothing.
    StrayClosers { span: Span, count: usize },
    /// E0001: a top-level name that is no keyword.
    UnknownTopWord {
        span: Span,
        word: String,
        hint: TopHint,
    },
    /// E0001: `use` without a path string; `name`: a bare name written instead of the path.
    UseWithoutPath { span: Span, name: Option<String> },
    /// E0001: a definition of a kind that needs a name, without one (`span`: the keyword).
    MissingDefName { span: Span, kind: DefKind },
    /// E0001: a `:` after a definition's name with no base name after it.
    MissingBase { span: Span, kind: DefKind },
    /// E0001: a definition header not followed by `<`; `found`: the token there (`None`: the
    /// end of input); `header`: the header as written.
    MissingBlockOpen {
        span: Span,
        kind: DefKind,
        found: Option<Found>,
        header: String,
    },
    /// E0001: a `:` where a block's key belongs.
    ColonInBlock { span: Span },
    /// E0001: a block, list or other value where a block's key belongs.
    ExpectedKey { span: Span, found: Found },
    /// E0002: a block or list never closed (`span`: its opening bracket, on 1-based `line`).
    Unclosed {
        span: Span,
        opened: Opened,
        line: usize,
    },
    /// E0001: `key: value`; `next`: the token after the colon, when one could be the value.
    ColonAfterKey {
        span: Span,
        key: String,
        next: Option<String>,
    },
    /// E0001: a block or list at nesting level `depth`, beyond [`MAX_DEPTH`].
    TooDeep {
        span: Span,
        nest: Nest,
        depth: usize,
    },
    /// E0001: a `;` or `:` between list elements.
    SeparatorInList { span: Span, separator: char },
}

/// The top-level keywords, as the labels of top-level errors list them.
const EXPECTED_TOP: &str = "expected `model`, `gpu`, `cluster`, `plan`, `scenario` or `use`";

impl ParseProblem {
    /// The diagnostic users see, in `file`, carrying the problem's identity.
    pub fn diagnostic(self, file: FileId) -> Diagnostic {
        let identity = Identity::of(&self);
        self.render(file).with_identity(identity)
    }

    fn render(self, file: FileId) -> Diagnostic {
        let at = |span: Span| Loc::new(file, span);
        match self {
            ParseProblem::BlockWithoutKeyword { span } => Diagnostic::new(
                Code::E0001,
                "block without a definition keyword",
                at(span),
                "this block has no `model`, `gpu`, `cluster`, `plan` or `scenario` before it",
            )
            .with_help("start it with the kind and a name, e.g. `model NAME < ... >`"),
            ParseProblem::ExpectedDefinition { span, found } => Diagnostic::new(
                Code::E0001,
                format!("expected a definition, found {}", found.describe()),
                at(span),
                EXPECTED_TOP,
            ),
            ParseProblem::StrayCloser {
                span,
                closer,
                closes,
            } => Diagnostic::new(
                Code::E0001,
                format!("unexpected `{closer}`"),
                at(span),
                format!("no {} is open here", closes.noun()),
            )
            .with_help(format!("remove this `{closer}`")),
            ParseProblem::StrayClosers { span, count } => Diagnostic::new(
                Code::E0001,
                format!("{count} unexpected closing brackets"),
                at(span),
                "no block or list is open here",
            )
            .with_help("remove them"),
            ParseProblem::UnknownTopWord { span, word, hint } => {
                let d = Diagnostic::new(
                    Code::E0001,
                    format!("unexpected `{}` at the top level", excerpt(&word)),
                    at(span),
                    EXPECTED_TOP,
                );
                match hint {
                    TopHint::DidYouMean(kw) => d.with_help(format!("did you mean `{kw}`?")),
                    TopHint::KeyOf(kind) => d.with_help(format!(
                        "`{word}` is a key of `{0}` blocks: write it inside `{0} NAME < ... >`",
                        kind.keyword()
                    )),
                    TopHint::Nothing => d,
                }
            }
            ParseProblem::UseWithoutPath { span, name } => {
                let d = Diagnostic::new(
                    Code::E0001,
                    "expected a path string after `use`",
                    at(span),
                    "expected `\"path.venus\"`",
                );
                match name {
                    Some(name) => d.with_help(format!("write `use \"{}.venus\"`", excerpt(&name))),
                    None => d,
                }
            }
            ParseProblem::MissingDefName { span, kind } => {
                let keyword = kind.keyword();
                Diagnostic::new(
                    Code::E0001,
                    format!("missing name for `{keyword}`"),
                    at(span),
                    format!("a `{keyword}` needs a name"),
                )
                .with_help(format!("write `{keyword} NAME < ... >`"))
            }
            ParseProblem::MissingBase { span, kind } => {
                let keyword = kind.keyword();
                Diagnostic::new(
                    Code::E0001,
                    format!("expected a base `{keyword}` name after `:`"),
                    at(span),
                    "expected a name",
                )
                .with_help(format!(
                    "write `{keyword} NAME : BASE < ... >`, or remove the `:`"
                ))
            }
            ParseProblem::MissingBlockOpen {
                span,
                kind,
                found,
                header,
            } => {
                let found = found.map_or("the end of input".to_string(), |f| f.describe());
                Diagnostic::new(
                    Code::E0001,
                    format!(
                        "expected `<` to open the `{}` block, found {found}",
                        kind.keyword()
                    ),
                    at(span),
                    "expected `<`",
                )
                .with_help(format!("write `{} < ... >`", excerpt(&header)))
            }
            ParseProblem::ColonInBlock { span } => {
                Diagnostic::new(Code::E0001, "unexpected `:`", at(span), "expected a key")
                    .with_help("remove this `:`")
            }
            ParseProblem::ExpectedKey { span, found } => {
                let label = match found.kind {
                    TokenKind::Lt => "this block has no key",
                    TokenKind::LBracket => "this list has no key",
                    _ => "items start with a key",
                };
                Diagnostic::new(
                    Code::E0001,
                    format!("expected a key, found {}", found.describe()),
                    at(span),
                    label,
                )
            }
            ParseProblem::Unclosed { span, opened, line } => {
                let (what, bracket, closer) = match opened {
                    Opened::List => ("list".to_string(), "[", "]"),
                    Opened::Block(name) => (format!("`{name}` block"), "<", ">"),
                };
                Diagnostic::new(
                    Code::E0002,
                    format!("unclosed {what}"),
                    at(span),
                    format!("this `{bracket}` is never closed"),
                )
                .with_help(format!(
                    "add `{closer}` to close the {what} opened at line {line}"
                ))
            }
            ParseProblem::ColonAfterKey { span, key, next } => {
                let help = match next {
                    Some(next) => format!("write `{key} {}`", excerpt(&next)),
                    None => "remove this `:`".to_string(),
                };
                Diagnostic::new(
                    Code::E0001,
                    format!("unexpected `:` after `{key}`"),
                    at(span),
                    "keys and values are separated by a space",
                )
                .with_help(help)
            }
            ParseProblem::TooDeep { span, nest, depth } => Diagnostic::new(
                Code::E0001,
                format!("blocks nested deeper than {MAX_DEPTH} levels"),
                at(span),
                format!("this {} is at level {depth}", nest.noun()),
            )
            .with_help("define the inner block at the top level and refer to it by name"),
            ParseProblem::SeparatorInList { span, separator } => Diagnostic::new(
                Code::E0001,
                format!("unexpected `{separator}` in a list"),
                at(span),
                "list elements are separated by spaces",
            )
            .with_help(format!("remove this `{separator}`")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: FileId = FileId(3);

    fn span(start: usize, end: usize) -> Span {
        Span::new(start, end)
    }

    /// Code, message, primary label and help of a rendered problem.
    fn parts(d: &Diagnostic) -> (Code, &str, &str, Option<&str>) {
        (
            d.code,
            d.message.as_str(),
            d.primary.message.as_str(),
            d.help.as_deref(),
        )
    }

    fn found(kind: TokenKind, text: &str) -> Found {
        Found {
            kind,
            text: text.into(),
        }
    }

    /// One value of every lexical problem, with its variant's index in declaration order: a
    /// new variant fails to compile here until it has a sample and an expected rendering.
    fn lex_samples() -> Vec<(usize, LexProblem)> {
        let samples = vec![
            LexProblem::NotText { at: 7, nul: true },
            LexProblem::InvalidUtf8 {
                span: span(2, 3),
                shown: vec![0xff],
                len: 1,
            },
            LexProblem::Untokenizable { span: span(0, 4) },
            LexProblem::LeadingUnderscore {
                span: span(0, 2),
                raw: "_4".into(),
                fixed: "4".into(),
            },
            LexProblem::MisplacedUnderscore {
                span: span(0, 6),
                raw: "4__096".into(),
                fixed: "4_096".into(),
            },
            LexProblem::SpacedUnit {
                span: span(0, 8),
                number: "450".into(),
                unit: "GB/s".into(),
            },
            LexProblem::UnknownUnit {
                span: span(3, 6),
                number: "450".into(),
                unit: "GBs".into(),
                suggestion: Some("GB/s"),
            },
            LexProblem::UnknownEscape {
                span: span(1, 3),
                escape: "\\n".into(),
            },
            LexProblem::UnterminatedString {
                span: span(0, 4),
                raw: "\"abc".into(),
            },
            LexProblem::Stray {
                span: span(0, 1),
                text: "{".into(),
                next: None,
            },
        ];
        samples
            .into_iter()
            .map(|p| {
                let index = match p {
                    LexProblem::NotText { .. } => 0,
                    LexProblem::InvalidUtf8 { .. } => 1,
                    LexProblem::Untokenizable { .. } => 2,
                    LexProblem::LeadingUnderscore { .. } => 3,
                    LexProblem::MisplacedUnderscore { .. } => 4,
                    LexProblem::SpacedUnit { .. } => 5,
                    LexProblem::UnknownUnit { .. } => 6,
                    LexProblem::UnknownEscape { .. } => 7,
                    LexProblem::UnterminatedString { .. } => 8,
                    LexProblem::Stray { .. } => 9,
                };
                (index, p)
            })
            .collect()
    }

    /// One value of every structural problem, with its variant's index (see [`lex_samples`]).
    fn parse_samples() -> Vec<(usize, ParseProblem)> {
        let samples = vec![
            ParseProblem::BlockWithoutKeyword { span: span(0, 1) },
            ParseProblem::ExpectedDefinition {
                span: span(0, 4),
                found: found(TokenKind::Number, "4096"),
            },
            ParseProblem::StrayCloser {
                span: span(0, 1),
                closer: ']',
                closes: Nest::List,
            },
            ParseProblem::StrayClosers {
                span: span(0, 3),
                count: 3,
            },
            ParseProblem::UnknownTopWord {
                span: span(0, 5),
                word: "modle".into(),
                hint: TopHint::DidYouMean("model"),
            },
            ParseProblem::UseWithoutPath {
                span: span(4, 7),
                name: Some("std".into()),
            },
            ParseProblem::MissingDefName {
                span: span(0, 5),
                kind: DefKind::Model,
            },
            ParseProblem::MissingBase {
                span: span(9, 10),
                kind: DefKind::Gpu,
            },
            ParseProblem::MissingBlockOpen {
                span: span(9, 13),
                kind: DefKind::Model,
                found: Some(found(TokenKind::Name, "tiny")),
                header: "model m".into(),
            },
            ParseProblem::ColonInBlock { span: span(2, 3) },
            ParseProblem::ExpectedKey {
                span: span(2, 6),
                found: found(TokenKind::Quantity, "4GiB"),
            },
            ParseProblem::Unclosed {
                span: span(8, 9),
                opened: Opened::Block("model".into()),
                line: 1,
            },
            ParseProblem::ColonAfterKey {
                span: span(8, 9),
                key: "hidden".into(),
                next: Some("4096".into()),
            },
            ParseProblem::TooDeep {
                span: span(40, 41),
                nest: Nest::List,
                depth: 33,
            },
            ParseProblem::SeparatorInList {
                span: span(4, 5),
                separator: ';',
            },
        ];
        samples
            .into_iter()
            .map(|p| {
                let index = match p {
                    ParseProblem::BlockWithoutKeyword { .. } => 0,
                    ParseProblem::ExpectedDefinition { .. } => 1,
                    ParseProblem::StrayCloser { .. } => 2,
                    ParseProblem::StrayClosers { .. } => 3,
                    ParseProblem::UnknownTopWord { .. } => 4,
                    ParseProblem::UseWithoutPath { .. } => 5,
                    ParseProblem::MissingDefName { .. } => 6,
                    ParseProblem::MissingBase { .. } => 7,
                    ParseProblem::MissingBlockOpen { .. } => 8,
                    ParseProblem::ColonInBlock { .. } => 9,
                    ParseProblem::ExpectedKey { .. } => 10,
                    ParseProblem::Unclosed { .. } => 11,
                    ParseProblem::ColonAfterKey { .. } => 12,
                    ParseProblem::TooDeep { .. } => 13,
                    ParseProblem::SeparatorInList { .. } => 14,
                };
                (index, p)
            })
            .collect()
    }

    #[test]
    fn every_lexical_problem_renders_its_code_message_label_and_help() {
        let samples = lex_samples();
        let indices: Vec<usize> = samples.iter().map(|(i, _)| *i).collect();
        assert_eq!(
            indices,
            (0..10).collect::<Vec<_>>(),
            "one sample per variant"
        );
        let rendered: Vec<Diagnostic> = samples
            .into_iter()
            .map(|(_, p)| p.diagnostic(FILE))
            .collect();
        let expected: [(Code, &str, &str, Option<&str>); 10] = [
            (
                Code::E0001,
                "this is not a text file",
                "a NUL byte here; the rest of the file is not read",
                Some("check the path: a `.venus` file is UTF-8 text"),
            ),
            (
                Code::E0001,
                "invalid UTF-8 in source",
                "byte `ff` is not UTF-8",
                Some("save the file as UTF-8"),
            ),
            (
                Code::E0001,
                "input could not be tokenized",
                "not understood",
                None,
            ),
            (
                Code::E0003,
                "malformed number `_4`",
                "a number cannot start with `_`",
                Some("write `4`"),
            ),
            (
                Code::E0003,
                "malformed number `4__096`",
                "`_` must sit between two digits",
                Some("write `4_096`"),
            ),
            (
                Code::E0003,
                "space between number and unit",
                "the unit must follow the number directly",
                Some("write `450GB/s`"),
            ),
            (
                Code::E0003,
                "unknown unit `GBs`",
                "unknown unit",
                Some("did you mean `450GB/s`?"),
            ),
            (
                Code::E0001,
                "unknown escape `\\\\n` in string",
                "unknown escape",
                Some("the escapes are `\\\"` and `\\\\`; write `\\\\n` for a backslash"),
            ),
            (
                Code::E0001,
                "unterminated string",
                "this string is never closed",
                Some("add `\"` at the end: `\"abc\"`"),
            ),
            (
                Code::E0001,
                "unexpected character `{`",
                "not part of the language",
                Some("blocks are written `< ... >`: write `<` instead of `{`"),
            ),
        ];
        for (d, want) in rendered.iter().zip(expected) {
            assert_eq!(parts(d), want);
            assert_eq!(d.primary.loc.file, FILE);
            assert!(d.identity.is_some(), "{} carries its identity", d.message);
        }
        // The not-a-text-file diagnostic points at the one byte where text stops.
        assert_eq!(rendered[0].primary.loc.span, span(7, 8));
    }

    #[test]
    fn every_structural_problem_renders_its_code_message_label_and_help() {
        let samples = parse_samples();
        let indices: Vec<usize> = samples.iter().map(|(i, _)| *i).collect();
        assert_eq!(
            indices,
            (0..15).collect::<Vec<_>>(),
            "one sample per variant"
        );
        let rendered: Vec<Diagnostic> = samples
            .into_iter()
            .map(|(_, p)| p.diagnostic(FILE))
            .collect();
        let expected: [(Code, &str, &str, Option<&str>); 15] = [
            (
                Code::E0001,
                "block without a definition keyword",
                "this block has no `model`, `gpu`, `cluster`, `plan` or `scenario` before it",
                Some("start it with the kind and a name, e.g. `model NAME < ... >`"),
            ),
            (
                Code::E0001,
                "expected a definition, found number `4096`",
                EXPECTED_TOP,
                None,
            ),
            (
                Code::E0001,
                "unexpected `]`",
                "no list is open here",
                Some("remove this `]`"),
            ),
            (
                Code::E0001,
                "3 unexpected closing brackets",
                "no block or list is open here",
                Some("remove them"),
            ),
            (
                Code::E0001,
                "unexpected `modle` at the top level",
                EXPECTED_TOP,
                Some("did you mean `model`?"),
            ),
            (
                Code::E0001,
                "expected a path string after `use`",
                "expected `\"path.venus\"`",
                Some("write `use \"std.venus\"`"),
            ),
            (
                Code::E0001,
                "missing name for `model`",
                "a `model` needs a name",
                Some("write `model NAME < ... >`"),
            ),
            (
                Code::E0001,
                "expected a base `gpu` name after `:`",
                "expected a name",
                Some("write `gpu NAME : BASE < ... >`, or remove the `:`"),
            ),
            (
                Code::E0001,
                "expected `<` to open the `model` block, found `tiny`",
                "expected `<`",
                Some("write `model m < ... >`"),
            ),
            (
                Code::E0001,
                "unexpected `:`",
                "expected a key",
                Some("remove this `:`"),
            ),
            (
                Code::E0001,
                "expected a key, found quantity `4GiB`",
                "items start with a key",
                None,
            ),
            (
                Code::E0002,
                "unclosed `model` block",
                "this `<` is never closed",
                Some("add `>` to close the `model` block opened at line 1"),
            ),
            (
                Code::E0001,
                "unexpected `:` after `hidden`",
                "keys and values are separated by a space",
                Some("write `hidden 4096`"),
            ),
            (
                Code::E0001,
                "blocks nested deeper than 32 levels",
                "this list is at level 33",
                Some("define the inner block at the top level and refer to it by name"),
            ),
            (
                Code::E0001,
                "unexpected `;` in a list",
                "list elements are separated by spaces",
                Some("remove this `;`"),
            ),
        ];
        for (d, want) in rendered.iter().zip(expected) {
            assert_eq!(parts(d), want);
            assert_eq!(d.primary.loc.file, FILE);
            assert!(d.identity.is_some(), "{} carries its identity", d.message);
        }
    }

    /// The codes of the catalogue table in the diagnostics reference.
    fn catalogue_codes() -> Vec<String> {
        include_str!("../../../../docs/reference/DIAGNOSTICS.md")
            .lines()
            .filter_map(|l| l.strip_prefix("| "))
            .filter_map(|l| l.split(' ').next())
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn every_syntax_problem_code_is_in_the_registry_and_the_catalogue() {
        let catalogue = catalogue_codes();
        let codes = lex_samples()
            .into_iter()
            .map(|(_, p)| p.diagnostic(FILE).code)
            .chain(
                parse_samples()
                    .into_iter()
                    .map(|(_, p)| p.diagnostic(FILE).code),
            );
        for code in codes {
            assert!(Code::ALL.contains(&code), "{code} is registered");
            assert!(!code.explanation().is_empty(), "{code} has an explanation");
            assert!(
                catalogue.iter().any(|c| c == code.as_str()),
                "{code} is listed in DIAGNOSTICS.md"
            );
        }
    }

    #[test]
    fn a_unit_fix_comes_from_the_typed_suggestion_and_the_joined_spelling() {
        let suggested = LexProblem::UnknownUnit {
            span: span(3, 6),
            number: "450".into(),
            unit: "GBs".into(),
            suggestion: Some("GB/s"),
        }
        .diagnostic(FILE);
        let fix = suggested.fix.expect("a suggested unit is a fix");
        assert_eq!(
            (fix.loc, fix.replacement.as_str()),
            (Loc::new(FILE, span(3, 6)), "GB/s")
        );
        let unknown = LexProblem::UnknownUnit {
            span: span(3, 6),
            number: "450".into(),
            unit: "zz".into(),
            suggestion: None,
        }
        .diagnostic(FILE);
        assert!(unknown.fix.is_none());
        assert!(unknown
            .help
            .as_deref()
            .is_some_and(|h| h.starts_with("units are `B` `KB`")));
        // The fix of a spaced unit joins the full number, even one the help cuts short.
        let long = "1".repeat(50);
        let spaced = LexProblem::SpacedUnit {
            span: span(0, 53),
            number: long.clone(),
            unit: "GB".into(),
        }
        .diagnostic(FILE);
        assert_eq!(spaced.fix.map(|f| f.replacement), Some(format!("{long}GB")));
        assert_eq!(
            spaced.help.as_deref(),
            Some(format!("write `{}…GB`", "1".repeat(40)).as_str())
        );
    }

    #[test]
    fn labels_and_helps_follow_the_typed_token_kind_and_hint() {
        let block = ParseProblem::ExpectedKey {
            span: span(2, 3),
            found: found(TokenKind::Lt, "<"),
        }
        .diagnostic(FILE);
        assert_eq!(
            parts(&block),
            (
                Code::E0001,
                "expected a key, found `<`",
                "this block has no key",
                None
            )
        );
        let list = ParseProblem::ExpectedKey {
            span: span(2, 3),
            found: found(TokenKind::LBracket, "["),
        }
        .diagnostic(FILE);
        assert_eq!(list.primary.message, "this list has no key");
        let key = ParseProblem::UnknownTopWord {
            span: span(0, 6),
            word: "hidden".into(),
            hint: TopHint::KeyOf(DefKind::Model),
        }
        .diagnostic(FILE);
        assert_eq!(
            key.help.as_deref(),
            Some("`hidden` is a key of `model` blocks: write it inside `model NAME < ... >`")
        );
        let eof = ParseProblem::MissingBlockOpen {
            span: span(0, 4),
            kind: DefKind::Plan,
            found: None,
            header: "plan p".into(),
        }
        .diagnostic(FILE);
        assert_eq!(
            eof.message,
            "expected `<` to open the `plan` block, found the end of input"
        );
        let list_open = ParseProblem::Unclosed {
            span: span(5, 6),
            opened: Opened::List,
            line: 3,
        }
        .diagnostic(FILE);
        assert_eq!(
            parts(&list_open),
            (
                Code::E0002,
                "unclosed list",
                "this `[` is never closed",
                Some("add `]` to close the list opened at line 3")
            )
        );
        let many = LexProblem::Stray {
            span: span(0, 2),
            text: "@@".into(),
            next: None,
        }
        .diagnostic(FILE);
        assert_eq!(
            parts(&many),
            (
                Code::E0001,
                "unexpected characters `@@`",
                "not part of the language",
                None
            )
        );
        let minus = LexProblem::Stray {
            span: span(0, 1),
            text: "-".into(),
            next: Some('4'),
        }
        .diagnostic(FILE);
        assert_eq!(
            minus.help.as_deref(),
            Some("values cannot be negative: remove the `-`")
        );
    }

    #[test]
    fn two_problems_of_one_code_at_one_span_keep_distinct_identities() {
        let colon = ParseProblem::ColonInBlock { span: span(2, 3) }.diagnostic(FILE);
        let separator = ParseProblem::SeparatorInList {
            span: span(2, 3),
            separator: ':',
        }
        .diagnostic(FILE);
        assert_eq!(
            (colon.code, colon.primary.loc),
            (separator.code, separator.primary.loc)
        );
        assert_ne!(colon.identity, separator.identity);
        assert!(!colon.is_same_problem(&separator));
        let again = ParseProblem::ColonInBlock { span: span(2, 3) }.diagnostic(FILE);
        assert!(colon.is_same_problem(&again));
    }

    #[test]
    fn parsing_reports_its_problems_with_their_identities() {
        let parsed = super::super::parse("model m <\n  hidden: 4096 450 GB/s\n", FILE);
        let codes: Vec<Code> = parsed.diagnostics.iter().map(|d| d.code).collect();
        assert_eq!(codes, [Code::E0002, Code::E0001, Code::E0003]);
        assert!(parsed.diagnostics.iter().all(|d| d.identity.is_some()));
        let (_, decoded) = super::super::decode(b"model \xff m", FILE);
        assert_eq!(decoded.len(), 1);
        assert!(decoded[0].identity.is_some());
    }
}
