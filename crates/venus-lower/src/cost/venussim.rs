//! VenusSim's compute and message sizes, reproduced number for number.
//!
//! Input: plain model/plan numbers ([`VenusModel`], usually built from a [`Scenario`]).
//! Output: VenusSim's FLOP terms (`T`, `Sm`, `Em`, `St`), its per-node compute ops and node
//! durations, and the element counts of the messages it generates (p2p, gradient
//! reduce-scatter, parameter all-gather, embedding all-reduce).
//! Invariant: every formula follows VenusSim's trace generator
//! (`trace-generator/generator/et_generator.py` `calculate_transformer_flops`,
//! `calculate_transformer_param_num`; `megatron_core/arguments.py` `validate_args_extern`;
//! `generator/utils.py` `form_comp_node`) in the same floating-point order, so a node's
//! integer op count and its whole-nanosecond duration match VenusSim's exactly. Nothing here
//! panics on user numbers: products are taken in `f64` or saturate.
//!
//! Two deliberate generalisations, both identical to VenusSim on models it can express:
//! the query projection uses the model's `head_dim` (VenusSim: `hidden / heads`), and a MoE
//! model's MLP term uses `moe_ffn` (VenusSim has only `ffn`).

use venus_base::base::{Bytes, Flops, FlopsPerSec, Ratio, ScheduleKind, Seconds};
use venus_plan::plan::Scenario;

/// VenusSim's extra factors for trace generation (`CALCULATE_TRANSFORMER_FLOPS_PARAM`,
/// et_generator.py:53-58): transformer ×1.28, attention softmax ×6, embedding ×3, stable
/// embedding ×70.
pub const TOTAL_FACTOR: f64 = 1.28;
pub const SOFTMAX_FACTOR: f64 = 6.0;
pub const EMBEDDING_FACTOR: f64 = 3.0;
pub const STABLE_EMBEDDING_FACTOR: f64 = 70.0;

/// Bytes per element of each generated message (VenusSim `arguments.py:711-724`,
/// `p2p_communication.py`): fp32 gradients, bf16 parameters and activations.
pub const GRAD_ELEMENT_BYTES: u64 = 4;
pub const PARAM_ELEMENT_BYTES: u64 = 2;
pub const EMBEDDING_ELEMENT_BYTES: u64 = 4;
pub const P2P_ELEMENT_BYTES: u64 = 2;

/// The model and batch numbers VenusSim's formulas read.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VenusModel {
    pub global_batch: u64,
    pub seq: u64,
    pub layers: u64,
    pub hidden: u64,
    /// MLP inner size (the expert size on a MoE model).
    pub ffn: u64,
    pub heads: u64,
    pub kv_groups: u64,
    pub head_dim: u64,
    pub swiglu: bool,
    /// Routed experts per token (1 on a dense model).
    pub topk: u64,
    /// Experts per MoE layer for the parameter count (1 on a dense model).
    pub experts: u64,
    pub shared_expert_ffn: u64,
    pub padded_vocab: u64,
    pub untied_embeddings: bool,
    /// Bloom-style stable embedding (never set from a `.venus` file; kept for completeness).
    pub stable_embedding: bool,
}

impl VenusModel {
    pub fn from_scenario(sc: &Scenario) -> VenusModel {
        let m = &sc.model;
        let moe = m.is_moe();
        VenusModel {
            global_batch: sc.global_batch,
            seq: m.seq,
            layers: m.layers,
            hidden: m.hidden,
            ffn: if moe { m.moe_ffn() } else { m.ffn() },
            heads: m.heads,
            kv_groups: m.kv_groups(),
            head_dim: m.head_dim(),
            swiglu: m.swiglu(),
            topk: if moe { m.topk().max(1) } else { 1 },
            experts: if moe { m.experts().max(1) } else { 1 },
            shared_expert_ffn: if moe { m.shared_expert_ffn() } else { 0 },
            padded_vocab: sc.padded_vocab,
            untied_embeddings: m.untied_embeddings(),
            stable_embedding: false,
        }
    }

    fn gated(&self) -> f64 {
        if self.swiglu {
            1.5
        } else {
            1.0
        }
    }

    fn query_ratio(&self) -> f64 {
        (self.head_dim as f64 * self.heads as f64) / self.hidden as f64
    }

    /// `12·B·s·L·h²`, the common factor of every FLOP term. Python computes it as an exact
    /// integer before the float multiply; below 2⁵³ the `f64` product is exact as well.
    fn base(&self) -> f64 {
        let h = self.hidden as f64;
        12.0 * self.global_batch as f64 * self.seq as f64 * self.layers as f64 * h * h
    }
}

/// VenusSim's four FLOP terms for one whole iteration (all ranks).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VenusFlops {
    /// Attention + MLP (+ shared experts): Megatron's formula without the logits.
    pub t: Flops,
    /// The extra "attention softmax" term `base·s/h`.
    pub sm: Flops,
    /// Logits: `base·V/(2·L·h)`.
    pub em: Flops,
    /// Stable-embedding term (zero unless enabled).
    pub st: Flops,
}

impl VenusFlops {
    /// `T' = 1.28·T + 6·Sm`: the transformer work VenusSim simulates.
    pub fn trace_transformer(&self) -> Flops {
        Flops(self.t.0 * TOTAL_FACTOR + self.sm.0 * SOFTMAX_FACTOR)
    }

    /// `E' = 3·Em + 70·St`: the embedding work VenusSim simulates.
    pub fn trace_embedding(&self) -> Flops {
        Flops(self.em.0 * EMBEDDING_FACTOR + self.st.0 * STABLE_EMBEDDING_FACTOR)
    }

    /// `T + Em`: the FLOPs VenusSim's report divides by time for TFLOP/s/GPU.
    pub fn report(&self) -> Flops {
        Flops(self.t.0 + self.em.0)
    }
}

/// The FLOP terms (et_generator.py `calculate_transformer_flops`).
pub fn flops(m: &VenusModel) -> VenusFlops {
    let base = m.base();
    let h = m.hidden as f64;
    let s = m.seq as f64;
    let l = m.layers as f64;
    let g = m.gated();
    let attention = (1.0 + m.kv_groups as f64 / m.heads as f64 + s / h) * m.query_ratio();
    let mlp = (m.ffn as f64 / h) * m.topk as f64 * g;
    let shared = (m.shared_expert_ffn as f64 / h) * g;
    let t = base * (attention + mlp + shared);
    let sm = base * (s / h);
    let em = base * (m.padded_vocab as f64 / (2.0 * l * h));
    let st = if m.stable_embedding {
        base * (h / (2.0 * l * h))
    } else {
        0.0
    };
    VenusFlops {
        t: Flops(t),
        sm: Flops(sm),
        em: Flops(em),
        st: Flops(st),
    }
}

/// Parameters of the transformer layers and the embedding layers
/// (et_generator.py `calculate_transformer_param_num`), as VenusSim's floats.
pub fn param_counts(m: &VenusModel) -> (f64, f64) {
    let h = m.hidden as f64;
    let l = m.layers as f64;
    let transformer = 2.0
        * l
        * h
        * h
        * ((1.0 + m.kv_groups as f64 / m.heads as f64) * m.query_ratio()
            + (m.ffn as f64 / h) * m.experts as f64 * m.gated()
            + 2.0 / h
            + 1.0 / (l * h));
    let embedding = h * m.padded_vocab as f64;
    let embedding = if m.untied_embeddings {
        2.0 * embedding
    } else {
        embedding
    };
    (transformer, embedding)
}

/// The parallel shape VenusSim's per-node split reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VenusShape {
    pub world: u64,
    pub tp: u64,
    pub pp: u64,
    pub cp: u64,
    pub dp: u64,
    /// Model chunks per rank (1 unless interleaved).
    pub vpp: u64,
    pub micro_batch: u64,
    pub microbatches: u64,
    pub sp: bool,
}

impl VenusShape {
    pub fn from_scenario(sc: &Scenario) -> VenusShape {
        let interleaved = sc.schedule == Some(ScheduleKind::Interleaved);
        VenusShape {
            world: sc.world,
            tp: sc.tp,
            pp: sc.pp,
            cp: sc.cp,
            dp: sc.dp,
            vpp: if interleaved { sc.vpp.max(1) } else { 1 },
            micro_batch: sc.micro_batch,
            microbatches: sc.microbatches,
            sp: sc.sp,
        }
    }

    /// Forward compute nodes per rank per iteration (`TOTAL_FWD_NODE_NUM`):
    /// microbatches × model chunks.
    pub fn nodes_per_rank(&self) -> u64 {
        self.microbatches.saturating_mul(self.vpp).max(1)
    }
}

/// Integer ops of one forward compute node (one microbatch on one model chunk).
/// `embedding` is true on chunk 0 of stage 0 and the last chunk of the last stage.
// schedules.py:561-570 (interleaved) and :1358-1368 (1F1B):
// flops_per_fwd_node = T'/world / nodes / 3; embedding = E'/(world//pp*2) / nodes / 3 * chunks;
// utils.py form_comp_node: int(flops + embedding)
pub fn forward_node_ops(m: &VenusModel, sh: &VenusShape, embedding: bool) -> u64 {
    let (plain, emb) = node_ops_parts(m, sh);
    let ops = if embedding { plain + emb } else { plain };
    ops as u64
}

/// Integer ops of one backward node: `int(2 × forward)` before truncation
/// (utils.py `get_computation_backward`).
pub fn backward_node_ops(m: &VenusModel, sh: &VenusShape, embedding: bool) -> u64 {
    let (plain, emb) = node_ops_parts(m, sh);
    let ops = if embedding { plain + emb } else { plain };
    (2.0 * ops) as u64
}

/// The two float parts of a forward node: transformer share and embedding share.
fn node_ops_parts(m: &VenusModel, sh: &VenusShape) -> (f64, f64) {
    let f = flops(m);
    let nodes = sh.nodes_per_rank() as f64;
    let transformer_per_gpu = f.trace_transformer().0 / sh.world.max(1) as f64;
    // arguments.py:707: embedding_flops / (world // pp * 2)
    let emb_ranks = (sh.world / sh.pp.max(1)).saturating_mul(2).max(1) as f64;
    let embedding_per_gpu = f.trace_embedding().0 / emb_ranks;
    let plain = transformer_per_gpu / nodes / 3.0;
    let emb = embedding_per_gpu / nodes / 3.0 * sh.vpp as f64;
    (plain, emb)
}

/// Does `(stage, chunk)` carry VenusSim's embedding share? Only chunk 0 of stage 0 and the
/// last chunk of the last stage (`is_pipeline_first/last_stage` includes the virtual rank,
/// generator/utils.py:102).
pub fn carries_embedding(sh: &VenusShape, stage: u64, chunk: u64) -> bool {
    let first = stage == 0 && chunk == 0;
    let last = stage + 1 == sh.pp.max(1) && chunk + 1 == sh.vpp.max(1);
    first || last
}

/// Which of `step_snapshot_data`'s three times (0 first, 1 middle, 2 last) a model chunk
/// replays: VenusSim asks `is_pipeline_first_stage()` / `is_pipeline_last_stage()`, which
/// include the virtual rank (generator/utils.py:88-96), so with interleaving only chunk 0 of
/// the first stage is "first" and only the last chunk of the last stage is "last".
pub fn snapshot_kind(pp: u64, vpp: u64, stage: u64, chunk: u64) -> usize {
    if stage == 0 && chunk == 0 {
        0
    } else if stage + 1 == pp.max(1) && chunk + 1 == vpp.max(1) {
        2
    } else {
        1
    }
}

/// Whole nanoseconds VenusSim's roofline gives `ops` at `peak × mfu`:
/// `max(1, ops / (perf / 1e9))` truncated (Roofline.cc:25-29, Workload.cc:364-392).
pub fn node_time_ns(ops: u64, peak: FlopsPerSec, mfu: Ratio) -> u64 {
    let perf = peak.0 * mfu.0;
    let ns = ops as f64 / (perf / 1e9);
    // `as` saturates and maps NaN to 0: a zero or absurd rate cannot panic.
    (ns.max(1.0)) as u64
}

/// [`node_time_ns`] as [`Seconds`].
pub fn node_time(ops: u64, peak: FlopsPerSec, mfu: Ratio) -> Seconds {
    Seconds::from_ns(node_time_ns(ops, peak, mfu) as f64)
}

/// Transformer parameters per model chunk per GPU: `P_transformer / (pp·tp) / vpp`
/// (arguments.py:711-716), truncated to whole elements as the trace writes them.
pub fn param_num_per_chunk(m: &VenusModel, sh: &VenusShape) -> u64 {
    per_chunk(m, sh) as u64
}

fn per_chunk(m: &VenusModel, sh: &VenusShape) -> f64 {
    let (transformer, _) = param_counts(m);
    let per_gpu = transformer / (sh.pp.max(1) as f64 * sh.tp.max(1) as f64);
    per_gpu / sh.vpp.max(1) as f64
}

/// Gradient reduce-scatter elements per chunk (fp32, [`GRAD_ELEMENT_BYTES`]): the whole
/// chunk buffer, as ASTRA-sim's reduce-scatter takes the full size.
pub fn grad_reduce_scatter_elements(m: &VenusModel, sh: &VenusShape) -> u64 {
    param_num_per_chunk(m, sh)
}

/// Parameter all-gather elements per chunk (bf16, [`PARAM_ELEMENT_BYTES`]): the local shard,
/// `param_num_per_chunk / dp`.
pub fn param_all_gather_elements(m: &VenusModel, sh: &VenusShape) -> u64 {
    (per_chunk(m, sh) / sh.dp.max(1) as f64) as u64
}

/// Embedding-gradient all-reduce elements (fp32, [`EMBEDDING_ELEMENT_BYTES`]):
/// `h·V_padded / tp`, doubled when untied (VenusSim generates it only when tied).
pub fn embedding_all_reduce_elements(m: &VenusModel, sh: &VenusShape) -> u64 {
    let (_, embedding) = param_counts(m);
    (embedding / sh.tp.max(1) as f64) as u64
}

/// P2P activation elements: `[s/cp (/tp with sp), mbs, h]` (p2p_communication.py).
pub fn p2p_elements(m: &VenusModel, sh: &VenusShape) -> u64 {
    let mut s = m.seq / sh.cp.max(1);
    if sh.sp {
        s /= sh.tp.max(1);
    }
    s.saturating_mul(sh.micro_batch).saturating_mul(m.hidden)
}

/// Elements × bytes per element.
pub fn bytes(elements: u64, element_bytes: u64) -> Bytes {
    Bytes(elements.saturating_mul(element_bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use venus_front::testutil::{demo, set};
    use venus_front::ty::FlopsPerSec;

    /// The demo with VenusSim's 1000 TFLOP/s peak.
    fn demo_scenario() -> Scenario {
        let mut d = demo();
        d.cluster.gpu.peak.value = FlopsPerSec(1000e12);
        set(&mut d.plan.mfu, Ratio(1.0));
        venus_front::validate(&d).0.expect("demo validates")
    }

    fn parts() -> (VenusModel, VenusShape) {
        let sc = demo_scenario();
        (
            VenusModel::from_scenario(&sc),
            VenusShape::from_scenario(&sc),
        )
    }

    #[test]
    fn demo_forward_node_has_venussims_exact_op_count() {
        let (m, sh) = parts();
        assert_eq!(sh.nodes_per_rank(), 32);
        assert_eq!(forward_node_ops(&m, &sh, false), 7_102_845_115_432);
        assert_eq!(backward_node_ops(&m, &sh, false), 14_205_690_230_865);
    }

    #[test]
    fn demo_compute_per_rank_matches_venussim_report() {
        let (m, sh) = parts();
        let peak = FlopsPerSec(1000e12);
        let mfu = Ratio(1.0);
        let plain_f = node_time_ns(forward_node_ops(&m, &sh, false), peak, mfu);
        let emb_f = node_time_ns(forward_node_ops(&m, &sh, true), peak, mfu);
        let plain_b = node_time_ns(backward_node_ops(&m, &sh, false), peak, mfu);
        let emb_b = node_time_ns(backward_node_ops(&m, &sh, true), peak, mfu);
        assert_eq!(plain_f, 7_102_845);
        // The embedding share adds 2.519 ms on the carrying chunk.
        assert_eq!(emb_f - plain_f, 2_518_998);
        // Middle stage: 32 plain nodes; first stage: 16 plain + 16 embedding-carrying.
        let fwd_min = 32 * plain_f;
        let fwd_max = 16 * plain_f + 16 * emb_f;
        let bwd_min = 32 * plain_b;
        let bwd_max = 16 * plain_b + 16 * emb_b;
        let ms = |ns: u64| (ns as f64 / 1e4).round() / 100.0;
        assert_eq!((ms(fwd_min), ms(fwd_max)), (227.29, 267.60));
        assert_eq!((ms(bwd_min), ms(bwd_max)), (454.58, 535.19));
    }

    #[test]
    fn embedding_share_sits_on_first_and_last_chunk_only() {
        let (_, sh) = parts();
        assert!(carries_embedding(&sh, 0, 0));
        assert!(!carries_embedding(&sh, 0, 1));
        assert!(carries_embedding(&sh, 7, 1));
        assert!(!carries_embedding(&sh, 7, 0));
        assert!(!carries_embedding(&sh, 3, 0));
    }

    #[test]
    fn demo_message_sizes_match_venussim_traces() {
        let (m, sh) = parts();
        assert_eq!(p2p_elements(&m, &sh), 16_777_216);
        assert_eq!(
            bytes(p2p_elements(&m, &sh), P2P_ELEMENT_BYTES),
            Bytes(33_554_432)
        );
        assert_eq!(grad_reduce_scatter_elements(&m, &sh), 486_572_544);
        assert_eq!(param_all_gather_elements(&m, &sh), 243_286_272);
        assert_eq!(embedding_all_reduce_elements(&m, &sh), 204_996_608);
    }

    #[test]
    fn demo_flops_terms_and_report_flops() {
        let (m, _) = parts();
        let f = flops(&m);
        // base = 12·64·2048·32·4096² = 844,424,930,131,968
        assert_eq!(f.sm.0, 844_424_930_131_968.0 * 0.5);
        assert_eq!(f.t.0, 844_424_930_131_968.0 * 7.75);
        let report_tf = f.report().0 / 1e12;
        assert!((report_tf - 6705.5).abs() < 1.0, "{report_tf}");
    }

    #[test]
    fn node_time_is_at_least_one_nanosecond_and_never_panics() {
        assert_eq!(node_time_ns(0, FlopsPerSec(1e15), Ratio(1.0)), 1);
        assert_eq!(node_time_ns(10, FlopsPerSec(0.0), Ratio(1.0)), u64::MAX);
        assert_eq!(node_time_ns(1_500_000, FlopsPerSec(1e15), Ratio(0.5)), 3);
        assert_eq!(
            node_time(7_102_845_115_432, FlopsPerSec(1e15), Ratio(1.0)),
            Seconds::from_ns(7_102_845.0)
        );
    }

    #[test]
    fn sequence_parallel_divides_the_p2p_sequence() {
        let (m, mut sh) = parts();
        sh.tp = 4;
        sh.sp = true;
        sh.cp = 2;
        assert_eq!(p2p_elements(&m, &sh), 2048 / 2 / 4 * 2 * 4096);
    }
}
