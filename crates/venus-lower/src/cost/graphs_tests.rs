//! Closed-form tests of the analytic model's CUDA graph launch savings and activation offload
//! copies, on the VenusSim demo (llama-like, pp 8 × vpp 2: two layers per chunk).

use super::analytic::{self, AnalyticModel, Calibration};
use super::{ComputeModel, Pass};
use venus_base::base::{CudaGraphImpl, CudaGraphModules, OffloadModules};
use venus_front::testutil::{demo, model, set};
use venus_front::ty::ScenarioDef;
use venus_plan::plan::Scenario;

fn validate(d: &ScenarioDef) -> Scenario {
    venus_front::validate(d).0.expect("scenario validates")
}

fn chunk(sc: &Scenario, pass: Pass) -> f64 {
    AnalyticModel::new(sc, Calibration::default())
        .chunk(3, 0, pass)
        .total
        .0
}

fn with_graphs(imp: CudaGraphImpl, modules: &[&str]) -> Scenario {
    let mut d = demo();
    set(&mut d.plan.cuda_graphs, imp);
    if !modules.is_empty() {
        set(
            &mut d.plan.cuda_graph_modules,
            CudaGraphModules::from_words(modules.iter().copied()),
        );
    }
    validate(&d)
}

/// Captured kernels skip the host launch: a whole-layer graph saves `layers × (6 + 5) ×
/// launch` in the forward and twice that in the backward (its kernels run twice); the
/// weight-gradient share loses one launch per kernel; `attn` alone saves the attention
/// block's six; a full-iteration graph saves what a whole-layer one does.
#[test]
fn cuda_graphs_remove_the_launch_cost_of_the_captured_kernels() {
    let cal = Calibration::default();
    assert_eq!(cal.launch_overhead.0, 2.5e-6);
    let eager = validate(&demo());
    let layer = with_graphs(CudaGraphImpl::TransformerEngine, &[]);
    let full = with_graphs(CudaGraphImpl::FullIteration, &[]);
    let attn = with_graphs(CudaGraphImpl::Local, &["attn"]);
    let per_layer = (analytic::KERNELS_ATTENTION + analytic::KERNELS_MLP) * cal.launch_overhead.0;
    let layers = 2.0;
    let saved = |sc: &Scenario, pass| chunk(&eager, pass) - chunk(sc, pass);
    assert!((saved(&layer, Pass::Forward) - layers * per_layer).abs() < 1e-12);
    assert!((saved(&layer, Pass::Backward) - 2.0 * layers * per_layer).abs() < 1e-12);
    assert!((saved(&layer, Pass::Weight) - layers * per_layer).abs() < 1e-12);
    assert!((saved(&full, Pass::Forward) - layers * per_layer).abs() < 1e-12);
    let attn_only = layers * analytic::KERNELS_ATTENTION * cal.launch_overhead.0;
    assert!((saved(&attn, Pass::Forward) - attn_only).abs() < 1e-12);
    // `none` is the eager plan exactly: without graphs nothing moves.
    let none = with_graphs(CudaGraphImpl::None, &[]);
    assert_eq!(chunk(&none, Pass::Forward), chunk(&eager, Pass::Forward));
}

/// A small model (h 256, 4 heads of 64, seq 4096, micro-batch 2) whose copies outlast its
/// compute: `core_attn attn_proj` offload Q, K, V and the core's output, `(2q + 4kv + 2q)` =
/// 2048 bytes per token, 16,777,216 bytes per layer and microbatch; at the host link's 50.4
/// GB/s (PCIe 5.0 x16 at 80 %) the copy takes 332.9 µs, and each pass of each layer waits
/// `max(0, copy − compute)` for it (the forward waits; the backward, 389 µs a layer, hides
/// it). Half the groups (`offload_fraction 50%`) halve the copy.
#[test]
fn offload_copies_expose_only_what_outlasts_the_layers_compute() {
    let small = |modules: Option<&[&str]>, fraction: Option<f64>| {
        let mut d = demo();
        d.model = model(256, 4, 32, 32000, 4096);
        if let Some(m) = modules {
            set(
                &mut d.plan.offload_modules,
                OffloadModules::from_words(m.iter().copied()),
            );
        }
        if let Some(f) = fraction {
            set(&mut d.plan.offload_fraction, venus_front::ty::Ratio(f));
        }
        validate(&d)
    };
    let base = small(None, None);
    let off = small(Some(&["core_attn", "attn_proj"]), None);
    let half = small(Some(&["core_attn", "attn_proj"]), Some(0.5));
    let bw = venus_plan::plan::offload::host_link_bandwidth(base.cluster.gpu.arch).0;
    assert_eq!(bw, 50.4e9);
    let copy = 16_777_216.0 / bw;
    assert!((copy - 332.88e-6).abs() < 1e-8, "{copy}");
    let layers = 2.0;
    for pass in [Pass::Forward, Pass::Backward] {
        let per_layer = chunk(&base, pass) / layers;
        if pass == Pass::Forward {
            assert!(
                copy > per_layer,
                "the copy outlasts the forward: {per_layer}"
            );
        }
        let exposed = chunk(&off, pass) - chunk(&base, pass);
        let want = layers * (copy - per_layer).max(0.0);
        assert!((exposed - want).abs() < 1e-12, "{exposed} {want}");
        let exposed_half = chunk(&half, pass) - chunk(&base, pass);
        let want = layers * (copy / 2.0 - per_layer).max(0.0);
        assert!((exposed_half - want).abs() < 1e-12, "{exposed_half}");
    }
    // The weight-gradient share has no copy to wait for.
    assert_eq!(chunk(&off, Pass::Weight), chunk(&base, Pass::Weight));
    // The demo's 4096-wide layers hide the same groups' copies behind their compute.
    let mut d = demo();
    set(
        &mut d.plan.offload_modules,
        OffloadModules::from_words(["core_attn", "attn_proj"]),
    );
    let big = validate(&d);
    assert_eq!(
        chunk(&big, Pass::Forward),
        chunk(&validate(&demo()), Pass::Forward)
    );
}
