//! The event loop: node issue on streams, P2P rendezvous, collective arrival, phases and flows
//! with max-min fair bandwidth sharing.
//!
//! All per-node state lives in flat `Vec`s indexed by a global node index (`offset[rank] +
//! local id`). The loop pops `(time, seq)`-ordered events from a binary heap, with events
//! scheduled for the current time kept in a FIFO beside it (no heap operation for them);
//! after warm-up it allocates nothing (op slots, resource lists and scratch buffers are
//! reused, and a collective's phases are computed once per `(group, kind, bytes)`).
//!
//! Complexity: an event costs O(log E) for the heap (E pending events) plus, when a flow
//! starts or ends, one max-min fair recomputation of the component of flows connected to it
//! through shared links: O(L + I) to collect it (L links, I flow-link incidences) and
//! O((L + I) log(L + I)) to fill it ([`Fill::rates`]). Components stay small when flows do
//! not chain (TP collectives on NVLink); with `--all-ranks`, a data-parallel collective joins
//! its members' pipeline P2P flows into one component of up to a few hundred links, which
//! is why filling must not be O(L) per bottleneck round.

use super::error::{EngineError, OpRef, Stuck, StuckReason};
use super::id::{GNodeId, Id, IdVec, InstId, LinkId, OpId, SigId, SimRankId, SimStreamId};
use super::network::{ByteVolume, GroupShape, Network, Phase};
use super::queue::EventQueue;
use super::{Options, Sharing, Timeline};
use crate::base::{Csr, Ps};
use crate::trace::{Category, CollectiveKind, GroupId, NodeId, NodeKind, RankId, Trace};
use rustc_hash::FxHashMap;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Sends and receives per (src, dst, tag), each in program order. Fx hashing: the keys are
/// small integers and never come from an adversary; the map is only ever read in sorted key
/// order, so its iteration order cannot affect results.
type P2pQueues = FxHashMap<(RankId, RankId, u32), (Vec<GNodeId>, Vec<GNodeId>)>;

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
            sim_of[RankId(r.rank())] = Some(SimRankId(i as u32));
            acc += r.len() as u32;
        }
        offset.push(acc);

        // Streams: per rank, `max stream id + 1` streams, nodes in program order.
        let mut stream_base = Vec::with_capacity(ranks.len() + 1);
        let mut nstreams: u64 = 0;
        for r in ranks {
            stream_base.push(nstreams as u32);
            let k = r
                .nodes()
                .iter()
                .map(|n| n.stream.0 as u64 + 1)
                .max()
                .unwrap_or(0);
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
            res_cap: IdVec::from_vec(
                (0..nres)
                    .map(|r| net.bandwidth((r / 2) % ndims.max(1)))
                    .collect(),
            ),
            queue: EventQueue::with_capacity(1024, 256),
            events: 0,
            done: 0,
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

    #[inline]
    fn push(&mut self, t: u64, ev: Ev) {
        self.queue.push(t, ev);
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
        RankId(self.trace.ranks()[self.node_rank[g].ix()].rank())
    }

    fn simulated(&self, rank: RankId) -> bool {
        self.sim_of.get(rank).is_some_and(Option::is_some)
    }

    /// Whether a non-simulated rank can stand in through a simulated member of its class.
    fn represented(&self, rank: RankId, class_sim: &[u32]) -> bool {
        class_sim
            .binary_search(&self.trace.class_of(rank.0))
            .is_ok()
    }

    /// Classes that have at least one simulated rank, sorted and deduplicated.
    fn class_sim(&self) -> Vec<u32> {
        let mut classes: Vec<u32> = self
            .trace
            .ranks()
            .iter()
            .map(|r| self.trace.class_of(r.rank()))
            .collect();
        classes.sort_unstable();
        classes.dedup();
        classes
    }

    /// Pairs the k-th send from `a` to `b` with tag `t` with the k-th receive on `b` from `a`
    /// with tag `t`, in program order (FIFO per (src, dst, tag)).
    fn match_p2p(&mut self) -> Result<(), EngineError> {
        let class_sim = self.class_sim();
        let mut queues: P2pQueues = FxHashMap::default();
        for g in self.kinds.ids() {
            let me = self.rank_of(g);
            let (peer, key, is_send) = match self.kind(g) {
                NodeKind::Send { peer, tag, .. } => (RankId(peer), (me, RankId(peer), tag), true),
                NodeKind::Recv { peer, tag, .. } => (RankId(peer), (RankId(peer), me, tag), false),
                _ => continue,
            };
            if !self.simulated(peer) {
                if !self.represented(peer, &class_sim) {
                    return Err(EngineError::Unsimulated {
                        op: self.op_ref(g),
                        rank: peer.0,
                    });
                }
                if self.trace.class_of(peer.0) != self.trace.class_of(me.0) {
                    return Err(EngineError::Asymmetric {
                        op: self.op_ref(g),
                        peer: peer.0,
                    });
                }
                self.pairing[g] = Pairing::Mirror;
                continue;
            }
            let q = queues.entry(key).or_default();
            if is_send {
                q.0.push(g);
            } else {
                q.1.push(g);
            }
        }
        let mut keys: Vec<_> = queues.keys().copied().collect();
        keys.sort_unstable();
        for k in keys {
            let (sends, recvs) = &queues[&k];
            for (&s, &r) in sends.iter().zip(recvs) {
                let (NodeKind::Send { bytes: sb, .. }, NodeKind::Recv { bytes: rb, .. }) =
                    (self.kind(s), self.kind(r))
                else {
                    continue;
                };
                if sb != rb {
                    return Err(EngineError::P2pSizeMismatch {
                        send: self.op_ref(s),
                        recv: self.op_ref(r),
                        send_bytes: sb.0,
                        recv_bytes: rb.0,
                    });
                }
                self.pairing[s] = Pairing::Peer(r);
                self.pairing[r] = Pairing::Peer(s);
            }
        }
        Ok(())
    }

    /// Groups the k-th collective of every simulated member of a group into instance k.
    ///
    /// Per-group state is dense (indexed by group id): nodes are visited rank by rank, so a
    /// rank's running count on a group restarts when the group is first seen on a new rank.
    /// Instance members are laid out in `inst_nodes` by a counting pass (CSR), in node order.
    fn match_collectives(&mut self) -> Result<(), EngineError> {
        let class_sim = self.class_sim();
        let ngroups = self.shapes.len();
        // Per group: (rank index last seen + 1, collectives of that rank on it so far).
        let mut count: IdVec<GroupId, (u32, u32)> = IdVec::filled(ngroups, (0, 0));
        // Per group: its instances in order; simulated members (`None` until first seen).
        let mut group_insts: IdVec<GroupId, Vec<InstId>> = IdVec::filled(ngroups, Vec::new());
        let mut needed_of: IdVec<GroupId, Option<u32>> = IdVec::filled(ngroups, None);
        // First node of every instance (for mismatch reports).
        let mut first: IdVec<InstId, GNodeId> = IdVec::new();
        // Fx hashing (small integer keys); never iterated.
        let mut sigs: FxHashMap<(GroupId, CollectiveKind, u64), SigId> = FxHashMap::default();
        for g in self.kinds.ids() {
            let NodeKind::Collective { kind, group, bytes } = self.kind(g) else {
                continue;
            };
            let ri = self.node_rank[g].0;
            let c = &mut count[group];
            if c.0 != ri + 1 {
                *c = (ri + 1, 0);
            }
            let k = c.1 as usize;
            c.1 += 1;
            let inst = match group_insts[group].get(k) {
                Some(&i) => {
                    let f = &self.insts[i];
                    // An all-to-all-v's members send different totals (`bytes` is each
                    // one's row of the table); the table itself must agree.
                    let v = matches!(kind, CollectiveKind::AllToAllV(_));
                    if f.kind != kind || (!v && f.bytes != bytes.0) {
                        return Err(EngineError::CollectiveMismatch {
                            first: self.op_ref(first[i]),
                            other: self.op_ref(g),
                            group,
                        });
                    }
                    i
                }
                None => {
                    let needed = match needed_of[group] {
                        Some(n) => n,
                        None => {
                            let gm = self.trace.group(group);
                            if let Some(&m) = gm.iter().find(|&&m| {
                                !self.simulated(RankId(m))
                                    && !self.represented(RankId(m), &class_sim)
                            }) {
                                return Err(EngineError::Unsimulated {
                                    op: self.op_ref(g),
                                    rank: m,
                                });
                            }
                            let n =
                                gm.iter().filter(|&&m| self.simulated(RankId(m))).count() as u32;
                            needed_of[group] = Some(n);
                            self.shapes[group] = Some(self.net.group_shape(gm));
                            n
                        }
                    };
                    let next = SigId(sigs.len() as u32);
                    // An all-to-all-v's phases depend on its table alone.
                    let key_bytes = match kind {
                        CollectiveKind::AllToAllV(_) => 0,
                        _ => bytes.0,
                    };
                    let sig = *sigs.entry((group, kind, key_bytes)).or_insert(next);
                    let i = self.insts.push(Inst {
                        group,
                        kind,
                        bytes: bytes.0,
                        needed,
                        arrived: 0,
                        sig,
                    });
                    first.push(g);
                    // A rank's k-th collective on a group exists only if its (k-1)-th did.
                    group_insts[group].push(i);
                    i
                }
            };
            self.pairing[g] = Pairing::Member(inst);
        }
        self.sig_phases = IdVec::filled(sigs.len(), None);
        let pairing = &self.pairing;
        self.inst_nodes = Csr::from_pairs(
            self.insts.len(),
            pairing.ids().filter_map(|g| match pairing[g] {
                Pairing::Member(i) => Some((i.0, g)),
                _ => None,
            }),
        );
        Ok(())
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
            match ev {
                Ev::NodeDone(g) => self.complete(g),
                Ev::PhaseStart(op) => self.begin_flow(op),
                Ev::FlowDone(op, _) => self.end_flow(op),
            }
            self.events += 1;
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
                let peer = RankId(peer);
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

    fn start_op(&mut self, what: OpWhat) {
        let id = match self.free_ops.pop() {
            Some(id) => id,
            None => {
                self.fill.add_op();
                self.ops.push(Op {
                    what,
                    phases: Vec::new(),
                    phase: 0,
                    resources: Vec::new(),
                    remaining: 0.0,
                    rate: 0.0,
                    last: 0,
                    gen: 0,
                    flowing: false,
                })
            }
        };
        let mut phases = std::mem::take(&mut self.ops[id].phases);
        phases.clear();
        match what {
            OpWhat::P2p {
                src,
                dst,
                send,
                recv,
            } => {
                if let Some(dim) = self.net.dim_between(src.0, dst.0) {
                    let bytes = match send.or(recv).map(|g| self.kind(g)) {
                        Some(NodeKind::Send { bytes, .. } | NodeKind::Recv { bytes, .. }) => {
                            bytes.0 as f64
                        }
                        _ => 0.0,
                    };
                    phases.push(Phase {
                        dim,
                        latency: Ps(self.net.latency_ps(dim)),
                        volume: ByteVolume(bytes),
                    });
                }
            }
            OpWhat::Coll { inst } => {
                let i = &self.insts[inst];
                let sig = i.sig;
                let (a, b) = match self.sig_phases[sig] {
                    Some(range) => range,
                    None => {
                        if let Some(shape) = &self.shapes[i.group] {
                            match i.kind {
                                CollectiveKind::AllToAllV(t) => self.net.phases_v(
                                    shape,
                                    self.trace.group(i.group),
                                    self.trace.sizes(t),
                                    &mut phases,
                                ),
                                k => {
                                    let bytes = ByteVolume(i.bytes as f64);
                                    self.net.phases(shape, k, bytes, &mut phases)
                                }
                            }
                        }
                        let a = self.phase_table.len() as u32;
                        self.phase_table.extend_from_slice(&phases);
                        let range = (a, self.phase_table.len() as u32);
                        self.sig_phases[sig] = Some(range);
                        range
                    }
                };
                phases.clear();
                phases.extend_from_slice(&self.phase_table[a as usize..b as usize]);
            }
        }
        let op = &mut self.ops[id];
        op.what = what;
        op.phases = phases;
        op.phase = 0;
        self.run_phase(id);
    }

    fn run_phase(&mut self, id: OpId) {
        let op = &self.ops[id];
        let Some(ph) = op.phases.get(op.phase).copied() else {
            self.finish_op(id);
            return;
        };
        if ph.latency.0 > 0 {
            self.push(self.now().saturating_add(ph.latency.0), Ev::PhaseStart(id));
        } else {
            self.begin_flow(id);
        }
    }

    /// Resources of the current phase: the links, on the phase's dim, of the op's simulated
    /// endpoints. A non-simulated rank's links carry a copy of its representative's load, which
    /// the representative's own ops already account for.
    fn fill_resources(&mut self, id: OpId, dim: usize) {
        let mut res = std::mem::take(&mut self.ops[id].resources);
        res.clear();
        let link =
            |ri: SimRankId, dir: u32| LinkId(((ri.ix() * self.ndims + dim) * 2) as u32 + dir);
        match self.ops[id].what {
            OpWhat::P2p { src, dst, .. } => {
                if let Some(&Some(ri)) = self.sim_of.get(src) {
                    res.push(link(ri, 0));
                }
                if let Some(&Some(ri)) = self.sim_of.get(dst) {
                    res.push(link(ri, 1));
                }
            }
            OpWhat::Coll { inst } => {
                for &g in self.inst_nodes.row(inst.ix()) {
                    let ri = self.node_rank[g];
                    res.push(link(ri, 0));
                    res.push(link(ri, 1));
                }
            }
        }
        self.ops[id].resources = res;
    }

    fn begin_flow(&mut self, id: OpId) {
        let op = &self.ops[id];
        let ph = op.phases[op.phase];
        if ph.volume.0.is_nan() || ph.volume.0 <= 0.0 {
            self.end_phase(id);
            return;
        }
        self.fill_resources(id, ph.dim);
        let now = self.now();
        let op = &mut self.ops[id];
        op.remaining = ph.volume.0;
        op.rate = 0.0;
        op.last = now;
        op.flowing = true;
        if !self.sharing || op.resources.is_empty() {
            let bw = self.net.bandwidth(ph.dim);
            self.set_rate(id, bw);
            return;
        }
        for k in 0..self.ops[id].resources.len() {
            let r = self.ops[id].resources[k];
            self.res_flows[r].push(id);
        }
        self.reshare(id);
    }

    fn end_flow(&mut self, id: OpId) {
        let op = &mut self.ops[id];
        op.flowing = false;
        op.rate = 0.0;
        op.gen = op.gen.wrapping_add(1);
        if self.sharing {
            for k in 0..self.ops[id].resources.len() {
                let r = self.ops[id].resources[k];
                if let Some(pos) = self.res_flows[r].iter().position(|&o| o == id) {
                    self.res_flows[r].swap_remove(pos);
                }
            }
            self.reshare(id);
        }
        self.end_phase(id);
    }

    fn end_phase(&mut self, id: OpId) {
        self.ops[id].phase += 1;
        self.run_phase(id);
    }

    fn finish_op(&mut self, id: OpId) {
        let now = self.now();
        match self.ops[id].what {
            OpWhat::P2p { send, recv, .. } => {
                for g in [send, recv].into_iter().flatten() {
                    self.push(now, Ev::NodeDone(g));
                }
            }
            OpWhat::Coll { inst } => {
                let (a, b) = self.inst_nodes.bounds(inst.ix());
                for k in a..b {
                    let g = self.inst_nodes.items()[k as usize];
                    self.push(now, Ev::NodeDone(g));
                }
            }
        }
        self.free_ops.push(id);
    }

    /// Sets an op's rate, first crediting the bytes it moved at its old rate, and schedules its
    /// completion under the new one.
    fn set_rate(&mut self, id: OpId, rate: f64) {
        let now = self.now();
        let op = &mut self.ops[id];
        if op.rate == rate {
            return;
        }
        // Fair shares are positive for positive capacities; guard against rounding to zero.
        let rate = rate.max(f64::MIN_POSITIVE);
        if op.rate > 0.0 {
            let moved = op.rate * (now - op.last) as f64 / PS_PER_S;
            op.remaining = (op.remaining - moved).max(0.0);
        }
        op.last = now;
        op.rate = rate;
        op.gen = op.gen.wrapping_add(1);
        let dt = (op.remaining * PS_PER_S / rate).round();
        let dt = if dt.is_finite() && dt < u64::MAX as f64 {
            dt as u64
        } else {
            u64::MAX
        };
        let gen = op.gen;
        self.push(now.saturating_add(dt), Ev::FlowDone(id, gen));
    }

    /// Recomputes max-min fair rates (progressive filling) for every flow connected, through
    /// shared links, to the links of op `seed`.
    fn reshare(&mut self, seed: OpId) {
        // Fast path: no other flow shares a link with `seed`, so the component is `seed`
        // alone (or empty once it ended) and progressive filling would give it the smallest
        // capacity of its links (`share(cap, 1)` is that capacity exactly).
        let mut alone = true;
        let mut min = f64::INFINITY;
        for &r in &self.ops[seed].resources {
            match self.res_flows[r].as_slice() {
                [] => {}
                [o] if *o == seed => min = min.min(self.res_cap[r].max(0.0)),
                _ => {
                    alone = false;
                    break;
                }
            }
        }
        if alone {
            if self.ops[seed].flowing && min.is_finite() {
                self.set_rate(seed, min);
            }
            return;
        }
        let fill = &mut self.fill;
        fill.component(&self.ops, &self.res_flows, seed);
        fill.rates(&self.ops, &self.res_flows, &self.res_cap);
        let comp_ops = std::mem::take(&mut self.fill.comp_ops);
        for &o in &comp_ops {
            let rate = self.fill.new_rate[o];
            self.set_rate(o, rate);
        }
        self.fill.comp_ops = comp_ops;
    }

    fn timeline(self) -> Timeline {
        let ranks = self.trace.ranks();
        let mut finish = Vec::with_capacity(ranks.len());
        let mut busy = vec![0u64; ranks.len() * Category::COUNT];
        let mut makespan = 0u64;
        for (i, r) in ranks.iter().enumerate() {
            let mut f = 0u64;
            for (l, n) in r.nodes().iter().enumerate() {
                let g = GNodeId(self.offset[i] + l as u32);
                let (s, e) = (self.start[g], self.end[g]);
                f = f.max(e);
                let slot = &mut busy[i * Category::COUNT + n.category.index()];
                *slot = slot.saturating_add(e - s);
            }
            makespan = makespan.max(f);
            finish.push(f);
        }
        Timeline {
            ranks: ranks.iter().map(|r| r.rank()).collect(),
            offset: self.offset,
            start: self.start.into_vec(),
            end: self.end.into_vec(),
            finish,
            busy,
            events: self.events,
            makespan,
        }
    }

    /// Explains a drained queue with unfinished nodes: every posted operation still waiting,
    /// with why, and a dependency cycle if there is one.
    fn deadlock(&self, total: u64) -> EngineError {
        let mut stuck = Vec::new();
        for s in self.busy.ids() {
            if self.head[s] >= self.streams.bounds(s.ix()).1 {
                continue;
            }
            let g = self.streams.items()[self.head[s] as usize];
            if self.start[g] == UNSET {
                continue;
            }
            let reason = match (self.kind(g), self.pairing[g]) {
                (NodeKind::Send { peer, tag, .. }, Pairing::Unpaired) => {
                    StuckReason::NoMatchingRecv { peer, tag }
                }
                (NodeKind::Recv { peer, tag, .. }, Pairing::Unpaired) => {
                    StuckReason::NoMatchingSend { peer, tag }
                }
                (NodeKind::Send { .. } | NodeKind::Recv { .. }, Pairing::Peer(p)) => {
                    StuckReason::PeerNeverPosts {
                        peer: self.op_ref(p),
                    }
                }
                (NodeKind::Collective { kind, group, .. }, Pairing::Member(i)) => {
                    let arrived: Vec<u32> = self
                        .inst_nodes
                        .row(i.ix())
                        .iter()
                        .filter(|&&n| self.start[n] != UNSET)
                        .map(|&n| self.rank_of(n).0)
                        .collect();
                    let missing = self
                        .trace
                        .group(group)
                        .iter()
                        .copied()
                        .filter(|&m| self.simulated(RankId(m)) && !arrived.contains(&m))
                        .collect();
                    StuckReason::CollectiveIncomplete {
                        kind,
                        group,
                        missing,
                    }
                }
                _ => continue,
            };
            stuck.push(Stuck {
                op: self.op_ref(g),
                reason,
            });
        }
        let cycle = self
            .find_cycle()
            .into_iter()
            .map(|g| self.op_ref(g))
            .collect();
        EngineError::Deadlock {
            stuck,
            cycle,
            unfinished: total - self.done,
            total,
        }
    }

    /// A cycle among unfinished nodes over dependency and stream-order edges (iterative DFS).
    fn find_cycle(&self) -> Vec<GNodeId> {
        let n = self.kinds.len();
        let mut next_in_stream: IdVec<GNodeId, Option<GNodeId>> = IdVec::filled(n, None);
        for s in self.busy.ids() {
            for w in self.streams.row(s.ix()).windows(2) {
                next_in_stream[w[0]] = Some(w[1]);
            }
        }
        let succ = |g: GNodeId, k: usize| -> Option<GNodeId> {
            let deps = self.dependents.row(g.ix());
            match deps.get(k) {
                Some(&d) => Some(d),
                None if k == deps.len() => next_in_stream[g],
                None => None,
            }
        };
        // 0 unvisited, 1 on the stack, 2 done.
        let mut color: IdVec<GNodeId, u8> = IdVec::filled(n, 0);
        let mut stack: Vec<(GNodeId, usize)> = Vec::new();
        for root in self.kinds.ids() {
            if color[root] != 0 || self.end[root] != UNSET {
                continue;
            }
            color[root] = 1;
            stack.push((root, 0));
            while let Some(&mut (g, ref mut k)) = stack.last_mut() {
                let i = *k;
                *k += 1;
                match succ(g, i) {
                    None => {
                        color[g] = 2;
                        stack.pop();
                    }
                    Some(s) if self.end[s] != UNSET || color[s] == 2 => {}
                    Some(s) if color[s] == 1 => {
                        let from = stack.iter().position(|&(x, _)| x == s).unwrap_or(0);
                        return stack[from..].iter().map(|&(x, _)| x).collect();
                    }
                    Some(s) => {
                        color[s] = 1;
                        stack.push((s, 0));
                    }
                }
            }
        }
        Vec::new()
    }
}

/// Orders non-negative shares by value (their bit patterns order as the values do; both
/// zeros map to 0).
#[inline]
fn share_key(share: f64) -> u64 {
    if share > 0.0 {
        share.to_bits()
    } else {
        0
    }
}

/// Scratch state of max-min fair sharing, reused across calls (sized per link and per op
/// slot). Marks are epochs, so nothing is cleared between calls.
struct Fill {
    epoch: u32,
    /// Per link: the epoch it joined the component, its capacity and unfixed flows left in
    /// the current filling, its position in `comp_res`.
    res_mark: IdVec<LinkId, u32>,
    cap: IdVec<LinkId, f64>,
    cnt: IdVec<LinkId, u32>,
    res_pos: IdVec<LinkId, u32>,
    /// Per op slot: the epoch it joined the component, the epoch its rate was fixed, the
    /// epoch it got an exclusive link and that link's capacity, its new rate.
    op_mark: IdVec<OpId, u32>,
    op_frozen: IdVec<OpId, u32>,
    op_excl: IdVec<OpId, u32>,
    op_excl_cap: IdVec<OpId, f64>,
    new_rate: IdVec<OpId, f64>,
    /// The component: links in discovery order, flows.
    comp_res: Vec<LinkId>,
    comp_ops: Vec<OpId>,
    stack: Vec<LinkId>,
    /// Filling candidates `(share key, position in comp_res)`: initial shares, sorted; shares
    /// changed during filling, in a min-heap.
    init: Vec<(u64, u32)>,
    heap: BinaryHeap<Reverse<(u64, u32)>>,
}

impl Fill {
    fn new(links: usize) -> Fill {
        Fill {
            epoch: 0,
            res_mark: IdVec::filled(links, 0),
            cap: IdVec::filled(links, 0.0),
            cnt: IdVec::filled(links, 0),
            res_pos: IdVec::filled(links, 0),
            op_mark: IdVec::new(),
            op_frozen: IdVec::new(),
            op_excl: IdVec::new(),
            op_excl_cap: IdVec::new(),
            new_rate: IdVec::new(),
            comp_res: Vec::new(),
            comp_ops: Vec::new(),
            stack: Vec::new(),
            init: Vec::new(),
            heap: BinaryHeap::new(),
        }
    }

    /// Makes room for one more op slot.
    fn add_op(&mut self) {
        self.op_mark.push(0);
        self.op_frozen.push(0);
        self.op_excl.push(0);
        self.op_excl_cap.push(0.0);
        self.new_rate.push(0.0);
    }

    /// Collects into `comp_res` / `comp_ops` the links and flows connected to `seed`'s links
    /// (depth-first; the discovery order breaks ties in [`Fill::rates`]).
    fn component(
        &mut self,
        ops: &IdVec<OpId, Op>,
        res_flows: &IdVec<LinkId, Vec<OpId>>,
        seed: OpId,
    ) {
        self.epoch = self.epoch.wrapping_add(1);
        let epoch = self.epoch;
        let Fill {
            res_mark,
            op_mark,
            comp_res,
            comp_ops,
            stack,
            ..
        } = self;
        comp_res.clear();
        comp_ops.clear();
        stack.clear();
        for &r in &ops[seed].resources {
            if res_mark[r] != epoch {
                res_mark[r] = epoch;
                stack.push(r);
            }
        }
        while let Some(r) = stack.pop() {
            comp_res.push(r);
            for &o in &res_flows[r] {
                if op_mark[o] == epoch {
                    continue;
                }
                op_mark[o] = epoch;
                comp_ops.push(o);
                for &r2 in &ops[o].resources {
                    if res_mark[r2] != epoch {
                        res_mark[r2] = epoch;
                        stack.push(r2);
                    }
                }
            }
        }
    }

    /// Progressive filling over the component: the link with the smallest fair share fixes
    /// the rate of every flow on it; those flows' use is removed from their other links;
    /// repeat. Ties go to the link found first (smallest position in `comp_res`). Candidates
    /// are ordered by (share, position): the initial shares sorted once, and the shares that
    /// change during filling in a min-heap; an entry is stale once its link's share differs
    /// from its key (a newer entry exists) or its flows are all fixed. This picks exactly the
    /// links, in the order, that a linear scan for the minimum would, so the rates are the
    /// same to the last bit, in O((L + I) log(L + I)) for L links and I flow-link incidences
    /// instead of O(L · rounds).
    fn rates(
        &mut self,
        ops: &IdVec<OpId, Op>,
        res_flows: &IdVec<LinkId, Vec<OpId>>,
        res_cap: &IdVec<LinkId, f64>,
    ) {
        let epoch = self.epoch;
        let Fill {
            cap,
            cnt,
            res_pos,
            op_frozen,
            op_excl,
            op_excl_cap,
            new_rate,
            comp_res,
            init,
            heap,
            ..
        } = self;
        init.clear();
        heap.clear();
        for (pos, &ri) in comp_res.iter().enumerate() {
            cap[ri] = res_cap[ri];
            cnt[ri] = res_flows[ri].len() as u32;
            res_pos[ri] = pos as u32;
            if cnt[ri] == 1 {
                // A link only one flow uses keeps its full capacity until that flow is
                // fixed, so of such links with equal capacity only the first can be picked.
                let o = res_flows[ri][0];
                if op_excl[o] == epoch {
                    if op_excl_cap[o] == res_cap[ri] {
                        continue;
                    }
                } else {
                    op_excl[o] = epoch;
                    op_excl_cap[o] = res_cap[ri];
                }
            }
            init.push((share_key(share(cap[ri], cnt[ri])), pos as u32));
        }
        init.sort_unstable();
        let current =
            |cap: &IdVec<LinkId, f64>, cnt: &IdVec<LinkId, u32>, (key, pos): (u64, u32)| {
                let r = comp_res[pos as usize];
                cnt[r] > 0 && share_key(share(cap[r], cnt[r])) == key
            };
        let mut next = 0;
        loop {
            while init.get(next).is_some_and(|&e| !current(cap, cnt, e)) {
                next += 1;
            }
            while heap.peek().is_some_and(|&Reverse(e)| !current(cap, cnt, e)) {
                heap.pop();
            }
            let pick = match (init.get(next), heap.peek()) {
                (Some(&a), Some(&Reverse(b))) if b < a => {
                    heap.pop();
                    b
                }
                (Some(&a), _) => {
                    next += 1;
                    a
                }
                (None, Some(&Reverse(b))) => {
                    heap.pop();
                    b
                }
                (None, None) => break,
            };
            let r = comp_res[pick.1 as usize];
            let s = share(cap[r], cnt[r]);
            for &o in &res_flows[r] {
                if op_frozen[o] == epoch {
                    continue;
                }
                op_frozen[o] = epoch;
                new_rate[o] = s;
                for &r2 in &ops[o].resources {
                    cap[r2] -= s;
                    cnt[r2] -= 1;
                    if cnt[r2] > 0 {
                        heap.push(Reverse((share_key(share(cap[r2], cnt[r2])), res_pos[r2])));
                    }
                }
            }
        }
    }
}

/// A link's fair share: its capacity left over its unfixed flows.
#[inline]
fn share(cap: f64, cnt: u32) -> f64 {
    cap.max(0.0) / cnt as f64
}
