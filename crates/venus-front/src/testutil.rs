//! Test builders: typed definitions with a distinct [`Loc`] on every item, so tests can assert
//! which spans a diagnostic labels.

use std::sync::atomic::{AtomicU32, Ordering};

use crate::ty::{
    Bytes, BytesPerSec, Cluster, Dim, Expect, FlopsPerSec, Gpu, Model, Plan, ScenarioDef, Seconds,
    Spanned, Topology,
};
use venus_diag::diag::{FileId, Loc, Span};

static NEXT: AtomicU32 = AtomicU32::new(1);

/// A fresh location, distinct from every other one handed out.
pub fn loc() -> Loc {
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    Loc::new(
        FileId(0),
        Span {
            start: n * 10,
            end: n * 10 + 5,
        },
    )
}

pub fn sp<T>(v: T) -> Spanned<T> {
    Spanned::new(v, loc())
}

/// Writes an optional item with a fresh location.
pub fn set<T>(slot: &mut Option<Spanned<T>>, v: T) {
    *slot = Some(sp(v));
}

pub fn model(hidden: u64, heads: u64, layers: u64, vocab: u64, seq: u64) -> Model {
    Model {
        name: "m".into(),
        loc: loc(),
        hidden: sp(hidden),
        layers: sp(layers),
        heads: sp(heads),
        vocab: sp(vocab),
        seq: sp(seq),
        ffn: None,
        kv_groups: None,
        head_dim: None,
        swiglu: None,
        untied_embeddings: None,
        experts: None,
        topk: None,
        moe_ffn: None,
        shared_expert_ffn: None,
        shared_experts: None,
        first_k_dense: None,
        q_lora_rank: None,
        kv_lora_rank: None,
        qk_nope_head_dim: None,
        qk_rope_head_dim: None,
        v_head_dim: None,
        mtp_layers: None,
        hybrid_override_pattern: None,
        mamba_num_heads: None,
        mamba_head_dim: None,
        ssm_state_size: None,
        n_groups: None,
        conv_kernel: None,
        moe_latent_size: None,
        sliding_window: None,
        sliding_window_pattern: None,
        attention_sinks: None,
        qk_norm: None,
        routed_groups: None,
        topk_groups: None,
        moe_layer_freq: None,
        expert_bias: None,
        load_balancing: None,
    }
}

/// The VenusSim demo model: hidden 4096, ffn 16384, 32 layers, 16 heads, 4 kv groups,
/// vocab 50000, seq 2048, SwiGLU.
pub fn llama() -> Model {
    let mut m = model(4096, 16, 32, 50000, 2048);
    set(&mut m.ffn, 16384);
    set(&mut m.kv_groups, 4);
    set(&mut m.swiglu, true);
    m
}

pub fn gpu(memory_gib: u64) -> Gpu {
    Gpu {
        name: "h100_sxm".into(),
        loc: loc(),
        peak: sp(FlopsPerSec(989e12)),
        memory: sp(Bytes(memory_gib * Bytes::GIB)),
        mem_bw: sp(BytesPerSec(3.35e12)),
        fp8_peak: None,
        fp4_peak: None,
        arch: None,
        gemm_efficiency: None,
        gemm_half_dim: None,
        sms: None,
    }
}

/// A cluster of `dims` (name, size), innermost first.
pub fn cluster(dims: &[(&str, u64)], memory_gib: u64) -> Cluster {
    Cluster {
        name: Some("c".into()),
        loc: loc(),
        gpu: gpu(memory_gib),
        gpu_loc: loc(),
        dims: dims
            .iter()
            .map(|&(name, size)| Dim {
                name: sp(name.to_string()),
                topology: sp(Topology::FullyConnected),
                size: sp(size),
                bandwidth: sp(BytesPerSec(450e9)),
                latency: sp(Seconds(0.0)),
                efficiency: None,
                algorithm: None,
                fabric: Default::default(),
                loc: loc(),
            })
            .collect(),
        reserve: None,
        slow: Vec::new(),
        reliability: Default::default(),
    }
}

/// The `Plan` literal with every plain key unset.
macro_rules! unset_plan {
    (({ $($custom:tt)* }) $( $(#[$doc:meta])* $field:ident : $ty:ty = $key:ident, $how:ident; )*) => {
        Plan {
            $($custom)*
            $( $field: None, )*
        }
    };
}

pub fn plan(micro_batch: u64, global_batch: u64) -> Plan {
    venus_plan::plan_keys!(unset_plan!({
        name: Some("p".into()),
        loc: loc(),
        micro_batch: sp(micro_batch),
        global_batch: sp(global_batch),
        measured: None,
        fsdp: None,
        fsdp_impl: None,
        pipeline_layout: None,
        moe_dispatcher: None,
        moe_backend: None,
        cp_a2a: None,
        cuda_graph_modules: None,
        venussim: Vec::new(),
    }))
}

pub fn def(model: Model, cluster: Cluster, plan: Plan) -> ScenarioDef {
    ScenarioDef {
        name: "s".into(),
        loc: loc(),
        model,
        cluster,
        plan,
        expect: Expect::default(),
        train: Default::default(),
    }
}

/// The language reference example: llama on 2 × 8 GPUs of 80 GiB, pp 8 vpp 2 dp 2,
/// micro_batch 2, global_batch 64, distributed optimizer with both overlaps.
pub fn demo() -> ScenarioDef {
    let mut p = plan(2, 64);
    set(&mut p.pp, 8);
    set(&mut p.vpp, 2);
    set(&mut p.tp, 1);
    set(&mut p.dp, 2);
    set(&mut p.distributed_optimizer, true);
    set(&mut p.overlap_grad_reduce, true);
    set(&mut p.overlap_param_gather, true);
    def(llama(), cluster(&[("nvlink", 8), ("ib", 2)], 80), p)
}
