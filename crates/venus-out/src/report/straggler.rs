//! The straggler section of a report: what the `slow_*` GPUs and `slow_link` NICs cost and the
//! groups the slowdown travels through.
//!
//! Input: the scenario's slow ranks and slow NICs, the simulated trace and timeline with stragglers and the
//! iteration window, and the same plan's report without them (the baseline). Output:
//! [`Stragglers`]. Definitions:
//! - **cost**: iteration time with the stragglers − iteration time without them.
//! - **waits**: per process-group kind, the mean over every GPU of the world of the extra time
//!   its communication nodes of that kind spend from posting to end (waiting for a late peer
//!   included, as the phases count it) relative to the baseline. A slow GPU makes its peers
//!   wait in the groups it shares with them: the kind with the largest extra wait is the one
//!   the slowdown propagates through (tp for a per-layer blocking all-reduce, dp for the
//!   gradient reduction, pp for the pipeline neighbours). Every simulated rank counts for the
//!   ranks of its symmetry class, so a symmetric and an `--all-ranks` run agree.
//!
//! Invariant: a pure function of its inputs; kinds with no extra wait are left out.

use super::{rank_stats, CommKind, Report, Window};
use venus_base::base::{Ratio, Seconds};
use venus_plan::plan::straggler::SlowRank;
use venus_sim::engine::Timeline;
use venus_sim::trace::{Category, Ps, RankId, Trace};

/// Slow GPUs the report lists by rank (the count and the slowest speed cover the rest).
pub const LISTED: usize = 8;

#[derive(Clone, Debug, PartialEq)]
pub struct Stragglers {
    /// Slow GPUs in all (0 when only links are slow).
    pub slow_gpus: u64,
    /// The lowest speed among them (1 without slow GPUs).
    pub slowest: Ratio,
    /// GPUs whose scale-out NIC a `slow_link` slows.
    pub slow_links: u64,
    /// The lowest share of bandwidth among those NICs (1 without slow links).
    pub slowest_link: Ratio,
    /// The first [`LISTED`] slow ranks with their speeds, in rank order.
    pub listed: Vec<SlowRank>,
    /// The iteration time of the same plan without stragglers.
    pub baseline: Seconds,
    /// Iteration time − baseline.
    pub cost: Seconds,
    /// Extra waiting per group kind, largest first (the first is the propagation path).
    pub waits: Vec<Wait>,
}

/// The extra communication time of one group kind, mean per GPU.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Wait {
    pub kind: CommKind,
    pub added: Seconds,
}

impl Stragglers {
    /// The cost as a share of the baseline iteration time.
    pub fn share(&self) -> Ratio {
        if self.baseline.0 > 0.0 {
            Ratio(self.cost.0 / self.baseline.0)
        } else {
            Ratio(0.0)
        }
    }

    /// The group kind the slowdown propagates through, when any peer waits longer.
    pub fn path(&self) -> Option<CommKind> {
        self.waits.first().map(|w| w.kind)
    }
}

/// Communication time per group kind summed over the world (ps), every simulated rank weighted
/// by the ranks of its class.
pub(crate) fn comm_by_kind(
    trace: &Trace,
    timeline: &Timeline,
    window: Window,
) -> [u128; CommKind::COUNT] {
    let mut sums = [0u128; CommKind::COUNT];
    for r in rank_stats(trace, timeline, window) {
        let w = u128::from(r.weight);
        for c in Category::ALL {
            let kind = CommKind::of(c);
            if kind != CommKind::Other {
                sums[kind.index()] += u128::from(r.by_category[c.index()]) * w;
            }
        }
    }
    sums
}

/// How many ranks each simulated rank stands for (1 for every rank without classes).
pub(crate) fn class_sizes(trace: &Trace) -> impl Fn(u32) -> u64 {
    let mut sizes: Vec<(u32, u64)> = Vec::new();
    if trace.has_classes() {
        let mut counts = std::collections::BTreeMap::new();
        for r in 0..trace.world() {
            *counts.entry(trace.class_of(RankId(r)).0).or_insert(0u64) += 1;
        }
        sizes = counts.into_iter().collect();
    }
    move |rank| {
        sizes
            .binary_search_by_key(&rank, |&(r, _)| r)
            .map_or(1, |i| sizes[i].1)
    }
}

/// The straggler section of `report` (simulated with the slow ranks `slow` and the slow NICs
/// `links`), against the same plan's `baseline` report and communication sums
/// ([`comm_by_kind`]).
pub fn stragglers(
    report: &Report,
    slow: &[SlowRank],
    links: &[SlowRank],
    with: [u128; CommKind::COUNT],
    baseline: &Report,
    without: [u128; CommKind::COUNT],
) -> Stragglers {
    let world = u128::from(report.world_size.max(1));
    let mut waits: Vec<Wait> = CommKind::ALL
        .iter()
        .filter(|&&k| k != CommKind::Other)
        .filter_map(|&k| {
            let added = with[k.index()].saturating_sub(without[k.index()]) / world;
            let added = u64::try_from(added).unwrap_or(u64::MAX);
            (added > 0).then_some(Wait {
                kind: k,
                added: Ps(added).seconds(),
            })
        })
        .collect();
    // Largest first; equal waits in group-kind order (sort is stable).
    waits.sort_by(|a, b| b.added.0.total_cmp(&a.added.0));
    let lowest = |v: &[SlowRank]| {
        v.iter()
            .map(|s| s.speed)
            .fold(Ratio(1.0), |a, b| if b.0 < a.0 { b } else { a })
    };
    Stragglers {
        slow_gpus: slow.len() as u64,
        slowest: lowest(slow),
        slow_links: links.len() as u64,
        slowest_link: lowest(links),
        listed: slow.iter().take(LISTED).copied().collect(),
        baseline: baseline.iteration_time,
        cost: Seconds(report.iteration_time.0 - baseline.iteration_time.0),
        waits,
    }
}
