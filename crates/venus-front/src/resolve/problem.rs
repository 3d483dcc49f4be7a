//! The problems resolution finds, as typed values, and the one place they become diagnostics.
//!
//! Input: what each rule of `resolve` detected (names, kinds, locations, the file names and
//! text excerpts it needs). Output: [`ResolveProblem::diagnostic`], the E0104–E0109 and W0004
//! diagnostics with their wording, labels, helps and fixes.
//! Invariant: nothing in `resolve` builds a `Diagnostic` elsewhere or decides by reading one's
//! text: the rename fix of E0104 comes from the typed [`UnknownHelp::DidYouMean`].

use venus_diag::diag::{Code, Diagnostic, Identity, Loc};
use venus_syntax::syntax::ast::DefKind;

/// One problem of resolution.
#[derive(Clone, Debug, PartialEq)]
pub enum ResolveProblem {
    /// E0106: a name defined twice in one file (`loc`: the second, `first`: the first).
    DefinedTwiceInFile {
        kind: DefKind,
        name: String,
        loc: Loc,
        first: Loc,
    },
    /// E0106: a name defined twice across the stdlib's files.
    DefinedTwiceInStdlib {
        kind: DefKind,
        name: String,
        loc: Loc,
        first: Loc,
    },
    /// E0106: a name two `use`d files both define; `defs`: each definition and its file.
    Ambiguous {
        kind: DefKind,
        name: String,
        at: Loc,
        files: [String; 2],
        defs: Vec<(Loc, String)>,
    },
    /// E0104: a name no definition in scope has.
    UnknownReference {
        kind: DefKind,
        name: String,
        at: Loc,
        help: UnknownHelp,
    },
    /// E0105: an inheritance cycle: `first` inherits from `base` at `primary`; `rest`: each
    /// further definition of the cycle in order, with the location of its `: BASE`, its name
    /// and the name it inherits from.
    InheritanceCycle {
        kind: &'static str,
        first: String,
        base: String,
        primary: Loc,
        rest: Vec<(Option<Loc>, String, String)>,
    },
    /// E0107 or E0109: a `use` the driver did not give (`code` is the reader's).
    UnreadableUse {
        code: Code,
        path: String,
        loc: Loc,
        reason: String,
        /// The reader's fix; `None`: check the path relative to `from`.
        help: Option<String>,
        from: String,
    },
    /// E0107: a `use`d file with syntax errors, shown as its first error's position, message
    /// and line (each already escaped and cut to a short excerpt).
    BrokenUse {
        path: String,
        loc: Loc,
        name: String,
        first_error: Option<FirstError>,
    },
    /// E0108: the root has no scenario to run. `file`: the root's name, when it has one;
    /// `defs`: where the root names each model, cluster and plan (the kinds in that order);
    /// `start`: the file's start, the primary when no kind is defined twice.
    NoScenario {
        file: Option<String>,
        defs: [(DefKind, Vec<Loc>); 3],
        start: Loc,
        /// The model, cluster and plan the suggested `scenario` block names.
        pick: [String; 3],
    },
    /// E0108: `--scenario NAME` names no scenario of the root; `nearest`: the closest name;
    /// `names`: every scenario's name, in source order.
    UnknownScenario {
        name: String,
        nearest: Option<String>,
        names: Vec<String>,
        loc: Loc,
    },
    /// E0108: several scenarios (each name and where, in source order) and no `--scenario`.
    NoneChosen { scenarios: Vec<(String, Loc)> },
    /// W0004: a definition no scenario uses.
    Unused {
        kind: DefKind,
        name: Option<String>,
        loc: Loc,
    },
}

/// Where a used file's first syntax error is, for E0107's notes.
#[derive(Clone, Debug, PartialEq)]
pub struct FirstError {
    pub line: usize,
    pub column: usize,
    pub message: String,
    pub shown: String,
}

/// The help of E0104, by what is in scope.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UnknownHelp {
    /// A name in scope close to the one written: the help and the rename fix.
    DidYouMean(String),
    /// The name is a definition of another kind.
    OtherKind(DefKind),
    /// Nothing of the kind is in scope.
    Define,
    /// Some names of the kind in scope (at most six), `more` when there are others.
    DefineOrUse { names: Vec<String>, more: bool },
}

impl UnknownHelp {
    /// The name the help proposes to write instead, if any.
    pub fn suggestion(&self) -> Option<&str> {
        match self {
            UnknownHelp::DidYouMean(s) => Some(s),
            _ => None,
        }
    }

    fn text(&self, kind: DefKind, name: &str) -> String {
        let kw = kind.keyword();
        match self {
            UnknownHelp::DidYouMean(s) => format!("did you mean `{s}`?"),
            UnknownHelp::OtherKind(k) => format!("`{name}` is a {}, not a {kw}", k.keyword()),
            UnknownHelp::Define => format!("define it: `{kw} {name} < ... >`"),
            UnknownHelp::DefineOrUse { names, more } => {
                let some: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
                format!(
                    "define `{kw} {name} < ... >`, or use one of {}{}",
                    some.join(", "),
                    if *more { ", ..." } else { "" }
                )
            }
        }
    }
}

impl ResolveProblem {
    /// The diagnostic users see, carrying the problem's identity.
    pub fn diagnostic(self) -> Diagnostic {
        let identity = Identity::of(&self);
        self.render().with_identity(identity)
    }

    fn render(self) -> Diagnostic {
        match self {
            ResolveProblem::DefinedTwiceInFile {
                kind,
                name,
                loc,
                first,
            } => {
                let kw = kind.keyword();
                Diagnostic::new(
                    Code::E0106,
                    format!("{kw} `{name}` is defined twice in this file"),
                    loc,
                    format!("second {kw} `{name}`"),
                )
                .with_secondary(first, "first defined here")
                .with_help(format!(
                    "rename one of them, or merge their items into one `{kw} {name} < ... >`"
                ))
            }
            ResolveProblem::DefinedTwiceInStdlib {
                kind,
                name,
                loc,
                first,
            } => Diagnostic::new(
                Code::E0106,
                format!(
                    "{} `{}` is defined twice in the stdlib",
                    kind.keyword(),
                    name
                ),
                loc,
                "second definition",
            )
            .with_secondary(first, "first defined here"),
            ResolveProblem::Ambiguous {
                kind,
                name,
                at,
                files: [fa, fb],
                defs,
            } => {
                let kw = kind.keyword();
                let mut d = Diagnostic::new(
                    Code::E0106,
                    format!("{kw} `{name}` is defined by both `{fa}` and `{fb}`"),
                    at,
                    "ambiguous name",
                )
                .with_help(format!(
                    "define `{name}` in this file to choose, or rename one of them"
                ));
                for (loc, file) in defs {
                    d = d.with_secondary(loc, format!("defined in `{file}`"));
                }
                d
            }
            ResolveProblem::UnknownReference {
                kind,
                name,
                at,
                help,
            } => {
                let kw = kind.keyword();
                let d = Diagnostic::new(
                    Code::E0104,
                    format!("unknown {kw} `{name}`"),
                    at,
                    format!("no {kw} named `{name}` in scope"),
                )
                .with_help(help.text(kind, &name));
                match help.suggestion() {
                    Some(s) => d.with_fix(at, s.to_string()),
                    None => d,
                }
            }
            ResolveProblem::InheritanceCycle {
                kind,
                first,
                base,
                primary,
                rest,
            } => {
                let mut path = vec![format!("`{first}`")];
                path.extend(rest.iter().map(|l| format!("`{}`", l.1)));
                path.push(format!("`{first}`"));
                let mut d = Diagnostic::new(
                    Code::E0105,
                    format!("inheritance cycle: {kind} {}", path.join(" → ")),
                    primary,
                    format!("`{first}` inherits from `{base}`"),
                );
                for (loc, link, next) in &rest {
                    if let Some(loc) = loc {
                        d = d.with_secondary(*loc, format!("`{link}` inherits from `{next}`"));
                    }
                }
                d.with_help(format!(
                    "remove the `: {base}` of `{first}` to break the cycle"
                ))
            }
            ResolveProblem::UnreadableUse {
                code,
                path,
                loc,
                reason,
                help,
                from,
            } => {
                let message = match code {
                    Code::E0109 => format!("`use` of `{path}` outside the project root"),
                    _ => format!("cannot read `{path}`: {reason}"),
                };
                let mut d = Diagnostic::new(code, message, loc, "used here");
                if code == Code::E0109 {
                    d = d.with_note(reason);
                }
                d.with_help(help.unwrap_or_else(|| {
                    format!("the path is relative to `{from}`; check that the file exists")
                }))
            }
            ResolveProblem::BrokenUse {
                path,
                loc,
                name,
                first_error,
            } => {
                let mut d = Diagnostic::new(
                    Code::E0107,
                    format!("`{path}` has syntax errors"),
                    loc,
                    "used here",
                );
                if let Some(e) = first_error {
                    d = d
                        .with_note(format!(
                            "first error, at {name}:{}:{}: {}",
                            e.line, e.column, e.message
                        ))
                        .with_note(format!("{} | {}", e.line, e.shown));
                }
                d.with_help(format!(
                    "fix `{name}`: `venusc check {name}` shows all of its errors"
                ))
            }
            ResolveProblem::NoScenario {
                file,
                defs,
                start,
                pick,
            } => no_scenario(file.as_deref(), &defs, start, &pick),
            ResolveProblem::UnknownScenario {
                name,
                nearest,
                names,
                loc,
            } => Diagnostic::new(
                Code::E0108,
                format!("no scenario named `{name}`"),
                loc,
                "in this file",
            )
            .with_help(match nearest {
                Some(s) => format!("did you mean `{s}`?"),
                None if names.is_empty() => "this file has no scenario".to_string(),
                None => format!("the scenarios are {}", code_list(&names)),
            }),
            ResolveProblem::NoneChosen { scenarios } => none_chosen(&scenarios),
            ResolveProblem::Unused { kind, name, loc } => {
                let kw = kind.keyword();
                let what = name
                    .as_ref()
                    .map_or_else(|| format!("this {kw}"), |n| format!("{kw} `{n}`"));
                Diagnostic::new(
                    Code::W0004,
                    format!("{what} is never used"),
                    loc,
                    "defined here",
                )
                .with_help(match &name {
                    Some(n) => {
                        format!("reference it from a `scenario` (`{kw} {n}`), or remove it")
                    }
                    None => format!(
                        "name it (`{kw} NAME < ... >`) and reference it from a `scenario` (`{kw} NAME`), or remove it"
                    ),
                })
            }
        }
    }
}

/// E0108 for a root without a scenario: what it defines (`no model`, `2 plans`), at the
/// second definition of the first kind defined twice, every other one of those a secondary.
fn no_scenario(
    file: Option<&str>,
    defs: &[(DefKind, Vec<Loc>)],
    start: Loc,
    [m, c, p]: &[String; 3],
) -> Diagnostic {
    let file_name = file.map_or_else(|| "this file".into(), |f| format!("`{f}`"));
    let mut counts = Vec::new();
    let mut primary = None;
    let mut secondary = Vec::new();
    for (kind, locs) in defs {
        let kw = kind.keyword();
        match locs.len() {
            0 => counts.push(format!("no {kw}")),
            1 => {}
            n => {
                counts.push(format!("{n} {kw}s"));
                for (i, loc) in locs.iter().enumerate() {
                    let label = format!("{kw} {} of {n}", i + 1);
                    if primary.is_none() && i == 1 {
                        primary = Some((*loc, label));
                    } else {
                        secondary.push((*loc, label));
                    }
                }
            }
        }
    }
    let message = format!(
        "no scenario to run: {file_name} has {} and no `scenario` block",
        counts.join(", ")
    );
    let (loc, label) = primary.unwrap_or_else(|| (start, "no scenario in this file".into()));
    let mut d = Diagnostic::new(Code::E0108, message, loc, label);
    for (l, m) in secondary {
        d = d.with_secondary(l, m);
    }
    d.with_help(format!(
        "add a scenario naming the run, e.g. `scenario main < model {m} cluster {c} plan {p} >`"
    ))
}

/// `names` as the E0108 helps list them: each in backquotes, comma-separated.
fn code_list(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// E0108 for two or more scenarios and no choice: at the second, each other one a secondary.
fn none_chosen(scenarios: &[(String, Loc)]) -> Diagnostic {
    let names: Vec<String> = scenarios.iter().map(|(n, _)| n.clone()).collect();
    let second = scenarios[1].1;
    let mut d = Diagnostic::new(
        Code::E0108,
        format!("{} scenarios and none chosen", scenarios.len()),
        second,
        "second scenario",
    )
    .with_help(format!(
        "pass `--scenario {}` (one of {})",
        names[0],
        code_list(&names)
    ));
    for (n, loc) in scenarios.iter().filter(|(_, l)| *l != second) {
        d = d.with_secondary(*loc, format!("scenario `{n}`"));
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use venus_diag::diag::{FileId, Span};

    fn at(start: usize) -> Loc {
        Loc::new(FileId(0), Span::new(start, start + 1))
    }

    #[test]
    fn no_scenario_counts_the_kinds_and_points_at_the_second_of_a_pair() {
        let d = ResolveProblem::NoScenario {
            file: Some("main.venus".into()),
            defs: [
                (DefKind::Model, vec![at(0), at(30)]),
                (DefKind::Cluster, vec![at(60)]),
                (DefKind::Plan, vec![]),
            ],
            start: at(0),
            pick: [
                "a".into(),
                "c".into(),
                "< micro_batch 1 global_batch 64 >".into(),
            ],
        }
        .diagnostic();
        assert_eq!(
            (d.code, d.message.as_str(), d.primary.message.as_str()),
            (
                Code::E0108,
                "no scenario to run: `main.venus` has 2 models, no plan and no `scenario` block",
                "model 2 of 2"
            )
        );
        assert_eq!(d.primary.loc, at(30));
        assert_eq!(d.secondary.len(), 1);
        assert_eq!(
            (d.secondary[0].loc, d.secondary[0].message.as_str()),
            (at(0), "model 1 of 2")
        );
        assert_eq!(
            d.help.as_deref(),
            Some("add a scenario naming the run, e.g. `scenario main < model a cluster c plan < micro_batch 1 global_batch 64 > >`")
        );
        let empty = ResolveProblem::NoScenario {
            file: None,
            defs: [
                (DefKind::Model, vec![]),
                (DefKind::Cluster, vec![]),
                (DefKind::Plan, vec![]),
            ],
            start: at(0),
            pick: ["m".into(), "c".into(), "p".into()],
        }
        .diagnostic();
        assert_eq!(
            (empty.message.as_str(), empty.primary.message.as_str()),
            (
                "no scenario to run: this file has no model, no cluster, no plan and no `scenario` block",
                "no scenario in this file"
            )
        );
    }

    #[test]
    fn an_unknown_scenario_suggests_the_nearest_or_lists_them() {
        let unknown = |nearest: Option<&str>, names: &[&str]| {
            ResolveProblem::UnknownScenario {
                name: "u".into(),
                nearest: nearest.map(str::to_string),
                names: names.iter().map(|n| n.to_string()).collect(),
                loc: at(0),
            }
            .diagnostic()
        };
        let d = unknown(Some("s"), &["s", "t"]);
        assert_eq!(
            (d.code, d.message.as_str(), d.primary.message.as_str()),
            (Code::E0108, "no scenario named `u`", "in this file")
        );
        assert_eq!(d.help.as_deref(), Some("did you mean `s`?"));
        let d = unknown(None, &["long_a", "long_b"]);
        assert_eq!(
            d.help.as_deref(),
            Some("the scenarios are `long_a`, `long_b`")
        );
        let d = unknown(None, &[]);
        assert_eq!(d.help.as_deref(), Some("this file has no scenario"));
    }

    #[test]
    fn scenarios_none_chosen_point_at_the_second_and_list_the_rest() {
        let d = ResolveProblem::NoneChosen {
            scenarios: vec![
                ("s".into(), at(0)),
                ("t".into(), at(9)),
                ("u".into(), at(20)),
            ],
        }
        .diagnostic();
        assert_eq!(
            (d.code, d.message.as_str(), d.primary.message.as_str()),
            (
                Code::E0108,
                "3 scenarios and none chosen",
                "second scenario"
            )
        );
        assert_eq!(d.primary.loc, at(9));
        assert_eq!(
            d.help.as_deref(),
            Some("pass `--scenario s` (one of `s`, `t`, `u`)")
        );
        let secondary: Vec<(Loc, &str)> = d
            .secondary
            .iter()
            .map(|l| (l.loc, l.message.as_str()))
            .collect();
        assert_eq!(
            secondary,
            [(at(0), "scenario `s`"), (at(20), "scenario `u`")]
        );
    }
}
