//! The seam between the front end and the plain-data stages: typed, source-located
//! definitions → the plain [`spec`](venus_plan::plan::spec) values and their [`Provenance`].
//!
//! Input: a type-checked [`ScenarioDef`]. Output: [`ModelSpec`], [`ClusterSpec`], [`PlanSpec`],
//! [`ExpectSpec`] with every `Spanned` unwrapped, and the locations in a side table.
//! Invariant: this is the only place a `Spanned` value becomes plain data.

use crate::ty::{Cluster, Expect, Gpu, Model, Opt, Plan, ScenarioDef, Train};
use venus_plan::plan::spec::ReliabilitySpec;
use venus_plan::plan::spec::{
    ClusterSpec, DimSpec, ExpectLocs, ExpectSpec, GemmFit, GpuSpec, MeasuredSpec, ModelSpec,
    PlanSpec, Provenance, TrainSpec,
};

fn loc<T>(v: &Opt<T>) -> Option<venus_diag::diag::Loc> {
    v.as_ref().map(|s| s.loc)
}

fn val<T: Clone>(v: &Opt<T>) -> Option<T> {
    v.as_ref().map(|s| s.value.clone())
}

pub fn model(m: &Model) -> ModelSpec {
    ModelSpec {
        name: m.name.clone(),
        hidden: m.hidden.value,
        layers: m.layers.value,
        heads: m.heads.value,
        vocab: m.vocab.value,
        seq: m.seq.value,
        ffn: val(&m.ffn),
        kv_groups: val(&m.kv_groups),
        head_dim: val(&m.head_dim),
        swiglu: val(&m.swiglu),
        untied_embeddings: val(&m.untied_embeddings),
        experts: val(&m.experts),
        topk: val(&m.topk),
        moe_ffn: val(&m.moe_ffn),
        shared_expert_ffn: val(&m.shared_expert_ffn),
        shared_experts: val(&m.shared_experts),
        first_k_dense: val(&m.first_k_dense),
        q_lora_rank: val(&m.q_lora_rank),
        kv_lora_rank: val(&m.kv_lora_rank),
        qk_nope_head_dim: val(&m.qk_nope_head_dim),
        qk_rope_head_dim: val(&m.qk_rope_head_dim),
        v_head_dim: val(&m.v_head_dim),
        mtp_layers: val(&m.mtp_layers),
        // Validation (E0332) refused a pattern with another symbol, so every one maps.
        hybrid_pattern: m.hybrid_override_pattern.as_ref().map(|p| {
            p.value
                .text
                .chars()
                .filter_map(venus_plan::plan::HybridLayer::from_symbol)
                .collect()
        }),
        mamba_num_heads: val(&m.mamba_num_heads),
        mamba_head_dim: val(&m.mamba_head_dim),
        ssm_state_size: val(&m.ssm_state_size),
        n_groups: val(&m.n_groups),
        conv_kernel: val(&m.conv_kernel),
        moe_latent_size: val(&m.moe_latent_size),
        sliding_window: val(&m.sliding_window),
        sliding_window_pattern: val(&m.sliding_window_pattern),
        attention_sinks: val(&m.attention_sinks),
        qk_norm: val(&m.qk_norm),
        routed_groups: val(&m.routed_groups),
        topk_groups: val(&m.topk_groups),
        moe_layer_freq: val(&m.moe_layer_freq),
        expert_bias: val(&m.expert_bias),
        load_balancing: val(&m.load_balancing),
    }
}

pub fn gpu(g: &Gpu) -> GpuSpec {
    GpuSpec {
        name: g.name.clone(),
        arch: g.arch(),
        peak: g.peak.value,
        memory: g.memory.value,
        mem_bw: g.mem_bw.value,
        fp8_peak: val(&g.fp8_peak),
        fp4_peak: val(&g.fp4_peak),
        gemm: GemmFit {
            efficiency: val(&g.gemm_efficiency),
            half_dim: val(&g.gemm_half_dim),
        },
        sms: val(&g.sms).unwrap_or_else(|| g.arch().default_sms()),
    }
}

pub fn cluster(c: &Cluster) -> ClusterSpec {
    ClusterSpec {
        name: c.name.clone(),
        gpu: gpu(&c.gpu),
        dims: c
            .dims
            .iter()
            .map(|d| DimSpec {
                name: d.name.value.clone(),
                topology: d.topology.value,
                size: d.size.value,
                bandwidth: d.bandwidth.value,
                latency: d.latency.value,
                efficiency: val(&d.efficiency),
                algorithm: val(&d.algorithm),
                fabric: d.fabric,
            })
            .collect(),
        reserve: val(&c.reserve),
        slow: c.slow.iter().map(|s| s.spec()).collect(),
        reliability: ReliabilitySpec {
            gpu_mtbf: val(&c.reliability.gpu_mtbf),
            node_mtbf: val(&c.reliability.node_mtbf),
            link_mtbf: val(&c.reliability.link_mtbf),
            storage_write_bw: val(&c.reliability.storage_write_bw),
            storage_read_bw: val(&c.reliability.storage_read_bw),
            restart: val(&c.reliability.restart),
        },
    }
}

/// The `PlanSpec` literal: the fields given by hand, then every plain key's value.
macro_rules! plan_spec_of {
    (($p:ident { $($custom:tt)* }) $( $(#[$doc:meta])* $field:ident : $ty:ty = $key:ident, $how:ident; )*) => {
        PlanSpec {
            $($custom)*
            $( $field: val(&$p.$field), )*
        }
    };
}

pub fn plan(p: &Plan) -> PlanSpec {
    venus_plan::plan_keys!(plan_spec_of!(p {
        name: p.name.clone(),
        micro_batch: p.micro_batch.value,
        global_batch: p.global_batch.value,
        measured: p.measured.as_ref().map(|m| MeasuredSpec {
            first: m.first.value,
            middle: m.middle.value,
            last: m.last.value,
            unused: m.unused,
        }),
        fsdp: val(&p.fsdp),
        fsdp_impl: val(&p.fsdp_impl),
        pipeline_layout: p.pipeline_layout.as_ref().map(|l| l.value.text.clone()),
        // Validation reported every item that does not give a field (E0355).
        venussim: p
            .venussim
            .iter()
            .filter_map(|v| venus_plan::plan::venussim::field(&v.path.value, &v.json.value).ok())
            .collect(),
        moe_dispatcher: val(&p.moe_dispatcher),
        cp_a2a: val(&p.cp_a2a),
        cuda_graph_modules: val(&p.cuda_graph_modules),
    }))
}

pub fn expect(e: &Expect) -> ExpectSpec {
    ExpectSpec {
        iteration_time_max: val(&e.iteration_time_max),
        tflops_min: val(&e.tflops_min),
        memory_max: val(&e.memory_max),
        mfu_min: val(&e.mfu_min),
    }
}

pub fn train(t: &Train) -> TrainSpec {
    TrainSpec {
        tokens: val(&t.tokens),
        price: val(&t.price),
    }
}

/// Where each part of the scenario was written.
pub fn provenance(def: &ScenarioDef) -> Provenance {
    let e = &def.expect;
    Provenance {
        scenario: def.loc,
        model: def.model.loc,
        cluster: def.cluster.loc,
        gpu: def.cluster.gpu.loc,
        plan: def.plan.loc,
        expect: ExpectLocs {
            iteration_time_max: loc(&e.iteration_time_max),
            tflops_min: loc(&e.tflops_min),
            memory_max: loc(&e.memory_max),
            mfu_min: loc(&e.mfu_min),
        },
    }
}
