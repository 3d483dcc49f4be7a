//! Figures of a schedule that later stages depend on: the peak number of microbatches in
//! flight on each pipeline rank (the memory model's activation count) and the pipeline bubble
//! (W0003 and its help).
//!
//! Input: a [`PipelineShape`]. Output: an [`InFlight`] per pipeline rank, a [`Bubble`] per
//! pipeline.
//! Invariants:
//! - Each figure equals what the built IR shows: [`peak_in_flight`] equals
//!   [`measure_in_flight`] on `ScheduleIr::build(shape).rank(r)`, and [`bubble`] equals the idle
//!   time of [`super::evaluate`] (zero communication cost, any chunk forward and backward cost
//!   uniform over ranks and chunks). The property tests in `tests.rs` check both for every
//!   valid shape; the warmup counts come from the same functions the builders use.
//! - O(1) time and no allocation for in-flight counts and the bubble (O(m·V / N) for the chunk
//!   split of an interleaved peak), so the memory model can call them inside repair searches
//!   and sweeps. The DualPipe schedules are the exception: their step loop has no closed
//!   form, so both figures are measured on the built op list (O(pp·m), bounded by the IR's
//!   size limit), the in-flight counts of every rank once per shape and thread (a sweep asks
//!   for each stage of thousands of candidates that share a few shapes).
//! - Defined for every shape, also one [`PipelineShape::check`] rejects (candidate fixes are
//!   priced before they are validated): sizes of 0 count as 1 (but 0 microbatches give a
//!   bubble of 1, as the closed form does), arithmetic saturates.

use super::build::{interleaved_warmup, one_f_one_b_warmup};
use super::eval::{evaluate, OpCost, Semantics};
use super::{Kind, Op, PipelineShape, ScheduleIr, MAX_STAGE_STEPS};
use venus_base::base::Ratio;

/// Microbatches whose activations a pipeline rank holds at its peak: all of them, and those of
/// its first and last model chunk (the chunks that also hold the embedding and the output
/// layer on the first and last stage). Counts are model-chunk microbatches when interleaved.
/// The chunk counts are taken at the first moment the total peaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct InFlight {
    pub total: u64,
    pub first_chunk: u64,
    pub last_chunk: u64,
}

impl InFlight {
    fn uniform(n: u64) -> InFlight {
        InFlight {
            total: n,
            first_chunk: n,
            last_chunk: n,
        }
    }
}

/// Peak microbatches in flight on pipeline rank `rank` (clamped to the last rank).
pub fn peak_in_flight(shape: &PipelineShape, rank: u32) -> InFlight {
    let m = u64::from(shape.microbatches.max(1));
    match shape.kind {
        // Each forward is followed by its backward (schedules.py:723–891). Megatron's combined
        // 1F1B (`overlap_ep_comm`) runs the next forward with the previous backward layer by
        // layer, forward layer i beside backward layer L − 1 − i (combined_1f1b.py,
        // `schedule_chunk_1f1b` pops the backward's layers from the end), so what one gains
        // the other has freed: one microbatch's activations at a time still.
        Kind::NoPipelining => InFlight::uniform(1),
        // All forwards before the first backward.
        Kind::Gpipe => InFlight::uniform(m),
        // The steady state runs one more forward before its first backward.
        Kind::OneFOneB => {
            InFlight::uniform((u64::from(one_f_one_b_warmup(shape, rank)) + 1).min(m))
        }
        // A microbatch is held from its F until its W (the weight gradient reads the saved
        // inputs of every linear layer, see `measure_in_flight`). In `get_hand_schedule` rank r
        // holds its w = (pp − r − 1)·c warmup forwards, then gains a forward and (from step
        // r·c on) frees a W per step: the count climbs to w + r·c + 1 = (pp − 1)·c + 1 on every
        // rank, or all m. ZB-H1: pp (1F1B's first stage), ZB-H2: 2·pp − 1.
        Kind::ZbH1 | Kind::ZbH2 => {
            let c = u64::from(shape.kind.zero_bubble_warmup().unwrap_or(1));
            let pp = u64::from(shape.pp.max(1));
            InFlight::uniform(((pp - 1).saturating_mul(c).saturating_add(1)).min(m))
        }
        // DualPipe's eight steps and ZBV's greedy order have no closed form in the
        // reference: measured on the op list of the nearest shape it accepts.
        Kind::DualPipe | Kind::DualPipeV | Kind::Zbv => measured_in_flight(shape, rank),
        // The warmup forwards plus the first steady forward, in schedule-table order; with
        // every step warmup, all m·V.
        Kind::Interleaved => {
            let v = u64::from(shape.vpp.max(1));
            let total = m.saturating_mul(v);
            let k = interleaved_warmup(shape, rank).saturating_add(1).min(total);
            let n = u64::from(shape.microbatch_group_size.max(1));
            InFlight {
                total: k,
                first_chunk: chunk_entries(m, n, v, k, 0),
                last_chunk: chunk_entries(m, n, v, k, v - 1),
            }
        }
    }
}

/// Shapes whose measured in-flight figures a thread keeps: a sweep asks for the same few
/// pipeline shapes for every stage of thousands of candidates.
const MEASURED_CACHE: usize = 4096;

std::thread_local! {
    /// Every rank's in-flight peak of a measured schedule, by shape: a function of the shape
    /// alone (the op list is built from it), so a kept figure equals a fresh measurement.
    static MEASURED: std::cell::RefCell<std::collections::HashMap<PipelineShape, std::rc::Rc<[InFlight]>>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

/// The in-flight peak of rank `rank` measured on the op list of the nearest shape the
/// DualPipe or ZBV builder accepts ([`dualpipe_ir`]), built once per shape and thread.
fn measured_in_flight(shape: &PipelineShape, rank: u32) -> InFlight {
    let ranks = MEASURED.with(|cache| cache.borrow().get(shape).cloned());
    let ranks = ranks.unwrap_or_else(|| {
        let ir = dualpipe_ir(shape);
        let ranks: std::rc::Rc<[InFlight]> = (0..ir.shape.pp)
            .map(|r| measure_in_flight(ir.rank(r), 2))
            .collect();
        MEASURED.with(|cache| {
            let mut cache = cache.borrow_mut();
            if cache.len() >= MEASURED_CACHE {
                cache.clear();
            }
            cache.insert(*shape, ranks.clone());
        });
        ranks
    });
    let last = ranks.len().saturating_sub(1);
    ranks
        .get((rank as usize).min(last))
        .copied()
        .unwrap_or_else(|| InFlight::uniform(1))
}

/// How many of the first `k` entries of the interleaved schedule table belong to `chunk`.
// schedules.py:989-1016 `get_schedule_table`: groups of N microbatches, each group listing
// chunk 0 for all its microbatches, then chunk 1, ...
fn chunk_entries(m: u64, n: u64, v: u64, k: u64, chunk: u64) -> u64 {
    let mut remaining = k;
    let mut count = 0u64;
    let mut g = 0u64;
    while remaining > 0 && g < m {
        let size = n.min(m - g).max(1);
        let take = remaining.min(size.saturating_mul(v));
        let before = chunk.saturating_mul(size);
        count = count.saturating_add(take.saturating_sub(before).min(size));
        remaining -= take;
        g = g.saturating_add(size);
    }
    count
}

/// The in-flight peak measured on one rank's op list: a (microbatch, chunk) is held from its
/// forward until its backward, or until its weight-gradient op when the rank runs those
/// separately. What W holds: the input of every linear layer and its output gradient
/// (`dW = Xᵀ·dY`); B frees the rest (attention scores, dropout masks, activation-function
/// inputs). In the paper's count per token and layer (efficiency.py:196-197, arxiv branch:
/// `mem_f = 34h + 5as`, `mem_w = −32h`) that is 32h of 34h + 5as: with flash attention, which
/// stores no scores, 32 of 34, so the memory model counts the microbatch whole until its W.
/// `vpp` is the number of model chunks. O(ops).
pub fn measure_in_flight(ops: &[Op], vpp: u32) -> InFlight {
    // A microbatch whose weight gradient runs as its own op is held until that op (DualPipe
    // splits only some backwards).
    let weighted: std::collections::HashSet<_> = ops
        .iter()
        .filter_map(|op| match op {
            Op::Weight(m) => Some(*m),
            _ => None,
        })
        .collect();
    let v = vpp.max(1) as usize;
    let mut live = vec![0u64; v];
    let mut total = 0u64;
    let mut peak = InFlight::uniform(0);
    for op in ops {
        let (chunk, up) = match op {
            Op::Forward(m) => (m.chunk, true),
            Op::Backward(m) if !weighted.contains(m) => (m.chunk, false),
            Op::Weight(m) => (m.chunk, false),
            _ => continue,
        };
        let Some(c) = live.get_mut(chunk as usize) else {
            continue;
        };
        if up {
            *c += 1;
            total += 1;
        } else {
            *c = c.saturating_sub(1);
            total = total.saturating_sub(1);
        }
        if total > peak.total {
            peak = InFlight {
                total,
                first_chunk: live[0],
                last_chunk: live[v - 1],
            };
        }
    }
    peak
}

/// The pipeline bubble of every rank, in units of one model chunk's forward + backward time
/// (uniform over ranks and chunks), or for a schedule that splits the backward in units of one
/// F, B or W with t_b = 2·t_f and W ≈ B (a third of that): each rank is busy for `busy` units
/// and idle for `idle` within the iteration of `busy + idle`. Kept as integers so that tests
/// compare exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Bubble {
    pub idle: u64,
    pub busy: u64,
}

impl Bubble {
    /// Idle share of the iteration, (pp − 1) / (m·V + pp − 1) for every pipelined schedule
    /// (Narayanan et al. SC21 §2.2).
    pub fn fraction(&self) -> Ratio {
        if self.idle == 0 {
            return Ratio::ZERO;
        }
        Ratio(self.idle as f64 / (self.busy as f64 + self.idle as f64))
    }
}

/// The bubble of a pipeline: every rank waits pp − 1 chunk slots for the pipeline to fill and
/// drain around its m·V forward/backward pairs; without pipelining it never waits.
/// The zero-bubble schedules: ZB-H1 idles (pp − 1)·(F + B − W) (Qi et al., ICLR 2024, §3.1;
/// asserted in efficiency.py:238-241, arxiv branch), ZB-H2 from the first forward of rank 0
/// (pp − 1)·max(F, F + B − 2W): the last stage's first forward waits (pp − 1)·F, which the
/// reference's per-rank measure (efficiency.py:165-166) leaves out. With F = B = W both are
/// pp − 1 units of the 3m each rank computes.
///
/// DualPipe, DualPipeV and ZBV: the idle time of [`super::evaluate`] on the built op list in units
/// of one F, with B = 2·F and a split backward's B and W one F each (every rank computes 3·m
/// units; the overlapped forward/backward pairs are counted one after the other, as one
/// stream would run them).
pub fn bubble(shape: &PipelineShape) -> Bubble {
    if shape.kind.has_two_chunks() {
        return dualpipe_bubble(shape);
    }
    if shape.kind.splits_backward() {
        return Bubble {
            idle: u64::from(shape.pp.max(1) - 1),
            busy: u64::from(shape.microbatches).saturating_mul(3),
        };
    }
    let v = match shape.kind {
        Kind::Interleaved => u64::from(shape.vpp.max(1)),
        _ => 1,
    };
    let busy = u64::from(shape.microbatches).saturating_mul(v);
    let idle = match shape.kind {
        Kind::NoPipelining => 0,
        _ => u64::from(shape.pp.max(1) - 1),
    };
    Bubble { idle, busy }
}

/// The op lists of a DualPipe shape, or of the nearest shape the reference accepts: pp raised
/// to 2 (DualPipe: to the next even count), the microbatches to 2·pp (DualPipe: to the next
/// even count) and capped so that the IR stays within [`MAX_STAGE_STEPS`]. Figures are
/// defined for rejected shapes too (candidate fixes are priced before validation).
/// ZBV takes any microbatch count (its greedy scheduler has no lower bound).
fn dualpipe_ir(shape: &PipelineShape) -> ScheduleIr {
    let dual = shape.kind == Kind::DualPipe;
    let even = |n: u32| if dual { n.saturating_add(n % 2) } else { n };
    let pp = even(shape.pp.clamp(2, 1 << 10));
    let cap = u32::try_from(MAX_STAGE_STEPS / (2 * u64::from(pp))).unwrap_or(u32::MAX);
    let least = if shape.kind == Kind::Zbv { 1 } else { pp * 2 };
    let m = even(shape.microbatches.max(least)).min(cap & !1);
    let mut s = *shape;
    s.pp = pp;
    s.microbatches = m;
    s.vpp = 2;
    ScheduleIr::build(s)
        .unwrap_or_else(|_| ScheduleIr::from_ranks(s, vec![Vec::new(); pp as usize]))
}

std::thread_local! {
    /// The measured bubble of a DualPipe or ZBV shape, by shape (a function of it alone).
    static BUBBLES: std::cell::RefCell<std::collections::HashMap<PipelineShape, Bubble>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

/// [`measure_bubble`] once per shape and thread (W0003 prices every candidate of a sweep).
fn dualpipe_bubble(shape: &PipelineShape) -> Bubble {
    if let Some(b) = BUBBLES.with(|cache| cache.borrow().get(shape).copied()) {
        return b;
    }
    let b = measure_bubble(shape);
    BUBBLES.with(|cache| {
        let mut cache = cache.borrow_mut();
        if cache.len() >= MEASURED_CACHE {
            cache.clear();
        }
        cache.insert(*shape, b);
    });
    b
}

/// The bubble of a DualPipe or ZBV shape, evaluated on its op list.
fn measure_bubble(shape: &PipelineShape) -> Bubble {
    let pp = u64::from(shape.pp.max(1));
    if shape.microbatches == 0 {
        return Bubble {
            idle: pp - 1,
            busy: 0,
        };
    }
    let ir = dualpipe_ir(shape);
    let cost = OpCost {
        forward: 1,
        backward: 2,
    };
    match evaluate(&ir, cost, Semantics::Eager) {
        Ok(t) => {
            let busy = t.ranks.first().map_or(0, |r| r.busy);
            Bubble {
                idle: t.makespan.saturating_sub(busy),
                busy,
            }
        }
        Err(_) => Bubble {
            idle: pp - 1,
            busy: 0,
        },
    }
}
