//! Builders: one function per Megatron schedule, each a transcription of its Python loop
//! (megatron/core/pipeline_parallel/schedules.py) into ops for one pipeline rank.

use super::zbv::VOp;
use super::{Call, CallKind, ComputeStream, Issue, Kind, Micro, Op, PipelineShape, Port, Xfer};
use std::collections::VecDeque;

/// The ops of rank `r`; `v_order` is ZBV's greedy order of every rank (computed once per
/// pipeline by `ScheduleIr::build`, since each rank's receives follow its neighbours' order).
pub(super) fn rank_ops(shape: &PipelineShape, r: u32, v_order: &[Vec<VOp>]) -> Vec<Op> {
    let mut e = Emitter::new(shape, r);
    match shape.kind {
        Kind::Zbv => zbv(&mut e, v_order),
        Kind::NoPipelining => no_pipelining(&mut e),
        Kind::Gpipe => gpipe(&mut e),
        Kind::OneFOneB => one_f_one_b(&mut e),
        Kind::Interleaved => interleaved(&mut e, &Table::new(shape)),
        Kind::ZbH1 | Kind::ZbH2 => zero_bubble(&mut e),
        Kind::DualPipe | Kind::DualPipeV => dualpipe(&mut e),
    }
    e.finalize();
    e.ops
}

/// The transfers one `_communicate` call may carry; receives name the local chunk they feed.
#[derive(Default, Clone, Copy)]
struct Parts {
    send_next: Option<Micro>,
    recv_prev: Option<u32>,
    send_prev: Option<Micro>,
    recv_next: Option<u32>,
}

/// Sequence numbers a call posted, per port.
#[derive(Default, Clone, Copy)]
struct Posted {
    send_next: Option<u32>,
    recv_prev: Option<u32>,
    send_prev: Option<u32>,
}

/// Appends ops for one rank and keeps the per-port sequence numbers, the per-chunk receive
/// counters (the j-th tensor received for a chunk feeds its microbatch j, since every chunk
/// runs its microbatches in increasing order) and the grad-sync state.
struct Emitter<'a> {
    shape: &'a PipelineShape,
    r: u32,
    ops: Vec<Op>,
    seq: [u32; 4],
    inputs_received: Vec<u32>,
    grads_received: Vec<u32>,
    /// `no_sync` is not active (Megatron starts with grad sync enabled, then disables it).
    grad_sync_on: bool,
    /// Chunks whose grad sync has been launched (interleaved `synchronized_model_chunks`).
    synced: Vec<bool>,
    /// Chunks that ran a forward (the first forward of a chunk dispatches its param gather).
    forwarded: Vec<bool>,
}

impl<'a> Emitter<'a> {
    fn new(shape: &'a PipelineShape, r: u32) -> Emitter<'a> {
        let v = shape.vpp as usize;
        Emitter {
            shape,
            r,
            ops: Vec::with_capacity(
                (shape.microbatches as usize)
                    .saturating_mul(v)
                    .saturating_mul(8),
            ),
            seq: [0; 4],
            inputs_received: vec![0; v],
            grads_received: vec![0; v],
            grad_sync_on: true,
            synced: vec![false; v],
            forwarded: vec![false; v],
        }
    }

    fn first_stage(&self) -> bool {
        self.r == 0
    }

    fn last_stage(&self) -> bool {
        self.r + 1 == self.shape.pp
    }

    fn disable_grad_sync(&mut self) {
        if self.grad_sync_on {
            self.ops.push(Op::DisableGradSync);
            self.grad_sync_on = false;
        }
    }

    fn enable_grad_sync(&mut self) {
        if !self.grad_sync_on {
            self.ops.push(Op::EnableGradSync);
            self.grad_sync_on = true;
        }
    }

    /// Without `param_sync_func`, `--overlap-param-gather` gathers a chunk's params from its
    /// first forward pre-hook (distributed_data_parallel.py:517–551).
    fn forward(&mut self, m: Micro) {
        let first = self
            .forwarded
            .get_mut(m.chunk as usize)
            .is_some_and(|f| !std::mem::replace(f, true));
        if self.shape.overlap_param_gather && !self.shape.param_sync_func() && first {
            self.ops.push(Op::ParamSync { chunk: m.chunk });
        }
        self.ops.push(Op::Forward(m));
    }

    fn backward(&mut self, m: Micro) {
        self.ops.push(Op::Backward(m));
    }

    fn weight(&mut self, m: Micro) {
        self.ops.push(Op::Weight(m));
    }

    fn next_seq(&mut self, port: Port) -> u32 {
        let s = self.seq[port.index()];
        self.seq[port.index()] += 1;
        s
    }

    /// Emits one P2P call with its transfers in the order Megatron issues them.
    fn call(&mut self, kind: CallKind, issue: Issue, blocking: bool, parts: Parts) -> Posted {
        let order: [Port; 4] = match issue {
            // p2p_communication.py `_batched_p2p_ops`
            Issue::Batched => [
                Port::SendPrev,
                Port::RecvPrev,
                Port::SendNext,
                Port::RecvNext,
            ],
            // p2p_communication.py `_p2p_ops`: even/odd pp ranks order differently
            Issue::Individual if self.r.is_multiple_of(2) => [
                Port::SendNext,
                Port::RecvPrev,
                Port::SendPrev,
                Port::RecvNext,
            ],
            Issue::Individual => [
                Port::RecvPrev,
                Port::SendNext,
                Port::RecvNext,
                Port::SendPrev,
            ],
        };
        let header = self.ops.len();
        self.ops.push(Op::Call(Call {
            kind,
            issue,
            blocking,
            xfers: 0,
        }));
        let mut posted = Posted::default();
        let mut n = 0u8;
        for port in order {
            let micro = match port {
                Port::SendNext => parts.send_next,
                Port::SendPrev => parts.send_prev,
                Port::RecvPrev => parts.recv_prev.map(|chunk| Micro {
                    mb: bump(&mut self.inputs_received, chunk),
                    chunk,
                }),
                Port::RecvNext => parts.recv_next.map(|chunk| Micro {
                    mb: bump(&mut self.grads_received, chunk),
                    chunk,
                }),
            };
            let Some(m) = micro else { continue };
            let seq = self.next_seq(port);
            match port {
                Port::SendNext => posted.send_next = Some(seq),
                Port::RecvPrev => posted.recv_prev = Some(seq),
                Port::SendPrev => posted.send_prev = Some(seq),
                Port::RecvNext => {}
            }
            self.ops.push(Op::Xfer(Xfer {
                port,
                mb: m.mb,
                chunk: m.chunk,
                seq,
            }));
            n += 1;
        }
        if let Op::Call(c) = &mut self.ops[header] {
            c.xfers = n;
        }
        posted
    }

    /// The last receive-next sequence number posted (for async handles).
    fn last_recv_next(&self) -> u32 {
        self.seq[Port::RecvNext.index()].saturating_sub(1)
    }

    /// `finalize_model_grads` (finalize_model_grads.py:560–715), then the optimizer step.
    fn finalize(&mut self) {
        self.ops.push(Op::FinalizeGrads);
        // finalize_model_grads.py:164–259: only with tied embeddings on a multi-stage pipeline,
        // on the members of the embedding group (first and last stage).
        // The V schedule's embedding group is rank 0 alone (sail-sg/zero-bubble-pipeline-
        // parallelism 39f2c186a275, parallel_state.py:331-332): both ends of the model sit
        // there, so nothing is all-reduced.
        if self.shape.tied_embeddings
            && self.shape.pp > 1
            && self.shape.kind != Kind::Zbv
            && (self.first_stage() || self.last_stage())
        {
            self.ops.push(Op::EmbeddingGradAllReduce);
        }
        self.ops.push(Op::OptimizerStep);
    }
}

fn bump(counters: &mut [u32], chunk: u32) -> u32 {
    match counters.get_mut(chunk as usize) {
        Some(c) => {
            *c += 1;
            *c - 1
        }
        None => 0,
    }
}

fn mb0(mb: u32) -> Micro {
    Micro { mb, chunk: 0 }
}

/// megatron/core/pipeline_parallel/schedules.py:723–891 `forward_backward_no_pipelining`:
/// m−1 forward/backward pairs inside `no_sync`, the last pair outside it.
fn no_pipelining(e: &mut Emitter) {
    let m = e.shape.microbatches;
    if e.shape.overlap_ep_comm {
        combined_no_pipelining(e, m);
        return;
    }
    e.disable_grad_sync();
    for i in 0..m - 1 {
        e.forward(mb0(i));
        e.backward(mb0(i));
    }
    e.enable_grad_sync();
    e.forward(mb0(m - 1));
    e.backward(mb0(m - 1));
}

/// Megatron's combined 1F1B without a pipeline (`--overlap-moe-expert-parallel-comm` at pp 1:
/// forward_backward_no_pipelining hands over to combined_1f1b.py
/// `combined_1f1b_schedule_for_no_pipelining`, Megatron-LM d98e8a64ddf3): the first forward
/// alone; then, grad sync off, each next forward together with the previous microbatch's
/// backward (the backward on a second compute stream, so that each hides the other's
/// all-to-alls, as in the interleaved schedule's steady state); the last backward alone with
/// grad sync on.
fn combined_no_pipelining(e: &mut Emitter, m: u32) {
    e.disable_grad_sync();
    e.forward(mb0(0));
    for i in 1..m {
        e.forward(mb0(i));
        e.ops.push(Op::Stream(ComputeStream(1)));
        e.backward(mb0(i - 1));
        e.ops.push(Op::Stream(ComputeStream::MAIN));
    }
    e.enable_grad_sync();
    e.backward(mb0(m - 1));
}

/// Whether grad sync is enabled before the last backward: always without `grad_sync_func`,
/// else only on the first stage, the others sync in the bubble at the end
/// (schedules.py:2440–2480).
fn enables_before_last_backward(e: &Emitter) -> bool {
    !e.shape.grad_sync_func() || e.first_stage()
}

/// Grad sync still off at the end: enable it and call `grad_sync_func` (schedules.py:2484–2488).
fn launch_remaining_grad_sync(e: &mut Emitter) {
    if !e.grad_sync_on {
        e.enable_grad_sync();
        if e.shape.grad_sync_func() {
            e.ops.push(Op::GradSync { chunk: 0 });
        }
    }
}

fn recv_forward(e: &mut Emitter) {
    if !e.first_stage() {
        e.call(
            CallKind::RecvForward,
            Issue::Batched,
            true,
            Parts {
                recv_prev: Some(0),
                ..Parts::default()
            },
        );
    }
}

fn send_forward(e: &mut Emitter, mb: u32) {
    if !e.last_stage() {
        e.call(
            CallKind::SendForward,
            Issue::Batched,
            true,
            Parts {
                send_next: Some(mb0(mb)),
                ..Parts::default()
            },
        );
    }
}

fn recv_backward(e: &mut Emitter) {
    if !e.last_stage() {
        e.call(
            CallKind::RecvBackward,
            Issue::Batched,
            true,
            Parts {
                recv_next: Some(0),
                ..Parts::default()
            },
        );
    }
}

fn send_backward(e: &mut Emitter, mb: u32) {
    if !e.first_stage() {
        e.call(
            CallKind::SendBackward,
            Issue::Batched,
            true,
            Parts {
                send_prev: Some(mb0(mb)),
                ..Parts::default()
            },
        );
    }
}

/// megatron/core/pipeline_parallel/schedules.py:2147–2509
/// `forward_backward_pipelining_without_interleaving`. First/last-stage calls that Megatron
/// skips (`is_pp_first_stage`/`is_pp_last_stage` checks) emit nothing.
fn one_f_one_b(e: &mut Emitter) {
    let (r, m) = (e.r, e.shape.microbatches);
    let warmup = one_f_one_b_warmup(e.shape, r);
    let remaining = m - warmup;
    e.disable_grad_sync();
    for i in 0..warmup {
        recv_forward(e);
        e.forward(mb0(i));
        send_forward(e, i);
    }
    if remaining > 0 {
        recv_forward(e);
    }
    for i in 0..remaining {
        let last = i + 1 == remaining;
        let fwd = warmup + i;
        e.forward(mb0(fwd));
        if !e.last_stage() {
            e.call(
                CallKind::SendForwardRecvBackward,
                Issue::Batched,
                true,
                Parts {
                    send_next: Some(mb0(fwd)),
                    recv_next: Some(0),
                    ..Parts::default()
                },
            );
        }
        if warmup == 0 && last && enables_before_last_backward(e) {
            e.enable_grad_sync();
        }
        e.backward(mb0(i));
        if last {
            send_backward(e, i);
        } else if !e.first_stage() {
            e.call(
                CallKind::SendBackwardRecvForward,
                Issue::Batched,
                true,
                Parts {
                    send_prev: Some(mb0(i)),
                    recv_prev: Some(0),
                    ..Parts::default()
                },
            );
        }
    }
    for i in 0..warmup {
        if i + 1 == warmup && enables_before_last_backward(e) {
            e.enable_grad_sync();
        }
        recv_backward(e);
        e.backward(mb0(remaining + i));
        send_backward(e, remaining + i);
    }
    launch_remaining_grad_sync(e);
}

/// Warmup forwards of rank `r` in 1F1B, min(pp − r − 1, m) (schedules.py:2277–2279). Shared
/// with [`super::figures`], so the builder and the in-flight figure cannot disagree.
pub(super) fn one_f_one_b_warmup(shape: &PipelineShape, r: u32) -> u32 {
    let pp = shape.pp.max(1);
    (pp - 1 - r.min(pp - 1)).min(shape.microbatches)
}

/// Warmup steps of rank `r` in the interleaved schedule, 2·(pp − r − 1) + (V − 1)·N
/// (`get_pp_rank_microbatches`, schedules.py:929–986), before clamping to the m·V steps: a
/// value at or above m·V means every step is warmup. Saturating, as figures take unchecked
/// shapes.
pub(super) fn interleaved_warmup(shape: &PipelineShape, r: u32) -> u64 {
    let pp = u64::from(shape.pp.max(1));
    let r = u64::from(r).min(pp - 1);
    // schedules.py:966-970: with `overlap_moe_expert_parallel_comm` one extra warmup forward,
    // so that every steady step's forward and backward are independent.
    (pp - 1 - r)
        .saturating_mul(2)
        .saturating_add(
            u64::from(shape.vpp.max(1) - 1).saturating_mul(u64::from(shape.microbatch_group_size)),
        )
        .saturating_add(u64::from(shape.overlap_ep_comm))
}

/// GPipe (not in Megatron): every forward, then every backward, with Megatron's blocking
/// calls and FIFO activation queues (so backwards run in microbatch order), grad-sync
/// handling as in 1F1B.
fn gpipe(e: &mut Emitter) {
    let m = e.shape.microbatches;
    e.disable_grad_sync();
    for i in 0..m {
        recv_forward(e);
        e.forward(mb0(i));
        send_forward(e, i);
    }
    for i in 0..m {
        if i + 1 == m && enables_before_last_backward(e) {
            e.enable_grad_sync();
        }
        recv_backward(e);
        e.backward(mb0(i));
        send_backward(e, i);
    }
    launch_remaining_grad_sync(e);
}

/// `get_schedule_table` (schedules.py:989–1016): for each group of N microbatches, every chunk
/// runs the group's microbatches before the next chunk starts.
pub(super) struct Table {
    mb: Vec<u32>,
    chunk: Vec<u32>,
    v: u32,
}

impl Table {
    pub(super) fn new(shape: &PipelineShape) -> Table {
        let (m, v, n) = (
            shape.microbatches,
            shape.vpp,
            shape.microbatch_group_size.max(1),
        );
        let total = (m as usize) * (v as usize);
        let mut table = Table {
            mb: Vec::with_capacity(total),
            chunk: Vec::with_capacity(total),
            v,
        };
        let mut start = 0;
        while start < m {
            let end = start.saturating_add(n).min(m);
            for c in 0..v {
                for mb in start..end {
                    table.mb.push(mb);
                    table.chunk.push(c);
                }
            }
            start = end;
        }
        table
    }

    fn len(&self) -> u32 {
        self.mb.len() as u32
    }

    /// `get_model_chunk_id` (schedules.py:1244–1249): reversed for backward.
    fn chunk_of(&self, k: u32, forward: bool) -> u32 {
        let c = self.chunk[(k % self.len()) as usize];
        if forward {
            c
        } else {
            self.v - 1 - c
        }
    }

    fn mb_of(&self, k: u32) -> u32 {
        self.mb[k as usize]
    }

    fn micro(&self, k: u32, forward: bool) -> Micro {
        Micro {
            mb: self.mb_of(k),
            chunk: self.chunk_of(k, forward),
        }
    }
}

/// State of the async handles of the overlap path (schedules.py:1586–1600).
#[derive(Default)]
struct Handles {
    recv_prev: VecDeque<u32>,
    recv_next: VecDeque<u32>,
    send_prev: Option<u32>,
}

/// megatron/core/pipeline_parallel/schedules.py:1019–2112
/// `forward_backward_pipelining_with_interleaving` (current main: tunable schedule table with
/// N = `microbatch_group_size_per_vp_stage`). [older] Before Nov 2024 (commit 4295be1a6c) the
/// chunk of step k was `(k % (pp·V)) / pp`, which equals this table with N = pp and needs
/// m % pp == 0; up to core_v0.9 the warmup was `2·(pp−r−1) + (V−1)·pp` and every step was
/// warmup whenever m == pp (core_v0.5.0 schedules.py:503–518). With N = pp (the default) this
/// builder reproduces those versions, except for the m == pp all-warmup rule.
fn interleaved(e: &mut Emitter, t: &Table) {
    let (pp, r, v, m) = (e.shape.pp, e.r, e.shape.vpp, e.shape.microbatches);
    let overlap = e.shape.overlap_p2p_effective();
    let issue = if overlap {
        Issue::Individual
    } else {
        Issue::Batched
    };
    let total = t.len();
    let all_warmup = interleaved_warmup(e.shape, r) >= u64::from(total);
    let warmup = if all_warmup {
        total
    } else {
        // Below `total`, so it fits.
        interleaved_warmup(e.shape, r) as u32
    };
    let remaining = total - warmup;
    let last_stage = e.last_stage();
    let first_stage = e.first_stage();

    // `recv_tensor_from_previous_stage` (schedules.py:1285–1332): does the exchange after
    // step k receive, and for which local chunk?
    let rtfps = |k: u32, forward: bool| -> Option<u32> {
        let leading = if forward { first_stage } else { last_stage };
        if !leading {
            return Some(t.chunk_of(k + 1, forward));
        }
        let last_chunk = if forward { v - 1 } else { 0 };
        let (mut recv, next) = if k < pp - 1 {
            (false, t.chunk_of(k + 1, forward))
        } else {
            (true, t.chunk_of(k - (pp - 1), forward))
        };
        if next == last_chunk {
            recv = false;
        }
        let next = if forward {
            next + 1
        } else {
            next.wrapping_sub(1)
        };
        recv.then_some(next)
    };
    // Outputs of the last chunk on the last stage (the loss) and input grads of chunk 0 on the
    // first stage are not sent.
    let output = |k: u32| {
        let mc = t.micro(k, true);
        (!(mc.chunk == v - 1 && last_stage)).then_some(mc)
    };
    let input_grad = |k: u32| {
        let mc = t.micro(k, false);
        (!(mc.chunk == 0 && first_stage)).then_some(mc)
    };
    let grad_sync_func = e.shape.grad_sync_func();
    let param_sync_func = e.shape.param_sync_func();

    let forward_step = |e: &mut Emitter, k: u32| {
        // forward_step_helper_preprocess (schedules.py:1334–1351)
        if param_sync_func {
            let ps = k + r;
            if ps < total && t.mb_of(ps) == 0 {
                let chunk = t.chunk_of(ps, true) + 1;
                if 1 < chunk && chunk < v {
                    e.ops.push(Op::ParamSync { chunk });
                }
            }
        }
        e.forward(t.micro(k, true));
    };
    let backward_step = |e: &mut Emitter, k: u32| {
        let mc = t.micro(k, false);
        // backward_step_helper_preprocess (schedules.py:1422–1428)
        if !grad_sync_func && mc.mb == m - 1 {
            e.enable_grad_sync();
            e.synced[mc.chunk as usize] = true;
        }
        e.backward(mc);
        // backward_step_helper_postprocess (schedules.py:1438–1456)
        if grad_sync_func && k >= r && t.mb_of(k - r) == m - 1 {
            let chunk = t.chunk_of(k - r, false);
            e.enable_grad_sync();
            e.ops.push(Op::GradSync { chunk });
            e.synced[chunk as usize] = true;
        }
        e.disable_grad_sync();
    };

    e.disable_grad_sync();
    if param_sync_func {
        // schedules.py:1218–1221: the first two chunks are synced up front.
        e.ops.push(Op::ParamSync { chunk: 0 });
        e.ops.push(Op::ParamSync { chunk: 1 });
    }
    if !first_stage {
        e.call(
            CallKind::RecvForward,
            issue,
            true,
            Parts {
                recv_prev: Some(0),
                ..Parts::default()
            },
        );
    }
    let mut h = Handles::default();

    for k in 0..warmup {
        forward_step(e, k);
        let recv_prev = if k + 1 == total { None } else { rtfps(k, true) };
        let pre_receive_grad = k + 1 == warmup && !all_warmup;
        let first_grad = (!last_stage).then_some(v - 1);
        if pre_receive_grad && !overlap {
            // Last warmup step also pre-receives the first gradient.
            e.call(
                CallKind::SendForwardBackwardRecvForwardBackward,
                issue,
                true,
                Parts {
                    send_next: output(k),
                    recv_prev,
                    recv_next: first_grad,
                    ..Parts::default()
                },
            );
        } else {
            e.call(
                CallKind::SendForwardRecvForward,
                issue,
                true,
                Parts {
                    send_next: output(k),
                    recv_prev,
                    ..Parts::default()
                },
            );
        }
        if pre_receive_grad && overlap {
            // schedules.py:1697–1728: async pre-post of the first gradient receive.
            e.call(
                CallKind::SendBackwardRecvBackward,
                issue,
                false,
                Parts {
                    recv_next: first_grad,
                    ..Parts::default()
                },
            );
            if first_grad.is_some() {
                h.recv_next.push_back(e.last_recv_next());
            }
        }
    }

    // `pp_pre_backward` (schedules.py:1829-1846): wait for the gradient the backward of step
    // `bk` reads, unless it is the loss's.
    let wait_grad = |e: &mut Emitter, h: &mut Handles, bk: u32| {
        if !(t.chunk_of(bk, false) == v - 1 && last_stage) {
            if let Some(seq) = h.recv_next.pop_front() {
                e.ops.push(Op::Wait {
                    port: Port::RecvNext,
                    seq,
                });
            }
        }
    };
    for k in 0..remaining {
        let (fk, bk) = (warmup + k, k);
        let last = k + 1 == remaining;
        let recv_prev = if last { None } else { rtfps(fk, true) };
        let recv_next = rtfps(bk, false);
        if overlap {
            // schedules.py:1731–1891: separate async forward and backward exchanges.
            if !(t.chunk_of(fk, true) == 0 && first_stage) {
                if let Some(seq) = h.recv_prev.pop_front() {
                    e.ops.push(Op::Wait {
                        port: Port::RecvPrev,
                        seq,
                    });
                }
            }
            // Megatron's combined 1F1B (`--overlap-moe-expert-parallel-comm`,
            // combined_1f1b.py:281 `combined_forward_backward_step` at d98e8a64ddf3): the
            // pre-forward and pre-backward waits, then the forward and the backward together
            // (the backward on a second compute stream), then the post-forward and
            // post-backward exchanges.
            let combined = e.shape.overlap_ep_comm;
            if combined {
                wait_grad(e, &mut h, bk);
            }
            forward_step(e, fk);
            if combined {
                e.ops.push(Op::Stream(ComputeStream(1)));
                backward_step(e, bk);
                e.ops.push(Op::Stream(ComputeStream::MAIN));
            }
            let posted = e.call(
                CallKind::SendForwardRecvForward,
                issue,
                false,
                Parts {
                    send_next: output(fk),
                    recv_prev,
                    ..Parts::default()
                },
            );
            // Training runs with deallocate_pipeline_outputs, so the send is waited on at once.
            if let Some(seq) = posted.send_next {
                e.ops.push(Op::Wait {
                    port: Port::SendNext,
                    seq,
                });
            }
            if let Some(seq) = posted.recv_prev {
                h.recv_prev.push_back(seq);
            }
            if !combined {
                wait_grad(e, &mut h, bk);
                backward_step(e, bk);
            }
            let posted = e.call(
                CallKind::SendBackwardRecvBackward,
                issue,
                false,
                Parts {
                    send_prev: input_grad(bk),
                    recv_next,
                    ..Parts::default()
                },
            );
            if let Some(seq) = h.send_prev.take() {
                e.ops.push(Op::Wait {
                    port: Port::SendPrev,
                    seq,
                });
            }
            h.send_prev = posted.send_prev;
            if recv_next.is_some() {
                h.recv_next.push_back(e.last_recv_next());
            }
        } else {
            forward_step(e, fk);
            // The combined 1F1B runs this pair together (see above).
            if e.shape.overlap_ep_comm {
                e.ops.push(Op::Stream(ComputeStream(1)));
            }
            backward_step(e, bk);
            if e.shape.overlap_ep_comm {
                e.ops.push(Op::Stream(ComputeStream::MAIN));
            }
            e.call(
                CallKind::SendForwardBackwardRecvForwardBackward,
                issue,
                true,
                Parts {
                    send_next: output(fk),
                    recv_prev,
                    send_prev: input_grad(bk),
                    recv_next,
                },
            );
        }
    }

    if all_warmup && !last_stage {
        e.call(
            CallKind::RecvBackward,
            issue,
            true,
            Parts {
                recv_next: Some(v - 1),
                ..Parts::default()
            },
        );
    }
    for k in remaining..total {
        if overlap && !(t.chunk_of(k, false) == v - 1 && last_stage) && k != 0 {
            if let Some(seq) = h.recv_next.pop_front() {
                e.ops.push(Op::Wait {
                    port: Port::RecvNext,
                    seq,
                });
            }
        }
        backward_step(e, k);
        let recv_next = if k + 1 == total {
            None
        } else {
            rtfps(k, false)
        };
        e.call(
            CallKind::SendBackwardRecvBackward,
            issue,
            true,
            Parts {
                send_prev: input_grad(k),
                recv_next,
                ..Parts::default()
            },
        );
    }
    if let Some(seq) = h.send_prev.take() {
        e.ops.push(Op::Wait {
            port: Port::SendPrev,
            seq,
        });
    }
    // schedules.py:2068–2075: launch any remaining grad reductions.
    e.enable_grad_sync();
    if grad_sync_func {
        for chunk in 0..v {
            if !e.synced[chunk as usize] {
                e.ops.push(Op::GradSync { chunk });
                e.synced[chunk as usize] = true;
            }
        }
    }
}

/// What `get_hand_schedule` places at one step of a rank's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum HandOp {
    F,
    B,
    W,
}

/// The op order of rank `r` in the zero-bubble hand schedules, transcribed from
/// sail-sg/zero-bubble-pipeline-parallelism, branch `arxiv` (commit f68d38794764),
/// megatron/core/pipeline_parallel/efficiency.py:110-124 `get_hand_schedule`, with
/// `warmup_c` = c (1: ZB-H1, 2: ZB-H2): (pp − r − 1)·c warmup forwards; then for each
/// microbatch i a forward (while any is left), the backward B, and the weight gradient W once
/// warmup + i ≥ (pp − 1)·c; then the (pp − 1)·c − warmup deferred W. F, B and W each run their
/// microbatches in increasing order. Needs m ≥ (pp − 1)·c ([`PipelineShape::check`]).
pub(super) fn hand_order(pp: u32, m: u32, c: u32, r: u32) -> impl Iterator<Item = HandOp> {
    let full = pp.saturating_sub(1).saturating_mul(c);
    let warmup = pp
        .saturating_sub(r.min(pp.saturating_sub(1)) + 1)
        .saturating_mul(c);
    let warmup_ops = (0..warmup.min(m)).map(|_| HandOp::F);
    let steady = (0..m).flat_map(move |i| {
        let f = (warmup.saturating_add(i) < m).then_some(HandOp::F);
        let w = (warmup.saturating_add(i) >= full).then_some(HandOp::W);
        f.into_iter().chain(std::iter::once(HandOp::B)).chain(w)
    });
    let cooldown = (0..full.saturating_sub(warmup).min(m)).map(|_| HandOp::W);
    warmup_ops.chain(steady).chain(cooldown)
}

/// The zero-bubble hand schedules (ZB-H1, ZB-H2) with the P2P calls of the reference's
/// runtime (megatron/core/pipeline_parallel/zerobubble/runtime.py `add_communication`,
/// `flush`, main at 39f2c186a275): every transfer is an async isend/irecv; a forward's input
/// and a backward's output gradient are waited on right before that op (runtime.py:472,
/// 559), the receive for the next microbatch is posted as soon as the previous one is
/// waited on, and the sends are waited on at the end of the step. The runtime fuses
/// adjacent transfers into one batch; here each transfer is a call of its own (the
/// difference changes no dependency). W ops communicate nothing. Grad sync: off until the
/// last W, which completes every gradient (the whole-backward schedules enable it before the
/// last backward instead).
fn zero_bubble(e: &mut Emitter) {
    let (pp, m, r) = (e.shape.pp, e.shape.microbatches, e.r);
    let c = e.shape.kind.zero_bubble_warmup().unwrap_or(1);
    let (first, last) = (e.first_stage(), e.last_stage());
    let mut sends: Vec<(Port, u32)> = Vec::new();
    let (mut f, mut b, mut w) = (0u32, 0u32, 0u32);
    e.disable_grad_sync();
    if !first {
        post_recv(e, Port::RecvPrev);
    }
    if !last {
        post_recv(e, Port::RecvNext);
    }
    for op in hand_order(pp, m, c, r) {
        match op {
            HandOp::F => {
                if !first {
                    wait_and_post_next(e, Port::RecvPrev, f, m);
                }
                e.forward(mb0(f));
                if !last {
                    sends.push(post_send(e, Port::SendNext, f));
                }
                f += 1;
            }
            HandOp::B => {
                if !last {
                    wait_and_post_next(e, Port::RecvNext, b, m);
                }
                e.backward(mb0(b));
                if !first {
                    sends.push(post_send(e, Port::SendPrev, b));
                }
                b += 1;
            }
            HandOp::W => {
                if w + 1 == m && enables_before_last_backward(e) {
                    e.enable_grad_sync();
                }
                e.weight(mb0(w));
                w += 1;
            }
        }
    }
    for (port, seq) in sends {
        e.ops.push(Op::Wait { port, seq });
    }
    launch_remaining_grad_sync(e);
}

/// Posts the async receive of the next tensor on `port` (`recv_forward` / `recv_backward`).
fn post_recv(e: &mut Emitter, port: Port) {
    let (kind, parts) = match port {
        Port::RecvPrev => (
            CallKind::RecvForward,
            Parts {
                recv_prev: Some(0),
                ..Parts::default()
            },
        ),
        _ => (
            CallKind::RecvBackward,
            Parts {
                recv_next: Some(0),
                ..Parts::default()
            },
        ),
    };
    e.call(kind, Issue::Batched, false, parts);
}

/// Waits for receive `seq` of `port` (microbatch `seq`'s tensor) and posts the next one.
fn wait_and_post_next(e: &mut Emitter, port: Port, seq: u32, m: u32) {
    e.ops.push(Op::Wait { port, seq });
    if seq + 1 < m {
        post_recv(e, port);
    }
}

/// Posts the async send of microbatch `mb`'s output on `port`; returns its handle.
fn post_send(e: &mut Emitter, port: Port, mb: u32) -> (Port, u32) {
    let (kind, parts) = match port {
        Port::SendNext => (
            CallKind::SendForward,
            Parts {
                send_next: Some(mb0(mb)),
                ..Parts::default()
            },
        ),
        _ => (
            CallKind::SendBackward,
            Parts {
                send_prev: Some(mb0(mb)),
                ..Parts::default()
            },
        ),
    };
    let posted = e.call(kind, Issue::Batched, false, parts);
    let seq = match port {
        Port::SendNext => posted.send_next,
        _ => posted.send_prev,
    };
    (port, seq.unwrap_or(0))
}

/// The state of DualPipe's step loop on one rank (deepseek-ai/DualPipe at 3da1bbea5360,
/// `dualpipe/dualpipe.py` and `dualpipe/dualpipev.py`, class attributes set in
/// `_reset_states`): per-phase counters of computed, sent and received chunks, the P2P ops
/// appended since the last commit (`comm_ops`) and the deferred weight gradients
/// (`WeightGradStore.funcs_queue`, FIFO).
struct Dual<'e, 'a> {
    e: &'e mut Emitter<'a>,
    /// DualPipe's `is_in_second_half`: phases swap on the second half of the ranks
    /// (`phase ^= self.is_in_second_half`); DualPipeV never swaps.
    swap: bool,
    /// DualPipe: each direction runs half of the microbatches (`half_num_chunks`).
    half: Option<u32>,
    f: [u32; 2],
    b: [u32; 2],
    send_f: [u32; 2],
    send_b: [u32; 2],
    recv_f: [u32; 2],
    recv_b: [u32; 2],
    comm: Vec<(Port, Micro)>,
    deferred: VecDeque<Micro>,
}

impl Dual<'_, '_> {
    /// The local chunk a phase runs on: the direction (DualPipe) or the arm of the V.
    fn chunk(&self, phase: u32) -> u32 {
        phase ^ u32::from(self.swap)
    }

    /// Microbatch `id` of a chunk: DualPipe's reverse direction runs microbatches m/2..m.
    fn micro(&self, chunk: u32, id: u32) -> Micro {
        let mb = match self.half {
            Some(h) if chunk == 1 => h + id,
            _ => id,
        };
        Micro { mb, chunk }
    }

    fn first_rank(&self) -> bool {
        self.e.first_stage()
    }

    fn last_rank(&self) -> bool {
        self.e.last_stage()
    }

    /// dualpipe.py:232-233 `_recv_forward` (and `_send_backward`'s skip): the chunk's input
    /// comes from no rank.
    fn is_first_stage(&self, c: u32) -> bool {
        (self.first_rank() && c == 0) || (self.last_rank() && c == 1)
    }

    /// dualpipe.py:242-243 `_send_forward` (and `_recv_backward`'s skip).
    fn is_last_stage(&self, c: u32) -> bool {
        (self.first_rank() && c == 1) || (self.last_rank() && c == 0)
    }

    fn recv_forward(&mut self, phase: u32) {
        let c = self.chunk(phase);
        if self.is_first_stage(c) {
            return;
        }
        let id = bump_pair(&mut self.recv_f, c);
        let m = self.micro(c, id);
        let port = if c == 0 {
            Port::RecvPrev
        } else {
            Port::RecvNext
        };
        self.comm.push((port, m));
    }

    fn send_forward(&mut self, phase: u32) {
        let c = self.chunk(phase);
        if self.is_last_stage(c) {
            return;
        }
        let id = bump_pair(&mut self.send_f, c);
        let m = self.micro(c, id);
        let port = if c == 0 {
            Port::SendNext
        } else {
            Port::SendPrev
        };
        self.comm.push((port, m));
    }

    fn recv_backward(&mut self, phase: u32) {
        let c = self.chunk(phase);
        if self.is_last_stage(c) {
            return;
        }
        let id = bump_pair(&mut self.recv_b, c);
        let m = self.micro(c, id);
        let port = if c == 0 {
            Port::RecvNext
        } else {
            Port::RecvPrev
        };
        self.comm.push((port, m));
    }

    fn send_backward(&mut self, phase: u32) {
        let c = self.chunk(phase);
        if self.is_first_stage(c) {
            return;
        }
        let id = bump_pair(&mut self.send_b, c);
        let m = self.micro(c, id);
        let port = if c == 0 {
            Port::SendPrev
        } else {
            Port::SendNext
        };
        self.comm.push((port, m));
    }

    /// `_commit_and_wait_comm`: one `batch_isend_irecv` of the appended ops, waited on.
    fn commit(&mut self) {
        if self.comm.is_empty() {
            return;
        }
        let header = self.e.ops.len();
        self.e.ops.push(Op::Call(Call {
            kind: CallKind::BatchIsendIrecv,
            issue: Issue::Batched,
            blocking: true,
            xfers: 0,
        }));
        let mut n = 0u8;
        for (port, m) in std::mem::take(&mut self.comm) {
            let seq = self.e.next_seq(port);
            self.e.ops.push(Op::Xfer(Xfer {
                port,
                mb: m.mb,
                chunk: m.chunk,
                seq,
            }));
            n = n.saturating_add(1);
        }
        if let Op::Call(c) = &mut self.e.ops[header] {
            c.xfers = n;
        }
    }

    fn forward_compute(&mut self, phase: u32) {
        let c = self.chunk(phase);
        let id = bump_pair(&mut self.f, c);
        let m = self.micro(c, id);
        self.e.forward(m);
    }

    /// `_backward_compute_chunk`: with `enable_zb` the weight gradient is deferred to a later
    /// `_weight_chunk` (`WeightGradStore.flush`), so the backward is B only.
    fn backward_compute(&mut self, phase: u32, zb: bool) {
        let c = self.chunk(phase);
        let id = bump_pair(&mut self.b, c);
        let m = self.micro(c, id);
        self.e.backward(m);
        if zb {
            self.deferred.push_back(m);
        }
    }

    /// `_forward_backward_compute_chunk` with `overlapped_forward_backward`: the forward of
    /// one chunk and the backward of the other run together, the backward on a second
    /// compute stream.
    fn forward_backward_compute(&mut self, phase0: u32, phase1: u32) {
        self.forward_compute(phase0);
        self.e.ops.push(Op::Stream(ComputeStream(1)));
        self.backward_compute(phase1, false);
        self.e.ops.push(Op::Stream(ComputeStream::MAIN));
    }

    /// dualpipe.py:185-193 `_forward_chunk`.
    fn forward_chunk(&mut self, phase: u32, recv: bool, send: bool) {
        if recv {
            self.recv_forward(phase);
        }
        self.commit();
        self.forward_compute(phase);
        if send {
            self.send_forward(phase);
        }
    }

    /// dualpipe.py:195-203 `_backward_chunk`.
    fn backward_chunk(&mut self, phase: u32, zb: bool, send: bool) {
        self.recv_backward(phase);
        self.commit();
        self.backward_compute(phase, zb);
        if send {
            self.send_backward(phase);
        }
    }

    /// dualpipe.py:205-214 `_forward_backward_chunk`.
    fn forward_backward_chunk(&mut self, phase0: u32, phase1: u32, recv0: bool) {
        if recv0 {
            self.recv_forward(phase0);
        }
        self.recv_backward(phase1);
        self.commit();
        self.forward_backward_compute(phase0, phase1);
        self.send_forward(phase0);
        self.send_backward(phase1);
    }

    /// dualpipe.py:216-223 `_weight_chunk`: the oldest deferred weight gradient.
    fn weight_chunk(&mut self) {
        self.commit();
        if let Some(m) = self.deferred.pop_front() {
            self.e.weight(m);
        }
    }
}

fn bump_pair(counters: &mut [u32; 2], chunk: u32) -> u32 {
    bump(counters, chunk)
}

/// DualPipe and DualPipeV: the eight steps of `step` (dualpipe.py:358-398, dualpipev.py:330-
/// 396 at deepseek-ai/DualPipe 3da1bbea5360), line for line. The two files differ in the rank
/// a phase runs on (DualPipe: `half_rank = min(rank, pp − 1 − rank)` over pp/2 half ranks and
/// the swapped phases of the second half; DualPipeV: the rank itself over pp ranks), in the
/// middle rank (DualPipe's ranks pp/2 − 1 and pp/2, DualPipeV's last rank) and in the
/// microbatch count per phase (m/2, m). The schedule runs in no DDP `no_sync` context: grad
/// sync stays off until the last weight gradient, then every chunk's reductions launch.
fn dualpipe(e: &mut Emitter) {
    let (pp, r, m) = (e.shape.pp, e.r, e.shape.microbatches);
    let v_shape = e.shape.kind == Kind::DualPipeV;
    let (ranks, rank, chunks) = if v_shape {
        (pp, r, m)
    } else {
        (pp / 2, r.min(pp.saturating_sub(1 + r)), m / 2)
    };
    let middle = if v_shape {
        r + 1 == pp
    } else {
        r + 1 == pp / 2 || r == pp / 2
    };
    let swap = !v_shape && r >= pp / 2;
    e.disable_grad_sync();
    let mut d = Dual {
        e,
        swap,
        half: (!v_shape).then_some(m / 2),
        f: [0; 2],
        b: [0; 2],
        send_f: [0; 2],
        send_b: [0; 2],
        recv_f: [0; 2],
        recv_b: [0; 2],
        comm: Vec::new(),
        deferred: VecDeque::new(),
    };
    // Step 1: nF0
    let rest = ranks.saturating_sub(rank + 1);
    for _ in 0..rest * 2 {
        d.forward_chunk(0, true, true);
    }
    // Step 2: nF0F1
    let step_2 = rank + 1;
    d.recv_forward(0);
    for i in 0..step_2 {
        d.forward_chunk(0, false, !v_shape && middle);
        d.recv_forward(0);
        d.forward_chunk(1, true, !middle || i + 1 < step_2);
        if v_shape || !middle {
            d.send_forward(0);
        }
    }
    // Step 3: nB1W1F1 (zero bubble)
    for _ in 0..rest {
        d.backward_chunk(1, true, true);
        d.recv_forward(1);
        d.weight_chunk();
        d.forward_chunk(1, false, true);
    }
    // Step 4 (main step): nF0B1F1B0; `chunks − 2·ranks + rank + 1` pairs (DualPipe's
    // `half_num_chunks − num_ranks + half_rank + 1` with num_ranks = 2·half ranks).
    let step_4 = (chunks + rank + 1).saturating_sub(ranks.saturating_mul(2));
    for i in 0..step_4 {
        if i == 0 {
            if middle {
                // "We don't overlap these two chunks to further reduce bubble size."
                d.forward_chunk(0, false, false);
                d.send_forward(1);
                d.backward_chunk(1, false, false);
                d.send_forward(0);
                d.send_backward(1);
            } else {
                d.forward_backward_chunk(0, 1, false);
            }
        } else {
            d.forward_backward_chunk(0, 1, true);
        }
        d.forward_backward_chunk(1, 0, true);
    }
    // Step 5: nB1F1B0
    for _ in 0..rest {
        d.backward_chunk(1, false, true);
        d.forward_backward_chunk(1, 0, true);
    }
    // Step 6: nB1B0 (the second half of the chunks use zero bubble)
    let step_6 = rank + 1;
    let mut zb = false;
    for i in 0..step_6 {
        if i == step_6 / 2 && rank % 2 == 1 {
            zb = true;
        }
        d.backward_chunk(1, zb, true);
        if i == step_6 / 2 && rank % 2 == 0 {
            zb = true;
        }
        d.backward_chunk(0, zb, true);
    }
    // Step 7: nWB0 (zero bubble)
    for _ in 0..rest {
        d.weight_chunk();
        d.backward_chunk(0, true, true);
    }
    // Step 8: nW
    for _ in 0..rank + 1 {
        d.weight_chunk();
    }
    d.commit();
    // After the last W every gradient of both copies is complete: the mirror ranks sum them.
    if !v_shape {
        e.ops.push(Op::CopyGradAllReduce);
    }
    e.enable_grad_sync();
    for chunk in 0..2 {
        e.ops.push(Op::GradSync { chunk });
    }
}

/// ZBV (sail-sg/zero-bubble-pipeline-parallelism main at 39f2c186a275, scheduler/zbv.py) with
/// the P2P calls of the reference's runtime, as for the hand schedules ([`zero_bubble`]):
/// every transfer is an async isend/irecv, an op waits on its input right before it runs, and
/// the sends are waited on at the end. On the V, rank r's chunk 0 takes activations from
/// r − 1 and gradients from r + 1, its chunk 1 the other way round; the bottom of the V (the
/// last rank, chunk 0 to chunk 1) and its top (rank 0, chunk 1's loss) pass nothing. Each
/// channel carries two kinds of tensor (rank r − 1 sends r both chunk-0 activations and
/// chunk-1 gradients), matched in the sender's order, so the receives of a port are posted
/// in the order the peer sends (up to the one the next op needs) and waited on by handle.
/// W ops communicate nothing. Grad sync: off until the last W, then every chunk's
/// reductions launch (as for DualPipe: no chunk's gradients are complete earlier).
fn zbv(e: &mut Emitter, order: &[Vec<VOp>]) {
    let (pp, r) = (e.shape.pp, e.r);
    let sent_by = |peer: Option<u32>, port: Port| -> Vec<Micro> {
        let Some(p) = peer else {
            return Vec::new();
        };
        order.get(p as usize).map_or_else(Vec::new, |ops| {
            ops.iter()
                .filter(|op| v_output_port(op, p, pp) == Some(port))
                .map(v_micro)
                .collect()
        })
    };
    let prev = r.checked_sub(1);
    let next = (r + 1 < pp).then_some(r + 1);
    // Rank r − 1 sends to r on its SendNext, rank r + 1 on its SendPrev.
    let from_prev = sent_by(prev, Port::SendNext);
    let from_next = sent_by(next, Port::SendPrev);
    let mut posted = [0usize; 2];
    let mut sends: Vec<(Port, u32)> = Vec::new();
    e.disable_grad_sync();
    for op in order.get(r as usize).map_or(&[][..], Vec::as_slice) {
        let m = v_micro(op);
        if let Some(port) = v_input_port(op, r, pp) {
            let (list, slot, kind) = if port == Port::RecvPrev {
                (&from_prev, 0, CallKind::RecvForward)
            } else {
                (&from_next, 1, CallKind::RecvBackward)
            };
            // A tensor the peer never sends would leave the op waiting forever: the orders
            // come from one greedy run, whose every F and B has its neighbour's counterpart.
            if let Some(seq) = list.iter().position(|x| *x == m) {
                while posted[slot] <= seq {
                    post_one(e, kind, port, list[posted[slot]], false);
                    posted[slot] += 1;
                }
                e.ops.push(Op::Wait {
                    port,
                    seq: u32::try_from(seq).unwrap_or(u32::MAX),
                });
            }
        }
        match op.pass {
            0 => e.forward(m),
            1 => e.backward(m),
            _ => e.weight(m),
        }
        if let Some(port) = v_output_port(op, r, pp) {
            let kind = if port == Port::SendNext {
                CallKind::SendForward
            } else {
                CallKind::SendBackward
            };
            sends.push((port, post_one(e, kind, port, m, false)));
        }
    }
    for (port, seq) in sends {
        e.ops.push(Op::Wait { port, seq });
    }
    e.enable_grad_sync();
    for chunk in 0..2 {
        e.ops.push(Op::GradSync { chunk });
    }
}

fn v_micro(op: &VOp) -> Micro {
    Micro {
        mb: op.mb,
        chunk: u32::from(op.chunk),
    }
}

/// Where a V op's input comes from: chunk 0's forward from the previous rank (none on rank
/// 0) and its backward from the next (none on the last rank, where chunk 1's backward feeds
/// it); chunk 1 the other way round (its forward from the next rank, none on the last rank;
/// its backward from the previous, none on rank 0, which computes the loss).
fn v_input_port(op: &VOp, r: u32, pp: u32) -> Option<Port> {
    let first = r == 0;
    let last = r + 1 == pp;
    match (op.pass, op.chunk) {
        (0, 0) if !first => Some(Port::RecvPrev),
        (0, 1) if !last => Some(Port::RecvNext),
        (1, 1) if !first => Some(Port::RecvPrev),
        (1, 0) if !last => Some(Port::RecvNext),
        _ => None,
    }
}

/// Where a V op's output goes: the mirror of [`v_input_port`].
fn v_output_port(op: &VOp, r: u32, pp: u32) -> Option<Port> {
    let first = r == 0;
    let last = r + 1 == pp;
    match (op.pass, op.chunk) {
        (0, 0) if !last => Some(Port::SendNext),
        (0, 1) if !first => Some(Port::SendPrev),
        (1, 1) if !last => Some(Port::SendNext),
        (1, 0) if !first => Some(Port::SendPrev),
        _ => None,
    }
}

/// One async (or blocking) call of a single transfer; returns its sequence number.
fn post_one(e: &mut Emitter, kind: CallKind, port: Port, m: Micro, blocking: bool) -> u32 {
    e.ops.push(Op::Call(Call {
        kind,
        issue: Issue::Batched,
        blocking,
        xfers: 1,
    }));
    let seq = e.next_seq(port);
    e.ops.push(Op::Xfer(Xfer {
        port,
        mb: m.mb,
        chunk: m.chunk,
        seq,
    }));
    seq
}
