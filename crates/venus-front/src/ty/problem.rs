//! The problems the item checker (`ty::check`) finds, as typed values, and the one place they
//! become diagnostics.
//!
//! Input: what each rule of the checker detected (keys, names, locations, the texts of the
//! key table it quotes). Output: [`TyProblem::diagnostic`], with the codes, wording, labels,
//! helps and fixes users see. The values' own errors (`ty::value`: E0201, E0202, E0204, W0002)
//! and the rack-scale domain rules (`ty::domain::DomainProblem`) are rendered by their modules.
//! Invariant: a fix is computed from the typed value, never parsed back out of a help.

use venus_diag::diag::{Code, Diagnostic, Loc};

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
    /// E0201: a list outside `venusc sweep`.
    List { key: String, loc: Loc },
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

impl TyProblem {
    /// The diagnostic users see.
    pub fn diagnostic(self) -> Diagnostic {
        match self {
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
            TyProblem::List { key, loc } => Diagnostic::new(
                Code::E0201,
                "lists are only allowed in `venusc sweep`",
                loc,
                "a list of values",
            )
            .with_help(format!(
                "write one value for `{key}` here, or run `venusc sweep` to try each"
            )),
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
