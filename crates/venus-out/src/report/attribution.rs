//! Where one rank's iteration goes: compute, pipeline bubble, exposed communication per group
//! kind and other idle, tiling the window exactly.
//!
//! Input: the [`Trace`], the engine's [`Timeline`] and the report's [`Window`]. Output: one
//! [`Breakdown`] per simulated rank, in picoseconds.
//!
//! Definition: every instant of the window on a rank is compute (some compute or delay node
//! runs) or idle. An idle interval ends where the rank's next compute node starts; that node
//! started late because of its *binding predecessor* (among its dependencies and the node
//! before it on its stream, the one that finished last). Walking that chain of binding
//! predecessors back in time, each instant of the idle interval is charged to the node of the
//! chain that held it:
//! - a compute node of another rank: **pipeline bubble** (the schedule made this rank wait for
//!   another stage's work; Megatron's sense of the bubble);
//! - a collective of group kind K (TP, CP, EP, DP, embedding): **exposed K**. The members
//!   of a TP, CP, EP or DP group are one stage's ranks, so a wait for a late member is load
//!   imbalance within the stage and counts as K too; the embedding group joins the first and
//!   the last stage, so its wait for the member posted last follows that member's chain;
//! - a P2P transfer, from the moment both sides were posted: **exposed PP**. Before a transfer
//!   or an embedding all-reduce could start, the walk follows the side posted last to its own
//!   binding predecessor: a stage that waits for a forward the previous stage could not start before
//!   its DP parameter all-gather finished charges that wait to DP, not to the pipeline, and
//!   the last stage's embedding all-reduce waiting for the first stage's last backward is
//!   pipeline bubble, not embedding communication;
//! - nothing (the chain's node finished before the next one started, or the chain ends): other
//!   idle.
//!
//! The idle tail after a rank's last compute node of the run is charged through the chain of
//! the node that ends the run last. Only the chain holds the critical path: communication that
//! runs while the rank computes, or that nothing waited on, is charged nowhere.
//!
//! Invariants: compute + bubble + Σ exposed + other = window length on every rank, exactly
//! (each step of the walk charges `[boundary, hi)` and lowers `hi` to the boundary); the walk
//! visits nodes strictly back in time and is capped at [`MAX_STEPS`] per idle interval (the
//! rest is other idle), so it terminates on any timeline.

use venus_sim::engine::Timeline;
use venus_sim::trace::{Node, NodeId, NodeKind, Ps, RankId, Trace};

use super::{CommKind, Window};

/// The most chain steps one idle interval walks; a chain never is this long in a schedule
/// Megatron runs (it crosses each stage a few times per microbatch), so the cap only bounds
/// the cost on a pathological timeline.
const MAX_STEPS: usize = 1 << 16;

/// One rank's window, tiled (picoseconds).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Breakdown {
    pub compute: u64,
    pub bubble: u64,
    /// Indexed by [`CommKind`]'s order; `Other` holds communication of no group kind.
    pub exposed: [u64; CommKind::COUNT],
    pub other: u64,
}

impl Breakdown {
    /// compute + bubble + Σ exposed + other: the window length.
    pub fn total(&self) -> u64 {
        self.exposed
            .iter()
            .fold(self.compute + self.bubble + self.other, |a, &b| a + b)
    }
}

/// What an idle instant is charged to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cause {
    Bubble,
    Comm(CommKind),
    Other,
}

/// A node of a simulated rank: (rank index, node index).
pub(super) type At = (usize, usize);

/// The timeline's view the walk needs: spans, binding predecessors, P2P partners.
struct Walker<'a> {
    trace: &'a Trace,
    /// Per rank, the timeline's per-node starts and ends (looked up once: the walk reads
    /// them at every step).
    starts: Vec<&'a [Ps]>,
    ends: Vec<&'a [Ps]>,
    /// Per rank, per node: the previous node on the same stream.
    stream_prev: Vec<Vec<Option<u32>>>,
    /// Per rank, per node: the side of a transfer posted last (the matching side of a send
    /// or receive on a simulated peer, the collective instance's last simulated member).
    partner: Vec<Vec<Option<At>>>,
}

/// The breakdown of every simulated rank, in trace order.
pub fn breakdowns(trace: &Trace, timeline: &Timeline, window: Window) -> Vec<Breakdown> {
    let w = Walker::new(trace, timeline);
    let last = w.last_node();
    (0..trace.ranks().len())
        .map(|r| w.rank(r, window, last))
        .collect()
}

fn is_compute(node: &Node) -> bool {
    matches!(node.kind, NodeKind::Compute { .. } | NodeKind::Delay { .. })
}

impl<'a> Walker<'a> {
    fn new(trace: &'a Trace, timeline: &'a Timeline) -> Walker<'a> {
        let stream_prev = trace
            .ranks()
            .iter()
            .map(|rt| {
                let mut last: Vec<Option<u32>> = Vec::new();
                rt.nodes()
                    .enumerate()
                    .map(|(k, n)| {
                        let s = n.stream.0 as usize;
                        if last.len() <= s {
                            last.resize(s + 1, None);
                        }
                        last[s].replace(k as u32)
                    })
                    .collect()
            })
            .collect();
        let ranks = trace.ranks().len();
        Walker {
            trace,
            starts: (0..ranks).map(|r| timeline.starts(r)).collect(),
            ends: (0..ranks).map(|r| timeline.ends(r)).collect(),
            stream_prev,
            partner: partners(trace, timeline),
        }
        .with_last_members()
    }

    /// Adds to [`Self::partner`] each embedding all-reduce's last-posting member of its
    /// instance (the one group that spans stages).
    fn with_last_members(mut self) -> Walker<'a> {
        for members in instances(self.trace) {
            let spans_stages = members
                .first()
                .and_then(|&at| self.node(at))
                .is_some_and(|n| n.category == venus_sim::trace::Category::EmbeddingSync);
            if !spans_stages {
                continue;
            }
            let last = members
                .iter()
                .copied()
                .max_by_key(|&at| (self.span(at).0, std::cmp::Reverse(at)));
            for &at in &members {
                self.partner[at.0][at.1] = last.filter(|&l| l != at);
            }
        }
        self
    }

    fn span(&self, (r, n): At) -> (u64, u64) {
        let s = self
            .starts
            .get(r)
            .and_then(|v| v.get(n))
            .copied()
            .unwrap_or(Ps::ZERO);
        let e = self
            .ends
            .get(r)
            .and_then(|v| v.get(n))
            .copied()
            .unwrap_or(s);
        (s.0, e.0)
    }

    fn node(&self, (r, n): At) -> Option<Node> {
        self.trace.ranks().get(r)?.node(NodeId(n as u32))
    }

    /// The predecessor that finished last (the later one in program order on a tie).
    fn binding_pred(&self, (r, n): At) -> Option<At> {
        let rt = self.trace.ranks().get(r)?;
        let deps = rt.deps(NodeId(n as u32)).iter().map(|d| d.0);
        let prev = self.stream_prev.get(r)?.get(n).copied().flatten();
        deps.chain(prev)
            .map(|p| (r, p as usize))
            .max_by_key(|&at| (self.span(at).1, at.1))
    }

    /// The node that ends the run last (the lowest rank on a tie).
    fn last_node(&self) -> Option<At> {
        let mut best: Option<(u64, At)> = None;
        for (r, ends) in self.ends.iter().enumerate() {
            for (n, &Ps(e)) in ends.iter().enumerate() {
                if best.is_none_or(|(b, _)| e > b) {
                    best = Some((e, (r, n)));
                }
            }
        }
        best.map(|(_, at)| at)
    }

    fn rank(&self, r: usize, window: Window, last: Option<At>) -> Breakdown {
        let mut out = Breakdown::default();
        let Some(rt) = self.trace.ranks().get(r) else {
            return out;
        };
        let mut compute: Vec<(u64, u64, usize)> = rt
            .nodes()
            .enumerate()
            .filter(|(_, n)| is_compute(n))
            .map(|(k, _)| {
                let (s, e) = self.span((r, k));
                (s, e, k)
            })
            .collect();
        compute.sort_unstable();
        let (lo, hi) = (window.start.0, window.end.0);
        let mut cursor = lo;
        for &(s, e, k) in &compute {
            if cursor >= hi {
                break;
            }
            if e <= cursor {
                continue;
            }
            if s > cursor {
                self.explain(r, k, cursor, s.min(hi), &mut out);
                cursor = s.min(hi);
            }
            if cursor < e.min(hi) {
                out.compute += e.min(hi) - cursor;
            }
            cursor = e;
        }
        if cursor < hi {
            match last {
                Some(at) => self.walk(at, true, cursor, hi, &mut out),
                None => out.other += hi - cursor,
            }
        }
        out
    }

    /// Charges the idle `[lo, hi)` before compute node `n` of rank `r` started.
    fn explain(&self, r: usize, n: usize, lo: u64, hi: u64, out: &mut Breakdown) {
        self.walk((r, n), false, lo, hi, out);
    }

    /// Walks the chain of binding predecessors from `at` back in time, charging `[lo, hi)`.
    /// `own`: whether `at`'s own run is charged (the origin compute node's is not: it starts
    /// where the interval ends).
    fn walk(&self, mut at: At, mut own: bool, lo: u64, mut hi: u64, out: &mut Breakdown) {
        let mut charge = |from: u64, hi: &mut u64, cause: Cause| {
            let from = from.max(lo);
            if from < *hi {
                let len = *hi - from;
                match cause {
                    Cause::Bubble => out.bubble += len,
                    Cause::Comm(k) => out.exposed[k as usize] += len,
                    Cause::Other => out.other += len,
                }
                *hi = from;
            }
        };
        for _ in 0..MAX_STEPS {
            if hi <= lo {
                return;
            }
            if own {
                let (s, e) = self.span(at);
                charge(e, &mut hi, Cause::Other);
                let Some(node) = self.node(at) else { break };
                match node.kind {
                    NodeKind::Compute { .. } | NodeKind::Delay { .. } => {
                        charge(s, &mut hi, Cause::Bubble);
                    }
                    NodeKind::Send { .. } | NodeKind::Recv { .. } | NodeKind::Collective { .. } => {
                        let other = self
                            .partner
                            .get(at.0)
                            .and_then(|p| p.get(at.1))
                            .copied()
                            .flatten();
                        let posted = other.map_or(s, |o| self.span(o).0);
                        let kind = CommKind::of(node.category);
                        let kind = match node.kind {
                            NodeKind::Collective { .. } => kind,
                            _ => CommKind::Pp,
                        };
                        charge(s.max(posted), &mut hi, Cause::Comm(kind));
                        // The side posted last held the transfer back: follow its chain.
                        if let Some(o) = other.filter(|_| posted > s) {
                            at = o;
                        }
                    }
                }
            }
            match self.binding_pred(at) {
                Some(p) => {
                    at = p;
                    own = true;
                }
                None => break,
            }
        }
        charge(lo, &mut hi, Cause::Other);
    }
}

/// The matching side of every send and receive whose peer is simulated: the k-th send from
/// `a` to `b` with tag `t` and the k-th receive on `b` from `a` with tag `t`, as the engine
/// pairs them (engine/sim/matching.rs). A peer that is not simulated mirrors this rank (same
/// class, posted at the same instant), so its side has no partner here and the transfer is
/// charged from this side's posting.
pub(super) fn partners(trace: &Trace, timeline: &Timeline) -> Vec<Vec<Option<At>>> {
    let mut out: Vec<Vec<Option<At>>> = trace
        .ranks()
        .iter()
        .map(|rt| vec![None; rt.len()])
        .collect();
    // (src, dst, tag) → (sends, receives) in program order. Each queue pairs its own sides
    // and writes its own slots, so the map's order changes nothing: a hash map is exact.
    type Sides = (Vec<At>, Vec<At>);
    let mut queues: rustc_hash::FxHashMap<(RankId, RankId, u32), Sides> = Default::default();
    for (r, rt) in trace.ranks().iter().enumerate() {
        let me = rt.rank();
        for (k, node) in rt.nodes().enumerate() {
            match node.kind {
                NodeKind::Send { peer, tag, .. } if timeline.rank_index(peer).is_some() => {
                    queues.entry((me, peer, tag)).or_default().0.push((r, k));
                }
                NodeKind::Recv { peer, tag, .. } if timeline.rank_index(peer).is_some() => {
                    queues.entry((peer, me, tag)).or_default().1.push((r, k));
                }
                _ => {}
            }
        }
    }
    for (sends, recvs) in queues.values() {
        for (&s, &v) in sends.iter().zip(recvs) {
            out[s.0][s.1] = Some(v);
            out[v.0][v.1] = Some(s);
        }
    }
    out
}

/// The simulated members' nodes of every collective instance on a group that carries an
/// embedding all-reduce (the only instances [`Walker::with_last_members`] reads): the k-th
/// collective of each member on a group forms instance k of the group, as the engine forms
/// them (engine/sim/matching.rs). A member that is not simulated arrives with its
/// representative, so the simulated members decide when an instance starts. The other groups
/// are skipped rather than indexed: on a large plan they hold nearly every collective of the
/// run, and indexing them was a quarter of the report's time.
fn instances(trace: &Trace) -> Vec<Vec<At>> {
    use std::collections::{BTreeMap, BTreeSet};
    let embedding: BTreeSet<u32> = trace
        .ranks()
        .iter()
        .flat_map(|rt| rt.nodes())
        .filter_map(|node| match node.kind {
            NodeKind::Collective { group, .. }
                if node.category == venus_sim::trace::Category::EmbeddingSync =>
            {
                Some(group.0)
            }
            _ => None,
        })
        .collect();
    if embedding.is_empty() {
        return Vec::new();
    }
    let mut by_group: BTreeMap<(u32, u32), Vec<At>> = BTreeMap::new();
    for (r, rt) in trace.ranks().iter().enumerate() {
        let mut seen: BTreeMap<u32, u32> = BTreeMap::new();
        for (k, node) in rt.nodes().enumerate() {
            if let NodeKind::Collective { group, .. } = node.kind {
                if !embedding.contains(&group.0) {
                    continue;
                }
                let nth = seen.entry(group.0).or_default();
                by_group.entry((group.0, *nth)).or_default().push((r, k));
                *nth += 1;
            }
        }
    }
    by_group.into_values().collect()
}
