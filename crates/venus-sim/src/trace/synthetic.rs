//! Synthetic traces with known answers, for engine tests and the engine benchmark.
//!
//! Input: a [`Pipeline`] shape (stages, tensor-parallel width, microbatches, per-layer
//! compute times). Output: a 1F1B [`Trace`] with P2P between stages and two tensor-parallel
//! all-reduces per layer in each pass, on the rank layout tp-fastest (rank = stage·tp + t).
//! Invariant: with zero-cost communication its makespan is (m + p − 1)(t_f + t_b).

use super::{
    Category, CollectiveKind, Label, NodeId, NodeKind, Ps, RankId, StreamId, Trace, TraceBuilder,
    TraceError,
};
use venus_base::base::Bytes;

/// Streams of the synthetic pipeline: one per P2P direction so that a blocked send to one
/// neighbour never holds a receive from the other (Megatron batches them for the same reason,
/// `megatron/core/pipeline_parallel/p2p_communication.py:_communicate`).
pub const SEND_NEXT: StreamId = StreamId(1);
pub const RECV_PREV: StreamId = StreamId(2);
pub const SEND_PREV: StreamId = StreamId(3);
pub const RECV_NEXT: StreamId = StreamId(4);
pub const TP: StreamId = StreamId(5);

/// Shape of a synthetic 1F1B pipeline.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pipeline {
    pub stages: u32,
    pub tp: u32,
    pub microbatches: u32,
    /// Layers per stage; each pass of a layer is two compute segments, each followed by a
    /// tensor-parallel all-reduce when `tp > 1`.
    pub layers: u32,
    /// Forward compute of one microbatch on one stage.
    pub forward: Ps,
    /// Backward compute of one microbatch on one stage.
    pub backward: Ps,
    /// Activation (and activation-gradient) size sent between stages.
    pub p2p_bytes: Bytes,
    /// Size of each tensor-parallel all-reduce.
    pub tp_bytes: Bytes,
    /// Simulate only tensor-parallel rank 0 of each stage; the other ranks of a stage are its
    /// symmetry class.
    pub symmetric: bool,
}

impl Pipeline {
    pub fn world(&self) -> u32 {
        self.stages.saturating_mul(self.tp)
    }

    /// Builds the trace.
    pub fn build(&self) -> Result<Trace, TraceError> {
        let (p, tp) = (self.stages.max(1), self.tp.max(1));
        let world = p.checked_mul(tp).ok_or(TraceError::TooLarge)?;
        let mut b = TraceBuilder::new(world);
        if self.symmetric {
            b.set_classes((0..world).map(|r| RankId(r / tp)).collect());
        }
        let ar = b.name("tp-allreduce");
        for s in 0..p {
            let group = b.group(&(s * tp..(s + 1) * tp).map(RankId).collect::<Vec<_>>());
            let simulated = if self.symmetric { 1 } else { tp };
            for t in 0..simulated {
                let ctx = StageCtx {
                    spec: self,
                    stage: s,
                    stages: p,
                    tp,
                    t,
                    group: group.0,
                    ar,
                };
                ctx.emit(b.rank(RankId(s * tp + t)));
            }
        }
        b.finish()
    }
}

struct StageCtx<'a> {
    spec: &'a Pipeline,
    stage: u32,
    stages: u32,
    tp: u32,
    t: u32,
    group: u32,
    ar: super::NameId,
}

impl StageCtx<'_> {
    /// Megatron's 1F1B order: `p − s − 1` warm-up forwards, then one forward and one backward
    /// per step, then the remaining backwards
    /// (`megatron/core/pipeline_parallel/schedules.py:forward_backward_pipelining_without_interleaving`).
    fn emit(&self, r: &mut super::RankBuilder) {
        let m = self.spec.microbatches;
        let warmup = (self.stages - self.stage - 1).min(m);
        for i in 0..warmup {
            self.pass(r, i, true);
        }
        for i in 0..m - warmup {
            self.pass(r, warmup + i, true);
            self.pass(r, i, false);
        }
        for i in m - warmup..m {
            self.pass(r, i, false);
        }
    }

    fn pass(&self, r: &mut super::RankBuilder, mb: u32, forward: bool) {
        let (s, p, tp) = (self.stage, self.stages, self.tp);
        let bytes = self.spec.p2p_bytes;
        let (has_src, src, recv_stream, has_dst, dst, send_stream) = if forward {
            (
                s > 0,
                s.wrapping_sub(1),
                RECV_PREV,
                s + 1 < p,
                s + 1,
                SEND_NEXT,
            )
        } else {
            (
                s + 1 < p,
                s + 1,
                RECV_NEXT,
                s > 0,
                s.wrapping_sub(1),
                SEND_PREV,
            )
        };
        let mut last: Option<NodeId> = None;
        if has_src {
            let kind = NodeKind::Recv {
                peer: RankId(src * tp + self.t),
                bytes,
                tag: mb,
            };
            last = Some(r.push(
                kind,
                recv_stream,
                Category::Recv,
                Label::RecvFrom { pp: src },
                &[],
            ));
        }
        let (total, category) = if forward {
            (self.spec.forward, Category::ForwardCompute)
        } else {
            (self.spec.backward, Category::BackwardCompute)
        };
        let label = if forward {
            Label::Forward {
                microbatch: mb,
                chunk: None,
            }
        } else {
            Label::Backward {
                microbatch: mb,
                chunk: None,
            }
        };
        let segments = self.spec.layers.max(1) as u64 * 2;
        let each = total.0 / segments;
        for k in 0..segments {
            // The last segment takes the remainder so the pass sums to `total` exactly.
            let d = if k + 1 == segments {
                total.0 - each * (segments - 1)
            } else {
                each
            };
            let c = r.push(
                NodeKind::Compute { duration: Ps(d) },
                StreamId::COMPUTE,
                category,
                label,
                last.as_slice(),
            );
            last = Some(c);
            if tp > 1 && self.spec.tp_bytes.0 > 0 {
                let kind = NodeKind::Collective {
                    kind: CollectiveKind::AllReduce,
                    group: super::GroupId(self.group),
                    bytes: self.spec.tp_bytes,
                };
                last = Some(r.push(
                    kind,
                    TP,
                    Category::TpComm,
                    Label::Numbered(self.ar, mb),
                    &[c],
                ));
            }
        }
        if has_dst {
            let kind = NodeKind::Send {
                peer: RankId(dst * tp + self.t),
                bytes,
                tag: mb,
            };
            r.push(
                kind,
                send_stream,
                Category::Send,
                Label::SendTo { pp: dst },
                last.as_slice(),
            );
        }
    }
}
