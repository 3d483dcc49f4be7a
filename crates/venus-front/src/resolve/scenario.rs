//! Which scenarios the root file defines: its `scenario` blocks, or the implicit one.
//!
//! Only the root file's scenarios run (a `use`d file contributes definitions, not runs). A root
//! file without `scenario` blocks that has exactly one model, one cluster and one plan of its
//! own has an implicit scenario named after the file's stem; otherwise E0108 says what is
//! missing or ambiguous and shows a `scenario` block to add.

use super::{file_start, DefEntry, DefId, Resolver};
use venus_diag::diag::{Diagnostic, Loc};
use venus_syntax::syntax::ast::DefKind;

/// A scenario to type-check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScenarioSource {
    /// A `scenario NAME < ... >` block of the root file.
    Explicit(DefId),
    /// The root file's one model, cluster and plan.
    Implicit {
        name: String,
        loc: Loc,
        model: DefId,
        cluster: DefId,
        plan: DefId,
    },
}

impl Resolver<'_> {
    fn root_defs(&self, kind: DefKind) -> Vec<&DefEntry> {
        self.index(self.root()).map_or_else(Vec::new, |i| {
            i.defs.iter().filter(|d| d.kind == kind).collect()
        })
    }

    /// The implicit scenario, when the root file qualifies for one.
    pub fn implicit_scenario(&self) -> Option<ScenarioSource> {
        if !self.root_defs(DefKind::Scenario).is_empty() {
            return None;
        }
        let (m, c, p) = (
            self.root_defs(DefKind::Model),
            self.root_defs(DefKind::Cluster),
            self.root_defs(DefKind::Plan),
        );
        match (m.as_slice(), c.as_slice(), p.as_slice()) {
            ([m], [c], [p]) => Some(ScenarioSource::Implicit {
                name: self.file(self.root())?.stem(),
                loc: m.name_loc,
                model: m.id,
                cluster: c.id,
                plan: p.id,
            }),
            _ => None,
        }
    }

    /// The name and location of each scenario of the root (explicit or implicit).
    pub fn scenario_names(&self) -> Vec<(String, Loc)> {
        if let Some(ScenarioSource::Implicit { name, loc, .. }) = self.implicit_scenario() {
            return vec![(name, loc)];
        }
        self.root_defs(DefKind::Scenario)
            .iter()
            .map(|d| {
                (
                    d.name.clone().unwrap_or_else(|| "scenario".into()),
                    d.name_loc,
                )
            })
            .collect()
    }

    /// The root's scenarios in source order; E0108 when there is none.
    pub fn scenarios(&self) -> Vec<ScenarioSource> {
        let explicit = self.root_defs(DefKind::Scenario);
        if !explicit.is_empty() {
            return explicit
                .iter()
                .map(|d| ScenarioSource::Explicit(d.id))
                .collect();
        }
        if let Some(s) = self.implicit_scenario() {
            return vec![s];
        }
        let d = self.no_scenario();
        if self.is_library() {
            *self.no_scenario.borrow_mut() = Some(d);
        } else {
            self.report(d);
        }
        Vec::new()
    }

    /// A root with definitions and no scenario is a library meant to be `use`d: checking it
    /// checks every definition, and only running it is an error (E0108 at selection).
    fn is_library(&self) -> bool {
        self.indexes
            .get(&self.root())
            .is_some_and(|index| !index.defs.is_empty())
    }

    /// The E0108 a library root keeps for selection ([`Self::scenarios`]).
    pub fn take_no_scenario(&self) -> Option<Diagnostic> {
        self.no_scenario.borrow_mut().take()
    }

    /// E0108: why the root has no implicit scenario, and a `scenario` block that would run.
    fn no_scenario(&self) -> Diagnostic {
        let file = self.file(self.root()).map(|f| f.name.clone());
        let defs = [DefKind::Model, DefKind::Cluster, DefKind::Plan].map(|kind| {
            let locs = self.root_defs(kind).iter().map(|d| d.name_loc).collect();
            (kind, locs)
        });
        let pick = |kind: DefKind, example: &str| {
            self.root_defs(kind)
                .iter()
                .find_map(|d| d.name.clone())
                .unwrap_or_else(|| example.to_string())
        };
        let (m, c, p) = (
            pick(DefKind::Model, "llama2_7b"),
            pick(DefKind::Cluster, "dgx_h100"),
            pick(DefKind::Plan, "< micro_batch 1 global_batch 64 >"),
        );
        super::problem::ResolveProblem::NoScenario {
            file,
            defs,
            start: file_start(self.root()),
            pick: [m, c, p],
        }
        .diagnostic()
    }
}
