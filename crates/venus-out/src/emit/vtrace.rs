//! `--emit simplified-trace` and `--emit template-trace`: VenusSim's text traces
//! (venussim.md §4), generated from our schedule IR with VenusSim's semantics.
//!
//! Input: a validated [`Scenario`]. Output: `<name>.<rank>.et` for every rank, or
//! `<name>~template~.<r>.et` for the ranks `r` of the first pipeline group plus
//! `trace-template-mapping.txt`; both write `trace-output-rule.txt` (without one the simulator
//! logs no event, and VenusSim's report fails) and `comm-group.json`, and simplified traces a
//! `system.json` with `template-trace` 0, which the simulator needs to read them (VenusSim keeps it in `sim-config/`; a copy beside the traces lets
//! `venusc sim --trace DIR` resolve the group names).
//!
//! Semantics, as VenusSim's generator (trace-generator/generator/): a root node
//! `[pytorch|profiler|execution_graph|thread]`; one comp node per microbatch per model chunk
//! (`comp_<uid>_forward~<k>`, one uid counter over all files in rank order, as VenusSim's
//! module-global counter; backward = 2 × forward ops, VenusSim's FLOPs from
//! [`venus_lower::cost::venussim`]; replay nodes with the measured times when the plan has
//! `measured`); every node depends on the node added just before it
//! (`add_node_with_ctrl_deps`); the send/recv nodes of one P2P call in VenusSim's order per
//! rank parity (even: send_next, recv_prev, send_prev, recv_next; odd: recv_prev, send_next,
//! recv_next, send_prev), chained, or, for the overlapped calls of the interleaved schedule,
//! issued in parallel off the node before the call, merged at once and followed by a 1-op
//! `timer_sync_node` (VenusSim's `_TIME_CUDA_SYNC`, see `overlapped_call`); tags counted per
//! (src, dst) pair and direction. For VenusSim's demo and a pp 4 plan every file is byte-equal
//! to VenusSim's generator output (tests/golden/venussim). Data-parallel work per §7:
//! with `overlap_grad_reduce` each chunk's gradient reduce-scatter branches off the last
//! backward of the chunk (or the `grad_sync_func` point) and is merged in
//! `finalize_model_grads` in chunk order, else it is chained there; the embedding all-reduce follows; the
//! parameter all-gathers are chained after the step, or, with `overlap_param_gather`,
//! dispatched by the next iteration's `zero_grad` (chunk 0) and each chunk's first forward
//! (chunk c + 1), merged before that chunk's first forward. dp = 1 turns each reduce-scatter
//! and all-gather into a 1-op skip node.
//! Invariants: node ids are 0..N−1 in file order, names are unique in a file, every send has
//! its receive (same src, dst, tag, size) on the peer; a template file is a function of the
//! pipeline stage only, so template output is O(pp) files whatever the world size.
//! Known deviations: for pp = 2 template tags
//! are counted per real neighbour (VenusSim's relative counting would give the next and the
//! previous rank, which are the same rank there, clashing tags).

use std::io::Write;

use super::venussim::{file_stem, layout, write_comm_group, write_system_json};
use super::{EmitError, Sink, Warning};
use venus_lower::cost::venussim::{
    backward_node_ops, carries_embedding, embedding_all_reduce_elements, forward_node_ops,
    grad_reduce_scatter_elements, p2p_elements, param_all_gather_elements, snapshot_kind,
    VenusModel, VenusShape, EMBEDDING_ELEMENT_BYTES, GRAD_ELEMENT_BYTES, P2P_ELEMENT_BYTES,
    PARAM_ELEMENT_BYTES,
};
use venus_lower::lower::MAX_TRACE_NODES;
use venus_plan::plan::layout::{Coords, Layout};
use venus_plan::plan::Scenario;
use venus_plan::schedule::{CallKind, Kind, Op, PipelineShape, Port, ScheduleIr};

/// The root node's name (VenusSim's Chakra heritage).
pub const ROOT_NAME: &str = "[pytorch|profiler|execution_graph|thread]";

/// What a node carries after its dependency line.
#[derive(Clone, Debug, PartialEq)]
pub enum Attrs {
    Comp {
        ops: u64,
    },
    Replay {
        ns: u64,
    },
    Coll {
        elems: u64,
        elem_bytes: u64,
        group: &'static str,
    },
    P2p {
        elems: u64,
        elem_bytes: u64,
        src: i64,
        dst: i64,
        tag: u64,
    },
}

/// One node as written.
#[derive(Clone, Debug, PartialEq)]
pub struct VNode {
    pub name: String,
    pub deps: Vec<u32>,
    pub attrs: Attrs,
}

/// The numbers every rank's trace reads.
struct Common {
    shape: PipelineShape,
    ir: ScheduleIr,
    pp: u32,
    vpp: u32,
    microbatches: u32,
    iterations: u64,
    fwd_ops: [u64; 2],
    bwd_ops: [u64; 2],
    /// Replay durations (ns) per stage kind (first, middle, last): forward, backward.
    replay: Option<[(u64, u64); 3]>,
    p2p: u64,
    rs: u64,
    ag: u64,
    emb: u64,
    dp: u64,
    /// The distributed optimizer (or Megatron-FSDP, which runs it) shards the gradients and
    /// gathers the parameters; without it Megatron all-reduces the gradients and gathers
    /// nothing (distributed_data_parallel.py `start_grad_sync`).
    distributed: bool,
    vshape: VenusShape,
}

impl Common {
    fn new(sc: &Scenario) -> Result<Common, EmitError> {
        let mut shape = venus_plan::plan::derive::pipeline_shape(sc);
        // ZBV's two chunks are a V of 2·pp virtual stages: VenusSim runs them as the
        // interleaved schedule of its two chunks, without the weight-gradient pass.
        if shape.kind == Kind::Zbv {
            shape.kind = Kind::Interleaved;
        }
        // VenusSim's traces have no weight-gradient node: a zero-bubble plan is emitted as the
        // 1F1B schedule it replaces (`venussim_warnings` says so).
        if shape.kind.splits_backward() {
            shape.kind = Kind::OneFOneB;
        }
        // Nor a DualPipe schedule: DualPipe as 1F1B on its one-copy split, DualPipeV as the
        // interleaved schedule of its two chunks.
        if shape.kind.is_dualpipe() {
            shape.kind = if sc.vpp > 1 {
                Kind::Interleaved
            } else {
                Kind::OneFOneB
            };
            shape.vpp = sc.vpp.max(1) as u32;
        }
        // Nor Megatron's combined 1F1B: its plain interleaved schedule.
        shape.overlap_ep_comm = false;
        let (pp, vpp) = (shape.pp, shape.vpp);
        let ir = ScheduleIr::build(shape)
            .map_err(|e| EmitError::Unsupported(format!("no schedule to emit: {e}")))?;
        let m = VenusModel::from_scenario(sc);
        let vshape = VenusShape::from_scenario(sc);
        let replay = sc.plan.replayed().map(|ms| {
            // generator/utils.py:88-100: data (ms) × 1e6 × 1/3 forward, × 2/3 backward.
            let d = |s: f64| {
                let ms = s * 1e3;
                (
                    (ms * 1e6 * (1.0 / 3.0)) as u64,
                    (ms * 1e6 * (2.0 / 3.0)) as u64,
                )
            };
            [d(ms.first.0), d(ms.middle.0), d(ms.last.0)]
        });
        Ok(Common {
            shape,
            ir,
            pp,
            vpp,
            microbatches: sc.microbatches as u32,
            iterations: sc.plan.iterations(),
            fwd_ops: [
                forward_node_ops(&m, &vshape, false),
                forward_node_ops(&m, &vshape, true),
            ],
            bwd_ops: [
                backward_node_ops(&m, &vshape, false),
                backward_node_ops(&m, &vshape, true),
            ],
            replay,
            p2p: p2p_elements(&m, &vshape),
            rs: grad_reduce_scatter_elements(&m, &vshape),
            ag: param_all_gather_elements(&m, &vshape),
            emb: embedding_all_reduce_elements(&m, &vshape),
            dp: sc.dp,
            distributed: sc.flags.distributed_optimizer || sc.flags.fsdp.is_some(),
            vshape,
        })
    }
}

/// How p2p peers are written: absolute ranks, or template-relative (0 self, 1 next, −1 prev).
#[derive(Clone, Copy, Debug)]
struct Peers {
    me: i64,
    next: i64,
    prev: i64,
    /// Count tags of the next and the previous rank together (they are one rank).
    same_neighbour: bool,
}

/// Builds the node list of one rank.
struct Gen<'a> {
    c: &'a Common,
    stage: u32,
    tp_rank: u64,
    peers: Peers,
    nodes: Vec<VNode>,
    /// Iterations to generate: the plan's, or 1 to measure one for the budget.
    iterations: u64,
    comp_uid: u64,
    send_tags: Vec<((i64, i64), u64)>,
    recv_tags: Vec<((i64, i64), u64)>,
}

impl<'a> Gen<'a> {
    /// `comp_uid`: the comp uids already taken by the files generated before this one.
    fn new(c: &'a Common, stage: u32, tp_rank: u64, peers: Peers, comp_uid: u64) -> Gen<'a> {
        Gen {
            c,
            stage,
            tp_rank,
            peers,
            nodes: Vec::new(),
            iterations: c.iterations,
            comp_uid,
            send_tags: Vec::new(),
            recv_tags: Vec::new(),
        }
    }

    fn last(&self) -> Option<u32> {
        self.nodes.len().checked_sub(1).map(|i| i as u32)
    }

    /// Appends a node depending on `deps`, or on the last node when `deps` is `None`.
    fn push(&mut self, name: String, attrs: Attrs, deps: Option<Vec<u32>>) -> u32 {
        let deps = deps.unwrap_or_else(|| self.last().into_iter().collect());
        self.nodes.push(VNode { name, deps, attrs });
        (self.nodes.len() - 1) as u32
    }

    fn comp_name(&mut self, what: &str) -> String {
        self.comp_uid += 1;
        format!("comp_{}_{what}", self.comp_uid)
    }

    fn merge(&mut self, tail: u32, branch_last: u32) {
        let name = self.comp_name("merge_branch");
        let deps = if tail == branch_last {
            vec![tail]
        } else {
            vec![tail, branch_last]
        };
        self.push(name, Attrs::Comp { ops: 1 }, Some(deps));
    }

    fn stage_kind(&self, chunk: u32) -> usize {
        snapshot_kind(
            u64::from(self.c.pp),
            u64::from(self.c.vpp),
            u64::from(self.stage),
            u64::from(chunk),
        )
    }

    /// The comp node's name after its uid, as VenusSim's schedules name it: the interleaved
    /// schedule counts microbatches (`forward~k`, schedules.py:668/712); the schedule without
    /// interleaving counts within its phase (`forward~warmup~i`, `forward~1F1B~i`,
    /// `backward~1F1B~i`, `backward~cooldown~i`, schedules.py:1445/1498/1538/1582).
    fn pass_name(&self, forward: bool, k: u32) -> String {
        let word = if forward { "forward" } else { "backward" };
        if self.c.shape.kind == Kind::Interleaved {
            return format!("{word}~{k}");
        }
        // Megatron's num_warmup_microbatches (schedules.py, without interleaving).
        let m = self.c.microbatches;
        let warmup = (self.c.pp - self.stage - 1).min(m);
        let (phase, i) = match (forward, k < warmup, k < m - warmup) {
            (true, true, _) => ("warmup", k),
            (true, false, _) => ("1F1B", k - warmup),
            (false, _, true) => ("1F1B", k),
            (false, _, false) => ("cooldown", k - (m - warmup)),
        };
        format!("{word}~{phase}~{i}")
    }

    fn compute(&mut self, forward: bool, k: u32, chunk: u32) {
        let pass = self.pass_name(forward, k);
        let emb = usize::from(carries_embedding(
            &self.c.vshape,
            u64::from(self.stage),
            u64::from(chunk),
        ));
        match self.c.replay {
            Some(r) => {
                let (f, b) = r[self.stage_kind(chunk)];
                // utils.py:100: `comp_replay_{uid}_{comp_name}`.
                self.comp_uid += 1;
                let name = format!("comp_replay_{}_{pass}", self.comp_uid);
                let ns = if forward { f } else { b };
                self.push(name, Attrs::Replay { ns }, None);
            }
            None => {
                let ops = if forward {
                    self.c.fwd_ops[emb]
                } else {
                    self.c.bwd_ops[emb]
                };
                let name = self.comp_name(&pass);
                self.push(name, Attrs::Comp { ops }, None);
            }
        }
    }

    fn tag(table: &mut Vec<((i64, i64), u64)>, key: (i64, i64)) -> u64 {
        match table.iter_mut().find(|(k, _)| *k == key) {
            Some((_, n)) => {
                *n += 1;
                *n - 1
            }
            None => {
                table.push((key, 1));
                0
            }
        }
    }

    /// A p2p node, not yet added.
    fn p2p(&mut self, port: Port) -> (String, Attrs) {
        let p = self.peers;
        let (src, dst, send) = match port {
            Port::SendNext => (p.me, p.next, true),
            Port::SendPrev => (p.me, p.prev, true),
            Port::RecvPrev => (p.prev, p.me, false),
            Port::RecvNext => (p.next, p.me, false),
        };
        let canon = |x: i64| {
            if p.same_neighbour && x == p.prev {
                p.next
            } else {
                x
            }
        };
        let key = (canon(src), canon(dst));
        let (tag, word) = if send {
            (Self::tag(&mut self.send_tags, key), "send")
        } else {
            (Self::tag(&mut self.recv_tags, key), "recv")
        };
        (
            format!("nccl:{word}_from_{src}_to_{dst}_tag_{tag}"),
            Attrs::P2p {
                elems: self.c.p2p,
                elem_bytes: P2P_ELEMENT_BYTES,
                src,
                dst,
                tag,
            },
        )
    }

    fn dp_name(&self, what: &str, iter: u64, chunk: u32) -> String {
        format!(
            "{what}~iter~{iter}~pp_rank~{}~tp_rank~{}~model_chunk_id~{chunk}",
            self.stage, self.tp_rank
        )
    }

    /// The gradient reduction of a chunk: VenusSim's reduce-scatter, or, without the
    /// distributed optimizer (which VenusSim's generator refuses), an all-reduce of the same
    /// buffer, typed by its name as VenusSim's simulator types collectives.
    fn grad_rs(&mut self, iter: u64, chunk: u32) -> (String, Attrs) {
        if self.c.dp <= 1 {
            let n = self.dp_name("skip_grad_reduce", iter, chunk);
            (self.comp_name(&n), Attrs::Comp { ops: 1 })
        } else if !self.c.distributed {
            (
                format!("nccl:{}", self.dp_name("grad_allreduce", iter, chunk)),
                Attrs::Coll {
                    elems: self.c.rs,
                    elem_bytes: GRAD_ELEMENT_BYTES,
                    group: "dp_group",
                },
            )
        } else {
            (
                format!("nccl:{}", self.dp_name("grad_reducescatter", iter, chunk)),
                Attrs::Coll {
                    elems: self.c.rs,
                    elem_bytes: GRAD_ELEMENT_BYTES,
                    group: "dp_group",
                },
            )
        }
    }

    fn param_ag(&mut self, iter: u64, chunk: u32) -> (String, Attrs) {
        if self.c.dp <= 1 {
            let n = self.dp_name("skip_param_gather", iter, chunk);
            (self.comp_name(&n), Attrs::Comp { ops: 1 })
        } else {
            (
                format!("nccl:{}", self.dp_name("param_allgather", iter, chunk)),
                Attrs::Coll {
                    elems: self.c.ag,
                    elem_bytes: PARAM_ELEMENT_BYTES,
                    group: "dp_group",
                },
            )
        }
    }

    /// Adds `branch` (a chain) depending on `ctrl`, then a merge of the tail and the branch
    /// (generator/utils.py `merge_branch_nodes`).
    fn branch(&mut self, ctrl: Option<u32>, branch: Vec<(String, Attrs)>) {
        let tail = self.last().unwrap_or(0);
        let mut prev = ctrl;
        for (name, attrs) in branch {
            let id = self.push(name, attrs, Some(prev.into_iter().collect()));
            prev = Some(id);
        }
        if let Some(b) = prev {
            self.merge(tail, b);
        }
    }

    /// An overlapped p2p call as VenusSim's generator writes it: with `_TIME_CUDA_SYNC`
    /// (VenusSim trace-generator/generator/megatron_core/p2p_communication.py:30, set) the
    /// call's timer synchronizes at once (p2p_communication.py:764-777, 807-820), so its send
    /// and receive nodes all hang off the node before the call, one merge joins them with it
    /// (`merge_branch_nodes(..., split_merge=True)`, generator/utils.py:117-162) and a 1-op
    /// `timer_sync_node` follows, even for a call with no transfers. The timer node's uid is
    /// taken before the merge node's, as there. `wait_for_overlap` (schedules.py:749-759)
    /// then receives no handle: nothing is deferred to the next forward or backward.
    fn overlapped_call(&mut self, parts: Vec<(String, Attrs)>) {
        let timer = self.comp_name("timer_sync_node");
        if let Some(tail) = self.last() {
            if !parts.is_empty() {
                let mut joined = vec![tail];
                for (name, attrs) in parts {
                    joined.push(self.push(name, attrs, Some(vec![tail])));
                }
                let merge = self.comp_name("merge_branch");
                self.push(merge, Attrs::Comp { ops: 1 }, Some(joined));
            }
        }
        self.push(timer, Attrs::Comp { ops: 1 }, None);
    }

    /// The nodes, and the last comp uid taken.
    fn run(mut self) -> (Vec<VNode>, u64) {
        self.push(
            ROOT_NAME.to_string(),
            Attrs::Comp { ops: 1024 },
            Some(vec![]),
        );
        let c = self.c;
        let ops: &[Op] = c.ir.rank(self.stage);
        // With `grad_sync_func` the reduce-scatters wait for it: per chunk in the interleaved
        // schedule; without interleaving on every stage but the first, which enables grad sync
        // before its last backward (schedules.py:2440-2488; VenusSim's generator issues the
        // reduce-scatter after the cooldown's last send, schedules.py:1594-1598).
        let grad_sync_points =
            c.shape.grad_sync_func() && (c.shape.kind == Kind::Interleaved || self.stage != 0);
        for iter in 0..self.iterations {
            // Asynchronous AG of a chunk: (ctrl node, chunk).
            let mut pending_ag: Option<(Option<u32>, u32)> = None;
            if c.shape.overlap_param_gather && iter > 0 {
                // zero_grad dispatches chunk 0's all-gather.
                pending_ag = Some((self.last(), 0));
            }
            // Recorded reduce-scatters: (ctrl node, chunk).
            let mut rs_handles: Vec<(Option<u32>, u32)> = Vec::new();
            let overlap = c.shape.overlap_p2p_effective();
            let (mut fk, mut bk) = (0u32, 0u32);
            let mut i = 0;
            while i < ops.len() {
                match ops[i] {
                    Op::Forward(m) => {
                        if c.shape.overlap_param_gather && m.mb == 0 {
                            if let Some((ctrl, ch)) = pending_ag {
                                if ch == m.chunk {
                                    let node = self.param_ag(iter, ch);
                                    self.branch(ctrl, vec![node]);
                                    pending_ag = None;
                                    if iter > 0 && ch + 1 < c.vpp {
                                        pending_ag = Some((self.last(), ch + 1));
                                    }
                                }
                            }
                        }
                        self.compute(true, fk, m.chunk);
                        fk += 1;
                    }
                    Op::Backward(m) => {
                        self.compute(false, bk, m.chunk);
                        bk += 1;
                        if c.shape.overlap_grad_reduce
                            && !grad_sync_points
                            && m.mb + 1 == c.microbatches
                        {
                            rs_handles.push((self.last(), m.chunk));
                        }
                    }
                    Op::GradSync { chunk } => {
                        if c.shape.overlap_grad_reduce && grad_sync_points {
                            rs_handles.push((self.last(), chunk));
                        }
                    }
                    Op::Call(call) => {
                        let n = usize::from(call.xfers);
                        let mut parts: Vec<(Port, u32)> = ops
                            .get(i + 1..i + 1 + n)
                            .unwrap_or(&[])
                            .iter()
                            .filter_map(|o| match o {
                                Op::Xfer(x) => Some((x.port, x.seq)),
                                _ => None,
                            })
                            .collect();
                        parts.sort_by_key(|(p, _)| parity_rank(*p, self.stage));
                        let made: Vec<(String, Attrs)> =
                            parts.into_iter().map(|(p, _)| self.p2p(p)).collect();
                        // VenusSim runs the warmup's send_forward_recv_forward with
                        // overlap_p2p_comm too; the cooldown's calls are synchronous.
                        let forward_call = call.kind == CallKind::SendForwardRecvForward;
                        let asynchronous = !call.blocking || (overlap && forward_call);
                        if asynchronous {
                            self.overlapped_call(made);
                        } else {
                            for (name, attrs) in made {
                                self.push(name, attrs, None);
                            }
                        }
                        i += n;
                    }
                    Op::FinalizeGrads => {
                        if c.shape.overlap_grad_reduce {
                            let mut done = vec![false; c.vpp as usize];
                            // finalize_model_grads waits on the chunks in chunk-id order
                            // (VenusSim generator/overlap_grad_reduce_helper.py:326-327,
                            // `for model_chunk_id in model_chunk_id_list`), whatever order
                            // their reduce-scatters were issued in.
                            let mut handles = std::mem::take(&mut rs_handles);
                            handles.sort_by_key(|&(_, ch)| ch);
                            for (ctrl, ch) in handles {
                                if let Some(d) = done.get_mut(ch as usize) {
                                    *d = true;
                                }
                                let node = self.grad_rs(iter, ch);
                                self.branch(ctrl, vec![node]);
                            }
                            for ch in 0..c.vpp {
                                if !done[ch as usize] {
                                    let (n, a) = self.grad_rs(iter, ch);
                                    self.push(n, a, None);
                                }
                            }
                        } else {
                            for ch in 0..c.vpp {
                                let (n, a) = self.grad_rs(iter, ch);
                                self.push(n, a, None);
                            }
                        }
                    }
                    Op::EmbeddingGradAllReduce => {
                        let name = format!(
                            "nccl:embedding_grad_allreduce~iter~{iter}~pp_rank~{}~tp_rank~{}",
                            self.stage, self.tp_rank
                        );
                        self.push(
                            name,
                            Attrs::Coll {
                                elems: c.emb,
                                elem_bytes: EMBEDDING_ELEMENT_BYTES,
                                group: "embedding_group",
                            },
                            None,
                        );
                    }
                    Op::OptimizerStep => {
                        // Without the distributed optimizer every rank updates all of its
                        // parameters: nothing to gather.
                        if c.distributed && !c.shape.overlap_param_gather {
                            for ch in 0..c.vpp {
                                let (n, a) = self.param_ag(iter, ch);
                                self.push(n, a, None);
                            }
                        }
                    }
                    // VenusSim's generator has no weight-gradient node and one compute
                    // stream; the schedules it emits never split the backward, nor hold
                    // DualPipe's second parameter copy.
                    Op::Weight(_)
                    | Op::CopyGradAllReduce
                    | Op::Stream(_)
                    | Op::Xfer(_)
                    | Op::Wait { .. }
                    | Op::DisableGradSync
                    | Op::EnableGradSync
                    | Op::ParamSync { .. } => {}
                }
                i += 1;
            }
        }
        (self.nodes, self.comp_uid)
    }
}

/// Position of a port in VenusSim's `_p2p_ops` order for a pp rank's parity
/// (p2p_communication.py `_p2p_ops`).
fn parity_rank(p: Port, stage: u32) -> u8 {
    let even = [
        Port::SendNext,
        Port::RecvPrev,
        Port::SendPrev,
        Port::RecvNext,
    ];
    let odd = [
        Port::RecvPrev,
        Port::SendNext,
        Port::RecvNext,
        Port::SendPrev,
    ];
    let order = if stage.is_multiple_of(2) { even } else { odd };
    order.iter().position(|&q| q == p).unwrap_or(0) as u8
}

/// Writes one trace file (generator.py `get_simplified_trace`).
pub fn write_nodes(nodes: &[VNode], out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "{}", nodes.len())?;
    for (id, n) in nodes.iter().enumerate() {
        writeln!(out, "{id}\n{}", n.name)?;
        if n.deps.is_empty() {
            writeln!(out, "-1")?;
        } else {
            write!(out, "{}", n.deps.len())?;
            for d in &n.deps {
                write!(out, " {d}")?;
            }
            writeln!(out)?;
        }
        match &n.attrs {
            Attrs::Comp { ops } => writeln!(out, "{ops} {ops}")?,
            Attrs::Replay { ns } => writeln!(out, "{ns}")?,
            Attrs::Coll {
                elems,
                elem_bytes,
                group,
            } => writeln!(out, "{elems} {elem_bytes} {group}")?,
            Attrs::P2p {
                elems,
                elem_bytes,
                src,
                dst,
                tag,
            } => writeln!(out, "{elems} {elem_bytes} {src} {dst} {tag}")?,
        }
    }
    Ok(())
}

/// The nodes of global rank `rank` with absolute peers, numbered as if it were the only file.
pub fn rank_nodes(sc: &Scenario, rank: u32) -> Result<Vec<VNode>, EmitError> {
    let c = Common::new(sc)?;
    let layout = layout(sc)?;
    Ok(absolute(&c, &layout, rank, 0).0)
}

/// VenusSim's generator numbers comp nodes with one counter for the whole run
/// (generator/utils.py:110-115, a module global), generating the ranks in order
/// (et_generator.py:178): `uid` is the counter after the files before this one.
fn absolute(c: &Common, layout: &Layout, rank: u32, uid: u64) -> (Vec<VNode>, u64) {
    let co = layout.coords(rank);
    let peers = Peers {
        me: i64::from(rank),
        next: i64::from(layout.pp_next(rank)),
        prev: i64::from(layout.pp_prev(rank)),
        same_neighbour: false,
    };
    Gen::new(c, co.pp, u64::from(co.tp), peers, uid).run()
}

/// The template nodes of pipeline stage `stage` (relative peers).
fn template(c: &Common, stage: u32, uid: u64) -> (Vec<VNode>, u64) {
    Gen::new(c, stage, 0, template_peers(c), uid).run()
}

fn template_peers(c: &Common) -> Peers {
    Peers {
        me: 0,
        next: 1,
        prev: -1,
        same_neighbour: c.pp == 2,
    }
}

/// The nodes the trace files would hold in all, projected from one iteration of each stage's
/// template (every iteration runs the same schedule), for `files_per_stage` files a stage.
/// Over [`MAX_TRACE_NODES`], the same budget `sim` keeps: an error before anything is written.
fn check_budget(c: &Common, files_per_stage: u64) -> Result<(), EmitError> {
    let mut nodes = 0u64;
    for stage in 0..c.pp {
        let mut one = Gen::new(c, stage, 0, template_peers(c), 0);
        one.iterations = 1;
        let per_iteration = one.run().0.len() as u64;
        nodes = nodes.saturating_add(
            per_iteration
                .saturating_mul(c.iterations.max(1))
                .saturating_mul(files_per_stage),
        );
    }
    if nodes > MAX_TRACE_NODES {
        return Err(EmitError::OverBudget {
            nodes,
            budget: MAX_TRACE_NODES,
        });
    }
    Ok(())
}

/// `<name>.<rank>.et` for every rank, plus the output rule, `system.json` and `comm-group.json`.
pub fn write_simplified_trace(
    sc: &Scenario,
    sink: &mut dyn Sink,
) -> Result<Vec<Warning>, EmitError> {
    let c = Common::new(sc)?;
    let layout = layout(sc)?;
    check_budget(&c, u64::from(layout.world() / c.pp.max(1)))?;
    let name = file_stem(&sc.name);
    let mut uid = 0;
    for rank in 0..layout.world() {
        let nodes;
        (nodes, uid) = absolute(&c, &layout, rank, uid);
        let mut w = std::io::BufWriter::new(sink.file(&format!("{name}.{rank}.et"))?);
        write_nodes(&nodes, &mut w)?;
        w.flush()?;
    }
    write_output_rule(&layout, sink)?;
    // The simulator reads `<name>.<rank>.et` only with template-trace 0; the system.json of
    // `--emit venussim` (template-trace 1) makes it look for templates and exit.
    write_system_json(sc, false, &mut *sink.file("system.json")?)?;
    write_comm_group(sc, &mut *sink.file("comm-group.json")?)?;
    Ok(super::venussim_warnings(sc))
}

/// trace-output-rule.txt as VenusSim's `generate_trace_output_rule` writes it
/// (trace-generator/utils.py:112-135): the rank count, then every rank followed by a space on
/// one line.
fn write_output_rule(layout: &Layout, sink: &mut dyn Sink) -> Result<(), EmitError> {
    let ranks: Vec<u32> = (0..layout.world()).collect();
    let mut out = std::io::BufWriter::new(sink.file("trace-output-rule.txt")?);
    writeln!(out, "{}", ranks.len())?;
    for r in &ranks {
        write!(out, "{r} ")?;
    }
    writeln!(out)?;
    out.flush()?;
    Ok(())
}

/// Template traces for the first pipeline group, the mapping and the output rule, plus
/// `comm-group.json`. O(pp) trace files; the mapping and the rule are one line per rank.
pub fn write_template_trace(sc: &Scenario, sink: &mut dyn Sink) -> Result<Vec<Warning>, EmitError> {
    let c = Common::new(sc)?;
    let layout = layout(sc)?;
    check_budget(&c, 1)?;
    let name = file_stem(&sc.name);
    let template_rank = |stage: u32| {
        layout
            .rank_of(Coords {
                tp: 0,
                cp: 0,
                dp: 0,
                pp: stage,
            })
            .unwrap_or(0)
    };
    let mut uid = 0;
    for stage in 0..c.pp {
        let nodes;
        (nodes, uid) = template(&c, stage, uid);
        let r = template_rank(stage);
        let mut w = std::io::BufWriter::new(sink.file(&format!("{name}~template~.{r}.et"))?);
        write_nodes(&nodes, &mut w)?;
        w.flush()?;
    }
    {
        // trace-generator/utils.py:137-148: `rank template_rank prev_pp_rank next_pp_rank`.
        let mut out = std::io::BufWriter::new(sink.file("trace-template-mapping.txt")?);
        writeln!(out, "{}", layout.world())?;
        for rank in 0..layout.world() {
            let stage = layout.coords(rank).pp;
            writeln!(
                out,
                "{rank} {} {} {}",
                template_rank(stage),
                layout.pp_prev(rank),
                layout.pp_next(rank)
            )?;
        }
        out.flush()?;
    }
    write_output_rule(&layout, sink)?;
    write_comm_group(sc, &mut *sink.file("comm-group.json")?)?;
    Ok(super::venussim_warnings(sc))
}
