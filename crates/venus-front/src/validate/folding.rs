//! Parallel folding and the communication variants: the expert tensor-parallel size (`etp`,
//! E0342), the MoE token dispatcher (`moe_dispatcher`, E0343), the context-parallel exchange
//! (`cp_comm`, E0344, E0345) and W0020 for any of the three where it changes nothing.
//!
//! Input: the [`Validator`]'s plan sizes, the model's heads, experts and expert ffn, the plan's
//! `etp`, `moe_dispatcher` and `cp_comm` items. Output: [`PlanProblem`]s. Rules follow
//! NVIDIA/Megatron-LM at d98e8a64ddf3 and NVIDIA/TransformerEngine at d0067d0da6cb (the CP
//! kernels); each cites its line.
//! Invariant: [`Validator::etp`] is the one expert tensor-parallel size every rule (E0309's
//! expert grid included) and the scenario use.

use super::problem::{
    CpA2aHeads, CpHierarchy, CpHierarchyIssue, DispatcherIssue, DispatcherProblem, EtpIssue,
    EtpProblem, NoEffect, PlanProblem, Setting,
};
use super::{divisors, loc_of, nearest, Validator};
use venus_base::base::{CpComm, MoeDispatcher};

impl Validator<'_> {
    /// The expert tensor-parallel size: `etp` as written, else tp (megatron/training/
    /// arguments.py:587-588: `expert_tensor_parallel_size` defaults to the TP size).
    pub(super) fn etp(&self) -> u64 {
        self.def
            .plan
            .etp
            .as_ref()
            .map_or(self.tp, |e| e.value)
            .max(1)
    }

    /// The etp values nearest the written one that split the experts' ffn and whose expert
    /// grid (etp × ep × pp) divides the GPU count.
    fn etp_options(&self) -> Vec<Setting> {
        let ffn = self.def.model.moe_ffn();
        let (ep, pp) = (self.ep, self.pp);
        let fits = |x: u64| {
            let grid = x.saturating_mul(ep).saturating_mul(pp).max(1);
            self.world.is_multiple_of(grid) && ffn.is_multiple_of(x)
        };
        Setting::list(
            "etp",
            nearest(
                divisors(self.world).into_iter().filter(|&x| fits(x)),
                self.etp(),
                2,
            ),
        )
    }

    /// E0342 and W0020 for `etp`. Written only: an unwritten etp is tp, whose rules are
    /// E0303 and E0309.
    pub(super) fn check_etp(&mut self) {
        let Some(written) = self.def.plan.etp.as_ref() else {
            return;
        };
        let (etp, loc) = (written.value.max(1), written.loc);
        let m = &self.def.model;
        if !m.is_moe() {
            self.report(PlanProblem::NoEffect(NoEffect::Etp {
                loc,
                model: m.name.clone(),
            }));
            return;
        }
        // TEGroupedLinear (megatron/core/extensions/transformer_engine.py:2382) shards each
        // expert's fc1 columns and fc2 rows over the expert tensor-parallel group; Transformer
        // Engine's GroupedLinear divides the ffn by its size.
        let ffn = m.moe_ffn();
        let issue = if !ffn.is_multiple_of(etp) {
            Some(EtpIssue::Ffn { ffn })
        } else {
            // megatron/core/parallel_state.py:876-884 (W02): world % (etp·ep·pp) == 0.
            let grid = (etp as u128)
                .saturating_mul(self.ep as u128)
                .saturating_mul(self.pp as u128);
            (!(self.world as u128).is_multiple_of(grid.max(1))).then_some(EtpIssue::Grid {
                world: self.world,
                ep: self.ep,
                pp: self.pp,
                grid,
            })
        };
        if let Some(issue) = issue {
            let options = self.etp_options();
            self.rejected.push("etp");
            self.report(PlanProblem::Etp(EtpProblem {
                etp,
                loc,
                issue,
                options,
            }));
        }
    }

    /// E0343 and W0020 for `moe_dispatcher`.
    pub(super) fn check_dispatcher(&mut self) {
        let p = &self.def.plan;
        let Some(d) = p.moe_dispatcher.as_ref() else {
            return;
        };
        let loc = d.loc;
        let m = &self.def.model;
        if !m.is_moe() {
            self.report(PlanProblem::NoEffect(NoEffect::Dispatcher {
                loc,
                model: m.name.clone(),
            }));
            return;
        }
        // A backend word after `alltoall` / `allgather`: Megatron's `--moe-enable-deepep`
        // requires the flex dispatcher (transformer_config.py:1743-1745), and
        // `--moe-flex-dispatcher-backend` is read by the flex dispatcher only
        // (token_dispatcher.py:1831-1864).
        let backend = p.moe_backend.as_ref().map(|b| b.value);
        if let (Some(b), false) = (backend, matches!(d.value, MoeDispatcher::Flex(_))) {
            self.report(PlanProblem::Dispatcher(DispatcherProblem {
                loc,
                issue: DispatcherIssue::BackendWithout {
                    dispatcher: d.value.word(),
                    backend: b.word(),
                },
            }));
            return;
        }
        // token_dispatcher.py:1832: "DeepEP dispatcher requires TPxEP > 1" (over the expert
        // tensor-parallel and expert-parallel ranks).
        let etp = self.etp();
        if matches!(d.value, MoeDispatcher::Flex(_)) && etp.saturating_mul(self.ep) <= 1 {
            self.report(PlanProblem::Dispatcher(DispatcherProblem {
                loc,
                issue: DispatcherIssue::FlexAlone {
                    ep_option: self.smallest_ep_over_one(),
                },
            }));
        }
    }

    /// The smallest ep above 1 that divides the experts and whose expert grid fits the GPUs.
    fn smallest_ep_over_one(&self) -> Option<u64> {
        let experts = self.def.model.experts();
        let etp = self.etp();
        divisors(self.world).into_iter().find(|&x| {
            x > 1
                && experts.is_multiple_of(x)
                && self
                    .world
                    .is_multiple_of(etp.saturating_mul(x).saturating_mul(self.pp).max(1))
        })
    }

    /// E0344, E0345 and W0020 for `cp_comm`.
    pub(super) fn check_cp_comm(&mut self) {
        let p = &self.def.plan;
        let Some(c) = p.cp_comm.as_ref() else {
            return;
        };
        let (comm, loc) = (c.value, c.loc);
        let size = p.cp_a2a.as_ref().map(|s| (s.value, s.loc));
        // C03 (arguments.py:584-586) and C02 (arguments.py:580-582, parallel_state.py:1128):
        // a2a+p2p needs the hierarchical sizes, whose product is cp; only it reads them.
        let hierarchy = match (comm, size) {
            (CpComm::A2aP2p, None) => Some(CpHierarchyIssue::Missing),
            (CpComm::A2aP2p, Some((a, at))) if a == 0 || !self.cp.is_multiple_of(a) => {
                Some(CpHierarchyIssue::NotADivisor { a2a: a, at })
            }
            (CpComm::A2aP2p, Some(_)) => None,
            (other, Some((a, at))) => Some(CpHierarchyIssue::NotHierarchical {
                comm: other.word(),
                a2a: a,
                at,
            }),
            (_, None) => None,
        };
        if let Some(issue) = hierarchy {
            let options = self.cp_a2a_options();
            self.report(PlanProblem::CpHierarchy(CpHierarchy {
                loc,
                cp: self.cp,
                issue,
                options,
            }));
            return;
        }
        if self.cp <= 1 {
            self.report(PlanProblem::NoEffect(NoEffect::CpComm {
                loc,
                comm: comm.word(),
                cp_loc: loc_of(&p.cp),
            }));
            return;
        }
        // transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py:4246
        // (AttnFuncWithCPAndQKVOA2A): "cp_comm_type='a2a' requires num_heads % cp_size == 0
        // for Q, K, V", heads counted per tensor-parallel rank; the hierarchical variant runs
        // that a2a over its first-level group.
        let a2a = match comm {
            CpComm::A2a => self.cp,
            CpComm::A2aP2p => size.map_or(1, |(a, _)| a),
            CpComm::P2p | CpComm::AllGather => 1,
        };
        if a2a <= 1 {
            return;
        }
        let tp = self.tp.max(1);
        let q = (self.heads / tp).max(1);
        let kv = (self.def.model.kv_groups() / tp).max(1);
        if !q.is_multiple_of(a2a) || !kv.is_multiple_of(a2a) {
            let g = venus_base::base::math::gcd(q, kv);
            // Sizes a hierarchical exchange could scatter heads over instead: they divide
            // both head counts and split cp into two levels.
            let cp = self.cp;
            let fits: Vec<u64> = divisors(g)
                .into_iter()
                .filter(|&d| d > 1 && d < cp && cp.is_multiple_of(d))
                .collect();
            self.report(PlanProblem::CpA2aHeads(CpA2aHeads {
                loc,
                comm: comm.word(),
                a2a,
                tp,
                q,
                kv,
                heads_loc: self.def.model.heads.loc,
                sizes: fits,
            }));
        }
    }

    /// The a2a group sizes of `cp_comm a2a_p2p A` that split cp (1 < A < cp: both levels
    /// exchange something).
    fn cp_a2a_options(&self) -> Vec<u64> {
        divisors(self.cp)
            .into_iter()
            .filter(|&a| a > 1 && a < self.cp)
            .collect()
    }
}
