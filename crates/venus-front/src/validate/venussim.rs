//! The rule on the plan's `venussim` items: E0355 (a field venusc cannot keep).
//!
//! Input: the plan's `venussim "SECTION.FIELD" "JSON"` items. Output: one [`PlanProblem`] per
//! item that `venus_plan::plan::venussim::field` refuses. The fields never reach the
//! simulation; `emit::venussim` writes them back.

use super::problem::{PlanProblem, VenusSimFieldProblem};
use super::Validator;
use venus_plan::plan::venussim;

impl Validator<'_> {
    /// E0355.
    pub(super) fn check_venussim_fields(&mut self) {
        let problems: Vec<PlanProblem> = self
            .def
            .plan
            .venussim
            .iter()
            .filter_map(|item| {
                let problem = venussim::field(&item.path.value, &item.json.value).err()?;
                let loc = match problem {
                    venussim::FieldProblem::Json { .. } => item.json.loc,
                    _ => item.path.loc,
                };
                Some(PlanProblem::VenusSimField(VenusSimFieldProblem {
                    path: item.path.value.clone(),
                    problem,
                    value: item.json.value.clone(),
                    loc,
                }))
            })
            .collect();
        for p in problems {
            self.report(p);
        }
    }
}
