//! Operations in flight: a transfer's or collective's phases, each a latency then a flow
//! of bytes through links, with max-min fair rates when flows share a link.
//!
//! Input: an [`OpWhat`] whose members have all been posted. Output: events on the queue
//! (phase start, flow done, node done) until its last phase drains.
//! Invariant: an op's phases are computed once per collective signature and reused; a rate
//! change bumps the flow's generation so the superseded completion is dropped when popped.

use super::{Ev, Op, OpWhat, Sim, PS_PER_S};
use crate::engine::id::{Id, LinkId, OpId, SimRankId};
use crate::engine::network::ByteVolume;
use crate::trace::{CollectiveKind, NodeKind};

impl Sim<'_> {
    pub(super) fn start_op(&mut self, what: OpWhat) {
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
                let bytes = match send.or(recv).map(|g| self.kind(g)) {
                    Some(NodeKind::Send { bytes, .. } | NodeKind::Recv { bytes, .. }) => {
                        bytes.0 as f64
                    }
                    _ => 0.0,
                };
                self.net
                    .p2p_phases(src, dst, ByteVolume(bytes), &mut phases);
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

    pub(super) fn run_phase(&mut self, id: OpId) {
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
    pub(super) fn fill_resources(&mut self, id: OpId, dim: usize) {
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

    pub(super) fn begin_flow(&mut self, id: OpId) {
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
            // Unshared, a flow still runs at its slowest link (a `slow_link` endpoint).
            let bw = op
                .resources
                .iter()
                .map(|&r| self.res_cap[r])
                .fold(self.net.bandwidth(ph.dim), f64::min);
            self.set_rate(id, bw);
            return;
        }
        for k in 0..self.ops[id].resources.len() {
            let r = self.ops[id].resources[k];
            self.res_flows[r].push(id);
        }
        self.reshare(id);
    }

    pub(super) fn end_flow(&mut self, id: OpId) {
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

    pub(super) fn end_phase(&mut self, id: OpId) {
        self.ops[id].phase += 1;
        self.run_phase(id);
    }

    pub(super) fn finish_op(&mut self, id: OpId) {
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
    pub(super) fn set_rate(&mut self, id: OpId, rate: f64) {
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
    pub(super) fn reshare(&mut self, seed: OpId) {
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
        fill.component(&self.ops, &self.res_flows, &self.res_cap, seed);
        fill.rates(&self.ops, &self.res_flows, &self.res_cap);
        let comp_ops = std::mem::take(&mut self.fill.comp_ops);
        for &o in &comp_ops {
            let rate = self.fill.new_rate[o];
            self.set_rate(o, rate);
        }
        self.fill.comp_ops = comp_ops;
    }
}
