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
use super::network::{GroupShape, Network, Phase};
use super::{Options, Sharing, Timeline};
use crate::trace::{Category, CollectiveKind, GroupId, NodeId, NodeKind, Trace};
use rustc_hash::FxHashMap;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Sends and receives per (src, dst, tag), each in program order. Fx hashing: the keys are
/// small integers and never come from an adversary; the map is only ever read in sorted key
/// order, so its iteration order cannot affect results.
type P2pQueues = FxHashMap<(u32, u32, u32), (Vec<u32>, Vec<u32>)>;

const NONE: u32 = u32::MAX;
/// Partner of a P2P whose peer is a non-simulated rank of the same class.
const MIRROR: u32 = u32::MAX - 1;
const UNSET: u64 = u64::MAX;
const PS_PER_S: f64 = 1e12;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// A node finished (compute ends, or its transfer/collective completed).
    NodeDone(u32),
    /// The latency part of an op's current phase elapsed: its bytes start to flow.
    PhaseStart(u32),
    /// An op's flow drains, if its generation is still current.
    FlowDone(u32, u32),
}

#[derive(Clone, Copy, Debug)]
enum OpWhat {
    /// Global ids of the send and receive (`NONE` for a mirrored side).
    P2p {
        send: u32,
        recv: u32,
        src: u32,
        dst: u32,
    },
    Coll {
        inst: u32,
    },
}

/// An active transfer or collective: its phases, and the flow of its current phase.
#[derive(Clone, Debug)]
struct Op {
    what: OpWhat,
    phases: Vec<Phase>,
    phase: usize,
    resources: Vec<u32>,
    /// Bytes left in the current phase as of `last`.
    remaining: f64,
    /// Bytes per second; 0 when not flowing.
    rate: f64,
    last: u64,
    gen: u32,
    flowing: bool,
}

struct Inst {
    group: u32,
    kind: CollectiveKind,
    bytes: u64,
    needed: u32,
    arrived: u32,
    /// Index of its `(group, kind, bytes)` signature in `sig_phases`.
    sig: u32,
    /// Range into `inst_nodes`.
    nodes: (u32, u32),
}

pub(super) struct Sim<'a> {
    trace: &'a Trace,
    net: &'a Network,
    sharing: bool,
    ndims: usize,
    offset: Vec<u32>,
    sim_of: Vec<u32>,
    node_rank: Vec<u32>,
    /// Copy of every node's kind, by global index (one load in the hot loop).
    kinds: Vec<NodeKind>,
    deps_left: Vec<u32>,
    out_start: Vec<u32>,
    out: Vec<u32>,
    stream_of: Vec<u32>,
    partner: Vec<u32>,
    start: Vec<u64>,
    end: Vec<u64>,
    stream_start: Vec<u32>,
    stream_nodes: Vec<u32>,
    head: Vec<u32>,
    busy: Vec<bool>,
    insts: Vec<Inst>,
    inst_nodes: Vec<u32>,
    shapes: Vec<Option<GroupShape>>,
    /// Per collective signature `(group, kind, bytes)`: its phases as a range into
    /// `phase_table`, computed on first use (`Network::phases` is a pure function of the
    /// signature, so instances of one signature share them).
    sig_phases: Vec<Option<(u32, u32)>>,
    phase_table: Vec<Phase>,
    ops: Vec<Op>,
    free_ops: Vec<u32>,
    res_flows: Vec<Vec<u32>>,
    res_cap: Vec<f64>,
    heap: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    /// Events scheduled for the current time `now`, in scheduling order. They come after
    /// every heap entry for `now` (those were scheduled before time reached `now`) and before
    /// any later one, so popping the heap's `now` entries, then these, then the heap again is
    /// exactly `(time, seq)` order, without a heap operation for same-time events.
    ready: std::collections::VecDeque<Ev>,
    seq: u64,
    now: u64,
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
        let mut sim_of = vec![NONE; trace.world() as usize];
        let mut acc = 0u32;
        for (i, r) in ranks.iter().enumerate() {
            offset.push(acc);
            sim_of[r.rank() as usize] = i as u32;
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
        let mut node_rank = Vec::with_capacity(total);
        let mut kinds = Vec::with_capacity(total);
        let mut stream_of = Vec::with_capacity(total);
        let mut stream_start = vec![0u32; nstreams + 1];
        for (i, r) in ranks.iter().enumerate() {
            for n in r.nodes() {
                let s = stream_base[i] + n.stream.0 as u32;
                node_rank.push(i as u32);
                kinds.push(n.kind);
                stream_of.push(s);
                stream_start[s as usize + 1] += 1;
            }
        }
        for s in 0..nstreams {
            stream_start[s + 1] += stream_start[s];
        }
        let mut fill = stream_start.clone();
        let mut stream_nodes = vec![0u32; total];
        for (g, &s) in stream_of.iter().enumerate() {
            stream_nodes[fill[s as usize] as usize] = g as u32;
            fill[s as usize] += 1;
        }
        let head = stream_start[..nstreams].to_vec();

        // Dependencies: counts and the reverse (dependents) CSR.
        let mut deps_left = vec![0u32; total];
        let mut out_start = vec![0u32; total + 1];
        for (i, r) in ranks.iter().enumerate() {
            for l in 0..r.len() {
                let g = offset[i] as usize + l;
                let deps = r.deps(NodeId(l as u32));
                deps_left[g] = deps.len() as u32;
                for d in deps {
                    out_start[offset[i] as usize + d.0 as usize + 1] += 1;
                }
            }
        }
        for g in 0..total {
            out_start[g + 1] += out_start[g];
        }
        let mut fill = out_start.clone();
        let mut out = vec![0u32; out_start[total] as usize];
        for (i, r) in ranks.iter().enumerate() {
            for l in 0..r.len() {
                let g = offset[i] + l as u32;
                for d in r.deps(NodeId(l as u32)) {
                    let slot = &mut fill[(offset[i] + d.0) as usize];
                    out[*slot as usize] = g;
                    *slot += 1;
                }
            }
        }

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
            out_start,
            out,
            stream_of,
            partner: vec![NONE; total],
            start: vec![UNSET; total],
            end: vec![UNSET; total],
            stream_start,
            stream_nodes,
            head,
            busy: vec![false; nstreams],
            insts: Vec::new(),
            inst_nodes: Vec::new(),
            shapes: vec![None; trace.group_count()],
            sig_phases: Vec::new(),
            phase_table: Vec::new(),
            ops: Vec::new(),
            free_ops: Vec::new(),
            res_flows: vec![Vec::new(); nres],
            res_cap: (0..nres)
                .map(|r| net.bandwidth((r / 2) % ndims.max(1)))
                .collect(),
            heap: BinaryHeap::with_capacity(1024),
            ready: std::collections::VecDeque::with_capacity(256),
            seq: 0,
            now: 0,
            events: 0,
            done: 0,
            fill: Fill::new(nres),
        };
        sim.match_p2p()?;
        sim.match_collectives()?;
        Ok(sim)
    }

    fn op_ref(&self, g: u32) -> OpRef {
        let ri = self.node_rank[g as usize] as usize;
        let r = &self.trace.ranks()[ri];
        let local = g - self.offset[ri];
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
    fn kind(&self, g: u32) -> NodeKind {
        self.kinds[g as usize]
    }

    #[inline]
    fn rank_of(&self, g: u32) -> u32 {
        self.trace.ranks()[self.node_rank[g as usize] as usize].rank()
    }

    /// Whether a non-simulated rank can stand in through a simulated member of its class.
    fn represented(&self, rank: u32, class_sim: &[u32]) -> bool {
        class_sim.binary_search(&self.trace.class_of(rank)).is_ok()
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
        for g in 0..self.partner.len() as u32 {
            let me = self.rank_of(g);
            let (peer, key, is_send) = match self.kind(g) {
                NodeKind::Send { peer, tag, .. } => (peer, (me, peer, tag), true),
                NodeKind::Recv { peer, tag, .. } => (peer, (peer, me, tag), false),
                _ => continue,
            };
            if self.sim_of[peer as usize] == NONE {
                if !self.represented(peer, &class_sim) {
                    return Err(EngineError::Unsimulated {
                        op: self.op_ref(g),
                        rank: peer,
                    });
                }
                if self.trace.class_of(peer) != self.trace.class_of(me) {
                    return Err(EngineError::Asymmetric {
                        op: self.op_ref(g),
                        peer,
                    });
                }
                self.partner[g as usize] = MIRROR;
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
                self.partner[s as usize] = r;
                self.partner[r as usize] = s;
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
        let mut count: Vec<(u32, u32)> = vec![(0, 0); ngroups];
        // Per group: its instances in order; simulated members (`NONE` until first seen).
        let mut group_insts: Vec<Vec<u32>> = vec![Vec::new(); ngroups];
        let mut needed_of: Vec<u32> = vec![NONE; ngroups];
        // First node of every instance (for mismatch reports), and members per instance.
        let mut first: Vec<u32> = Vec::new();
        let mut sizes: Vec<u32> = Vec::new();
        // Fx hashing (small integer keys); never iterated.
        let mut sigs: FxHashMap<(u32, CollectiveKind, u64), u32> = FxHashMap::default();
        for g in 0..self.partner.len() as u32 {
            let NodeKind::Collective { kind, group, bytes } = self.kind(g) else {
                continue;
            };
            let gi = group.0 as usize;
            let ri = self.node_rank[g as usize];
            let c = &mut count[gi];
            if c.0 != ri + 1 {
                *c = (ri + 1, 0);
            }
            let k = c.1 as usize;
            c.1 += 1;
            let inst = match group_insts[gi].get(k) {
                Some(&i) => {
                    let f = &self.insts[i as usize];
                    if f.kind != kind || f.bytes != bytes.0 {
                        return Err(EngineError::CollectiveMismatch {
                            first: self.op_ref(first[i as usize]),
                            other: self.op_ref(g),
                            group,
                        });
                    }
                    i
                }
                None => {
                    if needed_of[gi] == NONE {
                        let gm = self.trace.group(group);
                        if let Some(&m) = gm.iter().find(|&&m| {
                            self.sim_of[m as usize] == NONE && !self.represented(m, &class_sim)
                        }) {
                            return Err(EngineError::Unsimulated {
                                op: self.op_ref(g),
                                rank: m,
                            });
                        }
                        needed_of[gi] = gm
                            .iter()
                            .filter(|&&m| self.sim_of[m as usize] != NONE)
                            .count() as u32;
                        self.shapes[gi] = Some(self.net.group_shape(gm));
                    }
                    let i = self.insts.len() as u32;
                    let nsigs = sigs.len() as u32;
                    let sig = *sigs.entry((group.0, kind, bytes.0)).or_insert(nsigs);
                    self.insts.push(Inst {
                        group: group.0,
                        kind,
                        bytes: bytes.0,
                        needed: needed_of[gi],
                        arrived: 0,
                        sig,
                        nodes: (0, 0),
                    });
                    first.push(g);
                    sizes.push(0);
                    // A rank's k-th collective on a group exists only if its (k-1)-th did.
                    group_insts[gi].push(i);
                    i
                }
            };
            sizes[inst as usize] += 1;
            self.partner[g as usize] = inst;
        }
        self.sig_phases = vec![None; sigs.len()];
        let mut acc = 0u32;
        for (inst, &n) in self.insts.iter_mut().zip(&sizes) {
            inst.nodes = (acc, acc);
            acc += n;
        }
        self.inst_nodes = vec![0; acc as usize];
        for g in 0..self.partner.len() as u32 {
            if let NodeKind::Collective { .. } = self.kind(g) {
                let inst = &mut self.insts[self.partner[g as usize] as usize];
                self.inst_nodes[inst.nodes.1 as usize] = g;
                inst.nodes.1 += 1;
            }
        }
        Ok(())
    }

    fn push(&mut self, t: u64, ev: Ev) {
        if t == self.now {
            self.ready.push_back(ev);
        } else {
            self.heap.push(Reverse((t, self.seq, ev)));
        }
        self.seq += 1;
    }

    /// The next event in `(time, seq)` order (see `ready`), and its time.
    #[inline]
    fn pop(&mut self) -> Option<(u64, Ev)> {
        match self.heap.peek() {
            Some(&Reverse((t, _, _))) if t == self.now || self.ready.is_empty() => {
                self.heap.pop().map(|Reverse((t, _, ev))| (t, ev))
            }
            _ => self.ready.pop_front().map(|ev| (self.now, ev)),
        }
    }

    pub(super) fn run(mut self) -> Result<Timeline, EngineError> {
        for s in 0..self.busy.len() as u32 {
            self.try_issue(s);
        }
        while let Some((t, ev)) = self.pop() {
            self.now = t;
            match ev {
                Ev::NodeDone(g) => self.complete(g),
                Ev::PhaseStart(op) => self.begin_flow(op),
                Ev::FlowDone(op, gen) => {
                    let o = &self.ops[op as usize];
                    if o.gen != gen || !o.flowing {
                        continue; // superseded by a rate change
                    }
                    self.end_flow(op);
                }
            }
            self.events += 1;
        }
        let total = self.partner.len() as u64;
        if self.done < total {
            return Err(self.deadlock(total));
        }
        Ok(self.timeline())
    }

    /// Starts the head node of stream `s` if the stream is idle and the node's deps are done.
    fn try_issue(&mut self, s: u32) {
        let si = s as usize;
        if self.busy[si] || self.head[si] >= self.stream_start[si + 1] {
            return;
        }
        let g = self.stream_nodes[self.head[si] as usize];
        if self.deps_left[g as usize] > 0 {
            return;
        }
        self.busy[si] = true;
        self.start[g as usize] = self.now;
        let kind = self.kind(g);
        match kind {
            NodeKind::Compute { duration } | NodeKind::Delay { duration } => {
                self.push(self.now.saturating_add(duration.0), Ev::NodeDone(g));
            }
            NodeKind::Send { peer, .. } | NodeKind::Recv { peer, .. } => {
                let p = self.partner[g as usize];
                let me = self.rank_of(g);
                let is_send = matches!(kind, NodeKind::Send { .. });
                let (src, dst) = if is_send { (me, peer) } else { (peer, me) };
                if p == MIRROR {
                    let (send, recv) = if is_send { (g, NONE) } else { (NONE, g) };
                    self.start_op(OpWhat::P2p {
                        send,
                        recv,
                        src,
                        dst,
                    });
                } else if p != NONE && self.start[p as usize] != UNSET {
                    let (send, recv) = if is_send { (g, p) } else { (p, g) };
                    self.start_op(OpWhat::P2p {
                        send,
                        recv,
                        src,
                        dst,
                    });
                }
                // Otherwise it waits for its partner (or forever, if unmatched).
            }
            NodeKind::Collective { .. } => {
                let i = self.partner[g as usize] as usize;
                let inst = &mut self.insts[i];
                inst.arrived += 1;
                if inst.arrived == inst.needed {
                    self.start_op(OpWhat::Coll { inst: i as u32 });
                }
            }
        }
    }

    fn complete(&mut self, g: u32) {
        let gi = g as usize;
        self.end[gi] = self.now;
        self.done += 1;
        let s = self.stream_of[gi];
        self.busy[s as usize] = false;
        self.head[s as usize] += 1;
        self.try_issue(s);
        for k in self.out_start[gi]..self.out_start[gi + 1] {
            let d = self.out[k as usize] as usize;
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
                });
                self.fill.add_op();
                (self.ops.len() - 1) as u32
            }
        };
        let mut phases = std::mem::take(&mut self.ops[id as usize].phases);
        phases.clear();
        match what {
            OpWhat::P2p {
                src,
                dst,
                send,
                recv,
            } => {
                if let Some(dim) = self.net.dim_between(src, dst) {
                    let bytes = match (send, recv) {
                        (NONE, r) => self.kind(r),
                        (s, _) => self.kind(s),
                    };
                    let bytes = match bytes {
                        NodeKind::Send { bytes, .. } | NodeKind::Recv { bytes, .. } => {
                            bytes.0 as f64
                        }
                        _ => 0.0,
                    };
                    phases.push(Phase {
                        dim,
                        latency: crate::trace::Ps(self.net.latency_ps(dim)),
                        volume: bytes,
                    });
                }
            }
            OpWhat::Coll { inst } => {
                let i = &self.insts[inst as usize];
                let sig = i.sig as usize;
                let (a, b) = match self.sig_phases[sig] {
                    Some(range) => range,
                    None => {
                        if let Some(shape) = &self.shapes[i.group as usize] {
                            self.net.phases(shape, i.kind, i.bytes as f64, &mut phases);
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
        let op = &mut self.ops[id as usize];
        op.what = what;
        op.phases = phases;
        op.phase = 0;
        self.run_phase(id);
    }

    fn run_phase(&mut self, id: u32) {
        let op = &self.ops[id as usize];
        let Some(ph) = op.phases.get(op.phase).copied() else {
            self.finish_op(id);
            return;
        };
        if ph.latency.0 > 0 {
            self.push(self.now.saturating_add(ph.latency.0), Ev::PhaseStart(id));
        } else {
            self.begin_flow(id);
        }
    }

    /// Resources of the current phase: the links, on the phase's dim, of the op's simulated
    /// endpoints. A non-simulated rank's links carry a copy of its representative's load, which
    /// the representative's own ops already account for.
    fn fill_resources(&mut self, id: u32, dim: usize) {
        let mut res = std::mem::take(&mut self.ops[id as usize].resources);
        res.clear();
        let link = |ri: u32, dir: u32| ((ri as usize * self.ndims + dim) * 2) as u32 + dir;
        match self.ops[id as usize].what {
            OpWhat::P2p { src, dst, .. } => {
                if let Some(&ri) = self.sim_of.get(src as usize).filter(|&&r| r != NONE) {
                    res.push(link(ri, 0));
                }
                if let Some(&ri) = self.sim_of.get(dst as usize).filter(|&&r| r != NONE) {
                    res.push(link(ri, 1));
                }
            }
            OpWhat::Coll { inst } => {
                let (a, b) = self.insts[inst as usize].nodes;
                for k in a..b {
                    let ri = self.node_rank[self.inst_nodes[k as usize] as usize];
                    res.push(link(ri, 0));
                    res.push(link(ri, 1));
                }
            }
        }
        self.ops[id as usize].resources = res;
    }

    fn begin_flow(&mut self, id: u32) {
        let op = &self.ops[id as usize];
        let ph = op.phases[op.phase];
        if ph.volume.is_nan() || ph.volume <= 0.0 {
            self.end_phase(id);
            return;
        }
        self.fill_resources(id, ph.dim);
        let op = &mut self.ops[id as usize];
        op.remaining = ph.volume;
        op.rate = 0.0;
        op.last = self.now;
        op.flowing = true;
        if !self.sharing || op.resources.is_empty() {
            let bw = self.net.bandwidth(ph.dim);
            self.set_rate(id, bw);
            return;
        }
        for k in 0..self.ops[id as usize].resources.len() {
            let r = self.ops[id as usize].resources[k];
            self.res_flows[r as usize].push(id);
        }
        self.reshare(id);
    }

    fn end_flow(&mut self, id: u32) {
        let op = &mut self.ops[id as usize];
        op.flowing = false;
        op.rate = 0.0;
        op.gen = op.gen.wrapping_add(1);
        if self.sharing {
            for k in 0..self.ops[id as usize].resources.len() {
                let r = self.ops[id as usize].resources[k] as usize;
                if let Some(pos) = self.res_flows[r].iter().position(|&o| o == id) {
                    self.res_flows[r].swap_remove(pos);
                }
            }
            self.reshare(id);
        }
        self.end_phase(id);
    }

    fn end_phase(&mut self, id: u32) {
        self.ops[id as usize].phase += 1;
        self.run_phase(id);
    }

    fn finish_op(&mut self, id: u32) {
        match self.ops[id as usize].what {
            OpWhat::P2p { send, recv, .. } => {
                for g in [send, recv] {
                    if g != NONE {
                        self.push(self.now, Ev::NodeDone(g));
                    }
                }
            }
            OpWhat::Coll { inst } => {
                let (a, b) = self.insts[inst as usize].nodes;
                for k in a..b {
                    self.push(self.now, Ev::NodeDone(self.inst_nodes[k as usize]));
                }
            }
        }
        self.free_ops.push(id);
    }

    /// Sets an op's rate, first crediting the bytes it moved at its old rate, and schedules its
    /// completion under the new one.
    fn set_rate(&mut self, id: u32, rate: f64) {
        let now = self.now;
        let op = &mut self.ops[id as usize];
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
    fn reshare(&mut self, seed: u32) {
        // Fast path: no other flow shares a link with `seed`, so the component is `seed`
        // alone (or empty once it ended) and progressive filling would give it the smallest
        // capacity of its links (`share(cap, 1)` is that capacity exactly).
        let mut alone = true;
        let mut min = f64::INFINITY;
        for &r in &self.ops[seed as usize].resources {
            match self.res_flows[r as usize].as_slice() {
                [] => {}
                [o] if *o == seed => min = min.min(self.res_cap[r as usize].max(0.0)),
                _ => {
                    alone = false;
                    break;
                }
            }
        }
        if alone {
            if self.ops[seed as usize].flowing && min.is_finite() {
                self.set_rate(seed, min);
            }
            return;
        }
        let fill = &mut self.fill;
        fill.component(&self.ops, &self.res_flows, seed);
        fill.rates(&self.ops, &self.res_flows, &self.res_cap);
        let comp_ops = std::mem::take(&mut self.fill.comp_ops);
        for &o in &comp_ops {
            let rate = self.fill.new_rate[o as usize];
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
                let g = self.offset[i] as usize + l;
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
            start: self.start,
            end: self.end,
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
        for s in 0..self.busy.len() {
            if self.head[s] >= self.stream_start[s + 1] {
                continue;
            }
            let g = self.stream_nodes[self.head[s] as usize];
            if self.start[g as usize] == UNSET {
                continue;
            }
            let p = self.partner[g as usize];
            let reason = match self.kind(g) {
                NodeKind::Send { peer, tag, .. } if p == NONE => {
                    StuckReason::NoMatchingRecv { peer, tag }
                }
                NodeKind::Recv { peer, tag, .. } if p == NONE => {
                    StuckReason::NoMatchingSend { peer, tag }
                }
                NodeKind::Send { .. } | NodeKind::Recv { .. } if p < MIRROR => {
                    StuckReason::PeerNeverPosts {
                        peer: self.op_ref(p),
                    }
                }
                NodeKind::Collective { kind, group, .. } if (p as usize) < self.insts.len() => {
                    let (a, b) = self.insts[p as usize].nodes;
                    let arrived: Vec<u32> = (a..b)
                        .map(|k| self.inst_nodes[k as usize])
                        .filter(|&n| self.start[n as usize] != UNSET)
                        .map(|n| self.rank_of(n))
                        .collect();
                    let missing = self
                        .trace
                        .group(group)
                        .iter()
                        .copied()
                        .filter(|&m| self.sim_of[m as usize] != NONE && !arrived.contains(&m))
                        .collect();
                    StuckReason::CollectiveIncomplete {
                        kind,
                        group: GroupId(group.0),
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
    fn find_cycle(&self) -> Vec<u32> {
        let n = self.partner.len();
        let mut next_in_stream = vec![NONE; n];
        for s in 0..self.busy.len() {
            let (a, b) = (
                self.stream_start[s] as usize,
                self.stream_start[s + 1] as usize,
            );
            for k in a..b.saturating_sub(1) {
                next_in_stream[self.stream_nodes[k] as usize] = self.stream_nodes[k + 1];
            }
        }
        let succ = |g: usize, k: usize| -> Option<u32> {
            let deg = (self.out_start[g + 1] - self.out_start[g]) as usize;
            if k < deg {
                Some(self.out[self.out_start[g] as usize + k])
            } else if k == deg && next_in_stream[g] != NONE {
                Some(next_in_stream[g])
            } else {
                None
            }
        };
        // 0 unvisited, 1 on the stack, 2 done.
        let mut color = vec![0u8; n];
        let mut stack: Vec<(u32, usize)> = Vec::new();
        for root in 0..n {
            if color[root] != 0 || self.end[root] != UNSET {
                continue;
            }
            color[root] = 1;
            stack.push((root as u32, 0));
            while let Some(&mut (g, ref mut k)) = stack.last_mut() {
                let i = *k;
                *k += 1;
                match succ(g as usize, i) {
                    None => {
                        color[g as usize] = 2;
                        stack.pop();
                    }
                    Some(s) if self.end[s as usize] != UNSET || color[s as usize] == 2 => {}
                    Some(s) if color[s as usize] == 1 => {
                        let from = stack.iter().position(|&(x, _)| x == s).unwrap_or(0);
                        return stack[from..].iter().map(|&(x, _)| x).collect();
                    }
                    Some(s) => {
                        color[s as usize] = 1;
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
#[derive(Default)]
struct Fill {
    epoch: u32,
    /// Per link: the epoch it joined the component, its capacity and unfixed flows left in
    /// the current filling, its position in `comp_res`.
    res_mark: Vec<u32>,
    cap: Vec<f64>,
    cnt: Vec<u32>,
    res_pos: Vec<u32>,
    /// Per op slot: the epoch it joined the component, the epoch its rate was fixed, the
    /// epoch it got an exclusive link and that link's capacity, its new rate.
    op_mark: Vec<u32>,
    op_frozen: Vec<u32>,
    op_excl: Vec<u32>,
    op_excl_cap: Vec<f64>,
    new_rate: Vec<f64>,
    /// The component: links in discovery order, flows.
    comp_res: Vec<u32>,
    comp_ops: Vec<u32>,
    stack: Vec<u32>,
    /// Filling candidates `(share key, position in comp_res)`: initial shares, sorted; shares
    /// changed during filling, in a min-heap.
    init: Vec<(u64, u32)>,
    heap: BinaryHeap<Reverse<(u64, u32)>>,
}

impl Fill {
    fn new(links: usize) -> Fill {
        Fill {
            res_mark: vec![0; links],
            cap: vec![0.0; links],
            cnt: vec![0; links],
            res_pos: vec![0; links],
            ..Fill::default()
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
    fn component(&mut self, ops: &[Op], res_flows: &[Vec<u32>], seed: u32) {
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
        for &r in &ops[seed as usize].resources {
            if res_mark[r as usize] != epoch {
                res_mark[r as usize] = epoch;
                stack.push(r);
            }
        }
        while let Some(r) = stack.pop() {
            comp_res.push(r);
            for &o in &res_flows[r as usize] {
                if op_mark[o as usize] == epoch {
                    continue;
                }
                op_mark[o as usize] = epoch;
                comp_ops.push(o);
                for &r2 in &ops[o as usize].resources {
                    if res_mark[r2 as usize] != epoch {
                        res_mark[r2 as usize] = epoch;
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
    fn rates(&mut self, ops: &[Op], res_flows: &[Vec<u32>], res_cap: &[f64]) {
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
        for (pos, &r) in comp_res.iter().enumerate() {
            let ri = r as usize;
            cap[ri] = res_cap[ri];
            cnt[ri] = res_flows[ri].len() as u32;
            res_pos[ri] = pos as u32;
            if cnt[ri] == 1 {
                // A link only one flow uses keeps its full capacity until that flow is
                // fixed, so of such links with equal capacity only the first can be picked.
                let o = res_flows[ri][0] as usize;
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
        let current = |cap: &[f64], cnt: &[u32], (key, pos): (u64, u32)| {
            let r = comp_res[pos as usize] as usize;
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
            let r = comp_res[pick.1 as usize] as usize;
            let s = share(cap[r], cnt[r]);
            for &o in &res_flows[r] {
                let o = o as usize;
                if op_frozen[o] == epoch {
                    continue;
                }
                op_frozen[o] = epoch;
                new_rate[o] = s;
                for &r2 in &ops[o].resources {
                    let r2 = r2 as usize;
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
