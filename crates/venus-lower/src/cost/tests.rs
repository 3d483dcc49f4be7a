//! Tests of the compute models on the VenusSim demo and small variations.

use super::*;
use venus_front::testutil::{demo, set};
use venus_front::ty::{FlopsPerSec, Measured, Recompute, ScenarioDef};

fn validate(d: &ScenarioDef) -> Scenario {
    venus_front::validate(d).0.expect("scenario validates")
}

/// The demo at VenusSim's 1000 TFLOP/s peak with `mfu 100%`.
fn demo_mfu() -> Scenario {
    let mut d = demo();
    d.cluster.gpu.peak.value = FlopsPerSec(1000e12);
    set(&mut d.plan.mfu, Ratio(1.0));
    validate(&d)
}

#[test]
fn mfu_model_gives_venussim_node_durations() {
    let sc = demo_mfu();
    let m = model_for(&sc);
    assert_eq!(m.name(), "mfu");
    let plain = m.chunk(3, 0, Pass::Forward);
    assert_eq!(plain.total, Seconds::from_ns(7_102_845.0));
    assert_eq!(plain.layers, 2);
    // Split evenly over 2 layers × 2 blocks.
    assert_eq!(plain.attention, Seconds::from_ns(7_102_845.0 / 4.0));
    let first = m.chunk(0, 0, Pass::Forward);
    assert_eq!(first.total, Seconds::from_ns(9_621_843.0));
    assert_eq!(m.chunk(0, 1, Pass::Forward).total, plain.total);
    assert_eq!(m.chunk(7, 1, Pass::Forward).total, first.total);
    assert_eq!(
        m.chunk(3, 1, Pass::Backward).total,
        Seconds::from_ns(14_205_690.0)
    );
}

/// VenusSim's snapshot is per virtual stage (generator/utils.py:88-96, checked against its
/// generator in tests/golden/venussim/replay): with vpp 2, chunk 1 of stage 0 and chunk 0 of
/// the last stage replay the middle time.
#[test]
fn measured_model_splits_one_third_two_thirds_per_virtual_stage_kind() {
    let mut d = demo();
    d.plan.measured = Some(Measured {
        first: venus_front::testutil::sp(Seconds(0.030)),
        middle: venus_front::testutil::sp(Seconds(0.021)),
        last: venus_front::testutil::sp(Seconds(0.027)),
        unused: false,
        loc: venus_front::testutil::loc(),
    });
    set(&mut d.plan.mfu, Ratio(0.5));
    let sc = validate(&d);
    assert_eq!((sc.pp, sc.vpp), (8, 2));
    let m = model_for(&sc);
    assert_eq!(m.name(), "measured");
    let ms = |stage, chunk, pass| m.chunk(stage, chunk, pass).total;
    assert_eq!(ms(0, 0, Pass::Forward), Seconds::from_ns(10_000_000.0));
    assert_eq!(ms(0, 0, Pass::Backward), Seconds::from_ns(20_000_000.0));
    assert_eq!(ms(0, 1, Pass::Forward), Seconds::from_ns(7_000_000.0));
    assert_eq!(ms(4, 0, Pass::Forward), Seconds::from_ns(7_000_000.0));
    assert_eq!(ms(7, 0, Pass::Backward), Seconds::from_ns(14_000_000.0));
    assert_eq!(ms(7, 1, Pass::Backward), Seconds::from_ns(18_000_000.0));
}

#[test]
fn unused_measured_times_are_kept_but_not_replayed() {
    // VenusSim's `use_step_snapshot 0` with data: the times ride along for `--emit venussim`,
    // and the plan's `mfu` prices the nodes.
    let mut d = demo();
    d.plan.measured = Some(Measured {
        first: venus_front::testutil::sp(Seconds(0.030)),
        middle: venus_front::testutil::sp(Seconds(0.021)),
        last: venus_front::testutil::sp(Seconds(0.027)),
        unused: true,
        loc: venus_front::testutil::loc(),
    });
    set(&mut d.plan.mfu, Ratio(0.5));
    let sc = validate(&d);
    assert_eq!(model_for(&sc).name(), "mfu");
    assert_eq!(sc.plan.measured.map(|m| m.first), Some(Seconds(0.030)));
}

#[test]
fn analytic_model_prices_the_demo_layer_near_its_flops_at_gemm_efficiency() {
    let sc = validate(&demo());
    let m = model_for(&sc);
    assert_eq!(m.name(), "analytic");
    let c = m.chunk(3, 0, Pass::Forward);
    assert_eq!(c.layers, 2);
    assert_eq!((c.pre, c.post), (Seconds(0.0), Seconds(0.0)));
    // Layer GEMM FLOPs (T = 4096 tokens): QKV 2·T·h·(h + 2·1024) + proj 2·T·h² + MLP
    // 2·T·h·3·16384 at the shape-dependent GEMM efficiency of 989 TFLOP/s, plus attention,
    // memory-bound work and kernel overheads.
    let t = 4096.0;
    let h = 4096.0;
    let gemm = 2.0 * t * h * (h + 2048.0) + 2.0 * t * h * h + 2.0 * t * h * 3.0 * 16384.0;
    // Every GEMM of the demo has all dimensions ≥ 4096, so none runs below this efficiency.
    let eff = Calibration::hopper().gemm(4096.0, 4096.0, 4096.0);
    let gemm_s = gemm / (989e12 * eff);
    let layer = c.attention.0 + c.mlp.0;
    assert!(
        layer > gemm_s * 0.9 && layer < gemm_s * 1.25,
        "{layer} vs {gemm_s}"
    );
    // Backward is a bit more than twice the forward (flash attention backward is 2.5×).
    let b = m.chunk(3, 0, Pass::Backward);
    let ratio = (b.attention.0 + b.mlp.0) / layer;
    assert!(ratio > 2.0 && ratio < 2.2, "{ratio}");
    // The embedding and the output layer sit on their chunks only.
    assert!(m.chunk(0, 0, Pass::Forward).pre.0 > 0.0);
    assert_eq!(m.chunk(0, 1, Pass::Forward).pre.0, 0.0);
    assert!(m.chunk(7, 1, Pass::Forward).post.0 > 0.0);
    assert_eq!(m.chunk(7, 0, Pass::Forward).post.0, 0.0);
}

#[test]
fn analytic_recompute_adds_forward_work_to_backward_only() {
    let base = validate(&demo());
    let mut d = demo();
    set(&mut d.plan.recompute, Recompute::Full);
    let full = validate(&d);
    let mut d = demo();
    set(&mut d.plan.recompute, Recompute::Selective);
    let sel = validate(&d);
    let cal = Calibration::default();
    let (b, f, s) = (
        AnalyticModel::new(&base, cal),
        AnalyticModel::new(&full, cal),
        AnalyticModel::new(&sel, cal),
    );
    let fw = b.chunk(2, 0, Pass::Forward);
    assert_eq!(f.chunk(2, 0, Pass::Forward), fw);
    let bw = b.chunk(2, 0, Pass::Backward);
    let fb = f.chunk(2, 0, Pass::Backward);
    assert!((fb.attention.0 - bw.attention.0 - fw.attention.0).abs() < 1e-12);
    assert!((fb.mlp.0 - bw.mlp.0 - fw.mlp.0).abs() < 1e-12);
    let sb = s.chunk(2, 0, Pass::Backward);
    assert!(sb.attention.0 > bw.attention.0 && sb.attention.0 < fb.attention.0);
    assert_eq!(sb.mlp, bw.mlp);
}

#[test]
fn analytic_optimizer_step_shrinks_with_the_distributed_optimizer() {
    let sc = validate(&demo());
    let m = AnalyticModel::new(&sc, Calibration::default());
    let mut d = demo();
    set(&mut d.plan.distributed_optimizer, false);
    set(&mut d.plan.overlap_grad_reduce, false);
    set(&mut d.plan.overlap_param_gather, false);
    let plain = AnalyticModel::new(&validate(&d), Calibration::default());
    let (a, b) = (m.optimizer_step(3).0, plain.optimizer_step(3).0);
    assert!((b / a - 2.0).abs() < 1e-9, "{a} {b}");
    // Middle stage: 4 layers of 233.0M params (with norms) = 932.2M local, halved by dp 2,
    // × 38 B (norm read 4, Adam 28, master → bf16 copy 6) at 0.8 × 3.35 TB/s.
    let params = 4.0 * sc.params.per_layer.total() as f64 / 2.0;
    assert!((a - params * 38.0 / (3.35e12 * 0.8)).abs() < 1e-12);
}

#[test]
fn mfu_weight_gradient_is_half_the_venussim_backward() {
    // W ≈ B (Qi et al., ICLR 2024): 14,205,690 ns of backward split 7,102,845 + 7,102,845.
    let m = model_for(&demo_mfu());
    let w = m.chunk(3, 1, Pass::Weight);
    assert_eq!(w.total, Seconds::from_ns(7_102_845.0));
    assert_eq!(m.input_gradient(3, 1).total, Seconds::from_ns(7_102_845.0));
}

#[test]
fn analytic_weight_gradient_is_one_forward_of_the_gemms_and_the_rest_is_input_gradient() {
    let sc = validate(&demo());
    let m = AnalyticModel::new(&sc, Calibration::default());
    for (stage, chunk) in [(0, 0), (3, 0), (7, 1)] {
        let (f, b, w) = (
            m.chunk(stage, chunk, Pass::Forward),
            m.chunk(stage, chunk, Pass::Backward),
            m.chunk(stage, chunk, Pass::Weight),
        );
        let i = m.input_gradient(stage, chunk);
        // B + W is the whole backward, piece by piece.
        for (bi, ii, wi) in [
            (b.pre, i.pre, w.pre),
            (b.attention, i.attention, w.attention),
            (b.mlp, i.mlp, w.mlp),
            (b.post, i.post, w.post),
            (b.total, i.total, w.total),
        ] {
            assert!((ii.0 + wi.0 - bi.0).abs() < 1e-12, "{stage} {chunk}");
        }
        // The weight gradient holds no attention core or element-wise work, so it is below
        // the forward, and below half of the backward.
        assert!(w.attention.0 > 0.0 && w.attention.0 < f.attention.0);
        assert!(w.mlp.0 > 0.0 && w.mlp.0 < f.mlp.0);
        assert!(w.total.0 < b.total.0 / 2.0);
    }
    // The embedding's backward is all weight gradient; the output layer's dW is its logits GEMM.
    assert_eq!(
        m.chunk(0, 0, Pass::Weight).pre,
        m.chunk(0, 0, Pass::Backward).pre
    );
    assert_eq!(m.input_gradient(0, 0).pre.0, 0.0);
    assert!(m.chunk(7, 1, Pass::Weight).post.0 > 0.0);
    assert_eq!(m.chunk(3, 0, Pass::Weight).post.0, 0.0);
}

/// The GEMM share of a chunk's weight gradient (one forward of every GEMM) less its kernel
/// launches, which do not depend on the peak.
fn weight_gemm_seconds(sc: &Scenario) -> f64 {
    let m = AnalyticModel::new(sc, Calibration::default());
    let w = m.chunk(3, 0, Pass::Weight);
    let k = (analytic::KERNELS_ATTENTION + analytic::KERNELS_MLP)
        * Calibration::default().kernel_overhead.0;
    w.total.0 - w.layers as f64 * k
}

#[test]
fn analytic_gemms_run_at_the_peak_of_the_plans_precision() {
    use venus_front::ty::Precision;
    let mut d = demo();
    d.cluster.gpu.fp8_peak = Some(venus_front::ty::Spanned::new(
        FlopsPerSec(2.0 * d.cluster.gpu.peak.value.0),
        d.cluster.gpu_loc,
    ));
    d.cluster.gpu.fp4_peak = Some(venus_front::ty::Spanned::new(
        FlopsPerSec(4.0 * d.cluster.gpu.peak.value.0),
        d.cluster.gpu_loc,
    ));
    // NVFP4 runs on Blackwell only (E0356); the ratios hold on any calibration.
    set(&mut d.cluster.gpu.arch, venus_front::ty::GpuArch::Blackwell);
    let bf16 = weight_gemm_seconds(&validate(&d));
    set(&mut d.plan.precision, Precision::Fp8);
    let fp8 = weight_gemm_seconds(&validate(&d));
    set(&mut d.plan.precision, Precision::Fp4);
    let fp4 = weight_gemm_seconds(&validate(&d));
    assert!((bf16 / fp8 - 2.0).abs() < 1e-9, "{bf16} {fp8}");
    assert!((bf16 / fp4 - 4.0).abs() < 1e-9, "{bf16} {fp4}");
}

/// `task lora`: the frozen base's backward is its input gradient alone, so per layer the
/// backward loses one forward of the base GEMMs (`G`) and gains the adapters' backward (`2A`)
/// while the forward gains the adapters (`A`): B_pre − B_lora + (F_lora − F_pre) = W_pre −
/// W_lora = G − A. The weight share keeps only the adapters and the kernel launches; the
/// embedding and the output layer get no weight gradient; the optimizer steps only adapters.
#[test]
fn lora_backward_drops_the_base_weight_gradient_and_adds_the_adapters() {
    let cal = Calibration::default();
    let pre = validate(&demo());
    let mut d = demo();
    set(&mut d.plan.task, venus_base::base::Task::Lora);
    set(&mut d.plan.lora_rank, 16);
    let lora = validate(&d);
    let (p, l) = (
        AnalyticModel::new(&pre, cal),
        AnalyticModel::new(&lora, cal),
    );
    let (fp, bp, wp) = (
        p.chunk(3, 0, Pass::Forward),
        p.chunk(3, 0, Pass::Backward),
        p.chunk(3, 0, Pass::Weight),
    );
    let (fl, bl, wl) = (
        l.chunk(3, 0, Pass::Forward),
        l.chunk(3, 0, Pass::Backward),
        l.chunk(3, 0, Pass::Weight),
    );
    let adapters = fl.total.0 - fp.total.0;
    // Skinny rank-16 GEMMs run far from peak (`gemm_half_dim`): a few percent of the layer.
    assert!(
        adapters > 0.0 && adapters < 0.1 * fp.total.0,
        "{adapters} {}",
        fp.total.0
    );
    let lhs = bp.total.0 - bl.total.0 + adapters;
    assert!((lhs - (wp.total.0 - wl.total.0)).abs() < 1e-9, "{lhs}");
    // The base GEMMs' dW is most of the pretraining weight share, so LoRA's backward is
    // close to one forward of the base: B_lora < 0.75 B_pre (pretrain: B ≈ 2F + attention).
    assert!(
        bl.total.0 < 0.75 * bp.total.0,
        "{} {}",
        bl.total.0,
        bp.total.0
    );
    let k = (analytic::KERNELS_ATTENTION + analytic::KERNELS_MLP) * cal.kernel_overhead.0;
    let launches = wl.layers as f64 * k;
    assert!((wl.total.0 - launches - adapters).abs() < 1e-9);
    assert_eq!(l.chunk(0, 0, Pass::Backward).pre.0, 0.0);
    assert_eq!(l.chunk(7, 1, Pass::Weight).post.0, 0.0);
    // Rank-16 adapters of 4 llama-7B layers are about 0.3% of their parameters.
    let ratio = l.optimizer_step(3).0 / p.optimizer_step(3).0;
    assert!(ratio > 0.0 && ratio < 0.01, "{ratio}");
}

/// A windowed layer's flash-attention core computes the band of `w` keys widened by one
/// 128-key tile, `b·s − b²/2` pairs for `b = w + 128` against the causal `s²/2`, and with
/// `sliding_window_pattern 2` only every other layer is windowed (each 2-layer chunk holds
/// one of each). The savings of two windows compare as `1 − f(b)` with
/// `f(b) = (b·s − b²/2) / (s²/2)`, whatever the core's absolute time.
#[test]
fn analytic_sliding_window_prices_the_band_and_only_the_patterns_windowed_layers() {
    let forward = |window: Option<u64>, pattern: Option<u64>| {
        let mut d = demo();
        if let Some(w) = window {
            set(&mut d.model.sliding_window, w);
        }
        if let Some(p) = pattern {
            set(&mut d.model.sliding_window_pattern, p);
        }
        model_for(&validate(&d)).chunk(3, 0, Pass::Forward)
    };
    let full = forward(None, None).attention.0;
    let saving = |w: u64, p: Option<u64>| full - forward(Some(w), p).attention.0;
    let s = 2048.0;
    let f = |band: f64| (band * s - band * band / 2.0) / (s * s / 2.0);
    let (narrow, wide) = (saving(128, None), saving(640, None));
    assert!(narrow > wide && wide > 0.0, "{narrow} {wide}");
    let expected = (1.0 - f(256.0)) / (1.0 - f(768.0));
    assert!(
        (narrow / wide / expected - 1.0).abs() < 1e-9,
        "{} vs {expected}",
        narrow / wide
    );
    // Every second layer windowed: half the saving per layer of the chunk.
    let half = saving(128, Some(2));
    assert!((half / narrow - 0.5).abs() < 1e-9, "{half} vs {narrow}");
    // A window at least as long as the sequence (with its tile) saves nothing.
    assert_eq!(saving(1920, None), 0.0);
    // The backward saves the flash backward ratio (2.5) times the forward saving.
    let mut d = demo();
    set(&mut d.model.sliding_window, 128);
    let bwd_w = model_for(&validate(&d))
        .chunk(3, 0, Pass::Backward)
        .attention
        .0;
    let bwd = model_for(&validate(&demo()))
        .chunk(3, 0, Pass::Backward)
        .attention
        .0;
    assert!(((bwd - bwd_w) / narrow - 2.5).abs() < 1e-9);
}

/// QK-norm reads and writes q and k once more: a memory-bound cost on the attention block only.
#[test]
fn analytic_qk_norm_adds_memory_bound_work_to_attention_only() {
    let mut d = demo();
    set(&mut d.model.qk_norm, true);
    let cal = Calibration::hopper();
    let with = AnalyticModel::new(&validate(&d), cal).chunk(3, 0, Pass::Forward);
    let without = AnalyticModel::new(&validate(&demo()), cal).chunk(3, 0, Pass::Forward);
    assert_eq!(with.mlp, without.mlp);
    // T = 2048 tokens × 2 sequences, q + k = 4096 + 4 groups·256 = 5120 elements of 2 bytes
    // read and written, at 80% of the GPU's HBM bandwidth.
    let bytes = 2.0 * 2048.0 * 2.0 * 5120.0 * 2.0;
    let bw = validate(&demo()).cluster.gpu.mem_bw.0 * cal.memory_efficiency;
    let ratio = (with.attention.0 - without.attention.0) / (bytes / bw);
    assert!((ratio - 1.0).abs() < 1e-9, "{ratio}");
}

#[test]
fn flash2_attention_is_the_fused_kernel_at_flash_attention_2s_efficiency() {
    // `attention flash2` with Hopper's constants costs exactly what `attention flash` costs
    // with the fused kernels' efficiency set to FlashAttention-2's 35%, in every pass; the
    // MLP does not move and the attention block takes longer.
    let mut d = demo();
    set(&mut d.plan.attention, venus_front::ty::Attention::Flash2);
    let flash2 = AnalyticModel::new(&validate(&d), Calibration::hopper());
    let slow_fused = Calibration {
        attention_efficiency: 0.35,
        ..Calibration::hopper()
    };
    let flash = AnalyticModel::new(&validate(&demo()), slow_fused);
    let fitted = AnalyticModel::new(&validate(&demo()), Calibration::hopper());
    for pass in [Pass::Forward, Pass::Backward, Pass::Weight] {
        assert_eq!(
            flash2.chunk(3, 1, pass),
            flash.chunk(3, 1, pass),
            "{pass:?}"
        );
    }
    let (a, b) = (
        flash2.chunk(3, 1, Pass::Forward),
        fitted.chunk(3, 1, Pass::Forward),
    );
    assert_eq!(a.mlp, b.mlp);
    assert!(a.attention.0 > b.attention.0);
    assert_eq!(Calibration::hopper().flash2_efficiency, 0.35);
    assert_eq!(Calibration::ampere().flash2_efficiency, 0.5);
}

/// DeepSeek-V3's router on 4,096 tokens: 256 experts, top-8 in 8 groups, expert bias and the
/// sequence-wise balance loss, bf16 activations of width 7,168, no fusion.
fn deepseek_v3_router() -> analytic::RouterShape {
    analytic::RouterShape {
        tokens: 4096.0,
        experts: 256.0,
        topk: 8.0,
        groups: 8.0,
        act_bytes: 2.0,
        width: 7168.0,
        copies: 8.0,
        expert_bias: true,
        balance_loss: true,
        permute_fusion: false,
        router_fusion: false,
    }
}

/// DeepSeek-V3's routing on one rank by hand (4096 tokens, 256 experts, top-8 in 8 groups,
/// bf16, hidden 7168), per token: scoring 2·256 + 4·256 + 4·256 + 12·8 = 2,656; probs and map
/// 3·2·256 + 9·256 = 3,840; expert bias 9·256 = 2,304; groups 24·256 = 6,144; the
/// sequence-wise loss 3·2·256 + 22·256 = 7,168; unfused permute 2·8·7168·2 = 229,376 copies
/// and (20 + 2·2)·256 = 6,144 of map, sort and probs; unfused unpermute 5·8·7168·2 + 7168·2 =
/// 587,776 copies and (3·2 + 3)·256 = 2,304: 847,712 bytes. Fused permutation moves the copies
/// once each way (229,376 + 1,280 and 114,688 + 14,336): 381,792.
#[test]
fn router_traffic_counts_deepseek_v3s_routing_bytes_by_hand() {
    let shape = deepseek_v3_router();
    let unfused = analytic::router_traffic(&shape);
    assert_eq!(unfused.forward_bytes, 4096.0 * 847_712.0);
    assert_eq!(unfused.forward_kernels, 7.0 + 2.0 + 5.0 + 7.0 + 13.0);
    // Backward: the scores (2·256 + 4·256), the loss's scores (the same) and the copies.
    assert_eq!(
        unfused.backward_bytes,
        4096.0 * (2.0 * 1536.0 + 229_376.0 + 587_776.0)
    );
    let fused = analytic::router_traffic(&analytic::RouterShape {
        permute_fusion: true,
        ..shape
    });
    assert_eq!(fused.forward_bytes, 4096.0 * 381_792.0);
    assert_eq!(fused.forward_kernels, 7.0 + 2.0 + 5.0 + 7.0 + 2.0);
    // Without groups, bias or loss only the scoring, the maps and the permutation remain.
    let plain = analytic::router_traffic(&analytic::RouterShape {
        groups: 1.0,
        expert_bias: false,
        balance_loss: false,
        ..shape
    });
    assert_eq!(
        plain.forward_bytes,
        4096.0 * (2656.0 + 3840.0 + 229_376.0 + 6144.0 + 587_776.0 + 2304.0)
    );
}

/// `moe_router_fusion` on the same DeepSeek-V3 layer: the fused scoring kernel reads the
/// logits and writes probs, map and its fp32 intermediate (2·256 + 9·256 = 2,816 per token),
/// the expert bias keeps its count (256), groups cost nothing more, and the sequence-wise loss
/// is its fused scores, count and loss (2·256 + 14·256 = 4,096); with the unfused permutation
/// (235,520 + 590,080) that is 832,768 bytes a token instead of 847,712, in 1 + 1 + 3 kernels
/// instead of 21 before the permutation's 13. Backward, each fused kernel reads its
/// intermediate and the probs' gradient: 2 · (2·256 + 8·256) = 5,120 for the scores.
#[test]
fn router_fusion_folds_deepseek_v3s_routing_into_five_kernels() {
    let shape = analytic::RouterShape {
        router_fusion: true,
        ..deepseek_v3_router()
    };
    let fused = analytic::router_traffic(&shape);
    assert_eq!(fused.forward_bytes, 4096.0 * 832_768.0);
    assert_eq!(fused.forward_kernels, 1.0 + 1.0 + 3.0 + 13.0);
    assert_eq!(
        fused.backward_bytes,
        4096.0 * (5120.0 + 229_376.0 + 587_776.0)
    );
    assert_eq!(fused.backward_kernels, 2.0 + 4.0);
    let unfused = analytic::router_traffic(&analytic::RouterShape {
        router_fusion: false,
        ..shape
    });
    assert!(fused.forward_bytes < unfused.forward_bytes);
    assert_eq!(unfused.forward_kernels, 21.0 + 13.0);
}

/// The expert bias adds its `scores + bias` pass (read and write 4 bytes per expert) and the
/// load count (1 byte per expert) to a MoE layer's forward, with its two kernels: on the demo
/// with 8 experts, 4096 tokens · 9 · 8 bytes at the memory-bound rate.
#[test]
fn analytic_expert_bias_adds_its_passes_over_the_scores_to_the_moe_block() {
    let mut d = demo();
    set(&mut d.model.experts, 8);
    set(&mut d.model.topk, 2);
    set(&mut d.model.moe_ffn, 1024);
    let (sc, diags) = venus_front::validate(&d);
    assert!(sc.is_some(), "{diags:?}");
    let base = validate(&d);
    set(&mut d.model.expert_bias, true);
    let biased = validate(&d);
    let cal = Calibration::hopper();
    let with = AnalyticModel::new(&biased, cal).chunk(3, 0, Pass::Forward);
    let without = AnalyticModel::new(&base, cal).chunk(3, 0, Pass::Forward);
    assert_eq!(with.attention, without.attention);
    let tokens = 2048.0 * 2.0;
    let bw = base.cluster.gpu.mem_bw.0 * cal.memory_efficiency;
    let expected = tokens * 9.0 * 8.0 / bw + 2.0 * cal.kernel_overhead.0;
    let ratio = (with.mlp.0 - without.mlp.0) / expected;
    assert!((ratio - 1.0).abs() < 1e-9, "{ratio}");
}

/// One layer's attention-block forward on a middle stage of the demo (Hopper, tp 1, no sp):
/// tensorwise scaling minus delayed scaling is closed form. Delayed quantizes QKV's input
/// inside the norm (nothing extra on a TN-only GPU) and reads the projection's input once
/// (2 + 1 + 1 bytes, one kernel); tensorwise reads every source twice (amax, then cast: 4 + 2
/// bytes, two kernels each), for QKV's input, the projection's, and both weights (cast on the
/// first of the `microbatches`, 4 vs 6 bytes).
#[test]
fn tensorwise_fp8_costs_its_amax_passes_and_unfused_casts_over_delayed_in_closed_form() {
    use venus_base::base::Fp8Recipe;
    use venus_front::ty::Precision;
    let mut d = demo();
    d.cluster.gpu.fp8_peak = Some(venus_front::ty::Spanned::new(
        FlopsPerSec(2.0 * d.cluster.gpu.peak.value.0),
        d.cluster.gpu_loc,
    ));
    set(&mut d.plan.precision, Precision::Fp8);
    let delayed = validate(&d);
    set(&mut d.plan.fp8_recipe, Fp8Recipe::Tensorwise);
    let tensorwise = validate(&d);
    let cal = Calibration::default();
    let fwd = |sc: &Scenario| {
        AnalyticModel::new(sc, cal)
            .chunk(3, 0, Pass::Forward)
            .attention
            .0
    };
    let m = &delayed.model;
    let t = (m.seq * delayed.micro_batch) as f64;
    let h = m.hidden as f64;
    let q = (m.heads * m.head_dim()) as f64;
    let kv = (m.kv_groups() * m.head_dim()) as f64;
    let mb = delayed.microbatches as f64;
    let bw = delayed.cluster.gpu.mem_bw.0 * cal.memory_efficiency;
    // QKV input: 0 → 6 bytes; projection input: 4 → 6; weights: 4 → 6, once per iteration.
    let bytes = t * h * 6.0 + t * q * 2.0 + (h * (q + 2.0 * kv) + q * h) * 2.0 / mb;
    let kernels = 2.0 + 1.0 + 2.0 / mb;
    let expected = bytes / bw + kernels * cal.kernel_overhead.0;
    let got = fwd(&tensorwise) - fwd(&delayed);
    assert!(
        (got - expected).abs() < 1e-12 * expected.max(1.0),
        "{got} {expected}"
    );
    // BF16 pays no cast at all: the FP8 block's extra over a BF16 one at the same peak is the
    // delayed casts alone, positive.
    assert!(fwd(&delayed) > 0.0 && expected > 0.0);
}

/// `fp8_attention` prices the flash-attention core at the FP8 peak with the FP8 efficiency,
/// plus its Q, K, V, O casts; the logits GEMM stays BF16 with FP8 GEMMs (Megatron's output
/// layer is a plain `ColumnParallelLinear`).
#[test]
fn fp8_attention_runs_the_core_at_the_fp8_peak_and_the_logits_stay_bf16() {
    use venus_front::ty::Precision;
    let mut d = demo();
    d.cluster.gpu.fp8_peak = Some(venus_front::ty::Spanned::new(
        FlopsPerSec(2.0 * d.cluster.gpu.peak.value.0),
        d.cluster.gpu_loc,
    ));
    let bf16 = validate(&d);
    set(&mut d.plan.precision, Precision::Fp8);
    let fp8 = validate(&d);
    set(&mut d.plan.fp8_attention, true);
    let dpa = validate(&d);
    let cal = Calibration::default();
    let model = |sc: &Scenario| AnalyticModel::new(sc, cal);
    let last = bf16.pp - 1;
    // The output layer (post) is the same in BF16 and FP8.
    let post = |sc: &Scenario| model(sc).chunk(last, bf16.vpp - 1, Pass::Forward).post.0;
    assert_eq!(post(&bf16), post(&fp8));
    // The core: 4·b·(s²/2)·q/tp FLOPs at 2·peak·fp8_attention_efficiency instead of
    // peak·attention_efficiency, less the casts FP8 attention adds.
    let m = &fp8.model;
    let (s, b) = (m.seq as f64, fp8.micro_batch as f64);
    let q = (m.heads * m.head_dim()) as f64;
    let kv = (m.kv_groups() * m.head_dim()) as f64;
    let flops = 4.0 * b * s * s / 2.0 * q;
    let peak = fp8.cluster.gpu.peak.0;
    let core_saving = flops / (peak * cal.attention_efficiency)
        - flops / (2.0 * peak * cal.fp8_attention_efficiency);
    let bw = fp8.cluster.gpu.mem_bw.0 * cal.memory_efficiency;
    let casts = b * s * (q + 2.0 * kv + 2.0 * q) * 3.0 / bw + 2.0 * cal.kernel_overhead.0;
    let fwd = |sc: &Scenario| model(sc).chunk(3, 0, Pass::Forward).attention.0;
    let got = fwd(&fp8) - fwd(&dpa);
    let expected = core_saving - casts;
    assert!(
        (got - expected).abs() < 1e-9 * expected.abs(),
        "{got} {expected}"
    );
    // The core itself runs faster; on the demo's short sequence the linear casts cost more
    // than the quadratic core saves, so FP8 attention pays off only on long sequences.
    assert!(core_saving > 0.0 && casts > 0.0, "{core_saving} {casts}");
}

/// `overlap_tp_comm` with Transformer Engine's userbuffers defaults: the projection and FC2
/// forward and the QKV and FC1 backward (input and weight gradients) run beside `pipeline`
/// and `bulk` kernels that take 16 SMs, so on the SMs left; the other GEMMs' all-gathers
/// (`ring_exchange`) run on copy engines and leave them alone. Per layer, at tp 2 on the demo
/// (T = 4096, h 4096, q 4096, kv 1024, SwiGLU ffn 16384), each slowed GEMM costs
/// `sms / (sms − 16) − 1` of itself more: 132 SMs by default on Hopper, and a GPU's own `sms`.
#[test]
fn tp_comm_overlap_slows_the_gemms_whose_userbuffers_kernels_take_sms() {
    let layer = |overlap: bool, sms: Option<u64>| {
        let mut d = demo();
        set(&mut d.plan.tp, 2);
        set(&mut d.plan.dp, 1);
        set(&mut d.plan.sp, true);
        set(&mut d.plan.overlap_tp_comm, overlap);
        if let Some(n) = sms {
            set(&mut d.cluster.gpu.sms, n);
        }
        let m = AnalyticModel::new(&validate(&d), Calibration::hopper());
        (m.chunk(3, 0, Pass::Forward), m.chunk(3, 0, Pass::Backward))
    };
    let cal = Calibration::hopper();
    let gemm = |m: f64, n: f64, k: f64| 2.0 * m * n * k / (989e12 * cal.gemm(m, n, k));
    let t = 4096.0;
    let proj = gemm(t, 4096.0, 4096.0 / 2.0);
    let fc2 = gemm(t, 4096.0, 16384.0 / 2.0);
    let qkv = gemm(t, (4096.0 + 2.0 * 1024.0) / 2.0, 4096.0);
    let fc1 = gemm(t, 2.0 * 16384.0 / 2.0, 4096.0);
    let (f0, b0) = layer(false, None);
    for (sms, extra) in [(None, 132.0 / 116.0 - 1.0), (Some(100), 100.0 / 84.0 - 1.0)] {
        let (f, b) = layer(true, sms);
        let close = |got: f64, want: f64| (got - want).abs() < 1e-12 * want.max(1e-9);
        assert!(
            close(f.attention.0 - f0.attention.0, extra * proj),
            "{sms:?}"
        );
        assert!(close(f.mlp.0 - f0.mlp.0, extra * fc2), "{sms:?}");
        // Backward: the input gradient and the weight gradient, both of QKV and of FC1.
        assert!(
            close(b.attention.0 - b0.attention.0, 2.0 * extra * qkv),
            "{sms:?}"
        );
        assert!(close(b.mlp.0 - b0.mlp.0, 2.0 * extra * fc1), "{sms:?}");
    }
    // 16 of 132 SMs: 13.8 % longer.
    assert!((132.0_f64 / 116.0 - 1.0 - 0.1379).abs() < 1e-4);
}
