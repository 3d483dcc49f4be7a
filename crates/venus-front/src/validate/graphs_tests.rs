//! Memory and rule tests of CUDA graphs and activation offloading on the VenusSim demo
//! (llama-like, h 4096, 16 heads of 256, 4 kv groups, seq 2048, micro-batch 2, pp 8 × vpp 2).

use crate::testutil::{demo, set};
use venus_base::base::{CudaGraphImpl, CudaGraphModules, OffloadModules, Recompute};
use venus_diag::diag::Code;
use venus_plan::plan::Scenario;

fn validate(d: &crate::ty::ScenarioDef) -> Scenario {
    crate::validate(d).0.expect("scenario validates")
}

fn codes(d: &crate::ty::ScenarioDef) -> Vec<Code> {
    crate::validate(d).1.iter().map(|x| x.code).collect()
}

/// `offload_modules core_attn attn_proj` moves Q, K, V and the core's output, `2q + 4kv + 2q`
/// = 20,480 bytes per token (q 4096, kv 1024), 83,886,080 bytes per layer and microbatch at
/// 4096 tokens; at a stage's peak every in-flight layer-microbatch but the one at the backward
/// front is on the host, and the activations and peak shrink by exactly that.
#[test]
fn offloaded_activations_leave_the_peak_but_one_layer_microbatch() {
    let base = validate(&demo());
    let mut d = demo();
    set(
        &mut d.plan.offload_modules,
        OffloadModules::from_words(["core_attn", "attn_proj"]),
    );
    let off = validate(&d);
    let per_layer: u64 = 4096 * (2 * 4096 + 4 * 1024 + 2 * 4096);
    assert_eq!(per_layer, 83_886_080);
    for (b, o) in base.memory.iter().zip(&off.memory) {
        let layer_microbatches = (b.in_flight * b.layers).div_ceil(2);
        assert_eq!(
            o.offloaded.0,
            per_layer * (layer_microbatches - 1),
            "stage {}",
            b.stage
        );
        assert_eq!(b.activations.0 - o.activations.0, o.offloaded.0);
        assert_eq!(b.peak.0 - o.peak.0, o.offloaded.0);
        assert_eq!(b.offloaded.0, 0);
    }
    // Half the groups: half the bytes.
    set(&mut d.plan.offload_fraction, crate::ty::Ratio(0.5));
    let half = validate(&d);
    assert_eq!(half.memory[0].offloaded.0 * 2, off.memory[0].offloaded.0);
}

/// Per-layer graphs keep one static layer input (`2·s·b·h` = 33,554,432 bytes) per captured
/// graph and in-flight layer-microbatch; `attn mlp` are two graphs per layer; a full-iteration
/// graph adds nothing.
#[test]
fn per_layer_graphs_keep_a_static_input_per_layer_and_microbatch_in_flight() {
    let base = validate(&demo());
    let graphs = |imp, modules: &[&str]| {
        let mut d = demo();
        set(&mut d.plan.cuda_graphs, imp);
        if !modules.is_empty() {
            set(
                &mut d.plan.cuda_graph_modules,
                CudaGraphModules::from_words(modules.iter().copied()),
            );
        }
        validate(&d)
    };
    let input: u64 = 2 * 2048 * 2 * 4096;
    assert_eq!(input, 33_554_432);
    let whole = graphs(CudaGraphImpl::TransformerEngine, &[]);
    let split = graphs(CudaGraphImpl::Local, &["attn", "mlp"]);
    let full = graphs(CudaGraphImpl::FullIteration, &[]);
    for i in 0..base.memory.len() {
        let b = &base.memory[i];
        let lm = (b.in_flight * b.layers).div_ceil(2);
        assert_eq!(whole.memory[i].graph_pool.0, input * lm);
        assert_eq!(whole.memory[i].peak.0 - b.peak.0, input * lm);
        assert_eq!(split.memory[i].graph_pool.0, 2 * input * lm);
        assert_eq!(full.memory[i].graph_pool.0, 0);
        assert_eq!(full.memory[i].peak, b.peak);
    }
}

/// Layer-level offloading (pp 1 only) moves the whole activations of its layers.
#[test]
fn offload_layers_moves_whole_layers_off_a_single_stage() {
    let mut d = demo();
    set(&mut d.plan.pp, 1);
    d.plan.vpp = None;
    set(&mut d.plan.dp, 16);
    let base = validate(&d);
    set(&mut d.plan.offload_layers, 8);
    let off = validate(&d);
    let (b, o) = (&base.memory[0], &off.memory[0]);
    assert_eq!(b.in_flight, 1);
    // The demo's 32 layers hold equal activations: 8 of them leave.
    let layers_bytes = b.activations.0 - o.activations.0;
    assert_eq!(layers_bytes, o.offloaded.0);
    let per_layer = venus_plan::plan::memory::layer_activation_bytes(
        &base.model,
        &venus_plan::plan::memory::ActivationShape {
            seq: 2048,
            micro_batch: 2,
            tp: 1,
            etp: 1,
            sp: false,
            recompute: Recompute::None,
            attention: venus_base::base::Attention::Flash,
            moe_load: venus_base::base::Ratio::ONE,
            modules: Default::default(),
            quantized_inputs: false,
            frozen_base: None,
        },
    );
    assert_eq!(o.offloaded.0 as u128, 8 * per_layer);
}

/// The rules: modules after `full_iteration` (E0359), per-layer graphs with full recompute
/// (E0360), `attn_proj` alone (E0361), a fraction without modules (W0024).
#[test]
fn graph_and_offload_rules_report_their_codes() {
    let mut d = demo();
    set(&mut d.plan.cuda_graphs, CudaGraphImpl::FullIteration);
    set(
        &mut d.plan.cuda_graph_modules,
        CudaGraphModules::from_words(["attn"]),
    );
    assert_eq!(codes(&d), vec![Code::E0359]);
    let mut d = demo();
    set(&mut d.plan.cuda_graphs, CudaGraphImpl::Local);
    set(&mut d.plan.recompute, Recompute::Full);
    assert_eq!(codes(&d), vec![Code::E0360]);
    let mut d = demo();
    set(
        &mut d.plan.offload_modules,
        OffloadModules::from_words(["attn_proj"]),
    );
    assert_eq!(codes(&d), vec![Code::E0361]);
    let mut d = demo();
    set(&mut d.plan.offload_fraction, crate::ty::Ratio(0.5));
    assert_eq!(codes(&d), vec![Code::W0024]);
}
