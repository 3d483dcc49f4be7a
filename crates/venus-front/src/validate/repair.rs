//! The plan-repair search behind E0401 and W0005's help: which change of the plan brings the
//! largest pipeline stage under a memory target.
//!
//! Input: a validated [`Scenario`] whose largest stage is over (or near) the GPU's memory, and
//! the target. Output: a [`Repair`]: the first single [`Change`] that fits, else the shortest
//! prefix of all changes applied together, with the peak it reaches.
//! Invariants: changes are tried in a fixed order, cheapest first (sp, distributed optimizer,
//! selective recompute, full recompute, double tp, double pp), each only when it keeps the
//! plan valid (world, layer split, sequence and expert rules); dp halves when tp or pp doubles,
//! so the world stays the same. The search evaluates the memory model; it never renders text.

use super::{resolved_schedule, Validator};
use super::{split_layers, stage_memory, worst, Bytes, MemoryPlan, Recompute, StageMemory};
use venus_plan::plan::Scenario;

/// One edit of the plan the search may propose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// Add `sp` (tp > 1 and seq splits over cp × tp).
    AddSp,
    AddDistributedOptimizer,
    /// Use `recompute selective` or `recompute full`.
    Recompute(Recompute),
    /// Double tp inside the innermost dim; `dp` is the halved dp, named when the plan wrote dp.
    Tp {
        tp: u64,
        dp: Option<u64>,
    },
    /// Double pp (even split only); `dp` as for [`Change::Tp`].
    Pp {
        pp: u64,
        dp: Option<u64>,
    },
}

/// What the search found, with the largest stage's peak after it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Repair {
    /// One change is enough.
    One { change: Change, peak: Bytes },
    /// These changes together are enough; `dp` is the dp they lead to when the plan wrote dp
    /// and it changed.
    Combined {
        changes: Vec<Change>,
        dp: Option<u64>,
        peak: Bytes,
    },
    /// Even every change together is not enough.
    NotEnough {
        changes: Vec<Change>,
        dp: Option<u64>,
        peak: Bytes,
    },
    /// No change applies.
    None { peak: Bytes },
}

/// A change and the memory plan it leads to (None when it does not apply to this plan).
struct Candidate {
    change: Change,
    plan: Option<MemoryPlan>,
}

fn candidates(v: &Validator<'_>, sc: &Scenario, base: &MemoryPlan) -> Vec<Candidate> {
    let p = &sc.plan;
    let mut out: Vec<Candidate> = Vec::new();
    let seq_ok = |tp: u64| sc.model.seq.is_multiple_of(sc.cp.saturating_mul(tp).max(1));
    out.push(Candidate {
        change: Change::AddSp,
        plan: (base.tp > 1 && !base.sp && seq_ok(base.tp)).then(|| MemoryPlan {
            sp: true,
            ..base.clone()
        }),
    });
    out.push(Candidate {
        change: Change::AddDistributedOptimizer,
        // An FSDP strategy that shards the optimizer state already does what it would.
        plan: (!base.distributed_optimizer && !base.fsdp.is_some_and(|f| f.shards_optimizer()))
            .then(|| MemoryPlan {
                distributed_optimizer: true,
                ..base.clone()
            }),
    });
    out.push(Candidate {
        change: Change::Recompute(Recompute::Selective),
        plan: (base.recompute == Recompute::None).then(|| MemoryPlan {
            recompute: Recompute::Selective,
            ..base.clone()
        }),
    });
    out.push(Candidate {
        change: Change::Recompute(Recompute::Full),
        plan: (base.recompute != Recompute::Full).then(|| MemoryPlan {
            recompute: Recompute::Full,
            ..base.clone()
        }),
    });
    // Doubling tp within the innermost dim (a node), dp halving to keep the world.
    let tp2 = base.tp.saturating_mul(2);
    let node = sc.cluster.dims.first().map_or(1, |d| d.size);
    let tp_fits = v.tp_ok(tp2)
        && tp2 <= node
        && node.is_multiple_of(tp2)
        && base.dp.is_multiple_of(2)
        && (!base.sp || seq_ok(tp2))
        && (!sc.model.is_moe() || base.sp)
        && sc
            .world
            .is_multiple_of(tp2.saturating_mul(base.ep).saturating_mul(base.pp).max(1));
    let written_dp = |dp: u64| p.dp.is_some().then_some(dp);
    out.push(Candidate {
        change: Change::Tp {
            tp: tp2,
            dp: written_dp(base.dp / 2),
        },
        plan: tp_fits.then(|| MemoryPlan {
            tp: tp2,
            etp: tp2,
            dp: base.dp / 2,
            expert_dp: sc.world / tp2.saturating_mul(base.ep).saturating_mul(base.pp).max(1),
            microbatches: base.microbatches.saturating_mul(2),
            ..base.clone()
        }),
    });
    // Doubling pp (even split only), dp halving.
    let pp2 = base.pp.saturating_mul(2);
    let uneven = p.first_stage_layers.is_some()
        || p.last_stage_layers.is_some()
        || p.pipeline_layout.is_some()
        || sc.split.accounts() != (false, false);
    let split = split_layers(sc.model.layers, pp2, base.vpp, None, None).ok();
    let pp_fits = !uneven
        && split.is_some()
        && base.dp.is_multiple_of(2)
        && (base.vpp == 1 || pp2 >= 3 || sc.flags.overlap_p2p)
        && sc
            .world
            .is_multiple_of(base.tp.saturating_mul(base.ep).saturating_mul(pp2).max(1));
    out.push(Candidate {
        change: Change::Pp {
            pp: pp2,
            dp: written_dp(base.dp / 2),
        },
        plan: match (pp_fits, split) {
            (true, Some(split)) => Some(MemoryPlan {
                pp: pp2,
                dp: base.dp / 2,
                expert_dp: sc.world / base.tp.saturating_mul(base.ep).saturating_mul(pp2).max(1),
                microbatches: base.microbatches.saturating_mul(2),
                schedule: resolved_schedule(pp2, base.vpp, p.schedule),
                split,
                ..base.clone()
            }),
            _ => None,
        },
    });
    out
}

/// Applies `change` (whose plan alone is `changed`) on top of an already-changed plan, for
/// the cumulative search: dp halves again for each doubling.
fn compose(acc: &MemoryPlan, change: Change, changed: &MemoryPlan, world: u64) -> MemoryPlan {
    let mut out = acc.clone();
    match change {
        Change::AddSp => out.sp = true,
        Change::AddDistributedOptimizer => out.distributed_optimizer = true,
        Change::Recompute(r) => out.recompute = r,
        Change::Tp { .. } => {
            out.tp = changed.tp;
            out.etp = changed.etp;
            out.dp = (out.dp / 2).max(1);
            out.microbatches = out.microbatches.saturating_mul(2);
        }
        Change::Pp { .. } => {
            out.pp = changed.pp;
            out.split = changed.split.clone();
            out.schedule = changed.schedule;
            out.dp = (out.dp / 2).max(1);
            out.microbatches = out.microbatches.saturating_mul(2);
        }
    }
    out.expert_dp = (world / out.tp.saturating_mul(out.ep).saturating_mul(out.pp).max(1)).max(1);
    out
}

/// The dp a combination leads to, when the plan wrote dp and the combination changed it.
fn changed_dp(sc: &Scenario, plan: &MemoryPlan) -> Option<u64> {
    (sc.plan.dp.is_some() && plan.dp != sc.dp).then_some(plan.dp)
}

/// What the largest stage of `plan` needs: its peak plus the scenario's reserve.
fn peak_of(sc: &Scenario, plan: &MemoryPlan) -> Bytes {
    let stages: Vec<StageMemory> = stage_memory(&sc.model, plan);
    let peak = worst(&stages).map_or(Bytes(0), |s| s.peak);
    let (reserve, _) = sc.reserve();
    Bytes(peak.0.saturating_add(reserve.0))
}

/// The cheapest change (in the order of [`candidates`]) that brings the largest stage to
/// `target` or below; if no single change does, the shortest prefix of those changes applied
/// together.
pub(super) fn repair(v: &Validator<'_>, sc: &Scenario, target: Bytes) -> Repair {
    let base = sc.memory_plan();
    let all = candidates(v, sc, &base);
    for c in &all {
        if let Some(plan) = &c.plan {
            let peak = peak_of(sc, plan);
            if peak <= target {
                return Repair::One {
                    change: c.change,
                    peak,
                };
            }
        }
    }
    let mut acc = base.clone();
    let mut applied: Vec<Change> = Vec::new();
    let mut peak = peak_of(sc, &acc);
    for c in &all {
        let Some(plan) = &c.plan else { continue };
        // Full recompute replaces selective: keep only the stronger one in the description.
        if c.change == Change::Recompute(Recompute::Full) {
            applied.retain(|a| !matches!(a, Change::Recompute(_)));
        }
        acc = compose(&acc, c.change, plan, sc.world);
        applied.push(c.change);
        peak = peak_of(sc, &acc);
        if peak <= target {
            return Repair::Combined {
                changes: applied,
                dp: changed_dp(sc, &acc),
                peak,
            };
        }
    }
    if applied.is_empty() {
        Repair::None { peak }
    } else {
        Repair::NotEnough {
            changes: applied,
            dp: changed_dp(sc, &acc),
            peak,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{demo, sp};
    use crate::ty::Attention;
    use crate::validate;

    #[test]
    fn a_plan_near_the_limit_is_repaired_by_selective_recompute_alone() {
        // The demo on 76 GiB GPUs with unfused attention: stage 0 needs 70.2 GiB, over 90%.
        let mut d = demo();
        d.cluster.gpu.memory = sp(Bytes(76 * Bytes::GIB));
        d.plan.attention = Some(sp(Attention::Unfused));
        let (s, _) = validate(&d);
        let s = s.expect("a warning leaves the scenario");
        // W0005's target: 90% of the GPU's memory.
        let target = Bytes(((76 * Bytes::GIB) as f64 * super::super::MEMORY_WARN) as u64);
        match repair(&Validator::new(&d, &[]), &s, target) {
            Repair::One { change, peak } => {
                assert_eq!(change, Change::Recompute(Recompute::Selective));
                assert!(peak <= target, "{peak:?}");
                assert!(peak < worst(&s.memory).map_or(Bytes(0), |w| w.peak));
            }
            other => panic!("expected one change, got {other:?}"),
        }
    }
}
