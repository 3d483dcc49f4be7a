//! The event loop: node issue on streams, P2P rendezvous, collective arrival, phases and flows
//! with max-min fair bandwidth sharing.
//!
//! Input: a validated trace and a network. Output: a [`Timeline`] or an [`EngineError`].
//! All per-node state lives in flat arrays indexed by typed ids ([`GNodeId`], `offset[rank] +
//! local id`, and one id kind per other array). The loop pops `(time, seq)`-ordered events
//! from an [`EventQueue`]; after warm-up it allocates nothing (op slots, resource lists and
//! scratch buffers are reused, and a collective's phases are computed once per
//! `(group, kind, bytes)` signature).
//!
//! Submodules share `Sim`'s arrays: `matching` pairs sends with receives and collectives into
//! instances before the run; this file issues nodes on streams; `flow` runs an operation's
//! phases and flows; `fill` computes max-min fair rates; `deadlock` explains a stuck run.
//!
//! Complexity: an event costs O(log E) for the heap (E pending events) plus, when a flow
//! starts or ends, one max-min fair recomputation of the component of flows connected to it
//! through shared links: O(L + I) to collect it (L links, I flow-link incidences) and
//! O((L + I) log(L + I)) to fill it (`Fill::rates`; a shape filled before is a hash lookup of
//! its O(L + I) key instead, and storing a new shape's rates is the loop's one allocation
//! after warm-up). Components stay small when flows do
//! not chain (TP collectives on NVLink); with `--all-ranks`, a data-parallel collective joins
//! its members' pipeline P2P flows into one component of up to a few hundred links, which
//! is why filling must not be O(L) per bottleneck round.

use super::error::{EngineError, OpRef};
use super::id::{GNodeId, Id, IdVec, InstId, LinkId, OpId, SigId, SimRankId, SimStreamId};
use super::network::{GroupShape, Network, Phase};
use super::queue::EventQueue;
use super::{Options, Sharing, Timeline};
use crate::trace::Ps;
use crate::trace::{Category, CollectiveKind, GroupId, NodeId, NodeKind, RankId, Trace};
use venus_base::base::Csr;

mod deadlock;
mod fill;
mod flow;
mod matching;

use fill::Fill;

const UNSET: u64 = u64::MAX;
const PS_PER_S: f64 = 1e12;

#[derive(Clone, Copy, Debug)]
enum Ev {
    /// A node finished (compute ends, or its transfer/collective completed).
    NodeDone(GNodeId),
    /// The latency part of an op's current phase elapsed: its bytes start to flow.
    PhaseStart(OpId),
    /// An op's flow drains, if its generation is still current (lazy cancellation: a rate
    /// change bumps the generation and schedules a new completion).
    FlowDone(OpId, u32),
}

/// What a node is paired with before the run: one meaning per variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pairing {
    /// Compute and delay nodes; a send or receive nothing matched (it deadlocks when posted).
    Unpaired,
    /// A send or receive whose peer is a non-simulated rank of the same class: the peer posts
    /// its side at the same instant (see the symmetry rules in the module docs of `engine`).
    Mirror,
    /// A send or receive and the node of its matching other side.
    Peer(GNodeId),
    /// A collective and the instance it is a member of.
    Member(InstId),
}

#[derive(Clone, Copy, Debug)]
enum OpWhat {
    /// The send and receive (`None` for a mirrored side) and their ranks.
    P2p {
        send: Option<GNodeId>,
        recv: Option<GNodeId>,
        src: RankId,
        dst: RankId,
    },
    Coll {
        inst: InstId,
    },
}

/// An active transfer or collective: its phases, and the flow of its current phase.
#[derive(Clone, Debug)]
struct Op {
    what: OpWhat,
    phases: Vec<Phase>,
    phase: usize,
    resources: Vec<LinkId>,
    /// Bytes left in the current phase as of `last`.
    remaining: f64,
    /// Bytes per second; 0 when not flowing.
    rate: f64,
    last: u64,
    gen: u32,
    flowing: bool,
}

struct Inst {
    group: GroupId,
    kind: CollectiveKind,
    bytes: u64,
    needed: u32,
    arrived: u32,
    sig: SigId,
}

pub(super) struct Sim<'a> {
    trace: &'a Trace,
    net: &'a Network,
    sharing: bool,
    ndims: usize,
    /// Per simulated rank (and one past the last): its first global node.
    offset: Vec<u32>,
    /// Per world rank: its simulated rank, if simulated.
    sim_of: IdVec<RankId, Option<SimRankId>>,
    node_rank: IdVec<GNodeId, SimRankId>,
    /// Copy of every node's kind (one load in the hot loop).
    kinds: IdVec<GNodeId, NodeKind>,
    deps_left: IdVec<GNodeId, u32>,
    /// Row `g`: the nodes that depend on `g`.
    dependents: Csr<GNodeId>,
    stream_of: IdVec<GNodeId, SimStreamId>,
    pairing: IdVec<GNodeId, Pairing>,
    start: IdVec<GNodeId, u64>,
    end: IdVec<GNodeId, u64>,
    /// Row `s`: the nodes of stream `s` in program order.
    streams: Csr<GNodeId>,
    /// Per stream: position in `streams.items()` of its next node to run.
    head: IdVec<SimStreamId, u32>,
    busy: IdVec<SimStreamId, bool>,
    insts: IdVec<InstId, Inst>,
    /// Row `i`: the simulated members' nodes of instance `i`, in node order.
    inst_nodes: Csr<GNodeId>,
    shapes: IdVec<GroupId, Option<GroupShape>>,
    /// Per collective signature `(group, kind, bytes)`: its phases as a range into
    /// `phase_table`, computed on first use (`Network::phases` is a pure function of the
    /// signature, so instances of one signature share them).
    sig_phases: IdVec<SigId, Option<(u32, u32)>>,
    phase_table: Vec<Phase>,
    ops: IdVec<OpId, Op>,
    free_ops: Vec<OpId>,
    res_flows: IdVec<LinkId, Vec<OpId>>,
    res_cap: IdVec<LinkId, f64>,
    queue: EventQueue<Ev>,
    events: u64,
    done: u64,
    /// The first event whose time saturated at `u64::MAX` ps (2^64 ps, about 213 days): from
    /// there on times are no longer exact, and a node ending then would read as unfinished
    /// ([`UNSET`]), so the run stops and says so instead of reporting a deadlock.
    overflow: Option<Ev>,
    /// Max-min fair sharing scratch.
    fill: Fill,
}

impl<'a> Sim<'a> {
    pub(super) fn new(
        trace: &'a Trace,
        net: &'a Network,
        opts: &Options,
    ) -> Result<Sim<'a>, EngineError> {
        if trace.world() != net.world() {
            return Err(EngineError::WorldMismatch {
                trace: trace.world(),
                network: net.world(),
            });
        }
        let ranks = trace.ranks();
        let total = trace.node_count();
        if total >= (u32::MAX - 2) as usize {
            return Err(EngineError::TooLarge);
        }
        let mut offset = Vec::with_capacity(ranks.len() + 1);
        let mut sim_of = IdVec::filled(trace.world() as usize, None);
        let mut acc = 0u32;
        for (i, r) in ranks.iter().enumerate() {
            offset.push(acc);
            sim_of[r.rank()] = Some(SimRankId(i as u32));
            acc += r.len() as u32;
        }
        offset.push(acc);

        // Streams: per rank, `max stream id + 1` streams, nodes in program order.
        let mut stream_base = Vec::with_capacity(ranks.len() + 1);
        let mut nstreams: u64 = 0;
        for r in ranks {
            stream_base.push(nstreams as u32);
            let k = r.nodes().map(|n| n.stream.0 as u64 + 1).max().unwrap_or(0);
            nstreams += k;
        }
        if nstreams >= u32::MAX as u64 {
            return Err(EngineError::TooLarge);
        }
        let nstreams = nstreams as usize;
        let mut node_rank = IdVec::from_vec(Vec::with_capacity(total));
        let mut kinds = IdVec::from_vec(Vec::with_capacity(total));
        let mut stream_of = IdVec::from_vec(Vec::with_capacity(total));
        for (i, r) in ranks.iter().enumerate() {
            for n in r.nodes() {
                node_rank.push(SimRankId(i as u32));
                kinds.push(n.kind);
                stream_of.push(SimStreamId(stream_base[i] + n.stream.0 as u32));
            }
        }
        let streams = Csr::from_pairs(
            nstreams,
            stream_of
                .iter()
                .enumerate()
                .map(|(g, s): (usize, &SimStreamId)| (s.0, GNodeId(g as u32))),
        );
        let head = IdVec::from_vec((0..nstreams).map(|s| streams.bounds(s).0).collect());

        // Dependencies: counts and the reverse (dependents) CSR.
        let mut deps_left = IdVec::filled(total, 0u32);
        for (i, r) in ranks.iter().enumerate() {
            for l in 0..r.len() {
                deps_left[GNodeId(offset[i] + l as u32)] = r.deps(NodeId(l as u32)).len() as u32;
            }
        }
        let offset_ref = &offset;
        let dependents = Csr::from_pairs(
            total,
            ranks.iter().enumerate().flat_map(move |(i, r)| {
                (0..r.len() as u32).flat_map(move |l| {
                    r.deps(NodeId(l))
                        .iter()
                        .map(move |d| (offset_ref[i] + d.0, GNodeId(offset_ref[i] + l)))
                })
            }),
        );

        let ndims = net.dims().len();
        let nres = ranks.len() * ndims * 2;
        let mut sim = Sim {
            trace,
            net,
            sharing: opts.sharing == Sharing::MaxMinFair,
            ndims,
            offset,
            sim_of,
            node_rank,
            kinds,
            deps_left,
            dependents,
            stream_of,
            pairing: IdVec::filled(total, Pairing::Unpaired),
            start: IdVec::filled(total, UNSET),
            end: IdVec::filled(total, UNSET),
            streams,
            head,
            busy: IdVec::filled(nstreams, false),
            insts: IdVec::new(),
            inst_nodes: Csr::default(),
            shapes: IdVec::filled(trace.group_count(), None),
            sig_phases: IdVec::new(),
            phase_table: Vec::new(),
            ops: IdVec::new(),
            free_ops: Vec::new(),
            res_flows: IdVec::filled(nres, Vec::new()),
            // Link `(rank · dims + dim) · 2 + dir` carries its rank's bandwidth on the dim (a
            // `slow_link` lowers it for that rank alone).
            res_cap: IdVec::from_vec(
                (0..nres)
                    .map(|r| {
                        let (rank, dim) = (r / 2 / ndims.max(1), (r / 2) % ndims.max(1));
                        net.link_bandwidth(ranks[rank].rank(), dim).0
                    })
                    .collect(),
            ),
            queue: EventQueue::with_capacity(1024, 256),
            events: 0,
            done: 0,
            overflow: None,
            fill: Fill::new(nres),
        };
        sim.match_p2p()?;
        sim.match_collectives()?;
        Ok(sim)
    }

    #[inline]
    fn now(&self) -> u64 {
        self.queue.now()
    }

    /// Queues `ev` at `t`. Every time the engine computes is a saturating sum, so a time of
    /// `u64::MAX` is one that overflowed (and the [`UNSET`] sentinel): it is recorded, not run.
    #[inline]
    fn push(&mut self, t: u64, ev: Ev) {
        if t == UNSET {
            self.overflow.get_or_insert(ev);
            return;
        }
        self.queue.push(t, ev);
    }

    /// The node an event of an overflowing time belongs to.
    fn overflow_op(&self, ev: Ev) -> Option<OpRef> {
        let node = match ev {
            Ev::NodeDone(g) => Some(g),
            Ev::PhaseStart(op) | Ev::FlowDone(op, _) => match self.ops.get(op)?.what {
                OpWhat::P2p { send, recv, .. } => send.or(recv),
                OpWhat::Coll { inst } => self.inst_nodes.row(inst.ix()).first().copied(),
            },
        }?;
        Some(self.op_ref(node))
    }

    fn op_ref(&self, g: GNodeId) -> OpRef {
        let ri = self.node_rank[g].ix();
        let r = &self.trace.ranks()[ri];
        let local = g.0 - self.offset[ri];
        let label = r
            .node(NodeId(local))
            .map_or_else(String::new, |n| self.trace.label(n.label));
        OpRef {
            rank: r.rank(),
            node: NodeId(local),
            label,
        }
    }

    #[inline]
    fn kind(&self, g: GNodeId) -> NodeKind {
        self.kinds[g]
    }

    #[inline]
    fn rank_of(&self, g: GNodeId) -> RankId {
        self.trace.ranks()[self.node_rank[g].ix()].rank()
    }

    fn simulated(&self, rank: RankId) -> bool {
        self.sim_of.get(rank).is_some_and(Option::is_some)
    }

    /// Whether a non-simulated rank can stand in through a simulated member of its class.
    fn represented(&self, rank: RankId, class_sim: &[RankId]) -> bool {
        class_sim.binary_search(&self.trace.class_of(rank)).is_ok()
    }

    /// Classes that have at least one simulated rank, sorted and deduplicated.
    fn class_sim(&self) -> Vec<RankId> {
        let mut classes: Vec<RankId> = self
            .trace
            .ranks()
            .iter()
            .map(|r| self.trace.class_of(r.rank()))
            .collect();
        classes.sort_unstable();
        classes.dedup();
        classes
    }

    pub(super) fn run(mut self) -> Result<Timeline, EngineError> {
        for s in self.busy.ids() {
            self.try_issue(s);
        }
        loop {
            let ops = &self.ops;
            let next = self.queue.pop_live(|ev| match *ev {
                // Superseded by a rate change, or the flow already ended.
                Ev::FlowDone(op, gen) => ops[op].gen == gen && ops[op].flowing,
                Ev::NodeDone(_) | Ev::PhaseStart(_) => true,
            });
            let Some((_, ev)) = next else { break };
            if self.overflow.is_some() {
                break;
            }
            match ev {
                Ev::NodeDone(g) => self.complete(g),
                Ev::PhaseStart(op) => self.begin_flow(op),
                Ev::FlowDone(op, _) => self.end_flow(op),
            }
            self.events += 1;
        }
        if let Some(ev) = self.overflow {
            return Err(EngineError::TimeOverflow {
                op: self.overflow_op(ev),
            });
        }
        let total = self.kinds.len() as u64;
        if self.done < total {
            return Err(self.deadlock(total));
        }
        Ok(self.timeline())
    }

    /// Starts the head node of stream `s` if the stream is idle and the node's deps are done.
    fn try_issue(&mut self, s: SimStreamId) {
        if self.busy[s] || self.head[s] >= self.streams.bounds(s.ix()).1 {
            return;
        }
        let g = self.streams.items()[self.head[s] as usize];
        if self.deps_left[g] > 0 {
            return;
        }
        self.busy[s] = true;
        let now = self.now();
        self.start[g] = now;
        let kind = self.kind(g);
        match kind {
            NodeKind::Compute { duration } | NodeKind::Delay { duration } => {
                self.push(now.saturating_add(duration.0), Ev::NodeDone(g));
            }
            NodeKind::Send { peer, .. } | NodeKind::Recv { peer, .. } => {
                let me = self.rank_of(g);
                let is_send = matches!(kind, NodeKind::Send { .. });
                let (src, dst) = if is_send { (me, peer) } else { (peer, me) };
                let other = match self.pairing[g] {
                    Pairing::Mirror => None,
                    Pairing::Peer(p) if self.start[p] != UNSET => Some(p),
                    // It waits for its partner (or forever, if unmatched).
                    _ => return,
                };
                let (send, recv) = if is_send {
                    (Some(g), other)
                } else {
                    (other, Some(g))
                };
                self.start_op(OpWhat::P2p {
                    send,
                    recv,
                    src,
                    dst,
                });
            }
            NodeKind::Collective { .. } => {
                let Pairing::Member(i) = self.pairing[g] else {
                    return;
                };
                let inst = &mut self.insts[i];
                inst.arrived += 1;
                if inst.arrived == inst.needed {
                    self.start_op(OpWhat::Coll { inst: i });
                }
            }
        }
    }

    fn complete(&mut self, g: GNodeId) {
        self.end[g] = self.now();
        self.done += 1;
        let s = self.stream_of[g];
        self.busy[s] = false;
        self.head[s] += 1;
        self.try_issue(s);
        let (a, b) = self.dependents.bounds(g.ix());
        for k in a..b {
            let d = self.dependents.items()[k as usize];
            self.deps_left[d] -= 1;
            if self.deps_left[d] == 0 {
                self.try_issue(self.stream_of[d]);
            }
        }
    }

    fn timeline(self) -> Timeline {
        let ranks = self.trace.ranks();
        let mut finish = Vec::with_capacity(ranks.len());
        let mut busy = vec![0u64; ranks.len() * Category::COUNT];
        let mut makespan = 0u64;
        for (i, r) in ranks.iter().enumerate() {
            let mut f = 0u64;
            for (l, n) in r.nodes().enumerate() {
                let g = GNodeId(self.offset[i] + l as u32);
                let (s, e) = (self.start[g], self.end[g]);
                f = f.max(e);
                let slot = &mut busy[i * Category::COUNT + n.category.index()];
                *slot = slot.saturating_add(e - s);
            }
            makespan = makespan.max(f);
            finish.push(Ps(f));
        }
        Timeline {
            ranks: ranks.iter().map(|r| r.rank()).collect(),
            offset: self.offset,
            // In place: `Ps` is one `u64`, so the collect reuses the buffers.
            start: self.start.into_vec().into_iter().map(Ps).collect(),
            end: self.end.into_vec().into_iter().map(Ps).collect(),
            finish,
            busy,
            events: self.events,
            makespan,
        }
    }
}
