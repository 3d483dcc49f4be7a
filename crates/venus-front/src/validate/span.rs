//! W0001: a tp, cp or ep group of consecutive ranks that reaches past the innermost cluster
//! dim onto a slower one.
//!
//! Input: the [`Validator`]'s group sizes and the cluster's dims. Output: [`PlanProblem`]s.
//! Invariants: groups follow Megatron's rank order; a group size an error already rejected is
//! skipped; the proposed size divides the GPUs of the dims inside and passes its own rule.

use super::problem::{DimSize, Group, GroupSpan, PlanProblem};
use super::{loc_of, Opt, Validator};

impl Validator<'_> {
    /// Index of the outermost dim a block of `span` consecutive, aligned ranks reaches.
    fn outermost_dim(&self, span: u64) -> usize {
        let dims = &self.def.cluster.dims;
        let mut prefix = 1u64;
        for (i, d) in dims.iter().enumerate() {
            prefix = prefix.saturating_mul(d.size.value);
            if prefix.is_multiple_of(span.max(1)) {
                return i;
            }
        }
        dims.len().saturating_sub(1)
    }

    /// Product of the sizes of the dims before `k`.
    fn inner_gpus(&self, k: usize) -> u64 {
        self.def
            .cluster
            .dims
            .iter()
            .take(k)
            .fold(1u64, |a, d| a.saturating_mul(d.size.value))
    }

    // Rank order tp-cp-ep-dp-pp (megatron/core/parallel_state.py:601-624, 465-557): tp groups are
    // blocks of tp consecutive ranks, cp groups live in blocks of tp·cp, expert ep groups in
    // blocks of etp·ep (etp defaults to tp).
    pub(super) fn check_group_spans(&mut self) {
        let p = &self.def.plan;
        let (tp, cp, ep) = (self.tp, self.cp, self.ep);
        let etp = self.etp();
        let groups: [(Group, u64, u64, &Opt<u64>); 3] = [
            (Group::Tp, tp, tp, &p.tp),
            (Group::Cp, cp, tp.saturating_mul(cp), &p.cp),
            (Group::Ep, ep, etp.saturating_mul(ep), &p.ep),
        ];
        let mut found = Vec::new();
        for (group, size, span, item) in groups {
            if size <= 1 || self.rejected.contains(&group.word()) {
                continue;
            }
            let etp_written = group == Group::Ep && p.etp.is_some();
            if etp_written && self.rejected.contains(&"etp") {
                continue;
            }
            let k = self.outermost_dim(span);
            if k == 0 {
                continue;
            }
            let dims = &self.def.cluster.dims;
            let (Some(outer), Some(inner)) = (dims.get(k), dims.first()) else {
                continue;
            };
            let fit = self.inner_gpus(k);
            // tp·x must divide `fit`, so x ≤ fit bounds the search.
            let best = (1..=size.min(fit)).rev().find(|&x| {
                let s = match group {
                    Group::Tp => x,
                    Group::Cp => tp.saturating_mul(x),
                    Group::Ep => etp.saturating_mul(x),
                };
                fit.is_multiple_of(s.max(1))
                    && match group {
                        Group::Tp => self.tp_ok(x),
                        Group::Ep => self.def.model.experts().is_multiple_of(x),
                        Group::Cp => self.seq.is_multiple_of(x.saturating_mul(2)) || x == 1,
                    }
            });
            let size_of = |d: &crate::ty::Dim| DimSize {
                name: d.name.value.clone(),
                size: d.size.value,
                loc: d.size.loc,
            };
            found.push(GroupSpan {
                group,
                size,
                span,
                tp: if etp_written { etp } else { tp },
                lead: if etp_written { "etp" } else { "tp" },
                primary: loc_of(item).unwrap_or(p.loc),
                outer: size_of(outer),
                inner: size_of(inner),
                inside: dims.iter().take(k).map(|d| d.name.value.clone()).collect(),
                fit,
                // tp 1 is no tp group: then only "keep tp groups inside" is said.
                keep: best.filter(|&x| x > 1 || group != Group::Tp),
                tp_loc: if etp_written {
                    loc_of(&p.etp)
                } else {
                    loc_of(&p.tp).filter(|_| group != Group::Tp)
                },
            });
        }
        for problem in found {
            self.report(PlanProblem::GroupSpan(problem));
        }
    }
}
