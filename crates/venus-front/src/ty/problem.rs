//! The problems the item checker (`ty::check`) finds, as typed values, and the one place they
//! become diagnostics.
//!
//! Input: what each rule of the checker detected (keys, names, locations, the texts of the
//! key table it quotes), and what typing one value found (`ty::value`: [`ValueProblem`], E0003,
//! E0201, E0202, E0204, W0002). Output: [`TyProblem::diagnostic`], with the codes, wording,
//! labels, helps and fixes users see. The rack-scale domain rules (`ty::domain::DomainProblem`)
//! are rendered by their module.
//! Invariant: a fix is computed from the typed value, never parsed back out of a help; every
//! diagnostic carries the problem's [`Identity`], which is what deduplication compares.

use venus_diag::diag::{Code, Diagnostic, Identity, Loc};

/// One problem of the item checker.
#[derive(Clone, Debug, PartialEq)]
pub enum TyProblem {
    /// E0103: a definition (after inheritance) lacks required keys; `examples` are their
    /// example items, in order.
    DefMissingKeys {
        what: String,
        keys: Vec<&'static str>,
        examples: Vec<String>,
        loc: Loc,
    },
    /// E0103: a block lacks a required key.
    MissingKey {
        what: String,
        key: &'static str,
        example: String,
        owner: Loc,
    },
    /// E0102: a key written twice in one block.
    WrittenTwice {
        key: &'static str,
        what: String,
        loc: Loc,
        first: Loc,
    },
    /// E0102: two dims of one name.
    DimWrittenTwice {
        name: String,
        what: String,
        loc: Loc,
        first: Loc,
    },
    /// E0203: the wrong number of arguments.
    ArgumentCount {
        key: &'static str,
        expected: String,
        found: usize,
        too_many: bool,
        at: Loc,
        signature: String,
        example: String,
    },
    /// One argument value that does not type (E0003, E0201, E0202, E0204) or types with a
    /// warning (W0002).
    Value(ValueProblem),
    /// E0201: a value of the wrong kind (`expected`: the type as messages describe it).
    WrongKind {
        expected: String,
        found: String,
        loc: Loc,
    },
    /// E0201: a flag followed by a value other than `on` / `off`.
    FlagWord {
        key: String,
        found: String,
        loc: Loc,
    },
    /// W0009: a GPU's memory written in decimal units.
    DecimalMemory {
        written: String,
        gib: f64,
        binary: String,
        loc: Loc,
    },
    /// E0101: a key the block kind does not have.
    UnknownKey {
        key: String,
        what: String,
        block: &'static str,
        loc: Loc,
        hint: KeyHint,
    },
    /// E0202: a fat tree whose leaves share no bandwidth.
    FatTreeWithoutUplinks { loc: Loc },
    /// E0104: a dim name the cluster does not have.
    UnknownDim {
        name: String,
        loc: Loc,
        hint: DimHint,
    },
}

/// What E0101 proposes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyHint {
    /// `allow W0001 W0002`: the second code was read as a key.
    AllowCode,
    /// The key Megatron-LM spells this way, and its flag.
    Megatron {
        key: &'static str,
        flag: &'static str,
    },
    /// The closest key.
    DidYouMean(&'static str),
    /// No key is close: the block's keys.
    Valid(Vec<&'static str>),
}

/// What E0104 for a dim proposes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DimHint {
    DidYouMean(String),
    /// The cluster's dims.
    Dims(Vec<String>),
}

fn ticked<S: AsRef<str>>(names: &[S]) -> String {
    names
        .iter()
        .map(|n| format!("`{}`", n.as_ref()))
        .collect::<Vec<_>>()
        .join(", ")
}

impl From<ValueProblem> for TyProblem {
    fn from(p: ValueProblem) -> TyProblem {
        TyProblem::Value(p)
    }
}

impl TyProblem {
    /// The diagnostic users see, carrying the problem's identity.
    pub fn diagnostic(self) -> Diagnostic {
        let identity = Identity::of(&self);
        self.render().with_identity(identity)
    }

    fn render(self) -> Diagnostic {
        match self {
            TyProblem::Value(p) => p.render(),
            TyProblem::DefMissingKeys {
                what,
                keys,
                examples,
                loc,
            } => {
                let names = ticked(&keys);
                let (noun, label) = if keys.len() == 1 {
                    ("key", format!("needs {names}"))
                } else {
                    ("keys", format!("needs {} keys", keys.len()))
                };
                Diagnostic::new(
                    Code::E0103,
                    format!("{what} is missing required {noun} {names}"),
                    loc,
                    label,
                )
                .with_help(format!(
                    "add `{}`, or check this file with the files that complete it (`venusc check DIR`)",
                    examples.join(" "),
                ))
            }
            TyProblem::MissingKey {
                what,
                key,
                example,
                owner,
            } => Diagnostic::new(
                Code::E0103,
                format!("{what} is missing required key `{key}`"),
                owner,
                format!("needs `{key}`"),
            )
            .with_help(format!("add `{example}`")),
            TyProblem::WrittenTwice {
                key,
                what,
                loc,
                first,
            } => Diagnostic::new(
                Code::E0102,
                format!("`{key}` is written twice in {what}"),
                loc,
                "written again here",
            )
            .with_secondary(first, "first written here")
            .with_help(format!("keep one `{key}`")),
            TyProblem::DimWrittenTwice {
                name,
                what,
                loc,
                first,
            } => Diagnostic::new(
                Code::E0102,
                format!("dim `{name}` is written twice in {what}"),
                loc,
                "written again here",
            )
            .with_secondary(first, "first written here")
            .with_help(
                "give each dim its own name; a dim with an inherited name replaces the inherited one",
            ),
            TyProblem::ArgumentCount {
                key,
                expected,
                found,
                too_many,
                at,
                signature,
                example,
            } => Diagnostic::new(
                Code::E0203,
                format!("`{key}` takes {expected}, found {found}"),
                at,
                if too_many {
                    "too many arguments"
                } else {
                    "too few arguments"
                },
            )
            .with_help(format!("write it as {signature}, e.g. `{example}`")),
            TyProblem::WrongKind {
                expected,
                found,
                loc,
            } => Diagnostic::new(
                Code::E0201,
                format!("expected {expected}, found {found}"),
                loc,
                "wrong kind of value",
            ),
            TyProblem::FlagWord { key, found, loc } => Diagnostic::new(
                Code::E0201,
                format!("expected `on` or `off` after the flag `{key}`, found {found}"),
                loc,
                "not a flag word",
            )
            .with_help(format!(
                "write `{key}` (or `{key} on`) to turn it on, `{key} off` to turn it off"
            )),
            TyProblem::DecimalMemory {
                written,
                gib,
                binary,
                loc,
            } => Diagnostic::new(
                Code::W0009,
                format!("`memory {written}` is {gib:.1} GiB (decimal, not binary, bytes)"),
                loc,
                "decimal bytes",
            )
            .with_help(format!(
                "GPU datasheets quote HBM in binary units: write `memory {binary}` for a card sold as {written}"
            )),
            TyProblem::UnknownKey {
                key,
                what,
                block,
                loc,
                hint,
            } => {
                let d = Diagnostic::new(
                    Code::E0101,
                    format!("unknown key `{key}` in {what}"),
                    loc,
                    format!("not a `{block}` key"),
                );
                match hint {
                    KeyHint::AllowCode => d
                        .with_help(format!("write `allow {key}`: each `allow` takes one code"))
                        .with_fix(loc, format!("allow {key}")),
                    KeyHint::Megatron { key: meant, flag } => d
                        .with_help(format!(
                            "did you mean `{meant}`? (Megatron-LM's `{flag}`)"
                        ))
                        .with_fix(loc, meant),
                    KeyHint::DidYouMean(s) => {
                        d.with_help(format!("did you mean `{s}`?")).with_fix(loc, s)
                    }
                    KeyHint::Valid(keys) => d.with_help(format!("valid keys: {}", ticked(&keys))),
                }
            }
            TyProblem::FatTreeWithoutUplinks { loc } => Diagnostic::new(
                Code::E0202,
                "a fat tree needs some bandwidth between its leaves",
                loc,
                "0% between leaves",
            )
            .with_help(
                "use the share of the leaves' bandwidth their uplinks carry, e.g. `50%` for 2:1 oversubscription",
            ),
            TyProblem::UnknownDim { name, loc, hint } => Diagnostic::new(
                Code::E0104,
                format!("unknown dim `{name}`"),
                loc,
                "no dim of this name in the cluster",
            )
            .with_help(match hint {
                DimHint::DidYouMean(s) => format!("did you mean `{s}`?"),
                DimHint::Dims(names) => format!("the cluster's dims are {}", ticked(&names)),
            }),
        }
    }
}

/// What typing one argument value (`ty::value::typed`) found wrong with it.
#[derive(Clone, Debug, PartialEq)]
pub enum ValueProblem {
    /// E0201: a list outside `venusc sweep`.
    List { key: String, loc: Loc },
    /// E0201: a value of the wrong kind for the key's argument; `takes` is the short noun of
    /// the label ("a bandwidth").
    WrongKind {
        key: String,
        expected: String,
        takes: String,
        found: String,
        loc: Loc,
        hint: Option<UnitHint>,
    },
    /// E0003: a unit the lexer knows (a count suffix) that no unit type has.
    UnknownUnit {
        unit: String,
        loc: Loc,
        help: UnitHelp,
    },
    /// E0003: a suffix of a large count other than K, M, B, T; `number` as written.
    NotCountSuffix {
        suffix: String,
        number: String,
        loc: Loc,
    },
    /// E0202: a plain ratio outside [0, 1]; `percent` when it reads as a percentage (1 to 100).
    RatioOutOfRange {
        text: String,
        percent: bool,
        loc: Loc,
    },
    /// E0202: a percentage outside [0%, 100%].
    PercentOutOfRange { text: String, loc: Loc },
    /// E0202: a ratio of 0 that divides a time.
    LastsForever {
        text: String,
        divisor: Divisor,
        loc: Loc,
    },
    /// E0202: a count of 0 where a count is at least 1.
    CountZero { key: String, loc: Loc },
    /// E0202: an integer above `u64::MAX`.
    CountTooLarge { text: String, loc: Loc },
    /// E0202: a count that is not a whole number; `near`: the whole numbers either side.
    NotWhole {
        text: String,
        key: String,
        near: Option<(u64, u64)>,
        loc: Loc,
    },
    /// E0202: a suffixed count outside 1 to 9e15 or not whole; `rounded`: the nearest count.
    LargeCountOutOfRange {
        text: String,
        key: String,
        rounded: Option<u64>,
        loc: Loc,
    },
    /// E0202: a number too large to be meaningful (not finite, or after its unit's factor).
    TooLarge {
        text: String,
        of: Positive,
        loc: Loc,
    },
    /// E0202: zero or below where only a positive value makes sense.
    NotPositive {
        text: String,
        of: Positive,
        loc: Loc,
    },
    /// E0202: bytes at or above 16 EiB.
    BytesTooLarge { text: String, loc: Loc },
    /// E0202: a negative time.
    NegativeTime { text: String, loc: Loc },
    /// E0204: a word that is not one of the enum's words; `noun` is what they are called.
    UnknownWord {
        word: String,
        noun: &'static str,
        words: &'static [&'static str],
        hint: WordHint,
        loc: Loc,
    },
    /// W0002: a bandwidth written in bits; `bytes` is it in bytes, `typo` the byte unit spelt
    /// with the same letters.
    BitRate {
        text: String,
        bytes: String,
        typo: String,
        loc: Loc,
    },
}

/// The unit a bare number of the wrong kind lacks; `number` as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UnitHint {
    Bytes {
        number: String,
    },
    Bandwidth {
        number: String,
    },
    Time {
        number: String,
    },
    Rate {
        number: String,
    },
    /// A byte quantity where a bandwidth goes: the same unit per second.
    PerSecond {
        number: String,
        unit: String,
    },
    /// A quantity where a count goes.
    NoUnit {
        number: String,
    },
}

/// What E0003 for a unit proposes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UnitHelp {
    /// The closest unit (edit distance, else the same letters in another case).
    DidYouMean { number: String, unit: &'static str },
    /// No unit is close: the type as messages describe it.
    Expected(String),
}

/// What E0204 proposes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WordHint {
    DidYouMean(&'static str),
    /// No word is close: the list.
    OneOf,
    /// A flag followed by a word like `yes`: how the flag is written.
    FlagOnOff {
        key: String,
    },
}

/// A ratio of 0 that would make a duration infinite.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Divisor {
    /// `mfu`: a node takes FLOPs / (peak × mfu).
    Mfu,
    /// A `dim`'s efficiency: a transfer takes bytes / (bandwidth × efficiency).
    DimEfficiency,
}

/// What a positive number is, for the help of E0202.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Positive {
    Quantity,
    /// A GPU-hour price (`price 2.5`).
    Price,
}

impl ValueProblem {
    fn render(self) -> Diagnostic {
        match self {
            ValueProblem::List { key, loc } => Diagnostic::new(
                Code::E0201,
                "lists are only allowed in `venusc sweep`",
                loc,
                "a list of values",
            )
            .with_help(format!(
                "write one value for `{key}` here, or run `venusc sweep` to try each"
            )),
            ValueProblem::WrongKind {
                key,
                expected,
                takes,
                found,
                loc,
                hint,
            } => {
                let d = Diagnostic::new(
                    Code::E0201,
                    format!("expected {expected}, found {found}"),
                    loc,
                    format!("`{key}` takes {takes}"),
                );
                match hint {
                    None => d,
                    Some(hint) => d.with_help(unit_hint(hint)),
                }
            }
            ValueProblem::UnknownUnit { unit, loc, help } => Diagnostic::new(
                Code::E0003,
                format!("unknown unit `{unit}`"),
                loc,
                "not a unit",
            )
            .with_help(match help {
                UnitHelp::DidYouMean { number, unit } => {
                    format!("did you mean `{number}{unit}`? units are case-sensitive")
                }
                UnitHelp::Expected(ty) => format!("expected {ty}"),
            }),
            ValueProblem::NotCountSuffix {
                suffix,
                number,
                loc,
            } => {
                let list = crate::ty::value::COUNT_SUFFIXES
                    .iter()
                    .map(|(s, _)| format!("`{number}{s}`"))
                    .collect::<Vec<_>>()
                    .join(", ");
                Diagnostic::new(
                    Code::E0003,
                    format!("`{suffix}` is not a count suffix"),
                    loc,
                    "not K, M, B or T",
                )
                .with_help(format!("write one of {list}, or the bare count"))
            }
            ValueProblem::RatioOutOfRange { text, percent, loc } => out_of_range(
                loc,
                format!("`{text}` is out of range: a ratio is between 0 and 1"),
                "outside [0, 1]",
            )
            .with_help(if percent {
                format!("write `{text}%` for a percentage")
            } else {
                "write a fraction such as `0.55` or a percentage such as `55%`".into()
            }),
            ValueProblem::PercentOutOfRange { text, loc } => out_of_range(
                loc,
                format!("`{text}` is out of range: a ratio is between 0% and 100%"),
                "outside [0%, 100%]",
            ),
            ValueProblem::LastsForever { text, divisor, loc } => {
                let (what, help) = match divisor {
                    Divisor::Mfu => (
                        "every compute node would last forever",
                        "write the measured MFU (such as `mfu 40%`), or remove `mfu` for the simulator's own compute model",
                    ),
                    Divisor::DimEfficiency => (
                        "every transfer on this dim would last forever",
                        "write the dim's measured efficiency (such as `80%`), or leave it out for 100%",
                    ),
                };
                out_of_range(
                    loc,
                    format!("`{text}` is out of range: {what}"),
                    "must be above 0",
                )
                .with_help(help)
            }
            ValueProblem::CountZero { key, loc } => out_of_range(
                loc,
                format!("`{key}` must be at least 1, found `0`"),
                "zero",
            )
            .with_help(format!(
                "a count is 1 or more; leave `{key}` out to use its default"
            )),
            ValueProblem::CountTooLarge { text, loc } => out_of_range(
                loc,
                format!("`{text}` is too large for a count (at most {})", u64::MAX),
                "too large",
            ),
            ValueProblem::NotWhole {
                text,
                key,
                near,
                loc,
            } => {
                let d = out_of_range(
                    loc,
                    format!("`{text}` is not a whole number: `{key}` takes a count of 1 or more"),
                    "not a whole number",
                );
                match near {
                    Some((below, above)) => d.with_help(format!("write `{below}` or `{above}`")),
                    None => d,
                }
            }
            ValueProblem::LargeCountOutOfRange {
                text,
                key,
                rounded,
                loc,
            } => out_of_range(
                loc,
                format!("`{text}` is not a whole count of 1 to 9e15: `{key}` takes a count"),
                "out of range",
            )
            .with_help(match rounded {
                Some(n) => format!("write `{n}`"),
                None => "write a count such as `15T` or `300B`".to_string(),
            }),
            ValueProblem::TooLarge { text, of, loc } => positive_help(
                out_of_range(
                    loc,
                    format!("`{text}` is too large to be meaningful"),
                    "too large",
                ),
                of,
            ),
            ValueProblem::NotPositive { text, of, loc } => positive_help(
                out_of_range(loc, format!("`{text}` must be greater than zero"), "zero"),
                of,
            ),
            ValueProblem::BytesTooLarge { text, loc } => out_of_range(
                loc,
                format!("`{text}` is too large: bytes must be below 16EiB"),
                "too large",
            ),
            ValueProblem::NegativeTime { text, loc } => {
                out_of_range(loc, format!("`{text}` must not be negative"), "negative")
            }
            ValueProblem::UnknownWord {
                word,
                noun,
                words,
                hint,
                loc,
            } => {
                let d = Diagnostic::new(
                    Code::E0204,
                    format!("unknown {noun} `{word}`"),
                    loc,
                    format!("not a {noun}"),
                );
                let list = ticked(words);
                d.with_help(match hint {
                    WordHint::DidYouMean(s) => format!("did you mean `{s}`? (one of {list})"),
                    WordHint::OneOf => format!("expected one of {list}"),
                    WordHint::FlagOnOff { key } => format!(
                        "write `{key}` (or `{key} on`) to turn it on, `{key} off` to turn it off"
                    ),
                })
            }
            ValueProblem::BitRate {
                text,
                bytes,
                typo,
                loc,
            } => Diagnostic::new(
                Code::W0002,
                format!("`{text}` is {bytes} (bits, not bytes)"),
                loc,
                "a bit rate",
            )
            .with_help(format!(
                "write `{bytes}` to state the bandwidth in bytes per second (or `{typo}` if bytes were meant)"
            )),
        }
    }
}

fn out_of_range(loc: Loc, message: String, label: &str) -> Diagnostic {
    Diagnostic::new(Code::E0202, message, loc, label)
}

fn positive_help(d: Diagnostic, of: Positive) -> Diagnostic {
    match of {
        Positive::Quantity => d,
        Positive::Price => d.with_help("write the price of one GPU-hour in dollars, such as `2.5`"),
    }
}

fn unit_hint(hint: UnitHint) -> String {
    match hint {
        UnitHint::Bytes { number: n } => format!("add a unit: `{n}GiB` or `{n}GB`"),
        UnitHint::Bandwidth { number: n } => format!("add a unit: `{n}GB/s`"),
        UnitHint::Time { number: n } => format!("add a unit: `{n}ns`, `{n}us` or `{n}ms`"),
        UnitHint::Rate { number: n } => format!("add a unit: `{n}TFLOP/s`"),
        UnitHint::PerSecond { number, unit } => {
            format!("a bandwidth is per second: `{number}{unit}/s`")
        }
        UnitHint::NoUnit { number } => format!("a count has no unit: `{number}`"),
    }
}
