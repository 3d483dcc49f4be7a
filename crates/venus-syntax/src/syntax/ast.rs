//! The syntax tree of one `.venus` file.
//!
//! The tree is produced by [`super::parse`] and never fails to exist: malformed regions become
//! diagnostics and are skipped, so later stages see every well-formed item. Items are already
//! grouped (key + arguments) using the key table in [`super::schema`]; whether a key is known
//! for its block, and whether its arguments have the right types, is decided later (`ty`).
//! Every node carries a [`Span`] into its file.

use venus_diag::diag::Span;

/// A parsed file: its top-level declarations in source order.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct File {
    pub items: Vec<TopItem>,
    /// `#` comments with their spans, in source order (kept for the formatter).
    pub comments: Vec<Comment>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Comment {
    pub text: String,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum TopItem {
    Use(UseDecl),
    Def(Def),
}

/// `use "relative/path.venus"`
#[derive(Clone, Debug, PartialEq)]
pub struct UseDecl {
    pub path: String,
    /// The string literal, quotes included.
    pub path_span: Span,
    pub span: Span,
}

/// The kinds of top-level definition (and of inline blocks).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DefKind {
    Model,
    Gpu,
    Cluster,
    Plan,
    Scenario,
}

impl DefKind {
    pub const ALL: [DefKind; 5] = [
        DefKind::Model,
        DefKind::Gpu,
        DefKind::Cluster,
        DefKind::Plan,
        DefKind::Scenario,
    ];
    pub fn keyword(self) -> &'static str {
        match self {
            DefKind::Model => "model",
            DefKind::Gpu => "gpu",
            DefKind::Cluster => "cluster",
            DefKind::Plan => "plan",
            DefKind::Scenario => "scenario",
        }
    }
    pub fn from_keyword(word: &str) -> Option<DefKind> {
        DefKind::ALL.into_iter().find(|k| k.keyword() == word)
    }
}

/// `model NAME [: BASE] < items >` and the other kinds. `cluster` and `plan` may be unnamed.
#[derive(Clone, Debug, PartialEq)]
pub struct Def {
    pub kind: DefKind,
    pub kind_span: Span,
    pub name: Option<Ident>,
    pub base: Option<Ident>,
    pub body: Block,
    /// From the keyword to the closing `>`.
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Ident {
    pub text: String,
    pub span: Span,
}

/// `< items >`, or `NAME < items >` as a reference argument (an inline definition inheriting
/// `NAME`, merged like `: NAME`).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Block {
    pub items: Vec<Item>,
    /// The `NAME` of `NAME < items >`: only an inline block in a reference slot has one (a
    /// definition's base is [`Def::base`]).
    pub base: Option<Ident>,
    /// From `<` to `>` inclusive (to the end of input when unclosed).
    pub span: Span,
}

/// A key and its arguments: `dim nvlink fc 8 450GB/s 1000ns`, `swiglu`, `plan < ... >`.
#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    pub key: Ident,
    pub args: Vec<Value>,
    /// From the key to the end of its last argument.
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Value {
    pub kind: ValueKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ValueKind {
    /// `4096`, `4_096`, `1e-3`, `0.55`.
    Number(Number),
    /// A number with a unit written directly after it: `450GB/s`, `80GiB`, `55%`.
    /// The unit is kept as written; `ty` interprets it.
    Quantity {
        number: Number,
        unit: String,
        unit_span: Span,
    },
    /// A bare name: a reference (`h100_sxm`), an enum word (`ring`), a flag word.
    Name(String),
    /// `"..."` with escapes resolved.
    Str(String),
    /// `[1 2 4 8]` (sweeps).
    List(Vec<Value>),
    /// An inline block: `plan < pp 4 dp 4 >` as the argument of `plan` in a scenario, or
    /// `cluster dgx_h100 < nodes 4 >` (with [`Block::base`]); the value's span then starts at
    /// the name.
    Block(Block),
}

/// A numeric literal as written. Integers that do not fit `u64` are kept as `IntTooLarge` so
/// that `ty` can report E0202 with the literal's span instead of wrapping.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Number {
    Int(u64),
    IntTooLarge,
    Float(f64),
}

impl Number {
    pub fn as_f64(self) -> f64 {
        match self {
            Number::Int(i) => i as f64,
            Number::IntTooLarge => f64::INFINITY,
            Number::Float(f) => f,
        }
    }
}
