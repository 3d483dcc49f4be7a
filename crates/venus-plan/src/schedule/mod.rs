//! Schedule IR: Megatron-LM's per-pipeline-rank op order.
//!
//! Input: a [`PipelineShape`] (pp, vpp, microbatches, schedule kind, overlap and sync flags).
//! Output: a [`ScheduleIr`], one `Vec<Op>` per pipeline rank, op for op as
//! `megatron/core/pipeline_parallel/schedules.py` issues them: compute ([`Op::Forward`],
//! [`Op::Backward`], and [`Op::Weight`] where a schedule runs the weight gradient on its own),
//! the compute stream the following compute runs on ([`Op::Stream`]), P2P calls ([`Op::Call`] followed by its [`Op::Xfer`]s, plus [`Op::Wait`]
//! for asynchronous ones) and hook points (grad/param sync, finalize, optimizer step).
//! [`emit_text`] prints the `--emit schedule` form, [`evaluate`] evaluates the IR with zero
//! communication cost and [`picture`] draws it. [`peak_in_flight`] and [`bubble`] are the
//! figures the memory model and W0003 take from the schedule (equal to what the built IR shows).
//! The module depends on `venus_base::base` only, so that the plan can call it.
//!
//! Invariants:
//! - The IR is a function of the pipeline rank only: data-parallel (and tp/cp) replicas share
//!   it, so its size is O(pp · vpp · microbatches) and never grows with dp.
//! - Every send has exactly one receive on the peer (next/prev pp rank, with wrap-around), on
//!   the same [`Channel`] and with the same per-channel sequence number; the tensor identity
//!   (microbatch, chunk) agrees on both sides (checked by the property tests).
//! - Each rank runs the forward and the backward of every (microbatch, chunk) exactly once,
//!   forward first (and, where the schedule splits the backward, its weight gradient once,
//!   after the backward), and the blocking/async calls complete without deadlock under rendezvous
//!   semantics.
//! - All P2P tensors of a pipeline have one shape, `[s/cp (/tp with sp), b, h]`
//!   (schedules.py:1183–1187, 2115–2144); the IR therefore carries no shapes.

mod build;
mod eval;
mod figures;
mod picture;
#[cfg(test)]
mod tests;
mod zbv;

pub use eval::{evaluate, makespan, Deadlock, OpCost, OpTimes, RankTimes, Semantics, Slot};
pub use figures::{bubble, measure_in_flight, peak_in_flight, Bubble, InFlight};
pub use picture::picture;
pub use zbv::{VMemory, VOp};

use std::fmt;
use std::fmt::Write as _;
use venus_base::base::ScheduleKind;

/// Which Megatron schedule function runs (schedules.py:53–168 `get_forward_backward_func`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `forward_backward_no_pipelining` (pp = 1).
    NoPipelining,
    /// All forwards, then all backwards (not in Megatron; `schedule gpipe`).
    Gpipe,
    /// `forward_backward_pipelining_without_interleaving`.
    OneFOneB,
    /// `forward_backward_pipelining_with_interleaving`.
    Interleaved,
    /// ZB-H1, the handcrafted zero-bubble schedule with 1F1B's memory (Qi et al., ICLR 2024;
    /// sail-sg/zero-bubble-pipeline-parallelism `get_hand_schedule(..., warmup_c=1)`).
    ZbH1,
    /// ZB-H2, the handcrafted zero-bubble schedule with twice the warmup (`warmup_c=2`).
    ZbH2,
    /// DualPipe (deepseek-ai/DualPipe `dualpipe/dualpipe.py`): rank r holds stage r of the
    /// forward direction (chunk 0, microbatches 0..m/2) and stage pp − 1 − r of the reverse
    /// direction (chunk 1, microbatches m/2..m), two copies of the parameters.
    DualPipe,
    /// DualPipeV (`dualpipe/dualpipev.py`): the same step loop on a V-shaped split, rank r
    /// holding virtual stages r (chunk 0) and 2·pp − 1 − r (chunk 1); every microbatch runs
    /// through both chunks.
    DualPipeV,
    /// ZBV (sail-sg/zero-bubble-pipeline-parallelism `scheduler/zbv.py`): the greedy V
    /// schedule, rank r holding virtual stages r (chunk 0) and 2·pp − 1 − r (chunk 1), each
    /// backward split into B and W.
    Zbv,
}

impl From<ScheduleKind> for Kind {
    fn from(k: ScheduleKind) -> Kind {
        match k {
            ScheduleKind::Gpipe => Kind::Gpipe,
            ScheduleKind::OneFOneB => Kind::OneFOneB,
            ScheduleKind::Interleaved => Kind::Interleaved,
            ScheduleKind::ZbH1 => Kind::ZbH1,
            ScheduleKind::ZbH2 => Kind::ZbH2,
            ScheduleKind::DualPipe => Kind::DualPipe,
            ScheduleKind::DualPipeV => Kind::DualPipeV,
            ScheduleKind::Zbv => Kind::Zbv,
        }
    }
}

impl Kind {
    /// The schedule Megatron picks when the plan names none: no pipelining for pp = 1,
    /// interleaved with vpp > 1, else 1F1B (schedules.py:53–168).
    pub fn select(pp: u32, vpp: u32, explicit: Option<ScheduleKind>) -> Kind {
        match explicit {
            Some(k) => k.into(),
            None if pp <= 1 => Kind::NoPipelining,
            None if vpp > 1 => Kind::Interleaved,
            None => Kind::OneFOneB,
        }
    }

    /// Whether the schedule runs each backward as B and W ops of its own.
    pub fn splits_backward(self) -> bool {
        matches!(self, Kind::ZbH1 | Kind::ZbH2 | Kind::Zbv)
    }

    /// The schedules that always run two model chunks per rank (DualPipe's two copies or a V).
    pub fn has_two_chunks(self) -> bool {
        self.is_dualpipe() || self == Kind::Zbv
    }

    /// The DualPipe schedules: two model chunks per rank, fed in DualPipe's step loop.
    pub fn is_dualpipe(self) -> bool {
        matches!(self, Kind::DualPipe | Kind::DualPipeV)
    }

    /// Where the weights of local chunk `chunk` of pipeline rank `rank` sit in the plan's
    /// stage split, as (stage, chunk): the interleaved placement (virtual stage chunk·pp +
    /// rank) for every schedule but DualPipe's. DualPipeV's (and ZBV's) chunk 1 is virtual stage
    /// 2·pp − 1 − rank, i.e. the split's (pp − 1 − rank, 1); DualPipe's chunk 1 is stage
    /// pp − 1 − rank of the second parameter copy, the split's (pp − 1 − rank, 0).
    pub fn chunk_source(self, pp: u32, rank: u32, chunk: u32) -> (u32, u32) {
        let mirrored = pp.saturating_sub(1).saturating_sub(rank);
        match self {
            Kind::DualPipeV | Kind::Zbv if chunk == 1 => (mirrored, 1),
            Kind::DualPipe if chunk == 1 => (mirrored, 0),
            _ => (rank, chunk),
        }
    }

    /// The `vpp` a plan must write for this schedule, when the schedule fixes it: DualPipeV
    /// splits each rank's layers into the V's two arms (two chunks of one parameter copy,
    /// dualpipev.py `self.module[phase]`), DualPipe runs one pp-stage split in each direction
    /// (dualpipe.py), so its plan writes one chunk. `None`: the schedule takes the plan's vpp
    /// (and [`PipelineShape::check`] says which it runs with). The validator's E0330 and
    /// `sweep --auto`'s schedule row both read this one rule.
    pub fn written_vpp(self) -> Option<u32> {
        match self {
            Kind::DualPipeV => Some(2),
            Kind::DualPipe => Some(1),
            _ => None,
        }
    }

    /// Warmup forwards per stage step of the zero-bubble hand schedules (`warmup_c`): rank r
    /// runs (pp − r − 1)·c forwards before its first backward. None for other schedules.
    pub fn zero_bubble_warmup(self) -> Option<u32> {
        match self {
            Kind::ZbH1 => Some(1),
            Kind::ZbH2 => Some(2),
            _ => None,
        }
    }
}

/// Everything the schedule depends on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PipelineShape {
    pub kind: Kind,
    pub pp: u32,
    /// Model chunks per pipeline rank (V).
    pub vpp: u32,
    /// Microbatches per iteration (m).
    pub microbatches: u32,
    /// `--overlap-p2p-communication`; only the interleaved schedule uses it (Megatron turns it
    /// off otherwise, arguments.py:1010–1017), and it implies `batch_p2p_comm = False`.
    pub overlap_p2p: bool,
    pub overlap_grad_reduce: bool,
    pub overlap_param_gather: bool,
    /// Megatron's `align_grad_reduce` (VenusSim's `delay_grad_reduce`): with
    /// `overlap_grad_reduce`, the schedule calls `grad_sync_func` at aligned points.
    pub delay_grad_reduce: bool,
    /// Megatron's `align_param_gather`: with `overlap_param_gather` and interleaving, the
    /// schedule calls `param_sync_func` at aligned points.
    pub delay_param_gather: bool,
    /// Tied word embeddings: the first and last stage all-reduce their embedding grads.
    pub tied_embeddings: bool,
    /// `microbatch_group_size_per_vp_stage` (N); Megatron's default is pp
    /// (model_parallel_config.py:567–568).
    pub microbatch_group_size: u32,
    /// `--overlap-moe-expert-parallel-comm` on the interleaved schedule: Megatron's combined
    /// 1F1B runs each steady step's forward and backward as an overlapped pair.
    pub overlap_ep_comm: bool,
    /// The model's memory figures ZBV's greedy scheduler weighs ([`VMemory::of_model`]).
    pub v_memory: VMemory,
}

impl PipelineShape {
    /// A shape with every flag at its `.venus` default (off, tied embeddings) and N = pp.
    /// The DualPipe schedules and ZBV always run two model chunks per rank, whatever `vpp`
    /// says; ZBV weighs [`VMemory::NO_MODEL`] until the plan sets its model's figures.
    pub fn new(kind: Kind, pp: u32, vpp: u32, microbatches: u32) -> PipelineShape {
        PipelineShape {
            kind,
            pp,
            vpp: if kind.has_two_chunks() { 2 } else { vpp },
            microbatches,
            overlap_p2p: false,
            overlap_grad_reduce: false,
            overlap_param_gather: false,
            delay_grad_reduce: false,
            delay_param_gather: false,
            tied_embeddings: true,
            microbatch_group_size: pp,
            overlap_ep_comm: false,
            v_memory: VMemory::NO_MODEL,
        }
    }

    /// Megatron calls `grad_sync_func` from the schedule (training.py sets it when
    /// `overlap_grad_reduce and align_grad_reduce`).
    pub fn grad_sync_func(&self) -> bool {
        self.overlap_grad_reduce && self.delay_grad_reduce
    }

    /// Megatron calls `param_sync_func` from the schedule (only when interleaving;
    /// arguments.py:1010–1017 turns `align_param_gather` off otherwise).
    pub fn param_sync_func(&self) -> bool {
        self.overlap_param_gather && self.delay_param_gather && self.kind == Kind::Interleaved
    }

    /// The P2P calls go through `_p2p_ops` with explicit waits instead of one
    /// `batch_isend_irecv` (training/argument_utils.py:307: `batch_p2p_comm = not overlap`).
    pub fn overlap_p2p_effective(&self) -> bool {
        self.overlap_p2p && self.kind == Kind::Interleaved
    }

    /// Checks the shape; the rules a Megatron run would reject at its first step are
    /// S01/S02 (schedules.py:1159–1175).
    pub fn check(&self) -> Result<(), ShapeError> {
        for (name, v) in [
            ("pp", self.pp),
            ("vpp", self.vpp),
            ("microbatches", self.microbatches),
        ] {
            if v == 0 {
                return Err(ShapeError::Zero(name));
            }
        }
        let stage_steps = u64::from(self.microbatches) * u64::from(self.vpp) * u64::from(self.pp);
        if stage_steps > MAX_STAGE_STEPS {
            return Err(ShapeError::TooLarge);
        }
        match self.kind {
            Kind::NoPipelining if self.pp != 1 || self.vpp != 1 => {
                Err(ShapeError::NoPipeliningWithStages {
                    pp: self.pp,
                    vpp: self.vpp,
                })
            }
            Kind::Gpipe | Kind::OneFOneB | Kind::ZbH1 | Kind::ZbH2 if self.vpp != 1 => {
                Err(ShapeError::ChunksWithoutInterleaving { vpp: self.vpp })
            }
            Kind::ZbH1 | Kind::ZbH2 => self.check_zero_bubble(),
            Kind::DualPipe | Kind::DualPipeV => self.check_dualpipe(),
            // zbpp_utils.py:134 "zero bubble must be enabled with pipeline parallelism"
            // (ZBV sets `enable_zero_bubble`, zbpp_utils.py:121-122); the scheduler places
            // exactly two chunks (zbpp_utils.py:115-117 sets vpp to 2).
            Kind::Zbv if self.pp < 2 => Err(ShapeError::ZeroBubbleNeedsStages),
            Kind::Zbv if self.vpp != 2 => Err(ShapeError::ZbvChunks { vpp: self.vpp }),
            Kind::Interleaved => {
                if self.vpp < 2 {
                    return Err(ShapeError::InterleavedNeedsChunks);
                }
                if self.pp < 2 {
                    return Err(ShapeError::InterleavedNeedsStages);
                }
                let (n, m, pp) = (self.microbatch_group_size, self.microbatches, self.pp);
                // megatron/core/pipeline_parallel/schedules.py:1161-1166 (S01)
                if n > m || n < pp {
                    return Err(ShapeError::GroupSize { n, pp, m });
                }
                // megatron/core/pipeline_parallel/schedules.py:1168-1175 (S02)
                let rem = m % n;
                if 0 < rem && rem < pp {
                    return Err(ShapeError::Remainder { rem, n, pp });
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

impl PipelineShape {
    /// The zero-bubble hand schedules need a pipeline (zbpp_utils.py:134 on main: "zero
    /// bubble must be enabled with pipeline parallelism") and room for every rank's warmup:
    /// rank 0 runs (pp − 1)·c forwards before its first backward and the last rank defers
    /// (pp − 1)·c weight gradients, so m ≥ (pp − 1)·c (below it `get_hand_schedule` would
    /// place more F or W ops than there are microbatches), and m ≥ pp so that the first stage
    /// has a steady step (with m = pp − 1 its W cannot fill the drain and the paper's bubble
    /// does not hold). The reference also asserts m ≥ 2·pp (efficiency.py:111), a bound of its
    /// timing model that the op order does not need; validation warns below it (W0014).
    fn check_zero_bubble(&self) -> Result<(), ShapeError> {
        if self.pp < 2 {
            return Err(ShapeError::ZeroBubbleNeedsStages);
        }
        let least = self.least_zero_bubble_microbatches();
        if self.microbatches < least {
            return Err(ShapeError::ZeroBubbleMicrobatches {
                m: self.microbatches,
                least,
            });
        }
        Ok(())
    }

    /// deepseek-ai/DualPipe (3da1bbea5360) dualpipe/dualpipe.py:332-333 `step`: `num_ranks %
    /// 2 == 0` and `num_chunks % 2 == 0 and num_chunks >= num_ranks * 2`; dualpipev.py:318:
    /// `num_chunks >= num_ranks * 2`. A pipeline of one rank has no neighbour to exchange with.
    fn check_dualpipe(&self) -> Result<(), ShapeError> {
        if self.pp < 2 {
            return Err(ShapeError::DualPipeNeedsStages);
        }
        if self.kind == Kind::DualPipe && !self.pp.is_multiple_of(2) {
            return Err(ShapeError::DualPipeOddStages { pp: self.pp });
        }
        let least = self.pp.saturating_mul(2);
        let even = self.kind == Kind::DualPipe;
        let m = self.microbatches;
        if m < least || (even && !m.is_multiple_of(2)) {
            return Err(ShapeError::DualPipeMicrobatches { m, least, even });
        }
        Ok(())
    }

    /// The fewest microbatches a zero-bubble schedule runs with, max(pp, (pp − 1)·c) (1 for
    /// other schedules).
    pub fn least_zero_bubble_microbatches(&self) -> u32 {
        self.kind.zero_bubble_warmup().map_or(1, |c| {
            self.pp
                .max(self.pp.saturating_sub(1).saturating_mul(c))
                .max(1)
        })
    }
}

/// Bound on pp·m·V that keeps the IR in memory (a few ops of 16 bytes per step; pp 16,
/// m 128, V 4 is 8,192).
const MAX_STAGE_STEPS: u64 = 1 << 21;

/// Why a [`PipelineShape`] has no schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShapeError {
    Zero(&'static str),
    TooLarge,
    NoPipeliningWithStages {
        pp: u32,
        vpp: u32,
    },
    ChunksWithoutInterleaving {
        vpp: u32,
    },
    InterleavedNeedsChunks,
    InterleavedNeedsStages,
    /// S01: N outside [pp, m].
    GroupSize {
        n: u32,
        pp: u32,
        m: u32,
    },
    /// S02: 0 < m % N < pp.
    Remainder {
        rem: u32,
        n: u32,
        pp: u32,
    },
    /// A zero-bubble schedule on pp = 1.
    ZeroBubbleNeedsStages,
    /// Fewer microbatches than a zero-bubble schedule's warmup, (pp − 1)·c.
    ZeroBubbleMicrobatches {
        m: u32,
        least: u32,
    },
    /// A DualPipe schedule on pp = 1.
    DualPipeNeedsStages,
    /// ZBV with a vpp other than its two chunks.
    ZbvChunks {
        vpp: u32,
    },
    /// ZBV's greedy scheduler met a state the reference asserts against.
    ZbvUnschedulable,
    /// DualPipe on an odd number of pipeline ranks.
    DualPipeOddStages {
        pp: u32,
    },
    /// Fewer than 2·pp microbatches (or, for DualPipe, an odd count).
    DualPipeMicrobatches {
        m: u32,
        least: u32,
        even: bool,
    },
}

impl fmt::Display for ShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ShapeError::Zero(name) => write!(f, "`{name}` must be at least 1"),
            ShapeError::TooLarge => write!(f, "schedule too large to build"),
            ShapeError::NoPipeliningWithStages { pp, vpp } => {
                write!(f, "no-pipelining schedule with pp {pp} and vpp {vpp}")
            }
            ShapeError::ChunksWithoutInterleaving { vpp } => {
                write!(f, "a non-interleaved schedule cannot run {vpp} model chunks")
            }
            ShapeError::InterleavedNeedsChunks => {
                write!(f, "the interleaved schedule needs vpp of at least 2")
            }
            ShapeError::InterleavedNeedsStages => {
                write!(f, "the interleaved schedule needs pp of at least 2")
            }
            ShapeError::GroupSize { n, pp, m } => write!(
                f,
                "microbatch group size {n} per virtual stage should range in [PP={pp} , M={m}]"
            ),
            ShapeError::ZeroBubbleNeedsStages => {
                write!(f, "zero bubble must be enabled with pipeline parallelism")
            }
            ShapeError::ZeroBubbleMicrobatches { m, least } => write!(
                f,
                "the zero-bubble schedule needs at least {least} microbatches, but has {m}"
            ),
            ShapeError::ZbvChunks { vpp } => {
                write!(f, "the zbv schedule runs 2 model chunks per rank, not {vpp}")
            }
            ShapeError::ZbvUnschedulable => {
                write!(f, "the zbv scheduler cannot place every op of this pipeline")
            }
            ShapeError::DualPipeNeedsStages => {
                write!(f, "the DualPipe schedules need pp of at least 2")
            }
            ShapeError::DualPipeOddStages { pp } => {
                write!(f, "DualPipe needs an even number of pipeline ranks, but has {pp}")
            }
            ShapeError::DualPipeMicrobatches { m, least, even } => write!(
                f,
                "DualPipe needs {}at least {least} microbatches, but has {m}",
                if even { "an even count of " } else { "" }
            ),
            ShapeError::Remainder { rem, n, pp } => write!(
                f,
                "the remainder of M divided by N ({n}) should be 0, or larger than or equal to the pipeline-parallel size ({pp}), but it is {rem}"
            ),
        }
    }
}

/// A microbatch on a model chunk (`chunk` is the local chunk index, 0..vpp).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Micro {
    pub mb: u32,
    pub chunk: u32,
}

/// The four P2P operations of `_communicate` (p2p_communication.py).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Port {
    /// Activation to the next pp rank.
    SendNext,
    /// Activation from the previous pp rank.
    RecvPrev,
    /// Gradient to the previous pp rank.
    SendPrev,
    /// Gradient from the next pp rank.
    RecvNext,
}

impl Port {
    pub const ALL: [Port; 4] = [
        Port::SendNext,
        Port::RecvPrev,
        Port::SendPrev,
        Port::RecvNext,
    ];

    fn index(self) -> usize {
        self as usize
    }

    pub fn is_send(self) -> bool {
        matches!(self, Port::SendNext | Port::SendPrev)
    }

    /// The port that matches this one on the peer rank.
    pub fn peer_port(self) -> Port {
        match self {
            Port::SendNext => Port::RecvPrev,
            Port::RecvPrev => Port::SendNext,
            Port::SendPrev => Port::RecvNext,
            Port::RecvNext => Port::SendPrev,
        }
    }

    /// The peer pp rank, with wrap-around (parallel_state.py:2104–2117).
    pub fn peer(self, rank: u32, pp: u32) -> u32 {
        match self {
            Port::SendNext | Port::RecvNext => (rank + 1) % pp,
            Port::SendPrev | Port::RecvPrev => (rank + pp - 1) % pp,
        }
    }

    /// The channel this port uses on `rank`; a send and its receive share it.
    pub fn channel(self, rank: u32, pp: u32) -> Channel {
        let peer = self.peer(rank, pp);
        let (dir, src, dst) = match self {
            Port::SendNext => (Dir::Forward, rank, peer),
            Port::RecvPrev => (Dir::Forward, peer, rank),
            Port::SendPrev => (Dir::Backward, rank, peer),
            Port::RecvNext => (Dir::Backward, peer, rank),
        };
        Channel { dir, src, dst }
    }

    fn short(self) -> &'static str {
        match self {
            Port::SendNext => "sn",
            Port::RecvPrev => "rp",
            Port::SendPrev => "sp",
            Port::RecvNext => "rn",
        }
    }
}

/// Activations flow forward, gradients backward.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dir {
    Forward,
    Backward,
}

/// A FIFO between two pp ranks: messages on it match in sequence-number order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Channel {
    pub dir: Dir,
    pub src: u32,
    pub dst: u32,
}

/// One send or receive of a P2P call. For a send, (`mb`, `chunk`) is the compute that produced
/// the tensor; for a receive, the compute that will consume it. `seq` numbers the transfers of
/// this rank's port (= of its channel) from 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Xfer {
    pub port: Port,
    pub mb: u32,
    pub chunk: u32,
    pub seq: u32,
}

/// The `P2PCommunicator` method a call comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CallKind {
    RecvForward,
    SendForward,
    RecvBackward,
    SendBackward,
    SendForwardRecvBackward,
    SendBackwardRecvForward,
    SendForwardRecvForward,
    SendBackwardRecvBackward,
    SendForwardBackwardRecvForwardBackward,
    /// DualPipe's `_commit_and_wait_comm`: the transfers appended since the last commit, in
    /// append order, as one `batch_isend_irecv`, waited on at once.
    BatchIsendIrecv,
}

impl CallKind {
    pub fn name(self) -> &'static str {
        match self {
            CallKind::RecvForward => "recv_forward",
            CallKind::SendForward => "send_forward",
            CallKind::RecvBackward => "recv_backward",
            CallKind::SendBackward => "send_backward",
            CallKind::SendForwardRecvBackward => "send_forward_recv_backward",
            CallKind::SendBackwardRecvForward => "send_backward_recv_forward",
            CallKind::SendForwardRecvForward => "send_forward_recv_forward",
            CallKind::SendBackwardRecvBackward => "send_backward_recv_backward",
            CallKind::SendForwardBackwardRecvForwardBackward => {
                "send_forward_backward_recv_forward_backward"
            }
            CallKind::BatchIsendIrecv => "batch_isend_irecv",
        }
    }
}

/// How a call issues its transfers (p2p_communication.py:60–131, 421–424).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Issue {
    /// One `batch_isend_irecv` in the order send_prev, recv_prev, send_next, recv_next.
    Batched,
    /// Individual isend/irecv (`_p2p_ops`): even pp ranks send_next, recv_prev, send_prev,
    /// recv_next; odd ranks recv_prev, send_next, recv_next, send_prev.
    Individual,
}

/// A P2P call; the next `xfers` ops are its [`Op::Xfer`]s in issue order. A blocking call
/// returns when all of them completed; an async one returns at once and [`Op::Wait`]s follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Call {
    pub kind: CallKind,
    pub issue: Issue,
    pub blocking: bool,
    pub xfers: u8,
}

/// A compute stream of a pipeline rank. Every rank starts on [`ComputeStream::MAIN`]; the
/// schedules Megatron ships run all compute there. Zero-bubble and DualPipe schedules overlap
/// the compute of two microbatches on two streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ComputeStream(pub u8);

impl ComputeStream {
    pub const MAIN: ComputeStream = ComputeStream(0);
}

/// One step of a pipeline rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    Forward(Micro),
    /// The backward; the input gradient only (`B`) when the rank also runs a [`Op::Weight`]
    /// for this microbatch, else the whole backward.
    Backward(Micro),
    /// The weight gradient (`W`) of a backward run as its own op, after that backward (the
    /// zero-bubble schedules, Qi et al., ICLR 2024: [`Kind::ZbH1`], [`Kind::ZbH2`]).
    Weight(Micro),
    /// The compute ops that follow, up to the next `Stream`, run on this stream of the rank.
    Stream(ComputeStream),
    Call(Call),
    Xfer(Xfer),
    /// Wait for transfer `seq` of `port` (an earlier async call's handle).
    Wait {
        port: Port,
        seq: u32,
    },
    /// Enter `no_sync`: following backwards accumulate grads without launching reductions.
    DisableGradSync,
    /// Leave `no_sync`: the backwards that follow launch their chunk's bucket reductions as
    /// grads become ready (`is_last_microbatch`, param_and_grad_buffer.py:863–885).
    EnableGradSync,
    /// `grad_sync_func[chunk]`: launch all of the chunk's bucket reductions now.
    GradSync {
        chunk: u32,
    },
    /// Dispatch the chunk's parameter all-gather (`param_sync_func`, or the first forward
    /// pre-hook of the chunk without alignment); the chunk's next forward waits on it.
    ParamSync {
        chunk: u32,
    },
    /// `finalize_model_grads`: finish (or, without overlap, issue) the data-parallel grad
    /// reductions and the sequence-parallel TP all-reduce (finalize_model_grads.py:560–715).
    FinalizeGrads,
    /// Tied word-embedding grad all-reduce over the embedding group (first and last stage).
    EmbeddingGradAllReduce,
    /// DualPipe's two parameter copies: rank r holds stage r (chunk 0) and stage pp − 1 − r
    /// (chunk 1), its mirror rank pp − 1 − r the same stages the other way round, so the two
    /// sum both chunks' gradients (an all-reduce over the pair; deepseek-ai/DualPipe
    /// 3da1bbea5360, examples/example_dualpipe.py:167-174: `p0.grad += p1all[pp_size - 1 -
    /// rank]`, `p1.grad += p0all[pp_size - 1 - rank]`).
    CopyGradAllReduce,
    OptimizerStep,
}

impl Op {
    pub fn is_compute(&self) -> bool {
        matches!(self, Op::Forward(_) | Op::Backward(_) | Op::Weight(_))
    }
}

/// Each compute op of a rank's op list with the compute stream it runs on (O(ops)).
pub fn compute_streams(ops: &[Op]) -> impl Iterator<Item = (Op, ComputeStream)> + '_ {
    ops.iter()
        .scan(ComputeStream::MAIN, |stream, op| {
            if let Op::Stream(s) = op {
                *stream = *s;
            }
            Some((*op, *stream))
        })
        .filter(|(op, _)| op.is_compute())
}

/// The schedule of one pipeline (every data-parallel replica runs the same).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduleIr {
    pub shape: PipelineShape,
    ranks: Vec<Vec<Op>>,
}

impl ScheduleIr {
    /// Builds the op lists of every pipeline rank.
    pub fn build(shape: PipelineShape) -> Result<ScheduleIr, ShapeError> {
        shape.check()?;
        let v_order = match shape.kind {
            Kind::Zbv => zbv::order(shape.pp, shape.microbatches, shape.v_memory)
                .ok_or(ShapeError::ZbvUnschedulable)?,
            _ => Vec::new(),
        };
        let ranks = (0..shape.pp)
            .map(|r| build::rank_ops(&shape, r, &v_order))
            .collect();
        Ok(ScheduleIr { shape, ranks })
    }

    /// An IR from op lists written by hand (schedules no builder covers yet, tests): one list
    /// per pipeline rank of `shape`. The caller guarantees the invariants of this module.
    pub fn from_ranks(shape: PipelineShape, ranks: Vec<Vec<Op>>) -> ScheduleIr {
        ScheduleIr { shape, ranks }
    }

    /// Whether some rank runs weight gradients as [`Op::Weight`] ops of their own.
    pub fn splits_backward(&self) -> bool {
        self.ranks
            .iter()
            .any(|ops| ops.iter().any(|op| matches!(op, Op::Weight(_))))
    }

    pub fn ranks(&self) -> &[Vec<Op>] {
        &self.ranks
    }

    /// The ops of pipeline rank `r` (empty when out of range).
    pub fn rank(&self, r: u32) -> &[Op] {
        self.ranks.get(r as usize).map_or(&[], |v| v.as_slice())
    }

    fn shows_chunks(&self) -> bool {
        self.shape.kind == Kind::Interleaved || self.shape.kind.has_two_chunks()
    }
}

/// `venusc compile --emit schedule`: one line per pipeline rank with its compute ops,
/// `pp0: F0 F1 B0 ...`, or `pp0: F0.0 F1.0 F0.1 ...` (`microbatch.chunk`) when interleaved.
pub fn emit_text(ir: &ScheduleIr) -> String {
    let mut out = String::new();
    for (r, ops) in ir.ranks().iter().enumerate() {
        let _ = write!(out, "pp{r}:");
        for op in ops {
            if let Some(label) = compute_label(op, ir.shows_chunks()) {
                let _ = write!(out, " {label}");
            }
        }
        out.push('\n');
    }
    out
}

/// `F3` / `B3` / `W3`, or `F3.1` with chunks.
fn compute_label(op: &Op, chunks: bool) -> Option<String> {
    let (letter, m) = match op {
        Op::Forward(m) => ('F', m),
        Op::Backward(m) => ('B', m),
        Op::Weight(m) => ('W', m),
        _ => return None,
    };
    Some(if chunks {
        format!("{letter}{}.{}", m.mb, m.chunk)
    } else {
        format!("{letter}{}", m.mb)
    })
}

/// A readable rendering of one rank's full op list (calls with their transfers, hooks), one
/// op per line; used by tests and for debugging.
pub fn describe_rank(ir: &ScheduleIr, r: u32) -> String {
    let mut out = String::new();
    let ops = ir.rank(r);
    let mut i = 0;
    while i < ops.len() {
        match ops[i] {
            Op::Call(c) => {
                let n = usize::from(c.xfers);
                let xfers = ops.get(i + 1..i + 1 + n).unwrap_or(&[]);
                let _ = write!(
                    out,
                    "{}{}",
                    c.kind.name(),
                    if c.blocking { "" } else { " async" }
                );
                for x in xfers {
                    if let Op::Xfer(x) = x {
                        let _ = write!(out, " {}", xfer_label(x));
                    }
                }
                out.push('\n');
                i += n;
            }
            Op::Forward(_) | Op::Backward(_) | Op::Weight(_) => {
                let _ = writeln!(
                    out,
                    "{}",
                    compute_label(&ops[i], ir.shows_chunks()).unwrap_or_default()
                );
            }
            Op::Xfer(x) => {
                let _ = writeln!(out, "{}", xfer_label(&x));
            }
            Op::Wait { port, seq } => {
                let _ = writeln!(out, "wait {}#{seq}", port.short());
            }
            Op::Stream(s) => {
                let _ = writeln!(out, "stream {}", s.0);
            }
            Op::DisableGradSync => out.push_str("disable_grad_sync\n"),
            Op::EnableGradSync => out.push_str("enable_grad_sync\n"),
            Op::GradSync { chunk } => {
                let _ = writeln!(out, "grad_sync c{chunk}");
            }
            Op::ParamSync { chunk } => {
                let _ = writeln!(out, "param_sync c{chunk}");
            }
            Op::FinalizeGrads => out.push_str("finalize_model_grads\n"),
            Op::EmbeddingGradAllReduce => out.push_str("embedding_grad_all_reduce\n"),
            Op::CopyGradAllReduce => out.push_str("copy_grad_all_reduce\n"),
            Op::OptimizerStep => out.push_str("optimizer_step\n"),
        }
        i += 1;
    }
    out
}

/// `sn(chunk,mb)` / `sp(chunk,mb)` for sends, `rp→c1` / `rn→c0` for receives (the notation of
/// megatron-semantics.md §3.4).
fn xfer_label(x: &Xfer) -> String {
    if x.port.is_send() {
        format!("{}({},{})", x.port.short(), x.chunk, x.mb)
    } else {
        format!("{}→c{}", x.port.short(), x.chunk)
    }
}
