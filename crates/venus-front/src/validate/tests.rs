//! Validation tests: one right and one wrong case per code, asserting the exact code, message,
//! labelled spans and help.

use super::*;
use crate::testutil::*;
use crate::ty::{FlopsPerSec, Model, Spanned};
use venus_diag::diag::Severity;

fn codes(ds: &[Diagnostic]) -> Vec<Code> {
    ds.iter().map(|d| d.code).collect()
}

fn only(ds: &[Diagnostic], code: Code) -> &Diagnostic {
    let found: Vec<&Diagnostic> = ds.iter().filter(|d| d.code == code).collect();
    assert_eq!(found.len(), 1, "expected one {code}, got {:#?}", ds);
    found[0]
}

fn secondary_locs(d: &Diagnostic) -> Vec<Loc> {
    d.secondary.iter().map(|l| l.loc).collect()
}

fn loc<T>(o: &Opt<T>) -> Loc {
    o.as_ref().expect("item written").loc
}

/// llama (32 layers, 16 heads, 4 kv groups) on nvlink 8 × ib 2 of 80 GiB GPUs, with the
/// distributed optimizer (without it one llama replica per GPU needs 18 B × 6.9B > 80 GiB).
fn base(mb: u64, gb: u64) -> ScenarioDef {
    with_model(llama(), mb, gb)
}

fn with_model(model: Model, mb: u64, gb: u64) -> ScenarioDef {
    let mut p = plan(mb, gb);
    set(&mut p.distributed_optimizer, true);
    def(model, cluster(&[("nvlink", 8), ("ib", 2)], 80), p)
}

// ------------------------------------------------------------------ derived values

#[test]
fn demo_derives_megatron_values() {
    let (s, ds) = validate(&demo());
    assert!(ds.is_empty(), "{ds:#?}");
    let s = s.unwrap();
    assert_eq!(
        (s.world, s.tp, s.pp, s.cp, s.ep, s.etp, s.dp, s.vpp),
        (16, 1, 8, 1, 1, 1, 2, 2)
    );
    assert_eq!(s.expert_dp, 2);
    assert_eq!(s.schedule, Some(ScheduleKind::Interleaved));
    assert_eq!(s.microbatches, 16);
    assert_eq!(s.padded_vocab, 50048);
    assert_eq!(
        (s.stage_layers(0), s.chunk_layers(0, 0), s.first_layer(1, 1)),
        (4, 2, 18)
    );
    assert!(!s.sp);
    assert!(s.flags.distributed_optimizer && s.flags.overlap_param_gather && !s.flags.overlap_p2p);
    assert_eq!(s.memory.len(), 8);
    // 4h² attention with 4 kv groups of 256: 2·4096² + 2·4096·1024; SwiGLU MLP 3·4096·16384.
    let layer = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 16384 + 4 * 4096;
    assert_eq!(s.params.per_layer.total(), layer);
    assert_eq!(s.params.embedding, 50048 * 4096);
    assert_eq!(s.params.total, 50048 * 4096 + 32 * layer + 2 * 4096);
    assert_eq!(s.stage_params(0), 4 * layer + 50048 * 4096);
    assert_eq!(s.stage_params(7), 4 * layer + 50048 * 4096 + 2 * 4096);
    assert!((s.bubble_fraction().0 - 7.0 / 39.0).abs() < 1e-12);
}

#[test]
fn dp_defaults_to_world_over_model_parallel_size() {
    let mut d = base(1, 64);
    set(&mut d.plan.tp, 2);
    set(&mut d.plan.pp, 2);
    let (s, ds) = validate(&d);
    assert!(ds.is_empty(), "{ds:#?}");
    let s = s.unwrap();
    assert_eq!((s.dp, s.microbatches), (4, 16));
    assert_eq!(s.schedule, Some(ScheduleKind::OneFOneB));
    assert_eq!(s.padded_vocab, 50176);
}

#[test]
fn schedule_resolves_to_none_without_pipelining_and_keeps_a_written_gpipe() {
    let (s, _) = validate(&base(1, 16));
    assert_eq!(s.unwrap().schedule, None);
    // GPipe holds all m microbatches: 16 / 8 = 2 here, so the bubble warns (1/3) but it fits.
    let mut d = base(1, 16);
    set(&mut d.plan.pp, 2);
    set(&mut d.plan.schedule, ScheduleKind::Gpipe);
    let (s, ds) = validate(&d);
    assert_eq!(codes(&ds), vec![Code::W0003]);
    assert_eq!(s.unwrap().schedule, Some(ScheduleKind::Gpipe));
}

#[test]
fn uneven_stages_are_derived_as_megatron_splits_them() {
    let mut m = llama();
    m.layers = sp(30);
    let mut d = with_model(m, 1, 64);
    set(&mut d.plan.pp, 4);
    set(&mut d.plan.first_stage_layers, 6);
    set(&mut d.plan.last_stage_layers, 6);
    let (s, ds) = validate(&d);
    assert!(ds.is_empty(), "{ds:#?}");
    let s = s.unwrap();
    assert_eq!([0, 1, 2, 3].map(|r| s.stage_layers(r)), [6, 9, 9, 6]);
    assert_eq!(s.first_layer(3, 0), 24);
}

// ------------------------------------------------------------------ E0301

#[test]
fn e0301_states_gpu_counts_and_labels_every_factor() {
    let mut d = base(1, 64);
    set(&mut d.plan.tp, 1);
    set(&mut d.plan.pp, 8);
    set(&mut d.plan.dp, 4);
    let (s, ds) = validate(&d);
    assert!(s.is_none());
    let e = only(&ds, Code::E0301);
    assert_eq!(e.severity, Severity::Error);
    assert_eq!(
        e.message,
        "plan needs 32 GPUs (tp 1 × pp 8 × dp 4) but cluster has 16"
    );
    assert_eq!(e.primary.loc, loc(&d.plan.dp));
    assert_eq!(e.primary.message, "tp × pp × dp = 32");
    let sec = secondary_locs(e);
    assert_eq!(
        sec,
        vec![
            loc(&d.plan.tp),
            loc(&d.plan.pp),
            d.cluster.dims[0].size.loc,
            d.cluster.dims[1].size.loc
        ]
    );
    assert_eq!(e.secondary[2].message, "8 GPUs in dim `nvlink`");
    assert_eq!(
        e.help.as_deref(),
        Some("use `dp 2` (tp 1 × pp 8 × dp 2 = 16) or `pp 4` (tp 1 × pp 4 × dp 4 = 16)")
    );
}

#[test]
fn e0301_without_dp_needs_a_divisible_world_and_suggests_pp() {
    let mut m = llama();
    m.layers = sp(24);
    let mut d = with_model(m, 1, 64);
    set(&mut d.plan.pp, 3);
    let (_, ds) = validate(&d);
    assert_eq!(codes(&ds), vec![Code::E0301]);
    let e = &ds[0];
    assert_eq!(
        e.message,
        "plan needs a multiple of 3 GPUs (tp 1 × pp 3) but cluster has 16"
    );
    assert_eq!(e.primary.loc, loc(&d.plan.pp));
    assert_eq!(
        e.help.as_deref(),
        Some("use `pp 2` (tp 1 × pp 2 × dp 8 = 16) or `pp 4` (tp 1 × pp 4 × dp 4 = 16)")
    );
}

#[test]
fn e0301_primary_is_the_plan_when_no_factor_is_written() {
    let mut d = base(1, 64);
    d.cluster.dims[0].size = sp(0);
    let (_, ds) = validate(&d);
    let e = only(&ds, Code::E0301);
    assert_eq!(e.primary.loc, d.plan.loc);
}

// ------------------------------------------------------------------ E0302

#[test]
fn e0302_even_split_with_vpp_suggests_a_vpp() {
    let mut d = base(1, 16);
    set(&mut d.plan.pp, 4);
    set(&mut d.plan.vpp, 3);
    let (_, ds) = validate(&d);
    assert_eq!(codes(&ds), vec![Code::E0302]);
    let e = &ds[0];
    assert_eq!(
        e.message,
        "32 layers cannot be split over pp 4 × vpp 3 = 12 model chunks"
    );
    assert_eq!(e.primary.loc, loc(&d.plan.pp));
    assert_eq!(
        secondary_locs(e),
        vec![d.model.layers.loc, loc(&d.plan.vpp)]
    );
    // No key keeps pp 4 × vpp 3 (32 + 2 = 34 is not a multiple of 12): a layout does.
    assert_eq!(
        e.help.as_deref(),
        Some("use `vpp 2` or `pipeline_layout \"Ett|(t*3|)*10L\"`")
    );
}

#[test]
fn e0302_keeps_the_written_pp_with_lighter_first_and_last_stages() {
    // Llama 3.1 405B's 126 layers over pp 16 (Meta's plan): 8 layers on each of the 14
    // middle stages and 7 on each end, Megatron-LM's uneven first/last stage split.
    let mut m = llama();
    m.layers = sp(126);
    let mut d = with_model(m, 1, 64);
    d.cluster.dims[1].size = sp(16);
    set(&mut d.plan.tp, 8);
    set(&mut d.plan.pp, 16);
    let (_, ds) = validate(&d);
    let e = only(&ds, Code::E0302);
    assert_eq!(
        e.help.as_deref(),
        Some("use `account_for_embedding` and `account_for_loss` (126 + 2 = 128 = 16 × 8), `first_stage_layers 7 last_stage_layers 7` (8 layers on each of the 14 middle stages), `pp 2` (63 layers per stage) or `pp 1` (126 layers per stage)")
    );
    let mut fixed = d.clone();
    set(&mut fixed.plan.first_stage_layers, 7);
    set(&mut fixed.plan.last_stage_layers, 7);
    let (_, ds) = validate(&fixed);
    assert!(!codes(&ds).contains(&Code::E0302), "{ds:?}");
}

#[test]
fn e0302_even_split_suggests_the_nearest_pp_that_fits() {
    let mut m = llama();
    m.layers = sp(30);
    let mut d = with_model(m, 1, 64);
    set(&mut d.plan.pp, 4);
    let (_, ds) = validate(&d);
    let e = only(&ds, Code::E0302);
    assert_eq!(e.message, "30 layers cannot be split evenly over pp 4");
    assert_eq!(
        e.help.as_deref(),
        Some("use `account_for_embedding` and `account_for_loss` (30 + 2 = 32 = 4 × 8), `first_stage_layers 7 last_stage_layers 7` (8 layers on each of the 2 middle stages), `pp 2` (15 layers per stage) or `pp 1` (30 layers per stage)")
    );
}

#[test]
fn e0302_uneven_middle_layers_suggest_end_counts() {
    let mut m = llama();
    m.layers = sp(30);
    let mut d = with_model(m, 1, 64);
    set(&mut d.plan.pp, 4);
    set(&mut d.plan.first_stage_layers, 5);
    set(&mut d.plan.last_stage_layers, 6);
    let (_, ds) = validate(&d);
    assert_eq!(codes(&ds), vec![Code::E0302]);
    let e = &ds[0];
    assert_eq!(
        e.message,
        "19 middle layers cannot be split evenly over 2 middle stages"
    );
    assert_eq!(e.primary.loc, loc(&d.plan.first_stage_layers));
    assert!(secondary_locs(e).contains(&loc(&d.plan.last_stage_layers)));
    assert_eq!(
        e.help.as_deref(),
        Some(
            "use `first_stage_layers 4` (layers: first 4, 10 on each of 2 middle stages, last 6) or \
             `last_stage_layers 5` (layers: first 5, 10 on each of 2 middle stages, last 5)"
        )
    );
}

#[test]
fn e0302_end_stage_layers_must_divide_by_vpp() {
    let mut d = base(1, 16);
    set(&mut d.plan.pp, 4);
    set(&mut d.plan.vpp, 2);
    set(&mut d.plan.first_stage_layers, 3);
    let (_, ds) = validate(&d);
    let e = only(&ds, Code::E0302);
    assert_eq!(
        e.message,
        "`first_stage_layers` 3 is not divisible by vpp 2"
    );
    assert_eq!(e.primary.loc, loc(&d.plan.first_stage_layers));
    // 32 − 2 = 30 over 3 stages = 10, divisible by 2.
    assert_eq!(
        e.help.as_deref(),
        Some(
            "use `first_stage_layers 2` (layers: first 2, 10 on each of 2 middle stages, last 10)"
        )
    );
}

// ------------------------------------------------------------------ E0303, E0304

fn gpt_small() -> Model {
    model(768, 12, 12, 50257, 1024)
}

#[test]
fn e0303_heads_not_divisible_by_tp_suggests_valid_tp() {
    let mut d = with_model(gpt_small(), 1, 64);
    set(&mut d.plan.tp, 8);
    let (_, ds) = validate(&d);
    assert_eq!(codes(&ds), vec![Code::E0303]);
    let e = &ds[0];
    assert_eq!(e.message, "12 attention heads cannot be split over tp 8");
    assert_eq!(e.primary.loc, loc(&d.plan.tp));
    assert_eq!(secondary_locs(e), vec![d.model.heads.loc]);
    assert_eq!(
        e.help.as_deref(),
        Some("use `tp 4` or `tp 2` (divides 12 heads and fits 16 GPUs)")
    );
    set(&mut d.plan.tp, 4);
    assert!(validate(&d).1.iter().all(|d| d.code != Code::E0303));
}

#[test]
fn e0304_kv_groups_neither_multiple_nor_divisor_of_tp() {
    let mut m = gpt_small();
    set(&mut m.kv_groups, 3);
    let mut d = with_model(m, 1, 64);
    set(&mut d.plan.tp, 2);
    let (_, ds) = validate(&d);
    assert_eq!(codes(&ds), vec![Code::E0304]);
    let e = &ds[0];
    assert_eq!(
        e.message,
        "`kv_groups` 3 is neither a multiple nor a divisor of tp 2"
    );
    assert_eq!(e.primary.loc, loc(&d.plan.tp));
    assert_eq!(secondary_locs(e), vec![loc(&d.model.kv_groups)]);
    assert_eq!(e.help.as_deref(), Some("use `tp 1`"));
    // tp a multiple of kv_groups is fine in current Megatron (each rank holds one group).
    let mut m = llama();
    set(&mut m.kv_groups, 4);
    let mut d = with_model(m, 1, 64);
    set(&mut d.plan.tp, 8);
    set(&mut d.plan.sp, true);
    assert!(validate(&d).1.iter().all(|d| d.code != Code::E0304));
}

#[test]
fn e0304_is_not_reported_when_kv_groups_equals_heads_and_e0303_fires_for_the_same_tp() {
    // The stdlib writes `kv_groups` equal to heads on multi-head models (llama2_7b).
    let mut m = gpt_small();
    set(&mut m.kv_groups, 12);
    let mut d = with_model(m, 1, 64);
    set(&mut d.plan.tp, 8);
    let (_, ds) = validate(&d);
    assert_eq!(codes(&ds), vec![Code::E0303]);
    assert_eq!(
        ds[0].message,
        "12 attention heads cannot be split over tp 8"
    );
    // With distinct kv groups, both rules are separate problems.
    let mut m = gpt_small();
    set(&mut m.kv_groups, 3);
    let mut d = with_model(m, 1, 64);
    set(&mut d.plan.tp, 8);
    assert_eq!(codes(&validate(&d).1), vec![Code::E0303, Code::E0304]);
}

// ------------------------------------------------------------------ E0305, E0306

#[test]
fn e0305_global_batch_not_divisible_suggests_neighbours() {
    let mut d = def(llama(), cluster(&[("nvlink", 8)], 80), plan(2, 100));
    set(&mut d.plan.pp, 2);
    let (_, ds) = validate(&d);
    assert_eq!(codes(&ds), vec![Code::E0305]);
    let e = &ds[0];
    assert_eq!(
        e.message,
        "`global_batch` 100 is not divisible by micro_batch 2 × dp 4 = 8"
    );
    assert_eq!(e.primary.loc, d.plan.global_batch.loc);
    assert_eq!(secondary_locs(e), vec![d.plan.micro_batch.loc]);
    assert_eq!(e.notes, vec!["dp 4 = 8 GPUs / (tp 1 × pp 2)".to_string()]);
    assert_eq!(
        e.help.as_deref(),
        Some("use `global_batch 96` or `global_batch 104`")
    );
}

#[test]
fn e0306_interleaved_needs_a_multiple_of_pp_microbatches() {
    let mut d = base(1, 24);
    set(&mut d.plan.pp, 4);
    set(&mut d.plan.vpp, 2);
    let (_, ds) = validate(&d);
    assert_eq!(codes(&ds), vec![Code::E0306]);
    let e = &ds[0];
    assert_eq!(
        e.message,
        "interleaved schedule needs a microbatch count that is a multiple of pp 4, found 6"
    );
    assert_eq!(e.primary.loc, d.plan.global_batch.loc);
    assert_eq!(
        secondary_locs(e),
        vec![d.plan.micro_batch.loc, loc(&d.plan.pp), loc(&d.plan.vpp)]
    );
    assert_eq!(
        e.help.as_deref(),
        Some("use `global_batch 16` (4 microbatches) or `global_batch 32` (8 microbatches)")
    );
    d.plan.global_batch = sp(8);
    let (_, ds) = validate(&d);
    let e = only(&ds, Code::E0306);
    assert_eq!(
        e.message,
        "interleaved schedule needs at least pp 4 microbatches, found 2"
    );
    assert_eq!(
        e.help.as_deref(),
        Some("use `global_batch 16` (4 microbatches)")
    );
    d.plan.global_batch = sp(32);
    assert!(validate(&d).1.is_empty());
}

// ------------------------------------------------------------------ E0307

#[test]
fn e0307_vpp_needs_pp_above_1_and_overlap_p2p_at_pp_2() {
    let mut d = base(1, 16);
    set(&mut d.plan.vpp, 2);
    let (_, ds) = validate(&d);
    let e = only(&ds, Code::E0307);
    assert_eq!(e.message, "`vpp` 2 needs pipeline parallelism but pp is 1");
    assert_eq!(e.primary.loc, loc(&d.plan.vpp));

    set(&mut d.plan.pp, 2);
    let (_, ds) = validate(&d);
    let e = only(&ds, Code::E0307);
    assert_eq!(e.message, "`vpp` 2 with pp 2 needs `overlap_p2p`");
    assert_eq!(secondary_locs(e), vec![loc(&d.plan.pp)]);
    assert_eq!(e.help.as_deref(), Some("add `overlap_p2p` to the plan"));

    set(&mut d.plan.overlap_p2p, true);
    let (s, ds) = validate(&d);
    assert!(ds.is_empty(), "{ds:#?}");
    assert!(s.unwrap().flags.overlap_p2p);
}

// ------------------------------------------------------------------ E0308

#[test]
fn e0308_context_parallel_needs_seq_divisible_by_2cp() {
    let mut m = llama();
    m.seq = sp(2050);
    let mut d = with_model(m, 1, 64);
    set(&mut d.plan.cp, 2);
    let (_, ds) = validate(&d);
    assert_eq!(codes(&ds), vec![Code::E0308]);
    let e = &ds[0];
    assert_eq!(e.message, "`seq` 2050 is not a multiple of 2 × cp 2 = 4");
    assert_eq!(e.primary.loc, loc(&d.plan.cp));
    assert_eq!(secondary_locs(e), vec![d.model.seq.loc]);
    assert_eq!(e.help.as_deref(), Some("use `seq 2048` or `seq 2052`"));
}

#[test]
fn e0308_sequence_parallel_needs_seq_divisible_by_tp() {
    let mut m = llama();
    m.seq = sp(2052);
    let mut d = with_model(m, 1, 64);
    set(&mut d.plan.tp, 8);
    set(&mut d.plan.sp, true);
    let (_, ds) = validate(&d);
    assert_eq!(codes(&ds), vec![Code::E0308]);
    let e = &ds[0];
    assert_eq!(e.message, "with `sp`, seq 2052 is not divisible by tp 8");
    assert_eq!(e.primary.loc, loc(&d.plan.sp));
    assert_eq!(secondary_locs(e), vec![d.model.seq.loc, loc(&d.plan.tp)]);
    assert_eq!(
        e.help.as_deref(),
        Some("use `seq 2048`, `seq 2056` or no `sp`")
    );
}

// ------------------------------------------------------------------ E0309

fn moe() -> Model {
    let mut m = llama();
    set(&mut m.experts, 8);
    set(&mut m.topk, 2);
    m
}

#[test]
fn e0309_ep_on_a_dense_model() {
    let mut d = base(1, 64);
    set(&mut d.plan.ep, 2);
    let (_, ds) = validate(&d);
    let e = only(&ds, Code::E0309);
    assert_eq!(
        e.message,
        "`ep` 2 needs a mixture-of-experts model but `m` is dense"
    );
    assert_eq!(e.primary.loc, loc(&d.plan.ep));
    assert_eq!(secondary_locs(e), vec![d.model.loc]);
}

#[test]
fn e0309_ep_on_a_dense_model_is_one_error_and_no_w0001_about_the_rejected_ep_group() {
    // ep 16 on 16 GPUs of 8 per node: the grid divides, but the model is dense; the ep group
    // would cross `ib`, which is not worth a warning once ep itself is rejected.
    let mut d = base(1, 64);
    set(&mut d.plan.ep, 16);
    let (_, ds) = validate(&d);
    assert_eq!(codes(&ds), vec![Code::E0309], "{ds:#?}");
    assert!(ds[0].notes.is_empty());
}

#[test]
fn e0309_reports_the_first_failing_ep_rule_with_the_others_as_notes() {
    // 8 experts over ep 3 on 16 GPUs: neither divides.
    let mut d = with_model(moe(), 1, 64);
    set(&mut d.plan.ep, 3);
    let (_, ds) = validate(&d);
    assert_eq!(codes(&ds), vec![Code::E0309], "{ds:#?}");
    let e = &ds[0];
    assert_eq!(e.message, "8 experts cannot be split over ep 3");
    assert_eq!(
        e.notes,
        vec!["`ep` 3 also breaks: cluster has 16 GPUs, not a multiple of etp 1 × ep 3 × pp 1 = 3"]
    );
    assert_eq!(e.help.as_deref(), Some("use `ep 2` or `ep 4`"));
}

#[test]
fn w0001_is_not_reported_for_a_tp_group_that_e0303_rejects() {
    // 16 heads over tp 12 on 24 GPUs (nvlink 8 × ib 3): tp 12 would cross `ib`.
    let mut d = base(1, 48);
    d.cluster = cluster(&[("nvlink", 8), ("ib", 3)], 80);
    set(&mut d.plan.tp, 12);
    let (_, ds) = validate(&d);
    assert!(ds.iter().any(|d| d.code == Code::E0303), "{ds:#?}");
    assert!(ds.iter().all(|d| d.code != Code::W0001), "{ds:#?}");
}

#[test]
fn e0309_experts_not_divisible_by_ep() {
    let mut d = with_model(moe(), 1, 64);
    set(&mut d.plan.ep, 16);
    set(&mut d.model.experts, 12);
    let (_, ds) = validate(&d);
    let e = ds
        .iter()
        .find(|d| d.message.starts_with("12 experts"))
        .expect("E0309");
    assert_eq!(e.code, Code::E0309);
    assert_eq!(e.message, "12 experts cannot be split over ep 16");
    assert_eq!(secondary_locs(e), vec![loc(&d.model.experts)]);
    assert_eq!(e.help.as_deref(), Some("use `ep 4` or `ep 2`"));
}

#[test]
fn e0309_moe_with_tp_needs_sp_and_expert_grid_must_divide_world() {
    let mut d = with_model(moe(), 1, 64);
    set(&mut d.plan.tp, 2);
    let (_, ds) = validate(&d);
    let e = only(&ds, Code::E0309);
    assert_eq!(
        e.message,
        "mixture-of-experts model `m` with tp 2 needs `sp`"
    );
    assert_eq!(e.help.as_deref(), Some("add `sp` to the plan"));

    set(&mut d.plan.sp, true);
    set(&mut d.plan.pp, 2);
    set(&mut d.plan.ep, 8);
    let (_, ds) = validate(&d);
    let e = only(&ds, Code::E0309);
    assert_eq!(
        e.message,
        "cluster has 16 GPUs, not a multiple of etp 2 × ep 8 × pp 2 = 32"
    );
    assert_eq!(e.primary.loc, loc(&d.plan.ep));
    assert_eq!(e.help.as_deref(), Some("use `ep 4` or `ep 2`"));

    set(&mut d.plan.ep, 4);
    let (s, ds) = validate(&d);
    assert!(ds.iter().all(|d| d.code != Code::E0309), "{ds:#?}");
    let s = s.expect("valid");
    // 16 GPUs / (etp 2 × ep 4 × pp 2).
    assert_eq!(s.expert_dp, 1);
}

// ------------------------------------------------------------------ E0310

#[test]
fn e0310_overlap_param_gather_needs_distributed_optimizer_and_grad_overlap() {
    let mut d = base(1, 64);
    d.plan.distributed_optimizer = None;
    set(&mut d.plan.overlap_param_gather, true);
    let (_, ds) = validate(&d);
    assert_eq!(codes(&ds), vec![Code::E0310, Code::E0310]);
    assert_eq!(
        ds[0].message,
        "`overlap_param_gather` needs `distributed_optimizer`"
    );
    assert_eq!(
        ds[0].help.as_deref(),
        Some("add `distributed_optimizer` to the plan")
    );
    assert_eq!(
        ds[1].message,
        "`overlap_param_gather` needs `overlap_grad_reduce`"
    );
    assert_eq!(ds[1].primary.loc, loc(&d.plan.overlap_param_gather));
    set(&mut d.plan.distributed_optimizer, true);
    set(&mut d.plan.overlap_grad_reduce, true);
    assert!(validate(&d).1.is_empty());
}

#[test]
fn e0310_delay_flags_need_their_overlap() {
    let mut d = base(1, 64);
    set(&mut d.plan.delay_param_gather, true);
    set(&mut d.plan.delay_grad_reduce, true);
    let (_, ds) = validate(&d);
    assert_eq!(codes(&ds), vec![Code::E0310, Code::E0310]);
    assert_eq!(
        ds[0].message,
        "`delay_param_gather` needs `overlap_param_gather`"
    );
    assert_eq!(ds[0].primary.loc, loc(&d.plan.delay_param_gather));
    assert_eq!(
        ds[1].message,
        "`delay_grad_reduce` needs `overlap_grad_reduce`"
    );
    assert_eq!(ds[1].primary.loc, loc(&d.plan.delay_grad_reduce));
    // A flag written `off` is no flag.
    let mut d = base(1, 64);
    set(&mut d.plan.delay_grad_reduce, false);
    assert!(validate(&d).1.is_empty());
}

// ------------------------------------------------------------------ E0311

#[test]
fn e0311_schedule_must_match_vpp_and_pp() {
    let mut d = base(1, 64);
    set(&mut d.plan.pp, 4);
    set(&mut d.plan.schedule, ScheduleKind::Interleaved);
    let (_, ds) = validate(&d);
    let e = only(&ds, Code::E0311);
    assert_eq!(
        e.message,
        "`schedule interleaved` needs more than one model chunk per stage (vpp > 1)"
    );
    assert_eq!(e.primary.loc, loc(&d.plan.schedule));
    assert_eq!(
        e.help.as_deref(),
        Some("add `vpp 2`, or remove `schedule interleaved`")
    );

    set(&mut d.plan.vpp, 2);
    set(&mut d.plan.schedule, ScheduleKind::Gpipe);
    let (_, ds) = validate(&d);
    let e = only(&ds, Code::E0311);
    assert_eq!(
        e.message,
        "`schedule gpipe` cannot run vpp 2 model chunks per stage"
    );
    assert_eq!(secondary_locs(e), vec![loc(&d.plan.vpp)]);

    let mut d = base(1, 64);
    set(&mut d.plan.schedule, ScheduleKind::Gpipe);
    let (_, ds) = validate(&d);
    assert_eq!(
        only(&ds, Code::E0311).message,
        "`schedule gpipe` needs pipeline parallelism but pp is 1"
    );
    // `1f1b` with pp = 1 is a no-op, not an error.
    set(&mut d.plan.schedule, ScheduleKind::OneFOneB);
    assert!(validate(&d).1.is_empty());
}

// ------------------------------------------------------------------ W0001

#[test]
fn w0001_tp_group_crossing_nodes() {
    let mut d = base(1, 64);
    set(&mut d.plan.tp, 16);
    set(&mut d.plan.sp, true);
    let (s, ds) = validate(&d);
    let w = only(&ds, Code::W0001);
    assert_eq!(w.severity, Severity::Warning);
    assert_eq!(w.message, "tp group of 16 GPUs spans the slower dim `ib`");
    assert_eq!(w.primary.loc, loc(&d.plan.tp));
    assert_eq!(
        secondary_locs(w),
        vec![d.cluster.dims[1].size.loc, d.cluster.dims[0].size.loc]
    );
    assert_eq!(
        w.help.as_deref(),
        Some("use `tp 8` to keep each tp group inside `nvlink` (8 GPUs)")
    );
    assert!(s.is_some(), "warnings do not block");

    set(&mut d.plan.tp, 8);
    assert!(validate(&d).1.iter().all(|d| d.code != Code::W0001));
}

#[test]
fn w0001_cp_group_crossing_nodes() {
    let mut d = base(1, 64);
    set(&mut d.plan.tp, 8);
    set(&mut d.plan.cp, 2);
    let (_, ds) = validate(&d);
    let w = only(&ds, Code::W0001);
    assert_eq!(
        w.message,
        "cp group (tp 8 × cp 2 = 16 consecutive GPUs) spans the slower dim `ib`"
    );
    assert_eq!(w.primary.loc, loc(&d.plan.cp));
    assert!(secondary_locs(w).contains(&loc(&d.plan.tp)));
}

// ------------------------------------------------------------------ W0003

#[test]
fn w0003_bubble_above_a_quarter_suggests_batch_or_vpp() {
    let mut d = base(1, 16);
    set(&mut d.plan.pp, 8);
    let (s, ds) = validate(&d);
    assert!(s.is_some());
    let w = only(&ds, Code::W0003);
    assert_eq!(
        w.message,
        "pipeline bubble is 46.7% of the iteration (pp 8, 8 microbatches)"
    );
    assert_eq!(w.primary.loc, loc(&d.plan.pp));
    assert_eq!(
        secondary_locs(w),
        vec![d.plan.global_batch.loc, d.plan.micro_batch.loc]
    );
    assert_eq!(
        w.help.as_deref(),
        Some("raise `global_batch` to 42 (21 microbatches, bubble 25.0%) or use `vpp 4` (bubble 17.9%)")
    );
    // 21 microbatches: exactly 25%, not above.
    d.plan.global_batch = sp(42);
    assert!(validate(&d).1.iter().all(|d| d.code != Code::W0003));
}

#[test]
fn w0003_suggests_a_smaller_micro_batch() {
    let mut d = base(4, 64);
    set(&mut d.plan.pp, 4);
    let (_, ds) = validate(&d);
    let w = only(&ds, Code::W0003);
    // dp 4, m = 64 / (4 × 4) = 4: bubble 3/7. 25% needs m ≥ 3·(pp − 1) = 9.
    assert_eq!(
        w.message,
        "pipeline bubble is 42.9% of the iteration (pp 4, 4 microbatches)"
    );
    assert_eq!(
        w.help.as_deref(),
        Some(
            "raise `global_batch` to 144 (9 microbatches, bubble 25.0%), lower `micro_batch` to 1 \
             (16 microbatches, bubble 15.8%) or use `vpp 4` (bubble 15.8%)"
        )
    );
    // Two microbatches per replica: no smaller micro_batch reaches 9, no vpp applies (m < pp).
    d.plan.global_batch = sp(32);
    let (_, ds) = validate(&d);
    let w = only(&ds, Code::W0003);
    assert_eq!(
        w.message,
        "pipeline bubble is 60.0% of the iteration (pp 4, 2 microbatches)"
    );
    assert_eq!(
        w.help.as_deref(),
        Some("raise `global_batch` to 144 (9 microbatches, bubble 25.0%)")
    );
}

// ------------------------------------------------------------------ W0006

#[test]
fn w0006_sp_without_tp_is_turned_off() {
    let mut d = base(1, 64);
    set(&mut d.plan.sp, true);
    let (s, ds) = validate(&d);
    assert_eq!(codes(&ds), vec![Code::W0006]);
    assert_eq!(ds[0].message, "`sp` has no effect with tp 1");
    assert_eq!(ds[0].primary.loc, loc(&d.plan.sp));
    assert!(!s.unwrap().sp);
}

// ------------------------------------------------------------------ E0312, W0007

fn stdlib_like() -> Vec<StdlibGpu> {
    use crate::ty::Precision::*;
    vec![
        StdlibGpu {
            name: "a100_80g".into(),
            precisions: vec![Bf16],
            arch: crate::ty::GpuArch::Ampere,
        },
        StdlibGpu {
            name: "h100_sxm".into(),
            precisions: vec![Bf16, Fp8],
            arch: crate::ty::GpuArch::Hopper,
        },
        StdlibGpu {
            name: "b200".into(),
            precisions: vec![Bf16, Fp8, Fp4],
            arch: crate::ty::GpuArch::Blackwell,
        },
    ]
}

#[test]
fn e0312_fp8_on_a_gpu_without_an_fp8_peak_names_the_gpus_that_have_one() {
    let mut d = base(1, 64);
    set(&mut d.plan.precision, crate::ty::Precision::Fp8);
    let gpus = stdlib_like();
    let (s, ds) = validate_in(&d, &gpus);
    assert!(s.is_none());
    let e = only(&ds, Code::E0312);
    assert_eq!(
        e.message,
        "`precision fp8` on `h100_sxm`, which has no FP8 tensor cores"
    );
    assert_eq!(e.primary.loc, loc(&d.plan.precision));
    assert_eq!(secondary_locs(e), vec![d.cluster.gpu_loc]);
    assert_eq!(
        e.help.as_deref(),
        Some("use a GPU with FP8 tensor cores (`h100_sxm` or `b200`), or `precision bf16`")
    );
    // With its FP8 peak written, the same GPU runs the plan, at that peak.
    d.cluster.gpu.fp8_peak = Some(Spanned::new(FlopsPerSec(1979e12), loc(&d.plan.precision)));
    let (s, ds) = validate_in(&d, &gpus);
    assert!(ds.iter().all(|d| d.code != Code::E0312), "{ds:#?}");
    let s = s.unwrap();
    assert_eq!(
        s.cluster.gpu.peak_for(s.recipe.gemm),
        Some(FlopsPerSec(1979e12))
    );
}

#[test]
fn e0312_fp4_on_an_fp8_gpu_offers_fp8_and_without_a_catalog_the_key() {
    let mut d = base(1, 64);
    set(&mut d.plan.precision, crate::ty::Precision::Fp4);
    d.cluster.gpu.fp8_peak = Some(Spanned::new(FlopsPerSec(1979e12), d.cluster.gpu_loc));
    let e = only(&validate_in(&d, &stdlib_like()).1, Code::E0312).clone();
    assert_eq!(
        e.help.as_deref(),
        Some("use a GPU with FP4 tensor cores (`b200`), or `precision fp8`")
    );
    assert_eq!(
        e.notes,
        vec!["`h100_sxm` runs `bf16` and `fp8`".to_string()]
    );
    let e = only(&validate(&d).1, Code::E0312).clone();
    assert_eq!(
        e.help.as_deref(),
        Some("use a GPU with an `fp4_peak`, or `precision fp8`")
    );
}

#[test]
fn w0007_says_nothing_for_any_arch_of_this_release_every_one_has_a_calibration() {
    for &arch in crate::ty::GpuArch::ALL {
        let mut d = base(1, 64);
        set(&mut d.cluster.gpu.arch, arch);
        let (s, ds) = validate(&d);
        assert!(s.is_some(), "{arch:?}");
        assert!(
            ds.iter().all(|d| d.code != Code::W0007),
            "{arch:?}: {ds:#?}"
        );
    }
}

// ------------------------------------------------------------------ E0401, W0005

#[test]
fn e0401_stage_over_memory_names_the_cheapest_fix() {
    let mut d = def(llama(), cluster(&[("nvlink", 8)], 80), plan(1, 64));
    set(&mut d.plan.dp, 8);
    let (s, ds) = validate(&d);
    assert!(s.is_none());
    let e = only(&ds, Code::E0401);
    assert!(
        e.message.starts_with("pipeline stage 0 needs "),
        "{}",
        e.message
    );
    assert!(
        e.message.ends_with(" GiB but `h100_sxm` has 80 GiB"),
        "{}",
        e.message
    );
    assert_eq!(e.primary.loc, d.plan.loc);
    assert_eq!(
        secondary_locs(e),
        vec![d.cluster.gpu.memory.loc, loc(&d.plan.dp)]
    );
    assert_eq!(e.notes.len(), 5);
    assert!(e.notes[2].starts_with("optimizer state "), "{:?}", e.notes);
    assert_eq!(
        e.notes[4],
        "reserve 2.5 GiB kept back per GPU (CUDA context, NCCL buffers, fragmentation)"
    );
    // The first change that fits is the distributed optimizer: its peak, from the memory model.
    let mut fixed = d.clone();
    set(&mut fixed.plan.distributed_optimizer, true);
    let (s, ds) = validate(&fixed);
    assert!(ds.iter().all(|d| !d.is_error()), "{ds:#?}");
    let peak = worst(&s.unwrap().memory).unwrap().peak;
    let need = Bytes(peak.0 + venus_plan::plan::memory::DEFAULT_RESERVE.0);
    assert_eq!(
        e.help.as_deref().unwrap(),
        format!(
            "add `distributed_optimizer`: the largest stage then needs {} of 80 GiB",
            gib(need)
        )
    );
}

#[test]
fn e0401_without_a_single_fix_combines_changes() {
    // 24 GiB GPUs: the distributed optimizer alone is not enough.
    let mut d = def(llama(), cluster(&[("nvlink", 8)], 24), plan(1, 64));
    set(&mut d.plan.pp, 2);
    // Korthikanti's unfused attention, whose scores selective recomputation drops.
    d.plan.attention = Some(sp(crate::ty::Attention::Unfused));
    // No reserve, so that the figures are the stage peaks alone.
    set(&mut d.plan.reserve, crate::ty::Bytes(0));
    let (_, ds) = validate(&d);
    let e = only(&ds, Code::E0401);
    assert_eq!(
        e.message,
        "pipeline stage 0 needs 88.5 GiB but `h100_sxm` has 24 GiB"
    );
    assert_eq!(
        e.notes.last().map(String::as_str),
        Some("2 of 2 stages are over the limit")
    );
    // Alone, none of distributed optimizer, recompute, tp 2 or pp 4 fits; together the first
    // three do (selective is replaced by full in the combination).
    assert_eq!(
        e.help.as_deref(),
        Some(
            "combine `distributed_optimizer`, `recompute full` and `tp 2`: the largest stage then \
             needs 23.8 GiB of 24 GiB"
        )
    );
    // Applying that combination gives a plan that fits, with the peak the help named.
    set(&mut d.plan.distributed_optimizer, true);
    set(&mut d.plan.recompute, Recompute::Full);
    set(&mut d.plan.tp, 2);
    let (s, ds) = validate(&d);
    assert!(ds.iter().all(|d| !d.is_error()), "{ds:#?}");
    assert_eq!(gib(worst(&s.unwrap().memory).unwrap().peak), "23.8 GiB");
}

#[test]
fn w0005_stage_above_90_percent() {
    let mut d = demo();
    d.cluster.gpu.memory = sp(crate::ty::Bytes(76 * crate::ty::Bytes::GIB));
    d.plan.attention = Some(sp(crate::ty::Attention::Unfused));
    let (s, ds) = validate(&d);
    assert!(s.is_some());
    let w = only(&ds, Code::W0005);
    // The stage's 70.2 GiB peak and the default 2.5 GiB reserve.
    assert_eq!(
        w.message,
        "pipeline stage 0 needs 72.7 GiB, 96% of the 76 GiB of `h100_sxm`"
    );
    assert!(w
        .help
        .as_deref()
        .unwrap()
        .starts_with("use `recompute selective`: the largest stage then needs "));
}

// ------------------------------------------------------------------ robustness

#[test]
fn world_above_the_limit_is_e0202() {
    let d = def(
        llama(),
        cluster(&[("nvlink", 1024), ("ib", 2048)], 80),
        plan(1, 64),
    );
    let (s, ds) = validate(&d);
    assert!(s.is_none());
    assert_eq!(codes(&ds), vec![Code::E0202]);
    assert_eq!(
        ds[0].message,
        "cluster has 2097152 GPUs, more than venusc models (1048576)"
    );
    assert_eq!(ds[0].primary.loc, d.cluster.dims[1].size.loc);
}

#[test]
fn absurd_numbers_give_diagnostics_not_panics() {
    for big in [u64::MAX, u64::MAX / 2 + 1, 1 << 40] {
        let mut m = llama();
        m.layers = sp(big);
        m.heads = sp(big);
        m.seq = sp(big);
        m.hidden = sp(big);
        m.vocab = sp(big);
        set(&mut m.experts, big);
        let mut d = with_model(m, big, big);
        set(&mut d.plan.tp, big);
        set(&mut d.plan.pp, big);
        set(&mut d.plan.cp, big);
        set(&mut d.plan.ep, big);
        set(&mut d.plan.vpp, big);
        set(&mut d.plan.dp, big);
        set(&mut d.plan.first_stage_layers, big);
        set(&mut d.plan.last_stage_layers, big);
        set(&mut d.plan.sp, true);
        let (s, ds) = validate(&d);
        assert!(s.is_none());
        assert!(ds.iter().any(|d| d.code == Code::E0301));
    }
    // Huge but valid numbers: the memory model saturates instead of overflowing.
    let mut m = llama();
    m.hidden = sp(1 << 40);
    m.seq = sp(1 << 40);
    let (s, ds) = validate(&with_model(m, 1, 16));
    assert!(s.is_none());
    assert_eq!(codes(&ds), vec![Code::E0401]);
}

#[test]
fn huge_ep_and_micro_batch_do_not_hang_the_suggestions() {
    // ep is outside tp × pp × cp × dp, so a valid world does not bound it.
    let mut m = moe();
    set(&mut m.experts, u64::MAX);
    let mut d = with_model(m, u64::MAX / 2, u64::MAX / 2 + 1);
    set(&mut d.plan.ep, u64::MAX);
    set(&mut d.plan.pp, 4);
    let (s, ds) = validate(&d);
    assert!(s.is_none());
    assert!(ds.iter().any(|d| d.code == Code::E0309), "{ds:#?}");
}

#[test]
fn w0001_expert_group_crossing_nodes() {
    let mut d = with_model(moe(), 1, 64);
    set(&mut d.plan.ep, 16);
    set(&mut d.model.experts, 16);
    let (_, ds) = validate(&d);
    let w = only(&ds, Code::W0001);
    assert_eq!(
        w.message,
        "ep group (tp 1 × ep 16 = 16 consecutive GPUs) spans the slower dim `ib`"
    );
    assert_eq!(w.primary.loc, loc(&d.plan.ep));
    assert_eq!(
        w.help.as_deref(),
        Some("ep across nodes is common (many experts); keep it if `venusc sim` shows little exposed ep communication, or use `ep 8` to keep each ep group inside `nvlink` (8 GPUs)")
    );
}

#[test]
fn every_error_is_reported_in_check_order() {
    let mut m = gpt_small();
    set(&mut m.kv_groups, 5);
    let mut d = with_model(m, 3, 100);
    set(&mut d.plan.tp, 8);
    set(&mut d.plan.vpp, 2);
    set(&mut d.plan.overlap_param_gather, true);
    let (_, ds) = validate(&d);
    assert_eq!(
        codes(&ds),
        vec![
            Code::E0303,
            Code::E0304,
            Code::E0305,
            Code::E0307,
            Code::E0310,
            // kv_groups 5 does not divide the heads either (the model's own shape, last).
            Code::E0316
        ]
    );
}

// ------------------------------------------------------------------ memory fidelity

/// Megatron-LM's theoretical memory report for the most loaded rank (first pipeline stage),
/// `megatron/training/theoretical_memory_usage.py`: weights and optimizer
/// (`compute_weight_and_optimizer_memory`, 6 + 12/dp bytes per parameter with the distributed
/// optimizer) plus activations with sp and selective recompute (`compute_activation_memory`:
/// s·b·h·(18 + 4·ffn/h) per layer over all L layers, the embedding's 8·s·b·pp + s·b·h·pp, the
/// interleaving factor, ÷ tp).
/// The plan shape Megatron's report reads.
struct MegatronPlan {
    tp: f64,
    pp: f64,
    vpp: f64,
    dp: f64,
}

/// Megatron's report for an MHA, GeLU (ffn = 4h) GPT model.
fn megatron_theoretical_bytes(
    h: f64,
    layers: f64,
    vocab_pad: f64,
    seq: f64,
    plan: MegatronPlan,
) -> f64 {
    let MegatronPlan { tp, pp, vpp, dp } = plan;
    let (s, b, ffn) = (seq, 1.0, 4.0 * h);
    // attn = 2h²·(1 + g/n)·(q/h) with MHA: g = n and q = h.
    let attn = 2.0 * h * h * 2.0;
    let mlp = 2.0 * h * ffn;
    let norms = 2.0 * h * 2.0;
    let embedding = h * vocab_pad;
    let tp_sharded = ((attn + mlp) * layers / pp + embedding) / tp;
    let replicated = norms * layers / pp;
    let weights_and_optimizer = (tp_sharded + replicated) * (6.0 + 12.0 / dp);
    let mut activations =
        s * b * h * (18.0 + 4.0 * ffn / h) * layers + 8.0 * s * b * pp + s * b * h * pp;
    if vpp > 1.0 {
        activations *= 1.0 + (pp - 1.0) / (pp * vpp);
    }
    weights_and_optimizer + activations / tp
}

#[test]
fn first_stage_memory_is_within_5_percent_of_megatrons_theoretical_report() {
    // GPT-3 175B (h 12288, 96 heads, 96 layers, vocab 51200, seq 2048), sp + selective,
    // distributed optimizer, on 1,024 GPUs: the configurations Megatron's report models.
    for (tp, pp, vpp) in [(8u64, 8u64, 1u64), (8, 16, 1), (4, 16, 2), (8, 8, 3)] {
        let dp = 1024 / (tp * pp);
        let mut d = def(
            model(12288, 96, 96, 51200, 2048),
            cluster(&[("nvlink", 8), ("ib", 128)], 80),
            plan(1, dp * pp * 4),
        );
        set(&mut d.plan.tp, tp);
        set(&mut d.plan.pp, pp);
        if vpp > 1 {
            set(&mut d.plan.vpp, vpp);
        }
        set(&mut d.plan.sp, true);
        set(&mut d.plan.recompute, crate::ty::Recompute::Selective);
        set(&mut d.plan.distributed_optimizer, true);
        let (s, _) = validate(&d);
        let s = s.expect("a valid plan");
        let ours = s.memory[0].peak.0 as f64;
        let megatron = megatron_theoretical_bytes(
            12288.0,
            96.0,
            s.padded_vocab as f64,
            2048.0,
            MegatronPlan {
                tp: tp as f64,
                pp: pp as f64,
                vpp: vpp as f64,
                dp: dp as f64,
            },
        );
        let error = (ours - megatron) / megatron;
        assert!(
            error.abs() < 0.05,
            "tp {tp} pp {pp} vpp {vpp}: ours {ours:.3e} B, Megatron {megatron:.3e} B ({:+.1}%)",
            error * 100.0
        );
    }
}

// ------------------------------------------------------------------ reserve

/// The demo at 70.2 GiB on a 76 GiB GPU (W0005 only, as `w0005_stage_above_90_percent`).
fn near_the_limit() -> ScenarioDef {
    let mut d = demo();
    d.cluster.gpu.memory = sp(crate::ty::Bytes(76 * crate::ty::Bytes::GIB));
    d.plan.attention = Some(sp(crate::ty::Attention::Unfused));
    d
}

/// Unwritten, the reserve is `plan::memory::DEFAULT_RESERVE` (2.5 GiB); `reserve 0GiB` in the
/// plan removes it. The stage peaks never hold it: only what E0401 and W0005 compare does.
#[test]
fn the_default_reserve_counts_until_the_plan_writes_reserve_0gib() {
    let mut d = near_the_limit();
    let (s0, ds0) = validate(&d);
    assert_eq!(
        only(&ds0, Code::W0005).message,
        "pipeline stage 0 needs 72.7 GiB, 96% of the 76 GiB of `h100_sxm`"
    );
    assert!(only(&ds0, Code::W0005).notes.contains(
        &"reserve 2.5 GiB kept back per GPU (CUDA context, NCCL buffers, fragmentation)"
            .to_string()
    ));
    set(&mut d.plan.reserve, crate::ty::Bytes(0));
    let (s1, ds1) = validate(&d);
    assert_eq!(
        only(&ds1, Code::W0005).message,
        "pipeline stage 0 needs 70.2 GiB, 92% of the 76 GiB of `h100_sxm`"
    );
    assert_eq!(s0.map(|s| s.memory), s1.map(|s| s.memory));
}

/// The cluster's `reserve` replaces the default, and the plan's replaces the cluster's.
#[test]
fn a_plan_reserve_wins_over_the_cluster_reserve() {
    let gib = |n: u64| crate::ty::Bytes(n * crate::ty::Bytes::GIB);
    let mut d = near_the_limit();
    set(&mut d.cluster.reserve, gib(6));
    let (s, ds) = validate(&d);
    assert!(s.is_none());
    assert_eq!(
        only(&ds, Code::E0401).message,
        "pipeline stage 0 needs 76.2 GiB but `h100_sxm` has 76 GiB"
    );
    set(&mut d.plan.reserve, gib(1));
    let (s, ds) = validate(&d);
    assert_eq!(
        s.map(|s| s.reserve()),
        Some((gib(1), venus_plan::plan::memory::ReserveSource::Plan))
    );
    assert_eq!(
        only(&ds, Code::W0005).message,
        "pipeline stage 0 needs 71.2 GiB, 94% of the 76 GiB of `h100_sxm`"
    );
}

#[test]
fn reserve_is_added_to_the_stage_peak_in_e0401() {
    let mut d = near_the_limit();
    set(
        &mut d.plan.reserve,
        crate::ty::Bytes(6 * crate::ty::Bytes::GIB),
    );
    let (s, ds) = validate(&d);
    assert!(s.is_none());
    let e = only(&ds, Code::E0401);
    assert_eq!(
        e.message,
        "pipeline stage 0 needs 76.2 GiB but `h100_sxm` has 76 GiB"
    );
    assert!(e.notes.contains(
        &"reserve 6 GiB kept back per GPU (CUDA context, NCCL buffers, fragmentation)".to_string()
    ));
    // The help's figures include the reserve too.
    let help = e.help.as_deref().unwrap_or_default();
    assert!(help.contains("of 76 GiB"), "{help}");
}

/// `venusc validate` compares a measured peak with the model's even over the GPU's memory:
/// the scenario comes back with its stage memory and E0401 still among the diagnostics, while
/// `validate` (what `check` and `sim` run) returns none.
#[test]
fn keeping_over_memory_returns_the_scenario_and_keeps_e0401() {
    let mut d = near_the_limit();
    set(
        &mut d.plan.reserve,
        crate::ty::Bytes(6 * crate::ty::Bytes::GIB),
    );
    let (none, ds) = validate(&d);
    assert!(none.is_none());
    let (kept, kept_ds) = validate_keeping_over_memory_in(&d, &[]);
    assert_eq!(kept_ds, ds);
    assert_eq!(only(&kept_ds, Code::E0401).code, Code::E0401);
    let peak = worst(&kept.expect("kept").memory).unwrap().peak;
    assert_eq!(gib(peak), "70.2 GiB");
    // An error before the memory rule still returns nothing.
    set(&mut d.plan.tp, 3);
    assert!(validate_keeping_over_memory_in(&d, &[]).0.is_none());
}

// ------------------------------------------------------------------ pipeline split keys

/// llama with `layers` over tp 8 × pp `pp` (nvlink 8 × ib pp), global batch 64.
fn pipelined(layers: u64, pp: u64) -> ScenarioDef {
    let mut m = llama();
    m.layers = sp(layers);
    let mut d = with_model(m, 1, 64);
    d.cluster.dims[1].size = sp(pp);
    set(&mut d.plan.tp, 8);
    set(&mut d.plan.pp, pp);
    d
}

fn layout(d: &mut ScenarioDef, text: &str) -> Loc {
    set(
        &mut d.plan.pipeline_layout,
        crate::ty::LayoutText {
            text: text.to_string(),
            raw: true,
        },
    );
    loc(&d.plan.pipeline_layout)
}

/// The source location of bytes `start..end` of a layout literal at `l`.
fn inside(l: Loc, start: u32, end: u32) -> Loc {
    Loc::new(
        l.file,
        venus_diag::diag::Span {
            start: l.span.start + 1 + start,
            end: l.span.start + 1 + end,
        },
    )
}

#[test]
fn e0302_126_layers_over_pp8_vpp8_suggests_accounting_the_embedding_and_loss() {
    let mut d = pipelined(126, 8);
    set(&mut d.plan.vpp, 8);
    let (_, ds) = validate(&d);
    let e = only(&ds, Code::E0302);
    assert_eq!(
        e.message,
        "126 layers cannot be split over pp 8 × vpp 8 = 64 model chunks"
    );
    assert_eq!(
        e.help.as_deref(),
        Some("use `account_for_embedding` and `account_for_loss` (126 + 2 = 128 = 64 × 2)")
    );
    set(&mut d.plan.account_for_embedding, true);
    set(&mut d.plan.account_for_loss, true);
    let (s, ds) = validate(&d);
    assert!(!codes(&ds).contains(&Code::E0302), "{ds:#?}");
    let s = s.expect("valid with both accounted");
    // Chunk 0 of stage 0 holds 1 layer (and the embedding), the last chunk of stage 7 1 (and
    // the loss), every other chunk 2; the memory table counts 15 layers on the end stages.
    assert_eq!(
        (
            s.chunk_layers(0, 0),
            s.chunk_layers(0, 1),
            s.chunk_layers(7, 7)
        ),
        (1, 2, 1)
    );
    assert_eq!(
        (s.memory[0].layers, s.memory[3].layers, s.memory[7].layers),
        (15, 16, 15)
    );
}

#[test]
fn e0302_accounting_that_does_not_split_names_the_counted_slots() {
    let mut d = pipelined(126, 8);
    set(&mut d.plan.vpp, 8);
    set(&mut d.plan.account_for_embedding, true);
    let (_, ds) = validate(&d);
    let e = only(&ds, Code::E0302);
    assert_eq!(
        e.message,
        "126 layers and the embedding (127) cannot be split over pp 8 × vpp 8 = 64 model chunks"
    );
    assert_eq!(e.primary.loc, loc(&d.plan.account_for_embedding));
    assert_eq!(
        e.help.as_deref(),
        Some("use `account_for_embedding` and `account_for_loss` (126 + 2 = 128 = 64 × 2)")
    );
}

#[test]
fn e0302_uneven_ends_with_accounting_is_megatrons_l10() {
    let mut d = pipelined(126, 16);
    set(&mut d.plan.first_stage_layers, 7);
    set(&mut d.plan.last_stage_layers, 7);
    set(&mut d.plan.account_for_loss, true);
    let (_, ds) = validate(&d);
    let e = only(&ds, Code::E0302);
    assert_eq!(e.message, "`first_stage_layers`/`last_stage_layers` cannot be combined with `account_for_embedding`/`account_for_loss`");
    assert_eq!(e.primary.loc, loc(&d.plan.account_for_loss));
    assert_eq!(e.help.as_deref(), Some("remove `account_for_embedding` and `account_for_loss`: the first and last stage layers already split the layers"));
}

#[test]
fn a_layout_sets_vpp_and_the_per_chunk_layers() {
    // 61 layers over pp 8 with `Et|(tt|)*30L`: 32 virtual stages, vpp 4.
    let mut d = pipelined(61, 8);
    layout(&mut d, "Et|(tt|)*30L");
    let (s, ds) = validate(&d);
    assert!(!ds.iter().any(Diagnostic::is_error), "{ds:#?}");
    let s = s.unwrap();
    assert_eq!(s.vpp, 4);
    assert_eq!(
        (
            s.chunk_layers(0, 0),
            s.chunk_layers(0, 1),
            s.chunk_layers(7, 3)
        ),
        (1, 2, 0)
    );
    assert_eq!((s.stage_layers(0), s.stage_layers(7)), (7, 6));
    assert_eq!(s.split.total(), 61);
}

#[test]
fn e0322_points_at_the_character_that_does_not_parse() {
    let mut d = pipelined(32, 2);
    let l = layout(&mut d, "Et*16|t*15T");
    let (_, ds) = validate(&d);
    let e = only(&ds, Code::E0322);
    assert_eq!(e.message, "`T` is not a pipeline layout symbol");
    assert_eq!(e.primary.loc, inside(l, 10, 11));
    assert_eq!(
        e.help.as_deref(),
        Some("write `t`: layout symbols are case-sensitive")
    );
}

#[test]
fn e0323_counts_the_layers_and_proposes_a_layout_that_fits() {
    let mut d = pipelined(32, 2);
    let l = layout(&mut d, "Et*15|t*16L");
    let (_, ds) = validate(&d);
    let e = only(&ds, Code::E0323);
    assert_eq!(
        e.message,
        "the pipeline layout holds 31 layers but the model has 32"
    );
    assert_eq!(e.primary.loc, l);
    assert_eq!(
        e.help.as_deref(),
        Some("add 1 `t`, e.g. `pipeline_layout \"Et*16|t*16L\"`")
    );
    // Stages that are not a multiple of pp (L02).
    let mut d = pipelined(32, 2);
    layout(&mut d, "Et*10|t*11|t*11L");
    let (_, ds) = validate(&d);
    let e = only(&ds, Code::E0323);
    assert_eq!(
        e.message,
        "the pipeline layout has 3 virtual stages, not a multiple of pp 2"
    );
    assert_eq!(
        e.help.as_deref(),
        Some("write 4 stages (pp 2 × vpp 2), e.g. `pipeline_layout \"Et*8|(t*8|)*2t*8L\"`")
    );
    // With the other split keys (L11).
    let mut d = pipelined(32, 2);
    layout(&mut d, "Et*16|t*16L");
    set(&mut d.plan.account_for_embedding, true);
    let (_, ds) = validate(&d);
    let e = only(&ds, Code::E0323);
    assert_eq!(
        e.message,
        "`pipeline_layout` cannot be combined with `account_for_embedding`"
    );
}

#[test]
fn e0324_places_the_embedding_first() {
    let mut d = pipelined(32, 2);
    let l = layout(&mut d, "t*16|Et*16L");
    let (_, ds) = validate(&d);
    let e = only(&ds, Code::E0324);
    assert_eq!(
        e.message,
        "the pipeline layout does not start with the embedding `E`"
    );
    assert_eq!(e.primary.loc, inside(l, 5, 6));
    assert_eq!(
        e.help.as_deref(),
        Some("move the `E` to the start of the first stage")
    );
}

#[test]
fn e0307_applies_to_the_vpp_a_layout_gives_at_pp_2() {
    let mut d = pipelined(32, 2);
    let l = layout(&mut d, "Et*8|(t*8|)*2t*8L");
    let (_, ds) = validate(&d);
    let e = only(&ds, Code::E0307);
    assert_eq!(e.primary.loc, l);
    set(&mut d.plan.overlap_p2p, true);
    let (s, ds) = validate(&d);
    assert!(!codes(&ds).contains(&Code::E0307), "{ds:#?}");
    assert_eq!(s.map(|s| s.vpp), Some(2));
}
