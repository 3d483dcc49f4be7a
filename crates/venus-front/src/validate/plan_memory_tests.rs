//! Tests of the memory model (`venus_plan::plan::memory`) on models built by the test scenario
//! builders: here, beside `to_plan`, because the plan crate cannot build a typed definition.
//!
//! Input: typed model definitions (`testutil`) converted with `to_plan::model`. Output: the
//! activation, in-flight and stage-memory figures checked against Korthikanti et al.'s formulas
//! and the built schedules.

use venus_base::base::{Attention, Bytes, CrossEntropy, PipelineRuntime, Recompute, ScheduleKind};
use venus_plan::plan::derive::split_layers;
use venus_plan::plan::memory::*;
use venus_plan::plan::spec::ModelSpec as Model;
use venus_plan::plan::Recipe;

use crate::testutil::model;

fn shape(seq: u64, b: u64, tp: u64, sp: bool, recompute: Recompute) -> ActivationShape {
    ActivationShape {
        seq,
        micro_batch: b,
        tp,
        etp: tp,
        sp,
        recompute,
        // Korthikanti et al.'s formulas are for the unfused attention of their time.
        attention: Attention::Unfused,
        moe_load: venus_base::base::Ratio::ONE,
        modules: venus_base::base::RecomputeModules::CORE_ATTN,
        quantized_inputs: false,
        frozen_base: None,
    }
}

/// A GPT-style layer: MHA, GeLU, ffn = 4h, so Korthikanti's constants hold exactly.
fn gpt(h: u64, heads: u64, layers: u64, vocab: u64, seq: u64) -> Model {
    super::to_plan::model(&model(h, heads, layers, vocab, seq))
}

#[test]
fn activations_match_korthikanti_without_parallelism() {
    // s·b·h·(34 + 5·a·s/h) with s = 2048, b = 1, h = 1024, a = 16: 5as/h = 160.
    let m = gpt(1024, 16, 2, 1000, 2048);
    let sbh = 2048u128 * 1024;
    assert_eq!(
        layer_activation_bytes(&m, &shape(2048, 1, 1, false, Recompute::None)),
        sbh * (34 + 160)
    );
}

#[test]
fn activations_match_korthikanti_for_each_tp_sp_recompute_variant() {
    let m = gpt(1024, 16, 2, 1000, 2048);
    let sbh = 2048u128 * 1024;
    let t = 8u128;
    // TP baseline: sbh·(10 + 24/t + 5as/(ht)) = sbh·(10 + 3 + 20).
    assert_eq!(
        layer_activation_bytes(&m, &shape(2048, 1, 8, false, Recompute::None)),
        sbh * (10 + 24 / t + 160 / t)
    );
    // TP + SP: sbh·(34/t + 5as/(ht)): 34/8 is not whole, compare sbh·34/8 exactly.
    assert_eq!(
        layer_activation_bytes(&m, &shape(2048, 1, 8, true, Recompute::None)),
        sbh * 34 / t + sbh * 160 / t
    );
    // TP + selective: sbh·(10 + 24/t).
    assert_eq!(
        layer_activation_bytes(&m, &shape(2048, 1, 8, false, Recompute::Selective)),
        sbh * 13
    );
    // TP + SP + selective: sbh·34/t.
    assert_eq!(
        layer_activation_bytes(&m, &shape(2048, 1, 8, true, Recompute::Selective)),
        sbh * 34 / t
    );
    // Full recompute: the layer input, 2·sbh (sequence-sharded with sp).
    assert_eq!(
        layer_activation_bytes(&m, &shape(2048, 1, 8, false, Recompute::Full)),
        2 * sbh
    );
    assert_eq!(
        layer_activation_bytes(&m, &shape(2048, 1, 8, true, Recompute::Full)),
        2 * sbh / t
    );
}

#[test]
fn swiglu_and_gqa_change_the_tp_split_terms() {
    // h 64, 4 heads of 16, 2 kv groups, ffn 128, swiglu: tp part = 4q + 4kv + 6·ffn.
    let mut m = gpt(64, 4, 1, 128, 16);
    m.kv_groups = Some(2);
    m.ffn = Some(128);
    m.swiglu = Some(true);
    let tokens = 16u128 * 2;
    let expect = tokens * (10 * 64 + 4 * 64 + 4 * 32 + 6 * 128) + 5 * 4 * 16 * tokens;
    assert_eq!(
        layer_activation_bytes(&m, &shape(16, 2, 1, false, Recompute::None)),
        expect
    );
}

#[test]
fn flash_attention_keeps_the_log_sum_exp_instead_of_the_scores() {
    // GPT layer h 64, 4 heads, s 16, b 2, tp 1, no sp: the unfused variant stores
    // 5·a·s²·b = 5·4·16·32 bytes of scores, flash 4·a·s·b = 4·4·32 bytes of fp32 stats.
    let m = gpt(64, 4, 2, 1000, 16);
    let unfused = layer_activation_bytes(&m, &shape(16, 2, 1, false, Recompute::None));
    let flash = layer_activation_bytes(
        &m,
        &ActivationShape {
            attention: Attention::Flash,
            ..shape(16, 2, 1, false, Recompute::None)
        },
    );
    assert_eq!(unfused - flash, 5 * 4 * 16 * 32 - 4 * 4 * 32);
    // With selective recompute the unfused scores are recomputed; flash still keeps its stats.
    let sel_unfused = layer_activation_bytes(&m, &shape(16, 2, 1, false, Recompute::Selective));
    let sel_flash = layer_activation_bytes(
        &m,
        &ActivationShape {
            attention: Attention::Flash,
            ..shape(16, 2, 1, false, Recompute::Selective)
        },
    );
    assert_eq!(sel_flash - sel_unfused, 4 * 4 * 32);
}

fn plan(pp: u64, vpp: u64, m: u64, schedule: Option<ScheduleKind>, layers: u64) -> MemoryPlan {
    MemoryPlan {
        tp: 1,
        pp,
        cp: 1,
        ep: 1,
        etp: 1,
        dp: 1,
        expert_dp: pp,
        vpp,
        microbatches: m,
        micro_batch: 1,
        sp: false,
        recompute: Recompute::None,
        attention: Attention::Unfused,
        cross_entropy: CrossEntropy::VocabParallel,
        pipeline_runtime: PipelineRuntime::Megatron,
        distributed_optimizer: false,
        schedule,
        overlap_ep_comm: false,
        split: split_layers(layers, pp, vpp, None, None).unwrap(),
        recipe: Recipe::for_precision(venus_base::base::Precision::Bf16),
        moe_load: venus_base::base::Ratio::ONE,
        fsdp: None,
        fsdp_keep_unsharded: false,
        lora: None,
        recompute_detail: venus_plan::plan::memory::RecomputeDetail::default(),
        // Llama-2-7B's figures (the ZBV golden files' model).
        v_memory: venus_plan::schedule::VMemory::of_model(4096, 32, 4096),
        graphs_offload: Default::default(),
        optimizer_offload: venus_base::base::Ratio::ZERO,
    }
}

#[test]
fn in_flight_counts_follow_each_schedule() {
    let p = plan(4, 1, 8, Some(ScheduleKind::OneFOneB), 8);
    assert_eq!([0, 1, 2, 3].map(|r| in_flight(&p, r).0), [4, 3, 2, 1]);
    let p = plan(4, 1, 2, Some(ScheduleKind::OneFOneB), 8);
    assert_eq!([0, 1, 2, 3].map(|r| in_flight(&p, r).0), [2, 2, 2, 1]);
    let p = plan(4, 1, 8, Some(ScheduleKind::Gpipe), 8);
    assert_eq!(in_flight(&p, 3).0, 8);
    let p = plan(1, 1, 8, None, 8);
    assert_eq!(in_flight(&p, 0), (1, 1, 1));
    // Interleaved pp 2, V 2, m 4 (reference worked example): rank 0 W = 4, rank 1 W = 2.
    // Table (mb, chunk): (0,0) (1,0) (0,1) (1,1) (2,0) ...; first 5 entries hold 3 of chunk 0.
    let p = plan(2, 2, 4, Some(ScheduleKind::Interleaved), 8);
    assert_eq!(in_flight(&p, 0), (5, 3, 2));
    assert_eq!(in_flight(&p, 1), (3, 2, 1));
    // pp 8, V 2, m 16: rank 0 holds 2·7 + 8 + 1 = 23 chunk-microbatches of L/16 layers,
    // Korthikanti's interleaving factor 1 + (p − 1)/(p·v) = 23/16 of the 1F1B stage 0.
    let p = plan(8, 2, 16, Some(ScheduleKind::Interleaved), 16);
    assert_eq!(in_flight(&p, 0).0, 23);
}

#[test]
fn in_flight_counts_are_what_the_built_schedule_holds() {
    use venus_plan::schedule::{measure_in_flight, ScheduleIr};
    let plans = [
        plan(4, 1, 8, Some(ScheduleKind::OneFOneB), 8),
        plan(4, 1, 2, Some(ScheduleKind::OneFOneB), 8),
        plan(4, 1, 3, Some(ScheduleKind::Gpipe), 8),
        plan(2, 2, 4, Some(ScheduleKind::Interleaved), 8),
        plan(4, 2, 12, Some(ScheduleKind::Interleaved), 8),
        plan(8, 2, 16, Some(ScheduleKind::Interleaved), 16),
        plan(1, 1, 5, None, 8),
    ];
    for p in &plans {
        let shape = p.pipeline_shape();
        let ir = ScheduleIr::build(shape).unwrap();
        for r in 0..p.pp {
            let f = measure_in_flight(ir.rank(r as u32), shape.vpp);
            assert_eq!(
                in_flight(p, r),
                (f.total, f.first_chunk, f.last_chunk),
                "{p:?} stage {r}"
            );
        }
    }
}

#[test]
fn weights_gradients_and_optimizer_use_18_or_6_plus_12_over_dp_bytes() {
    // h 64, heads 4, ffn 256, vocab 128 (already a multiple of 128), 2 layers, pp 1.
    // layer: attention 4h² = 16384, mlp 2·64·256 = 32768, norms 256 -> 49408
    // embedding 128·64 = 8192 (tied, pp 1: no output copy); final norm 128.
    let m = gpt(64, 4, 2, 128, 16);
    let mut p = plan(1, 1, 1, None, 2);
    let s = one_stage(&m, &p, 0);
    let params = 2 * 49408 + 8192 + 128;
    assert_eq!(s.params, params);
    assert_eq!(s.weights, Bytes(2 * params));
    assert_eq!(s.gradients, Bytes(4 * params));
    assert_eq!(s.optimizer, Bytes(12 * params));
    p.distributed_optimizer = true;
    p.dp = 4;
    let s = one_stage(&m, &p, 0);
    assert_eq!(s.optimizer, Bytes(3 * params));
    assert_eq!(s.weights.0 + s.gradients.0 + s.optimizer.0, 9 * params);
}

#[test]
fn optimizer_offload_moves_its_share_of_the_sharded_optimizer_state_to_the_host() {
    // The model above: 107136 parameters, 12 B of optimizer state each, sharded over dp 4:
    // 3 B a parameter on each GPU, of which `optimizer_offload 25%` keeps 0.75 B on the host.
    let m = gpt(64, 4, 2, 128, 16);
    let params = 2 * 49408 + 8192 + 128;
    let mut p = plan(1, 1, 1, None, 2);
    p.distributed_optimizer = true;
    p.dp = 4;
    let whole = one_stage(&m, &p, 0);
    assert_eq!(whole.optimizer, Bytes(3 * params));
    assert_eq!(whole.optimizer_host, Bytes(0));
    p.optimizer_offload = venus_base::base::Ratio(0.25);
    let s = one_stage(&m, &p, 0);
    assert_eq!(s.optimizer_host, Bytes(3 * params / 4));
    assert_eq!(s.optimizer, Bytes(3 * params - 3 * params / 4));
    // Nothing else moves: the peak drops by exactly the host share.
    assert_eq!((s.weights, s.gradients), (whole.weights, whole.gradients));
    assert_eq!(whole.peak.0 - s.peak.0, 3 * params / 4);
    // Each step moves the offloaded parameters' fp32 gradients down and fp32 master weights
    // back up: 8 B for each of the 3·params/4 / 12 parameters on the host.
    let traffic = offload_traffic(
        &Recipe::for_precision(venus_base::base::Precision::Bf16),
        s.optimizer_host,
    );
    assert_eq!(traffic, Bytes(params / 16 * 8));
    p.optimizer_offload = venus_base::base::Ratio::ONE;
    let all = one_stage(&m, &p, 0);
    assert_eq!(
        (all.optimizer, all.optimizer_host),
        (Bytes(0), Bytes(3 * params))
    );
}

#[test]
fn last_stage_keeps_a_copy_of_tied_embeddings_when_pp_above_1() {
    let m = gpt(64, 4, 2, 128, 16);
    let p = plan(2, 1, 2, Some(ScheduleKind::OneFOneB), 2);
    let first = one_stage(&m, &p, 0);
    let last = one_stage(&m, &p, 1);
    assert_eq!(first.params, 49408 + 8192);
    assert_eq!(last.params, 49408 + 8192 + 128);
}

#[test]
fn stage_activations_are_in_flight_times_layers_plus_embedding_and_logits() {
    let m = gpt(64, 4, 4, 128, 16);
    let p = plan(2, 1, 4, Some(ScheduleKind::OneFOneB), 4);
    let sh = shape(16, 1, 1, false, Recompute::None);
    let layer = layer_activation_bytes(&m, &sh);
    let emb = embedding_activation_bytes(&m, &sh);
    let out = output_activation_bytes(&m, &sh, 128, CrossEntropy::VocabParallel);
    assert_eq!(emb, 8 * 16 + 16 * 64);
    assert_eq!(out, 4 * 16 * 64 + 4 * 16 * 128);
    assert_eq!(
        one_stage(&m, &p, 0).activations,
        Bytes((2 * 2 * layer + 2 * emb) as u64)
    );
    assert_eq!(
        one_stage(&m, &p, 1).activations,
        Bytes((2 * layer + out) as u64)
    );
}

/// GPT-3 175B (96 layers, h 12288, 96 heads, s 2048, V 51200) at tp 8, pp 8, b 1, the
/// configuration of Korthikanti et al. Table 3. Stage 0 holds pp microbatches of L/pp
/// layers: the paper's totals are (s·b·h·L/t)·34 = 10.3 GB with SP + selective recompute and
/// s·b·h·L·(10 + 24/t + 5as/(ht)) = 55.6 GB with TP alone (which is why the paper needs
/// recompute on 80 GB A100s). Weights + optimizer: 12 of the 96 layers (12·h² + 4h each) and
/// the vocabulary-parallel embedding, / tp 8 = 2.80B params per GPU, × 18 B = 50.3 GB.
#[test]
fn gpt3_175b_stage_0_matches_korthikanti() {
    let m = gpt(12288, 96, 96, 51200, 2048);
    let mut p = plan(8, 1, 64, Some(ScheduleKind::OneFOneB), 96);
    p.tp = 8;
    p.etp = 8;
    p.dp = 1;
    p.sp = true;
    p.recompute = Recompute::Selective;
    let sbh = 2048u128 * 12288;
    let s = one_stage(&m, &p, 0);
    let layers_part = 34 * sbh * 96 / 8;
    let emb = 8 * (8 * 2048 + sbh / 8);
    assert_eq!(s.activations, Bytes((layers_part + emb) as u64));
    assert!(
        (s.activations.0 as f64 / 1e9 - 10.3).abs() < 0.1,
        "{}",
        s.activations.0
    );
    p.sp = false;
    p.recompute = Recompute::None;
    let s = one_stage(&m, &p, 0);
    // 23·sbh per layer (10 + 24/8 + 5·96·2048/(12288·8)), × 96, plus the embedding.
    let emb = 8 * (8 * 2048 + sbh);
    assert_eq!(s.activations, Bytes((23 * sbh * 96 + emb) as u64));
    assert!(
        (s.activations.0 as f64 / 1e9 - 55.8).abs() < 0.1,
        "{}",
        s.activations.0
    );
    let h = 12288u64;
    // LayerNorms are replicated, not split by tp.
    assert_eq!(s.params, (12 * 12 * h * h + 51200 * h) / 8 + 12 * 4 * h);
    assert!((s.params as f64 / 1e9 - 2.80).abs() < 0.01, "{}", s.params);
    assert!(((s.weights.0 + s.gradients.0 + s.optimizer.0) as f64 / 1e9 - 50.3).abs() < 0.1);
}

#[test]
fn full_recompute_adds_one_layer_working_set() {
    let m = gpt(64, 4, 4, 128, 16);
    let mut p = plan(1, 1, 1, None, 4);
    p.recompute = Recompute::Full;
    let full = shape(16, 1, 1, false, Recompute::Full);
    let none = shape(16, 1, 1, false, Recompute::None);
    let expect = 4 * layer_activation_bytes(&m, &full)
        + layer_activation_bytes(&m, &none)
        + embedding_activation_bytes(&m, &full)
        + output_activation_bytes(&m, &full, 128, CrossEntropy::VocabParallel);
    assert_eq!(one_stage(&m, &p, 0).activations, Bytes(expect as u64));
}

#[test]
fn gib_formats_one_decimal() {
    assert_eq!(gib(Bytes(80 * Bytes::GIB)), "80 GiB");
    assert_eq!(gib(Bytes(Bytes::GIB * 934 / 10)), "93.4 GiB");
}

/// A small MoE model with MLA, one dense first layer and one MTP depth.
fn mla_moe() -> Model {
    use crate::testutil::set;
    let mut m = model(64, 4, 4, 128, 16);
    set(&mut m.ffn, 256);
    set(&mut m.experts, 4);
    set(&mut m.topk, 2);
    set(&mut m.moe_ffn, 32);
    set(&mut m.first_k_dense, 1);
    set(&mut m.mtp_layers, 1);
    set(&mut m.q_lora_rank, 32);
    set(&mut m.kv_lora_rank, 16);
    set(&mut m.qk_nope_head_dim, 16);
    set(&mut m.qk_rope_head_dim, 8);
    set(&mut m.v_head_dim, 16);
    super::to_plan::model(&m)
}

#[test]
fn mla_activations_keep_per_head_q_k_v_and_the_latents() {
    // s 16, b 1, tp 1, flash, no recompute, per token: replicated 10h = 640; Q and K of
    // 4 heads × 24, 2 bytes each (4·4·24 = 384); V and the projection input of 4 × 16
    // (4·4·16 = 256); the dense GeLU MLP 2·2·256 = 1024; the latents and their norms
    // 4·(32 + 16 + 8) = 224; flash's log-sum-exp 4·4 = 16. × 16 tokens.
    let m = mla_moe();
    let a = ActivationShape {
        attention: Attention::Flash,
        ..shape(16, 1, 1, false, Recompute::None)
    };
    assert_eq!(
        layer_activation_bytes_of(&m, &a, false),
        16 * (640 + 384 + 256 + 1024 + 224 + 16)
    );
}

#[test]
fn dense_first_layers_and_mtp_change_the_stages_parameters() {
    // pp 2 over 4 layers: stage 0 = layer 0 (dense) + layer 1 (MoE), stage 1 = 2 MoE layers
    // and the MTP depth (one more MoE layer): 1 × and 3 × the 4 experts of 2·64·32 each.
    let m = mla_moe();
    let p = plan(2, 1, 2, Some(ScheduleKind::OneFOneB), 4);
    let experts = 4 * 2 * 64 * 32;
    assert_eq!(one_stage(&m, &p, 0).expert_params, experts);
    assert_eq!(one_stage(&m, &p, 1).expert_params, 3 * experts);
}

/// Llama 2 70B (h 8192, 80 layers, 64 heads, 8 KV groups, ffn 28672, SwiGLU, untied, vocab
/// 32000) as the typed builders make it.
fn llama2_70b() -> Model {
    use crate::testutil::set;
    let mut m = model(8192, 64, 80, 32000, 4096);
    set(&mut m.ffn, 28672);
    set(&mut m.kv_groups, 8);
    set(&mut m.swiglu, true);
    set(&mut m.untied_embeddings, true);
    super::to_plan::model(&m)
}

/// MLPerf's Llama 2 70B LoRA at tp 4: every GPU keeps a quarter of the frozen bf16 base
/// (about 140e9 / 4 bytes) but no fp32 gradient buffer and no optimizer state for it; the
/// rank-16 adapters (2 195 456 per layer, split by tp) are all that train.
#[test]
fn lora_keeps_the_frozen_base_in_bf16_without_gradients_or_optimizer_state() {
    let m = llama2_70b();
    let mut p = plan(1, 1, 1, None, 80);
    p.tp = 4;
    p.etp = 4;
    p.dp = 2;
    p.expert_dp = 2;
    p.lora = Some(LoraPlan {
        rank: 16,
        targets: venus_base::base::LoraTargets::ALL,
    });
    let s = one_stage(&m, &p, 0);
    let adapters = 2_195_456u64 * 80 / 4;
    assert_eq!(s.trainable_params, adapters);
    assert_eq!(s.weights, Bytes(2 * (s.params + adapters)));
    assert!(
        (s.weights.0 as f64 / (140e9 / 4.0) - 1.0).abs() < 0.02,
        "{}",
        s.weights.0
    );
    assert_eq!(s.gradients, Bytes(4 * adapters));
    assert_eq!(s.optimizer, Bytes(12 * adapters));
    // The same plan pretraining keeps 18 bytes of every base parameter.
    p.lora = None;
    let full = one_stage(&m, &p, 0);
    assert_eq!(full.gradients, Bytes(4 * full.params));
    assert_eq!(full.optimizer, Bytes(12 * full.params));
}

/// Megatron-FSDP's strategies, on the 2-layer toy of the 18-byte test over dp 4: `optim`
/// shards the 12 optimizer bytes (as the distributed optimizer), `optim_grads` the 4 gradient
/// bytes too plus two layers being reduce-scattered, `optim_grads_params` the 2 weight bytes
/// too plus two layers gathered (the double buffer).
#[test]
fn fsdp_strategies_shard_optimizer_then_gradients_then_parameters() {
    use venus_base::base::FsdpStrategy::*;
    let m = gpt(64, 4, 2, 128, 16);
    let mut p = plan(1, 1, 1, None, 2);
    p.dp = 4;
    p.expert_dp = 4;
    let params = 2 * 49408 + 8192 + 128;
    let layer = 49408;
    let at = |p: &MemoryPlan| {
        let s = one_stage(&m, p, 0);
        (s.weights.0, s.gradients.0, s.optimizer.0)
    };
    p.fsdp = Some(NoShard);
    assert_eq!(at(&p), (2 * params, 4 * params, 12 * params));
    p.fsdp = Some(Optim);
    assert_eq!(at(&p), (2 * params, 4 * params, 3 * params));
    p.fsdp = Some(OptimGrads);
    assert_eq!(at(&p), (2 * params, params + 2 * 4 * layer, 3 * params));
    p.fsdp = Some(OptimGradsParams);
    assert_eq!(
        at(&p),
        (
            params.div_ceil(2) + 2 * 2 * layer,
            params + 2 * 4 * layer,
            3 * params
        )
    );
}

/// `fsdp_keep_unsharded` (FSDP2 under a pipeline): the same toy over dp 4 keeps every weight
/// gathered (2 bytes each, no double buffer on top) and every gradient unsharded (4 bytes, or 2
/// with `grad_dtype bf16`), while the optimizer state stays sharded; without a strategy that
/// shards parameters the flag changes nothing.
#[test]
fn fsdp_kept_unsharded_holds_whole_weights_and_gradients_beside_the_sharded_optimizer() {
    use venus_base::base::FsdpStrategy::*;
    let m = gpt(64, 4, 2, 128, 16);
    let mut p = plan(1, 1, 1, None, 2);
    p.dp = 4;
    p.expert_dp = 4;
    p.fsdp_keep_unsharded = true;
    let params = 2 * 49408 + 8192 + 128;
    let at = |p: &MemoryPlan| {
        let s = one_stage(&m, p, 0);
        (s.weights.0, s.gradients.0, s.optimizer.0)
    };
    p.fsdp = Some(OptimGradsParams);
    assert_eq!(at(&p), (2 * params, 4 * params, 3 * params));
    p.recipe = p
        .recipe
        .with_training_dtypes(Some(venus_base::base::Dtype::Bf16), None, None, None);
    assert_eq!(at(&p), (2 * params, 2 * params, 3 * params));
    p.recipe = Recipe::for_precision(venus_base::base::Precision::Bf16);
    p.fsdp = Some(OptimGrads);
    assert_eq!(at(&p), (2 * params, params + 2 * 4 * 49408, 3 * params));
}

/// `grad_dtype bf16` halves the gradient buffer; bf16 moments with the distributed optimizer
/// make 4 + 2 + 2 optimizer bytes per parameter, sharded over dp.
#[test]
fn gradient_and_optimizer_dtypes_set_the_bytes_per_parameter() {
    use venus_base::base::Dtype;
    let m = gpt(64, 4, 2, 128, 16);
    let mut p = plan(1, 1, 1, None, 2);
    let params = 2 * 49408 + 8192 + 128;
    p.recipe = p.recipe.with_training_dtypes(
        Some(Dtype::Bf16),
        None,
        Some(Dtype::Bf16),
        Some(Dtype::Bf16),
    );
    p.distributed_optimizer = true;
    p.dp = 2;
    let s = one_stage(&m, &p, 0);
    assert_eq!(s.gradients, Bytes(2 * params));
    assert_eq!(s.optimizer, Bytes(8 * params / 2));
}

#[test]
fn zero_bubble_activations_keep_1f1bs_peak_for_h1_and_about_twice_for_h2() {
    // pp 4, 8 microbatches, 8 layers: a microbatch is held from its F until its W.
    // ZB-H1 holds pp = 4 on every stage, 1F1B's stage 0; ZB-H2 holds 2·pp − 1 = 7.
    let m = gpt(64, 4, 8, 128, 16);
    let at = |k, stage| one_stage(&m, &plan(4, 1, 8, Some(k), 8), stage).activations;
    let one = [0, 1, 2, 3].map(|s| at(ScheduleKind::OneFOneB, s));
    let h1 = [0, 1, 2, 3].map(|s| at(ScheduleKind::ZbH1, s));
    let h2 = [0, 1, 2, 3].map(|s| at(ScheduleKind::ZbH2, s));
    let sh = shape(16, 1, 1, false, Recompute::None);
    let layer = layer_activation_bytes(&m, &sh);
    let emb = embedding_activation_bytes(&m, &sh);
    let out = output_activation_bytes(&m, &sh, 128, CrossEntropy::VocabParallel);
    // The first stage is 1F1B's peak exactly; the later stages rise to it (the last stage
    // also keeps pp microbatches of its output layer, whose W reads them, instead of one).
    assert_eq!(h1[0], one[0]);
    assert_eq!(one[3], Bytes((2 * layer + out) as u64));
    assert_eq!(h1[3], Bytes((4 * (2 * layer + out)) as u64));
    // Stage 1: 2 layers × in-flight microbatches.
    assert_eq!(h1[1], Bytes((4 * 2 * layer) as u64));
    assert_eq!(h2[1], Bytes((7 * 2 * layer) as u64));
    assert_eq!(h2[0], Bytes((7 * (2 * layer + emb)) as u64));
    let plans = [ScheduleKind::ZbH1, ScheduleKind::ZbH2].map(|k| plan(4, 1, 8, Some(k), 8));
    assert_eq!([0, 1, 2, 3].map(|r| in_flight(&plans[0], r).0), [4; 4]);
    assert_eq!([0, 1, 2, 3].map(|r| in_flight(&plans[1], r).0), [7; 4]);
}

#[test]
fn dualpipe_holds_two_parameter_copies_and_dualpipev_one() {
    // pp 4, 8 layers, 8 microbatches: DualPipe's rank r holds stage r and stage 3 − r, so its
    // weights, gradients and optimizer state are those of the two 1F1B stages together
    // (rank 0: the first stage's embedding and the last stage's output layer); DualPipeV's
    // rank holds its two chunks of one copy, 1F1B's layer count per rank.
    let m = gpt(64, 4, 8, 1000, 16);
    let one = stage_memory(&m, &plan(4, 1, 8, Some(ScheduleKind::OneFOneB), 8));
    let dual = stage_memory(&m, &plan(4, 1, 8, Some(ScheduleKind::DualPipe), 8));
    let v = stage_memory(&m, &plan(4, 2, 8, Some(ScheduleKind::DualPipeV), 8));
    for r in 0..4 {
        let mirror = 3 - r;
        let sum = |f: fn(&StageMemory) -> u64| f(&one[r]) + f(&one[mirror]);
        assert_eq!(dual[r].params, sum(|s| s.params), "rank {r}");
        assert_eq!(dual[r].weights.0, sum(|s| s.weights.0), "rank {r}");
        assert_eq!(dual[r].gradients.0, sum(|s| s.gradients.0), "rank {r}");
        assert_eq!(dual[r].optimizer.0, sum(|s| s.optimizer.0), "rank {r}");
        assert_eq!(dual[r].layers, 4);
        assert_eq!(v[r].layers, 2);
        // The in-flight count is the built schedule's peak.
        let shape = plan(4, 1, 8, Some(ScheduleKind::DualPipe), 8).pipeline_shape();
        let ir = venus_plan::schedule::ScheduleIr::build(shape).unwrap();
        let f = venus_plan::schedule::measure_in_flight(ir.rank(r as u32), 2);
        assert_eq!(dual[r].in_flight, f.total, "rank {r}");
    }
    // DualPipeV's rank 0 holds the embedding and the output layer, its last rank neither.
    assert!(v[0].params > v[3].params);
    assert!(dual[0].peak.0 > one[0].peak.0);
}

/// Selective recompute's modules drop their saved tensors and keep their inputs, on
/// Korthikanti's GPT layer (MHA, GeLU, ffn = 4h; s 2048, b 1, h 1024, a 16, tp 1): `core_attn`
/// keeps 34·s·b·h (no 5·a·s²·b scores), `mlp` drops the 16·s·b·h of the MLP inner
/// activations, `layernorm` the 4·s·b·h of the two norms' outputs.
#[test]
fn selective_recompute_modules_drop_their_own_saved_tensors() {
    use venus_base::base::RecomputeModules;
    let m = gpt(1024, 16, 2, 1000, 2048);
    let sbh = 2048u128 * 1024;
    let with = |words: &[&str]| ActivationShape {
        modules: RecomputeModules::from_words(words.iter().copied()),
        ..shape(2048, 1, 1, false, Recompute::Selective)
    };
    assert_eq!(layer_activation_bytes(&m, &with(&["core_attn"])), 34 * sbh);
    assert_eq!(
        layer_activation_bytes(&m, &with(&["core_attn", "mlp"])),
        18 * sbh
    );
    assert_eq!(
        layer_activation_bytes(&m, &with(&["core_attn", "mlp", "layernorm"])),
        14 * sbh
    );
    // Without `core_attn` the unfused scores stay: 34 + 5·a·s/h − 16 for the MLP.
    assert_eq!(
        layer_activation_bytes(&m, &with(&["mlp"])),
        (34 + 160 - 16) * sbh
    );
}

/// On the MLA MoE test model (s 16, b 1, tp 1): `moe` drops the routed experts' 2 copies per
/// token of the dispatched input (2·64) and inner activations (2·2·32), `moe_act` only the
/// activation output (2·32) of each copy, `mla_up_proj` Q, K and V (384 + 128 of the 640 bytes
/// per token of Q, K, V and the projection input).
#[test]
fn moe_and_mla_recompute_modules_drop_experts_activation_outputs_and_up_projections() {
    use venus_base::base::RecomputeModules;
    let m = mla_moe();
    let with = |words: &[&str]| ActivationShape {
        attention: Attention::Flash,
        modules: RecomputeModules::from_words(words.iter().copied()),
        ..shape(16, 1, 1, false, Recompute::Selective)
    };
    let base = layer_activation_bytes_of(&m, &with(&["core_attn"]), true);
    let routed = 16 * 2 * (2 * 64 + 2 * 2 * 32);
    assert_eq!(
        base - layer_activation_bytes_of(&m, &with(&["core_attn", "moe"]), true),
        routed
    );
    assert_eq!(
        base - layer_activation_bytes_of(&m, &with(&["core_attn", "moe_act"]), true),
        16 * 2 * (2 * 32)
    );
    assert_eq!(
        base - layer_activation_bytes_of(&m, &with(&["core_attn", "mla_up_proj"]), true),
        16 * (384 + 128)
    );
}

/// Megatron's `uniform` keeps one input per group of `recompute_num_layers` and reruns a group
/// at a time; `block` checkpoints the first `recompute_num_layers` layers of each chunk and
/// keeps the rest whole (megatron/core/recompute.py:157-181).
#[test]
fn full_recompute_counts_follow_uniform_groups_and_block_layers() {
    use venus_base::base::RecomputeMethod;
    let split = split_layers(20, 2, 1, None, None).unwrap();
    let detail = |method, num_layers| RecomputeDetail {
        method,
        num_layers,
        ..RecomputeDetail::default()
    };
    let c = full_recompute_counts(&split, 0, detail(RecomputeMethod::Uniform, 4));
    assert_eq!((c.inputs, c.whole, c.working), (3, 0, 4));
    let c = full_recompute_counts(&split, 0, detail(RecomputeMethod::Block, 3));
    assert_eq!((c.inputs, c.whole, c.working), (3, 7, 1));
    let c = full_recompute_counts(&split, 1, detail(RecomputeMethod::Block, 30));
    assert_eq!((c.inputs, c.whole, c.working), (10, 0, 1));
    let c = full_recompute_counts(&split, 1, RecomputeDetail::default());
    assert_eq!((c.inputs, c.whole, c.working), (10, 0, 1));
}

/// `block` with half a stage's layers keeps those layers' whole activations: stage 0 of a
/// 1F1B pp 2 plan (2 microbatches in flight) holds 2 × (5 inputs + 5 whole layers) + one
/// working layer.
#[test]
fn block_recompute_keeps_the_activations_of_the_layers_it_does_not_recompute() {
    use venus_base::base::RecomputeMethod;
    let m = gpt(1024, 16, 20, 1000, 2048);
    let mut p = plan(2, 1, 4, Some(ScheduleKind::OneFOneB), 20);
    p.recompute = Recompute::Full;
    let uniform = one_stage(&m, &p, 0).activations.0 as u128;
    p.recompute_detail = RecomputeDetail {
        method: RecomputeMethod::Block,
        num_layers: 5,
        ..RecomputeDetail::default()
    };
    let block = one_stage(&m, &p, 0).activations.0 as u128;
    let input = layer_activation_bytes(&m, &shape(2048, 1, 1, false, Recompute::Full));
    let whole = layer_activation_bytes(&m, &shape(2048, 1, 1, false, Recompute::None));
    // uniform 1: 2 × 10 inputs + 1 working layer; block 5: 2 × (5 inputs + 5 whole) + 1.
    assert_eq!(block - uniform, 2 * 5 * (whole - input));
}

#[test]
fn zbv_holds_two_chunk_microbatches_per_stage_microbatch_of_1f1b() {
    // ZBV on pp 4 with 16 microbatches: every rank peaks at 8 chunk-microbatches (2·pp, the
    // reference scheduler's memory limit, zbv.py:22), which at half a stage's layers each is
    // the 4 stage-microbatches 1F1B holds on its first stage; rank 0 holds both ends of the
    // model (the embedding and the output layer, virtual stages 0 and 2·pp − 1).
    let p = plan(4, 2, 16, Some(ScheduleKind::Zbv), 16);
    assert_eq!([0, 1, 2, 3].map(|r| in_flight(&p, r).0), [8, 8, 8, 8]);
    let one = plan(4, 1, 16, Some(ScheduleKind::OneFOneB), 16);
    assert_eq!(in_flight(&one, 0).0, 4);
}

/// FP8 (or FP4) GEMMs keep their inputs quantized, 1 byte an element: on the GPT layer (h 1024,
/// 16 heads, ffn 4h GeLU, s 2048, b 1, tp 1) the QKV and MLP inputs save h bytes each per
/// token, the second MLP linear's input (the GeLU output, 4h) 4h; unfused attention's
/// projection input is kept only by the projection (h saved), while flash attention keeps its
/// own bf16 output and the projection adds its 1-byte copy (h more).
#[test]
fn quantized_gemms_keep_their_inputs_in_one_byte() {
    let m = gpt(1024, 16, 2, 1000, 2048);
    let sbh = 2048u128 * 1024;
    let quantized = |a: ActivationShape| ActivationShape {
        quantized_inputs: true,
        ..a
    };
    let unfused = shape(2048, 1, 1, false, Recompute::None);
    assert_eq!(
        layer_activation_bytes(&m, &quantized(unfused)),
        sbh * (34 - 2 - 1 - 4 + 160)
    );
    let flash = ActivationShape {
        attention: Attention::Flash,
        ..unfused
    };
    let lse = 4 * 16 * 2048;
    assert_eq!(layer_activation_bytes(&m, &flash), sbh * 34 + lse);
    assert_eq!(
        layer_activation_bytes(&m, &quantized(flash)),
        sbh * (34 - 2 - 4 + 1) + lse
    );
    // Full recompute keeps the bf16 layer input alone: quantization changes nothing.
    let full = shape(2048, 1, 1, false, Recompute::Full);
    assert_eq!(
        layer_activation_bytes(&m, &quantized(full)),
        layer_activation_bytes(&m, &full)
    );
}

/// A quantized MoE layer of the MLA test model (s 16, b 1, flash, no recompute): each of the 2
/// routed copies per token keeps its dispatched input (64 elements) and its activation output
/// (32) in 1 byte; MLA's two down projections each quantize the shared norm output and the
/// router reads the MLP input in bf16, so the replicated tensors stay; the projection adds its
/// 1-byte copy of the 4 × 16 attention output beside flash attention's own.
#[test]
fn quantized_moe_layers_keep_dispatched_tokens_and_expert_activations_in_one_byte() {
    let m = mla_moe();
    let bf16 = ActivationShape {
        attention: Attention::Flash,
        ..shape(16, 1, 1, false, Recompute::None)
    };
    let fp8 = ActivationShape {
        quantized_inputs: true,
        ..bf16
    };
    let saved = 16 * 2 * (64 + 32) - 16 * 4 * 16;
    assert_eq!(
        layer_activation_bytes_of(&m, &bf16, true) - layer_activation_bytes_of(&m, &fp8, true),
        saved
    );
}

/// A frozen LoRA base computes no weight gradients, so its linear layers keep no inputs; an
/// adapter keeps its module's input in bf16. On the GPT layer (h 1024, 16 heads, ffn 4h GeLU,
/// s 2048, b 1, tp 1, unfused) with adapters on the QKV and output projections: the MLP input
/// (2h) and the second MLP linear's input (2·4h) go; without adapters the QKV input (2h) and
/// the projection input (2h) go too, unless flash attention keeps that tensor as its output.
/// Quantized GEMMs change nothing then: a frozen layer keeps no quantized copy.
#[test]
fn a_frozen_lora_base_keeps_only_the_inputs_its_adapters_read() {
    use venus_base::base::LoraTargets;
    let m = gpt(1024, 16, 2, 1000, 2048);
    let sbh = 2048u128 * 1024;
    let attention = LoraTargets {
        qkv: true,
        proj: true,
        fc1: false,
        fc2: false,
    };
    let frozen = |targets: LoraTargets, attention: Attention, quantized: bool| ActivationShape {
        frozen_base: Some(targets),
        attention,
        quantized_inputs: quantized,
        ..shape(2048, 1, 1, false, Recompute::None)
    };
    assert_eq!(
        layer_activation_bytes(&m, &frozen(attention, Attention::Unfused, false)),
        sbh * (34 - 2 - 8 + 160)
    );
    assert_eq!(
        layer_activation_bytes(&m, &frozen(attention, Attention::Unfused, true)),
        sbh * (34 - 2 - 8 + 160)
    );
    assert_eq!(
        layer_activation_bytes(&m, &frozen(LoraTargets::NONE, Attention::Unfused, false)),
        sbh * (34 - 2 - 8 - 2 - 2 + 160)
    );
    assert_eq!(
        layer_activation_bytes(&m, &frozen(LoraTargets::NONE, Attention::Flash, true)),
        sbh * (34 - 2 - 8 - 2) + 4 * 16 * 2048
    );
}

/// A hybrid model's routed experts sit only in its `E` layers (Megatron's `MambaStack` builds a
/// MoE layer for `LayerSymbols.MOE` alone): the pattern `MEM*E*` of 6 layers holds 2 MoE layers
/// of 4 experts of 2·64·32 each, not 6.
#[test]
fn a_hybrid_stage_holds_the_experts_of_its_moe_layers_only() {
    use crate::testutil::set;
    use venus_plan::plan::spec::HybridLayer::{Attention as A, Mamba as M, Moe as E};
    let mut t = model(64, 4, 6, 128, 16);
    set(&mut t.experts, 4);
    set(&mut t.topk, 2);
    set(&mut t.moe_ffn, 32);
    let mut m = super::to_plan::model(&t);
    m.hybrid_pattern = Some(vec![M, E, M, A, E, A]);
    let expert = 4 * 2 * 64 * 32;
    let whole = plan(1, 1, 1, None, 6);
    assert_eq!(one_stage(&m, &whole, 0).expert_params, 2 * expert);
    // pp 2: layers 0-2 (`MEM`) and 3-5 (`*E*`), one MoE layer each.
    let halves = plan(2, 1, 2, Some(ScheduleKind::OneFOneB), 6);
    assert_eq!(one_stage(&m, &halves, 0).expert_params, expert);
    assert_eq!(one_stage(&m, &halves, 1).expert_params, expert);
}

/// `recompute op` (torchtitan's per-op checkpointing) on Korthikanti's GPT layer (MHA, GeLU,
/// ffn = 4h; s 2048, b 1, h 1024, a 16), whose matmuls run wq, wk, wv, wo, fc1, fc2: per token
/// the block input (2h), the odd matmuls' outputs wq, wv (2h each) and fc1 (2·4h), the
/// attention output (2h) and its fp32 log-sum-exp (4 bytes a head): 16h + 64 bytes. Under tp 2
/// with sp the input is sequence-split, the column-parallel outputs head-split and the two
/// reduce-scatters' outputs (wo's and fc2's, 2h each) split.
#[test]
fn op_checkpointing_keeps_the_input_every_other_matmul_and_the_attention_output() {
    let m = gpt(1024, 16, 2, 1000, 2048);
    let tokens = 2048u128;
    let op = shape(2048, 1, 1, false, Recompute::Op);
    assert_eq!(
        op_checkpoint_bytes(&m, &op, false),
        tokens * (16 * 1024 + 64)
    );
    assert_eq!(layer_activation_bytes(&m, &op), tokens * (16 * 1024 + 64));
    let split = shape(2048, 1, 2, true, Recompute::Op);
    assert_eq!(
        layer_activation_bytes(&m, &split),
        tokens * (1024 + (6 * 1024 + 64 + 8 * 1024) / 2 + 2048)
    );
    // Less than no recompute (34·s·b·h + the unfused scores), more than full (2·s·b·h).
    let none = layer_activation_bytes(&m, &shape(2048, 1, 1, false, Recompute::None));
    let full = layer_activation_bytes(&m, &shape(2048, 1, 1, false, Recompute::Full));
    let kept = layer_activation_bytes(&m, &op);
    assert!(full < kept && kept < none, "{full} < {kept} < {none}");
    // What its backward re-creates: the two norms' outputs (4h), wk's output (2h), the rotated
    // Q and K (4h), wo's output (2h), the activation (2·4h) and fc2's output (2h): 22h a token.
    assert_eq!(op_recomputed_bytes(&m, &op, false), tokens * 22 * 1024);
}

/// PyTorch's `cross_entropy` on fp32 logits holds three fp32 copies of them at the loss's
/// backward (the saved log-softmax output, its incoming gradient and the gradient it makes);
/// Megatron's vocab-parallel cross entropy one: two more copies of 4·s·b·V/t bytes at tp 1.
#[test]
fn torch_cross_entropy_keeps_three_fp32_copies_of_the_logits() {
    let m = gpt(1024, 16, 2, 1000, 2048);
    let sh = shape(2048, 1, 1, true, Recompute::Full);
    let megatron = output_activation_bytes(&m, &sh, 1024, CrossEntropy::VocabParallel);
    let torch = output_activation_bytes(&m, &sh, 1024, CrossEntropy::Torch);
    assert_eq!(torch - megatron, 2 * 4 * 2048 * 1024);
    assert_eq!(megatron, 4 * 2048 * 1024 + 4 * 2048 * 1024);
}

/// On vocab-sharded logits (tp 2) PyTorch's loss runs DTensor's `loss_parallel`, whose fused
/// backward holds the saved output, a zeroed gradient, their sum and the product: four fp32
/// copies of the tp-sharded logits, three more than Megatron's.
#[test]
fn loss_parallel_cross_entropy_keeps_four_fp32_copies_of_the_sharded_logits() {
    let m = gpt(1024, 16, 2, 1000, 2048);
    let sh = shape(2048, 1, 2, true, Recompute::Full);
    let megatron = output_activation_bytes(&m, &sh, 1024, CrossEntropy::VocabParallel);
    let torch = output_activation_bytes(&m, &sh, 1024, CrossEntropy::Torch);
    assert_eq!(torch - megatron, 3 * 4 * 2048 * 1024 / 2);
    assert_eq!(megatron, 4 * 2048 * 1024 / 2 + 4 * 2048 * 1024 / 2);
}

/// `recompute op` on a Llama block (SwiGLU, GQA; h 64, 4 heads of 16, 2 kv groups, ffn 128,
/// s 16, b 2, tp 1): the odd matmuls in wq, wk, wv, wo, w1, w3, w2 order are wq (2·64), wv
/// (2·32), w1 (2·128) and w2 (2·64); with the input (2·64), the attention output (2·64) and
/// its log-sum-exp (4·4) that is 848 bytes a token. The backward re-creates the norms' outputs
/// (4·64), wk's (2·32), the rotated Q and K (2·96), wo's (2·64), and w3's, the SiLU's and
/// their product (3·2·128): 1,408 bytes a token.
#[test]
fn op_checkpointing_follows_llamas_matmul_order() {
    let mut m = gpt(64, 4, 1, 128, 16);
    m.kv_groups = Some(2);
    m.ffn = Some(128);
    m.swiglu = Some(true);
    let tokens = 16u128 * 2;
    let op = shape(16, 2, 1, false, Recompute::Op);
    assert_eq!(layer_activation_bytes(&m, &op), tokens * 848);
    assert_eq!(op_recomputed_bytes(&m, &op, false), tokens * 1408);
}

/// PyTorch's pipelining runtime on 4 stages, 8 microbatches of one 2,048-token sequence (h 1024,
/// vocab 1,000 padded to 1,024, tp 1): a stage-boundary activation is 2·2048·1024 bytes = B,
/// and so is one microbatch's bf16 logits. Stage 0 holds 8 gradient receive buffers and its
/// output of the 4 microbatches in flight (12·B); stages 1 and 2 both kinds of buffer and 3 or
/// 2 outputs (19·B, 18·B); the last stage 8 activation buffers, and every microbatch's logits
/// and input gradient (24·B). Megatron's runtime keeps none of it.
#[test]
fn torch_pipelining_keeps_receive_buffers_outputs_and_the_last_stages_logits() {
    let m = gpt(1024, 16, 8, 1000, 2048);
    let megatron = plan(4, 1, 8, Some(ScheduleKind::OneFOneB), 8);
    let torch = MemoryPlan {
        pipeline_runtime: PipelineRuntime::Torch,
        ..megatron.clone()
    };
    let boundary = 2 * 2048 * 1024u64;
    let (was, now) = (stage_memory(&m, &megatron), stage_memory(&m, &torch));
    let added: Vec<u64> = was
        .iter()
        .zip(&now)
        .map(|(a, b)| b.activations.0 - a.activations.0)
        .collect();
    assert_eq!(added, [12, 19, 18, 24].map(|n| n * boundary));
    // Without a pipeline there is nothing to keep.
    let one = MemoryPlan {
        pipeline_runtime: PipelineRuntime::Torch,
        ..plan(1, 1, 8, None, 8)
    };
    assert_eq!(
        stage_memory(&m, &one),
        stage_memory(&m, &plan(1, 1, 8, None, 8))
    );
}
