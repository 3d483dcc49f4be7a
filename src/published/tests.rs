//! Tests of the validation harness: the table reader, row → scenario, and the committed report.

use super::scenario::{build, Source};
use super::tsv::{parse, TsvError};
use super::*;
use crate::base::Seconds;

const HEADER: &str = "id\tsource\tmodel\tparams_b\tlayers\thidden\tffn_hidden\theads\tkv_groups\tvocab\tseq_len\tglobal_batch\tmicro_batch\ttp\tpp\tvpp\tdp\tcp\tep\tseq_parallel\trecompute\tdist_optimizer\tgpu\tnum_gpus\tmetric\tvalue\tnotes";

fn sc21_row() -> Row {
    let line = "sc21_t1_10\tSC21\tGPT-1008.0B\t1008.0\t128\t25600\t102400\t160\t160\t51200\t2048\t3072\t\t8\t64\t\t6\t1\t1\tno\tfull\tno\tA100-SXM4-80GB (Selene)\t3072\ttflops_per_gpu\t163\tnotes";
    parse(&format!("{HEADER}\n{line}\n")).unwrap().remove(0)
}

#[test]
fn the_reader_finds_columns_by_name_and_leaves_empty_cells_unset() {
    let r = sc21_row();
    assert_eq!(r.id, "sc21_t1_10");
    assert_eq!(
        (r.layers, r.hidden, r.tp, r.pp),
        (Some(128), Some(25600), Some(8), Some(64))
    );
    assert_eq!((r.micro_batch, r.vpp), (None, None));
    assert_eq!(r.value, Some(163.0));
    assert_eq!(r.recompute, "full");
}

#[test]
fn the_reader_rejects_a_table_without_a_metric_column() {
    let err = parse("id\tsource\n").unwrap_err();
    let TsvError::MissingColumns(missing) = &err else {
        panic!("{err:?}");
    };
    assert_eq!(missing.len(), 25);
    assert_eq!(&missing[..2], ["model", "params_b"]);
    assert!(err
        .to_string()
        .starts_with("the table lacks 25 columns: `model`, `params_b`,"));
    let all_but_notes = HEADER.trim_end_matches("\tnotes");
    assert_eq!(
        parse(&format!("{all_but_notes}\n"))
            .unwrap_err()
            .to_string(),
        "the table has no `notes` column"
    );
    assert_eq!(parse("").unwrap_err(), TsvError::Empty);
}

#[test]
fn an_sc21_row_becomes_an_interleaved_unfused_full_recompute_scenario() {
    let b = build(&sc21_row()).unwrap();
    assert_eq!(b.source, Source::Sc21Table1);
    assert!(
        b.venus.contains("cluster c : dgx_a100 < nodes 384 >"),
        "{}",
        b.venus
    );
    // 128 layers / pp 64 = 2 per stage: the smallest divisor above 1 is 2.
    for line in [
        "  tp 8\n",
        "  pp 64\n",
        "  vpp 2\n",
        "  micro_batch 1\n",
        "  global_batch 3072\n",
        "  recompute full\n",
        "  attention unfused\n",
    ] {
        assert!(b.venus.contains(line), "{line}: {}", b.venus);
    }
    assert!(!b.venus.contains("distributed_optimizer"));
    // SC21's Megatron-LM had no p2p overlap, which the importer's (Megatron's) default turns on.
    assert!(!b.venus.contains("  overlap_p2p\n"), "{}", b.venus);
    assert!(!b.precision_fp8 && !b.moe);
    assert_eq!(b.assumed.len(), 4, "{:?}", b.assumed);
    assert!(
        b.assumed[2].starts_with("overlap_p2p off (SC21"),
        "{:?}",
        b.assumed
    );
    // The era's attention kernel is stated, not only written.
    assert!(
        b.assumed[3].starts_with("attention unfused (the era's default"),
        "{:?}",
        b.assumed
    );
}

#[test]
fn rows_without_a_plan_or_a_stdlib_gpu_are_skipped_with_a_reason() {
    let mut r = sc21_row();
    r.tp = None;
    assert_eq!(build(&r).unwrap_err().0, "tp not stated");
    let mut r = sc21_row();
    r.gpu = "TPU v5p".into();
    assert_eq!(build(&r).unwrap_err().0, "no stdlib GPU for `TPU v5p`");
}

fn bridge_row(line: &str) -> Row {
    parse(&format!("{HEADER}\n{line}\n")).unwrap().remove(0)
}

/// DeepSeek-V3 rows (multi-head latent attention, whose dims the table has no columns for)
/// inherit the stdlib `deepseek_v3`; a row "w/o MTP" turns its MTP module off.
#[test]
fn a_deepseek_v3_row_inherits_the_stdlib_model() {
    let line = "mb2509_dsv3_h100_fp8\tBridge\tDeepSeek-V3 (dropless)\t671\t61\t7168\t18432\t128\t128\t129280\t4096\t8192\t1\t2\t8\t4\t64\t1\t64\t\t\t\tH100-SXM5-80GB (DGX-H100)\t1024\ttokens_per_s_per_gpu\t1297\tnotes";
    let b = build(&bridge_row(line)).unwrap();
    assert!(
        b.venus.contains("model m : deepseek_v3 <\n  hidden 7168\n  layers 61\n  heads 128\n  vocab 129280\n  seq 4096\n  ffn 18432\n>\n"),
        "{}",
        b.venus
    );
    assert!(b.moe);
    assert!(
        b.assumed.iter().any(|a| a.starts_with("mtp_layers 1")),
        "{:?}",
        b.assumed
    );
    let line = line.replace("DeepSeek-V3 (dropless)", "DeepSeek-V3 (w/o MTP)");
    let b = build(&bridge_row(&line)).unwrap();
    assert!(b.venus.contains("  mtp_layers 0\n"), "{}", b.venus);
}

/// A Qwen3 MoE row (the table has no expert columns) maps to the stdlib model and simulates.
#[test]
fn a_qwen3_moe_row_maps_to_the_stdlib_model_and_simulates() {
    let line = "mb2606_pretrain_qwen330ba3b_h100_fp8_16g\tBridge\tQwen3-30B-A3B (MoE)\t30\t48\t2048\t6144\t32\t4\t151936\t4096\t1024\t1\t1\t1\t\t16\t1\t16\t\t\t\tH100-SXM5-80GB (DGX-H100)\t16\ttokens_per_s_per_gpu\t8826\tprecision FP8";
    let r = validate_row(bridge_row(line));
    match &r.outcome {
        Outcome::Compared { built, timing, .. } => {
            assert!(
                built.venus.contains("model m : qwen3_30b_a3b <"),
                "{}",
                built.venus
            );
            let predicted = timing.expect("a speed row").predicted;
            assert!(predicted.iteration.0 > predicted.compute.0 && predicted.compute.0 > 0.0);
        }
        Outcome::Skipped(why) => panic!("skipped: {why}"),
    }
}

#[test]
fn the_published_tflops_convert_to_the_papers_implied_iteration_time() {
    let r = sc21_row();
    let f = flops::convention_flops(&r, Source::Sc21Table1).unwrap();
    let t = flops::conversion(&r, Metric::TflopsPerGpu, f, 0.0)
        .unwrap()
        .time(163.0)
        .0;
    // published-runs.md §1.1: 102.63 s.
    assert!((t - 102.63).abs() < 0.05, "{t}");
}

#[test]
fn the_summary_is_the_mean_and_largest_absolute_error_as_fractions() {
    let row = |p: f64| RowResult {
        row: Row::default(),
        source: Source::MegaScale,
        outcome: Outcome::Compared {
            built: build(&sc21_row()).unwrap(),
            metric: Metric::IterTime,
            published: 10.0,
            predicted: p,
            timing: None,
            arch: crate::base::GpuArch::Ampere,
        },
    };
    let (a, b) = (row(11.0), row(8.0));
    let s = Summary::of([&a, &b]);
    assert_eq!(s.rows, 2);
    assert!((s.mape.unwrap() - 0.15).abs() < 1e-12);
    assert!((s.worst.unwrap() - 0.20).abs() < 1e-12);
    let none = Summary::of([]);
    assert_eq!((none.rows, none.mape, none.worst), (0, None, None));
}

/// A throughput row's error is that of its own metric: 10% more predicted time is 9.1% fewer
/// tokens per second, not +10%.
#[test]
fn a_throughput_error_is_of_the_metric_not_of_the_iteration_time() {
    let line = "mb_x\tBridge\tLlama 3 8B\t8\t32\t4096\t14336\t32\t8\t128256\t8192\t128\t1\t1\t1\t\t8\t1\t1\t\t\t\tH100-SXM5-80GB (DGX-H100)\t8\ttokens_per_s_per_gpu\t1000\tnotes";
    let row = bridge_row(line);
    let c = flops::conversion(&row, Metric::TokensPerGpu, 0.0, 0.0).unwrap();
    let published_t = c.time(1000.0);
    let r = RowResult {
        source: Source::Bridge,
        outcome: Outcome::Compared {
            built: build(&row).unwrap(),
            metric: Metric::TokensPerGpu,
            published: 1000.0,
            predicted: c.metric(Seconds(published_t.0 * 1.1)),
            timing: None,
            arch: crate::base::GpuArch::Hopper,
        },
        row,
    };
    assert!((r.error().unwrap() - (1.0 / 1.1 - 1.0)).abs() < 1e-12);
}

/// `docs/validation.md` is the harness's output on the committed copy of the table; the
/// engine is deterministic, so any change to the model that moves a number fails here until
/// the file is regenerated (`venusc validate docs/data/published-runs.tsv > docs/validation.md`).
#[test]
fn docs_validation_md_is_up_to_date() {
    let table = include_str!("../../docs/data/published-runs.tsv");
    let committed = include_str!("../../docs/validation.md");
    let now = run(table).unwrap().markdown();
    if now != committed {
        let first = now
            .lines()
            .zip(committed.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        panic!(
            "docs/validation.md is stale (first difference at line {}): regenerate it with \
             `venusc validate docs/data/published-runs.tsv > docs/validation.md`",
            first + 1
        );
    }
}

#[test]
fn nvl72_rows_take_any_multiple_of_the_tray_on_their_rack_cluster() {
    let mut r = sc21_row();
    r.gpu = "GB200 (NVL72)".into();
    r.num_gpus = Some(256);
    r.tp = Some(4);
    r.pp = Some(16);
    let b = build(&r).unwrap();
    // 256 GPUs spread evenly: 4 racks of 64, laid out by venusc.
    assert!(
        b.venus.contains("cluster c : gb200_nvl72 < gpus 256 >"),
        "{}",
        b.venus
    );
    r.gpu = "GB300 (NVL72)".into();
    r.nvlink_domain = Some(32);
    let b = build(&r).unwrap();
    assert!(
        b.venus
            .contains("cluster c : gb300_nvl72 < gpus 256 per_domain 32 >"),
        "{}",
        b.venus
    );
    // A domain as large as the rack, or one that does not divide the job, is left to venusc.
    r.nvlink_domain = Some(72);
    assert!(build(&r).unwrap().venus.contains("< gpus 256 >"));
    r.num_gpus = Some(258);
    assert_eq!(
        build(&r).unwrap_err().0,
        "258 GPUs is not a whole number of 4-GPU NVL72 trays"
    );
}

#[test]
fn every_gpu_of_the_table_outside_the_nvl72_racks_maps_to_a_stdlib_gpu_and_cluster() {
    let table = include_str!("../../docs/data/published-runs.tsv");
    let mut seen = Vec::new();
    for r in parse(table).unwrap() {
        if r.gpu.starts_with("GB200") || r.gpu.starts_with("GB300") {
            continue;
        }
        let hw = scenario::hardware_of(&r).unwrap_or_else(|s| panic!("{}: {}", r.id, s.0));
        if !seen.contains(&(r.gpu.clone(), hw.gpu, hw.cluster)) {
            seen.push((r.gpu.clone(), hw.gpu, hw.cluster));
        }
    }
    let expect = [
        ("A100-SXM4-80GB (Selene)", "a100_80g", "dgx_a100"),
        ("NVIDIA L40S", "l40s", "l40s_server"),
        ("H200-SXM-141GB", "h200", "dgx_h200"),
        ("B300 (DGX-B300)", "b300", "dgx_b300"),
        ("B200-SXM-180GB", "b200", "dgx_b200"),
        ("H100-SXM5-80GB", "h100_sxm", "dgx_h100"),
    ];
    for (text, gpu, cluster) in expect {
        assert!(
            seen.iter()
                .any(|(t, g, c)| t.as_str() == text && *g == gpu && *c == cluster),
            "{text} → {gpu} on {cluster}: {seen:?}"
        );
    }
    assert!(
        seen.iter()
            .any(|(t, g, _)| t.starts_with("H100-SXM 96GB") && *g == "h100_96g"),
        "{seen:?}"
    );
}

#[test]
fn an_h100_96gb_row_runs_on_the_dgx_h100_network_with_the_96gb_gpu() {
    let mut r = sc21_row();
    r.gpu = "H100-SXM 96GB HBM2e (Grand Teton, 500W power limit, 400 Gb/s RDMA per GPU)".into();
    r.gpu_memory_gib = Some(96.0);
    r.nic_gbps = Some(400.0);
    r.nvlink_domain = Some(8);
    let b = build(&r).unwrap();
    assert!(
        b.venus
            .contains("cluster c : dgx_h100 < gpu h100_96g nodes 384 >"),
        "{}",
        b.venus
    );
    // The same text with 80 GiB is the DGX H100's own GPU.
    r.gpu_memory_gib = Some(80.0);
    assert!(build(&r)
        .unwrap()
        .venus
        .contains("cluster c : dgx_h100 < nodes 384 >"));
}

#[test]
fn hardware_the_cluster_cannot_give_is_skipped_with_the_figures() {
    let mut r = sc21_row();
    r.nic_gbps = Some(400.0);
    assert_eq!(
        build(&r).unwrap_err().0,
        "nic_gbps 400 is not `dgx_a100`'s 200 Gb/s per GPU"
    );
    let mut r = sc21_row();
    r.gpu = "NVIDIA L40S".into();
    r.nvlink_domain = Some(8);
    assert_eq!(
        build(&r).unwrap_err().0,
        "nvlink_domain 8 is larger than `l40s_server`'s 1"
    );
}

#[test]
fn the_precision_column_picks_fp8_and_fp4_gemms() {
    let mut r = sc21_row();
    r.gpu = "B300 (DGX-B300)".into();
    r.precision = "nvfp4".into();
    let b = build(&r).unwrap();
    assert!(
        b.venus.contains("cluster c : dgx_b300 < nodes 384 >"),
        "{}",
        b.venus
    );
    assert!(b.venus.contains("  precision fp4\n"), "{}", b.venus);
    assert!(b.precision_fp8);
    r.precision = "mxfp8".into();
    assert!(build(&r).unwrap().venus.contains("  precision fp8\n"));
    r.precision = "bf16".into();
    assert!(!build(&r).unwrap().venus.contains("precision"));
}

#[test]
fn an_sc21_table2_row_with_only_t_times_p_gets_tp_8_and_the_rest_as_pp() {
    let mut r = sc21_row();
    r.id = "sc21_t2_175b_1".into();
    (r.layers, r.tp, r.pp, r.dp, r.num_gpus) = (Some(96), None, None, Some(4), Some(384));
    let b = build(&r).unwrap();
    assert_eq!(b.source, Source::Sc21Other);
    assert!(b.venus.contains("  tp 8\n  pp 12\n"), "{}", b.venus);
    assert!(b.assumed[0].starts_with("tp 8 pp 12 (Table 2 states t·p = 96"));
    // 96 GPUs of model parallelism cannot take 100 layers in whole stages of tp 8.
    r.layers = Some(100);
    assert!(build(&r).unwrap_err().0.contains("t·p = 96"));
}

#[test]
fn an_mlperf_gpt3_row_takes_the_reference_vocabulary_and_overlaps_p2p() {
    let mut r = sc21_row();
    (r.id, r.model) = ("mlperfv41_x".into(), "GPT-3 175B (MLPerf gpt3)".into());
    (r.layers, r.hidden, r.heads, r.vocab) = (Some(96), Some(12288), Some(96), None);
    (r.tp, r.pp, r.vpp, r.num_gpus) = (Some(4), Some(8), Some(6), Some(256));
    r.dist_optimizer = "yes".into();
    let b = build(&r).unwrap();
    assert_eq!(b.source, Source::Mlperf);
    assert!(b.venus.contains("vocab 50257"), "{}", b.venus);
    assert!(b.venus.contains("  overlap_p2p\n"), "{}", b.venus);
    assert!(b.venus.contains("delay_param_gather"), "{}", b.venus);
}

#[test]
fn only_sources_after_megatrons_aligned_param_gather_delay_the_gather() {
    // SC21 (2021) rows keep Megatron's older per-chunk pre-hook gather.
    let mut r = sc21_row();
    r.dist_optimizer = "yes".into();
    let b = build(&r).unwrap();
    assert!(b.venus.contains("overlap_param_gather"), "{}", b.venus);
    assert!(!b.venus.contains("delay_param_gather"), "{}", b.venus);
}

/// The MLPerf Llama 2 70B LoRA row on one DGX H100: the `task` column makes it `task lora`
/// with the rank its notes state, and the frozen base lets it simulate where pretraining's
/// 237.5 GiB per GPU was an E0401.
#[test]
fn a_lora_row_is_a_lora_plan_with_the_rank_its_notes_state_and_simulates() {
    let mut r = sc21_row();
    r.id = "mlperfv40_nvidia_llama2_70b_lora_eos".into();
    r.model = "Llama 2 70B LoRA fine-tune (MLPerf llama2_70b_lora)".into();
    (r.layers, r.hidden, r.ffn, r.heads, r.kv_groups) =
        (Some(80), Some(8192), Some(28672), Some(64), Some(8));
    (r.vocab, r.seq, r.global_batch, r.micro_batch) = (Some(32000), Some(8192), Some(8), Some(1));
    (r.tp, r.pp, r.cp, r.num_gpus) = (Some(4), Some(1), Some(1), Some(8));
    r.gpu = "H100-SXM5-80GB".into();
    r.seq_parallel = "yes".into();
    r.recompute = String::new();
    r.dist_optimizer = String::new();
    r.metric = "iter_time_s".into();
    r.value = Some(3.7125);
    r.task = "lora".into();
    r.notes = "v2: LoRA rank 16 (MLLOG lora_rank)".into();
    let b = build(&r).unwrap();
    assert!(
        b.venus
            .contains("  task lora\n  lora_rank 16\n  lora_modules linear_qkv linear_proj\n>"),
        "{}",
        b.venus
    );
    match validate_row(r).outcome {
        Outcome::Compared { predicted, .. } => assert!(predicted > 1.0),
        other => panic!("{other:?}"),
    }
}

/// FSDP rows: `--use-torch-fsdp2` with its sharding strategy on a plan Megatron's torch path
/// accepts; with a pipeline (torchtitan composes FSDP2 with its own) Megatron-FSDP stands in
/// and the scenario says so; `--use-megatron-fsdp` without a strategy takes Megatron's default.
/// The `dist_optimizer` cell "FSDP" writes no `distributed_optimizer` of its own.
#[test]
fn fsdp_rows_name_their_strategy_and_implementation() {
    let mut r = sc21_row();
    (r.layers, r.hidden, r.ffn, r.heads, r.kv_groups) =
        (Some(32), Some(4096), Some(14336), Some(32), Some(8));
    (r.vocab, r.seq, r.global_batch, r.micro_batch) = (Some(128256), Some(8192), Some(16), Some(2));
    (r.tp, r.pp, r.num_gpus) = (Some(1), Some(1), Some(8));
    r.id = "tt2412_t1_8b_8g_fsdp_tps".into();
    r.dist_optimizer = "FSDP".into();
    r.megatron_args = "--use-torch-fsdp2 --data-parallel-sharding-strategy optim_grads_params \
                       --swiglu --untie-embeddings-and-output-weights"
        .into();
    let b = build(&r).unwrap();
    assert!(
        b.venus.contains("  fsdp optim_grads_params torch\n"),
        "{}",
        b.venus
    );
    assert!(!b.venus.contains("distributed_optimizer"), "{}", b.venus);
    (r.tp, r.pp, r.num_gpus, r.global_batch) = (Some(1), Some(2), Some(8), Some(16));
    let b = build(&r).unwrap();
    assert!(
        b.venus.contains("  fsdp optim_grads_params\n"),
        "{}",
        b.venus
    );
    assert!(b
        .assumed
        .iter()
        .any(|a| a.contains("outside Megatron's --use-torch-fsdp2")));
    // The importer takes Megatron's default strategy for `--use-megatron-fsdp` alone.
    r.megatron_args = "--use-megatron-fsdp".into();
    r.dist_optimizer = String::new();
    let b = build(&r).unwrap();
    assert!(
        b.venus.contains("  fsdp optim_grads_params\n"),
        "{}",
        b.venus
    );
    // A `dist_optimizer` cell that says FSDP, with no FSDP flag: Megatron-FSDP, assumed.
    r.megatron_args = String::new();
    r.dist_optimizer = "FSDP".into();
    let b = build(&r).unwrap();
    assert!(
        b.venus.contains("  fsdp optim_grads_params\n"),
        "{}",
        b.venus
    );
    assert!(b
        .assumed
        .iter()
        .any(|a| a.starts_with("fsdp optim_grads_params (sharding")));
}

/// `--grad-reduce-in-bf16` and the precision-aware optimizer's non-fp32 dtypes become plan keys.
#[test]
fn gradient_and_optimizer_dtype_flags_become_plan_keys() {
    let mut r = sc21_row();
    r.megatron_args = "--use-precision-aware-optimizer --main-grads-dtype fp32 \
                       --main-params-dtype fp32 --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16"
        .into();
    let b = build(&r).unwrap();
    assert!(
        b.venus
            .contains("  exp_avg_dtype bf16\n  exp_avg_sq_dtype bf16\n"),
        "{}",
        b.venus
    );
    assert!(!b.venus.contains("main_params_dtype") && !b.venus.contains("grad_dtype"));
    r.megatron_args = "--grad-reduce-in-bf16 --exp-avg-dtype bf16".into();
    let b = build(&r).unwrap();
    assert!(b.venus.contains("  grad_dtype bf16\n"), "{}", b.venus);
    assert!(!b.venus.contains("exp_avg_dtype"), "{}", b.venus);
}

/// Megatron-Bridge's performance recipes reduce gradients in bf16 (`_benchmark_common`), so a
/// Bridge performance row whose flags say nothing gets `grad_dtype bf16`, stated as assumed;
/// the Kimi K2 recipe keeps fp32, and rows of other sources keep Megatron's fp32 default.
#[test]
fn megatron_bridge_performance_rows_reduce_gradients_in_bf16() {
    let line = "mb2511_gptoss120b_b200_bf16\tNVIDIA-NeMo/Megatron-Bridge docs/performance-summary-archive.md\tGPT-OSS-120B (MoE)\t117\t36\t2880\t2880\t64\t8\t201088\t4096\t512\t4\t1\t1\t1\t64\t1\t8\t\t\t\tB200 (DGX-B200)\t64\ttokens_per_s_per_gpu\t8213\tprecision BF16\t--num-experts 128 --moe-router-topk 4 --moe-ffn-hidden-size 2880 --kv-channels 64 --quick-geglu --untie-embeddings-and-output-weights";
    let v2_row = |line: &str| {
        parse(&format!("{HEADER}\tmegatron_args\n{line}\n"))
            .unwrap()
            .remove(0)
    };
    let b = build(&v2_row(line)).unwrap();
    assert!(b.venus.contains("  grad_dtype bf16\n"), "{}", b.venus);
    // `--quick-geglu` is a gated linear unit: the importer writes the SwiGLU shapes.
    assert!(b.venus.contains("  swiglu\n") && b.moe, "{}", b.venus);
    assert!(b
        .assumed
        .iter()
        .any(|a| a.starts_with("grad_dtype bf16 (unstated")));
    let kimi = line.replace("GPT-OSS-120B (MoE)", "Kimi-K2 (MoE, Muon optimizer)");
    assert!(!build(&v2_row(&kimi)).unwrap().venus.contains("grad_dtype"));
    assert!(!build(&sc21_row()).unwrap().venus.contains("grad_dtype"));
}

/// A v2 row of the Megatron-LM README's source with its own `megatron_args`.
fn readme_row(args: &str) -> Row {
    let mut r = sc21_row();
    r.id = "mlm_h100_x".into();
    r.source = "Megatron-LM README".into();
    (r.layers, r.hidden, r.ffn, r.heads, r.kv_groups) =
        (Some(32), Some(4096), Some(16384), Some(32), Some(32));
    (r.tp, r.pp, r.num_gpus, r.global_batch) = (Some(2), Some(1), Some(16), Some(64));
    r.gpu = "H100-SXM5-80GB".into();
    r.seq_parallel = "yes".into();
    r.recompute = "none".into();
    r.dist_optimizer = "yes".into();
    r.megatron_args = args.into();
    r
}

/// `megatron_args` reach the scenario only through `venusc import megatron`'s code: a flag it
/// maps becomes its key, a flag it does not model is listed as such in the scenario, and a
/// flag Megatron-LM does not have skips the row with the importer's code.
#[test]
fn megatron_args_go_through_the_importer() {
    let b = build(&readme_row("--tp-comm-overlap --cross-entropy-loss-fusion")).unwrap();
    assert!(b.venus.contains("  overlap_tp_comm\n"), "{}", b.venus);
    assert!(
        b.venus.contains(
            "# not modelled (W0012): --cross-entropy-loss-fusion: not modelled by venusc\n"
        ),
        "{}",
        b.venus
    );
    let b = build(&readme_row(
        "--hybrid-override-pattern M*M- --mamba-num-heads 64 --mamba-head-dim 64",
    ))
    .unwrap();
    for line in [
        "  hybrid_override_pattern \"M*M-\"\n",
        "  mamba_num_heads 64\n",
        "  mamba_head_dim 64\n",
    ] {
        assert!(b.venus.contains(line), "{line}: {}", b.venus);
    }
    assert_eq!(
        build(&readme_row("--num-layrs 4")).unwrap_err().0,
        "E0608: `--num-layrs` is not a flag of Megatron-LM (the row's flags through `venusc import megatron`)"
    );
}

/// Megatron's TP overlap needs sp: a row that states `--tp-comm-overlap` at tp 1 runs without
/// it, and says so, rather than failing E0310.
#[test]
fn a_tp_overlap_without_sp_is_dropped_with_the_reason() {
    let mut r = readme_row("--tp-comm-overlap");
    r.tp = Some(1);
    let b = build(&r).unwrap();
    assert!(!b.venus.contains("overlap_tp_comm\n"), "{}", b.venus);
    assert!(
        b.assumed
            .iter()
            .any(|a| a.starts_with("overlap_tp_comm off")),
        "{:?}",
        b.assumed
    );
}

/// An interleaved Megatron run overlaps its p2p (the importer follows Megatron's default since
/// 2023-10); MegaScale's 2023 Megatron-LM and torchtitan, not Megatron, do not.
#[test]
fn interleaved_megatron_rows_overlap_p2p_and_torchtitan_rows_do_not() {
    let mut r = readme_row("");
    (r.pp, r.vpp, r.num_gpus) = (Some(4), Some(2), Some(64));
    assert!(build(&r).unwrap().venus.contains("  overlap_p2p\n"));
    let mut m = r.clone();
    m.id = "megascale_mlm_x".into();
    let b = build(&m).unwrap();
    assert!(!b.venus.contains("  overlap_p2p\n"), "{}", b.venus);
    assert!(b
        .assumed
        .iter()
        .any(|a| a.starts_with("overlap_p2p off (MegaScale's 2023")));
    r.framework = "torchtitan".into();
    let b = build(&r).unwrap();
    assert!(!b.venus.contains("overlap_p2p\n"), "{}", b.venus);
    assert!(b
        .assumed
        .iter()
        .any(|a| a.starts_with("overlap_p2p off (torchtitan")));
}

#[test]
fn a_model_family_is_the_leading_letters_of_its_name_with_gpt_oss_apart() {
    let families: Vec<String> = [
        "GPT-3 175B (MLPerf gpt3)",
        "GPT3-5B",
        "Llama 3.1 405B",
        "LLAMA2-70B",
        "GPT-OSS-120B (MoE)",
        "DeepSeek-V3",
        "Qwen3-30B-A3B (MoE)",
        "175B",
    ]
    .iter()
    .map(|m| super::model_family(m))
    .collect();
    assert_eq!(
        families,
        ["gpt", "gpt", "llama", "llama", "gpt-oss", "deepseek", "qwen", "other"]
    );
}

/// A pipelined torchtitan row states the local batch only: torchtitan runs one microbatch per
/// pipeline rank (`pipeline_parallel_degree`, whatever the stages per rank), so 32 sequences
/// per rank on pp 8 are micro-batches of 4, with the interleaved schedule too; a row without
/// a pipeline keeps the stated or the default micro-batch. A pipelined row runs PyTorch's
/// pipelining runtime.
#[test]
fn torchtitan_pipelined_rows_split_the_local_batch_into_one_microbatch_per_rank() {
    let mut r = sc21_row();
    (r.layers, r.hidden, r.ffn, r.heads, r.kv_groups) =
        (Some(32), Some(4096), Some(14336), Some(32), Some(8));
    (r.vocab, r.seq, r.global_batch, r.micro_batch) = (Some(128256), Some(8192), Some(256), None);
    (r.tp, r.pp, r.num_gpus) = (Some(8), Some(8), Some(512));
    r.id = "tt2412_t5_405b_512g_1f1b_tps".into();
    r.framework = "torchtitan".into();
    r.notes = "Table 5 schedule '1F1B'; local batch 32".into();
    let b = build(&r).unwrap();
    assert!(b.venus.contains("  micro_batch 4\n"), "{}", b.venus);
    assert!(b.assumed.iter().any(
        |a| a.starts_with("micro_batch 4 (unstated; torchtitan splits the local batch into 8")
    ));
    assert!(
        b.venus.contains("  pipeline_runtime torch\n"),
        "{}",
        b.venus
    );
    r.notes = "Table 5 schedule 'Interleaved 1F1B'; local batch 32".into();
    let b = build(&r).unwrap();
    assert!(b.venus.contains("  vpp 2\n"), "{}", b.venus);
    assert!(b.venus.contains("  micro_batch 4\n"), "{}", b.venus);
    (r.pp, r.num_gpus, r.global_batch) = (Some(1), Some(64), Some(64));
    let b = build(&r).unwrap();
    assert!(b.venus.contains("  micro_batch 1\n"), "{}", b.venus);
    assert!(!b.venus.contains("pipeline_runtime"), "{}", b.venus);
}

/// Megatron-Bridge's per-tensor FP8 recipe gathers FP8 parameters (`fp8_param_gather = True`),
/// its MXFP8 and BF16 rows do not; NVIDIA's MLPerf LoRA runs put adapters on the attention
/// and keep the frozen FP8 base.
#[test]
fn bridge_fp8_and_mlperf_lora_rows_read_their_recipes_defaults() {
    let line = "mb2511_gptoss120b_b200_bf16\tNVIDIA-NeMo/Megatron-Bridge docs/performance-summary-archive.md\tGPT-OSS-120B (MoE)\t117\t36\t2880\t2880\t64\t8\t201088\t4096\t512\t4\t1\t1\t1\t64\t1\t8\t\t\t\tB200 (DGX-B200)\t64\ttokens_per_s_per_gpu\t8213\tprecision BF16\t--num-experts 128 --moe-router-topk 4 --moe-ffn-hidden-size 2880 --kv-channels 64 --quick-geglu --untie-embeddings-and-output-weights";
    let mut row = parse(&format!("{HEADER}\tmegatron_args\n{line}\n"))
        .unwrap()
        .remove(0);
    assert!(!build(&row).unwrap().venus.contains("fp8_param_gather"));
    row.precision = "fp8".into();
    let b = build(&row).unwrap();
    assert!(b.venus.contains("  fp8_param_gather\n"), "{}", b.venus);
    row.precision = "mxfp8".into();
    assert!(!build(&row).unwrap().venus.contains("fp8_param_gather"));

    let mut r = sc21_row();
    r.id = "mlperfv41_nvidia_llama2_70b_lora_h200".into();
    r.task = "lora".into();
    r.notes = "LoRA rank 16".into();
    r.precision = "fp8".into();
    let b = build(&r).unwrap();
    assert!(
        b.venus.contains("  lora_modules linear_qkv linear_proj\n"),
        "{}",
        b.venus
    );
    assert!(b.venus.contains("  fp8_param_gather\n"), "{}", b.venus);
}

/// Megatron-Bridge's Nemotron 3 recipes run the experts without tensor parallelism (`etp 1`,
/// where Megatron's default would follow the table's tp 2 and need 128 GPUs for ep 64), and
/// the Super GB200 recipe recomputes `moe_act layernorm core_attn moe`.
#[test]
fn nemotron3_bridge_rows_take_their_recipes_etp_and_recompute_modules() {
    let line = "mb2606_pretrain_nemotron3super_gb200_mxfp8_64g\tNVIDIA-NeMo/Megatron-Bridge docs/performance-summary.md\tNemotron-3-Super (hybrid MoE)\t120\t88\t4096\t2688\t32\t2\t131072\t8192\t512\t1\t2\t1\t1\t32\t1\t64\t\t\t\tGB200 (NVL72)\t64\ttokens_per_s_per_gpu\t6742\tprecision MXFP8\t--hybrid-override-pattern MEMEMEM*EMEMEMEM*EMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEM*EMEMEMEME --mamba-num-heads 128 --mamba-head-dim 64 --kv-channels 128 --num-experts 512 --moe-router-topk 22 --moe-ffn-hidden-size 2688 --moe-shared-expert-intermediate-size 5376 --moe-latent-size 1024 --squared-relu --untie-embeddings-and-output-weights";
    let mut row = parse(&format!("{HEADER}\tmegatron_args\n{line}\n"))
        .unwrap()
        .remove(0);
    row.precision = "mxfp8".into();
    let b = build(&row).unwrap();
    assert!(b.venus.contains("  etp 1\n"), "{}", b.venus);
    assert!(
        b.venus.contains("  recompute selective\n")
            && b.venus
                .contains("  recompute_modules moe_act layernorm core_attn moe\n"),
        "{}",
        b.venus
    );
    row.precision = "nvfp4".into();
    let b = build(&row).unwrap();
    assert!(!b.venus.contains("recompute_modules"), "{}", b.venus);
}

/// The committed table's row `id`, built into its scenario.
fn committed_scenario(id: &str) -> String {
    let table = include_str!("../../docs/data/published-runs.tsv");
    let row = parse(table)
        .unwrap()
        .into_iter()
        .find(|r| r.id == id)
        .unwrap_or_else(|| panic!("no row {id}"));
    build(&row)
        .unwrap_or_else(|s| panic!("{id}: {}", s.0))
        .venus
}

/// The DeepSeek-V3 and GPT-OSS rows of Megatron-Bridge's tables take their recipes' recompute
/// modules (Megatron-Bridge v0.2.0 scripts/performance/configs/*/workload_base_configs.py):
/// GB200 BF16 `mla_up_proj`, H100 `mla_up_proj mlp` (DeepSeek-V3), H100 `layernorm moe_act`
/// (GPT-OSS 120B); the GB300 DeepSeek-V3 row, whose recipe is another, takes none of them.
#[test]
fn deepseek_v3_and_gpt_oss_bridge_rows_take_their_recipes_recompute_modules() {
    for (id, modules) in [
        ("mb2511_dsv3_gb200_bf16", "mla_up_proj"),
        ("mb2509_dsv3_h100_fp8", "mla_up_proj mlp"),
        ("mb2511_gptoss120b_h100_bf16", "layernorm moe_act"),
    ] {
        let venus = committed_scenario(id);
        assert!(
            venus.contains("  recompute selective\n")
                && venus.contains(&format!("  recompute_modules {modules}\n")),
            "{id}: {venus}"
        );
    }
    let gb300 = committed_scenario("mb2511_dsv3_gb300_bf16");
    assert!(!gb300.contains("recompute_modules"), "{gb300}");
}

/// NeMo 24.07's Nemotron-4 340B reduces gradients in bf16 (its launcher config's
/// `optim.grad_sync_dtype: bf16`); the same table's Llama 3 70B row, whose config was not read,
/// keeps Megatron's fp32 default.
#[test]
fn the_nemo_nemotron_340b_row_reduces_gradients_in_bf16() {
    let venus = committed_scenario("nemo2407_h100_10");
    assert!(venus.contains("  grad_dtype bf16\n"), "{venus}");
    let llama = committed_scenario("nemo2407_h100_12");
    assert!(!llama.contains("grad_dtype"), "{llama}");
}

/// A pipelined torchtitan row with FSDP keeps its FSDP2 units gathered for the step
/// (`apply_fsdp`'s `reshard_after_forward=False` with pp > 1); without a pipeline, or on
/// Megatron, it does not.
#[test]
fn pipelined_torchtitan_fsdp_rows_keep_their_units_unsharded() {
    let mut r = sc21_row();
    (r.layers, r.hidden, r.ffn, r.heads, r.kv_groups) =
        (Some(32), Some(4096), Some(14336), Some(32), Some(8));
    (r.vocab, r.seq, r.global_batch, r.micro_batch) = (Some(128256), Some(8192), Some(256), None);
    (r.tp, r.pp, r.num_gpus) = (Some(8), Some(8), Some(512));
    r.dist_optimizer = "FSDP".into();
    r.framework = "torchtitan".into();
    r.notes = "Table 5 schedule '1F1B'; local batch 32".into();
    let b = build(&r).unwrap();
    assert!(b.venus.contains("  fsdp_keep_unsharded\n"), "{}", b.venus);
    assert!(b
        .assumed
        .iter()
        .any(|a| a.starts_with("fsdp_keep_unsharded (torchtitan")));
    (r.pp, r.num_gpus, r.global_batch) = (Some(1), Some(64), Some(64));
    assert!(!build(&r).unwrap().venus.contains("fsdp_keep_unsharded"));
    (r.pp, r.num_gpus, r.global_batch) = (Some(8), Some(512), Some(256));
    r.framework = "megatron".into();
    r.source = "NVIDIA/Megatron-LM".into();
    assert!(!build(&r).unwrap().venus.contains("fsdp_keep_unsharded"));
}

/// The 25.11 archive's GPT-OSS 120B H100 row prints micro-batch 4 and `GA 2` over 16
/// data-parallel ranks (128 sequences) beside a global batch of 512; its recipe, with the
/// row's pp 4, ep 8 and global batch, keeps micro-batch 1, which the scenario takes (and says
/// so). The B200 row's micro-batch 4 and `GA 2` over 64 ranks are its 512, and stay.
#[test]
fn bridge_row_whose_micro_batch_contradicts_its_batch_takes_the_recipes() {
    let h100 = "mb2511_gptoss120b_h100_bf16\tNVIDIA-NeMo/Megatron-Bridge docs/performance-summary-archive.md — 25.11 NeMo container, DGX-H100\tGPT-OSS-120B (MoE)\t117\t36\t2880\t2880\t64\t8\t201088\t4096\t512\t4\t1\t4\t1\t16\t1\t8\t\t\t\tH100-SXM5-80GB (DGX-H100)\t64\ttokens_per_s_per_gpu\t5630\tprecision BF16; GA 2\t--num-experts 128 --moe-router-topk 4 --moe-ffn-hidden-size 2880 --kv-channels 64 --quick-geglu --untie-embeddings-and-output-weights";
    let mut row = parse(&format!("{HEADER}\tmegatron_args\n{h100}\n"))
        .unwrap()
        .remove(0);
    let b = build(&row).unwrap();
    assert!(b.venus.contains("  micro_batch 1\n"), "{}", b.venus);
    assert!(b.assumed.iter().any(|a| a
        .starts_with("micro_batch 1 (the table's 4 contradicts its own global batch")
        && a.contains("GPT_OSS_120B_H100_BF16_BASE_CONFIG")));
    // Consistent numbers (64 ranks × 4 × 2 = 512) keep the table's micro-batch.
    (row.num_gpus, row.pp, row.dp) = (Some(256), Some(4), Some(64));
    let b = build(&row).unwrap();
    assert!(b.venus.contains("  micro_batch 4\n"), "{}", b.venus);
    // Without a stated accumulation there is nothing to contradict.
    (row.num_gpus, row.dp, row.notes) = (Some(64), Some(16), "precision BF16".into());
    assert!(build(&row).unwrap().venus.contains("  micro_batch 4\n"));
}

/// A Megatron-Bridge MoE row runs its recipe's token dispatcher, not Megatron-LM's default
/// `allgather`: the 26.06 Qwen3-235B GB300 recipe names HybridEP; the same row on H100, where
/// no 26.06 Qwen3-235B recipe row of the table names a backend, runs Bridge's `alltoall`; a
/// row whose own flags name a dispatcher keeps it; a row of another source keeps Megatron's.
#[test]
fn bridge_moe_rows_run_their_recipes_token_dispatcher() {
    let head = format!("{HEADER}\tprecision\tmegatron_args");
    let gb300 = "mb2606_pretrain_qwen3235ba22b_gb300_mxfp8_256g\tNVIDIA-NeMo/Megatron-Bridge docs/performance-summary-archive.md — 26.06 NeMo container\tQwen3-235B-A22B (MoE)\t235\t94\t4096\t12288\t64\t4\t151936\t4096\t8192\t2\t1\t4\t12\t64\t1\t32\t\t\t\tGB300 (NVL72)\t256\ttokens_per_s_per_gpu\t9015\tGA 64\tmxfp8\t--num-experts 128 --moe-router-topk 8 --moe-ffn-hidden-size 1536 --kv-channels 128 --qk-layernorm --swiglu --untie-embeddings-and-output-weights";
    let rows = |line: &str| parse(&format!("{head}\n{line}\n")).unwrap().remove(0);
    let dispatcher = |row: &Row| {
        let b = build(row).unwrap();
        let line = b
            .venus
            .lines()
            .find(|l| l.trim_start().starts_with("moe_dispatcher"))
            .map(|l| l.trim().to_string());
        (line, b.assumed)
    };

    let (d, assumed) = dispatcher(&rows(gb300));
    assert_eq!(d.as_deref(), Some("moe_dispatcher flex hybridep"));
    // The same recipe sets `moe_a2a_overlap`.
    assert!(build(&rows(gb300))
        .unwrap()
        .venus
        .contains("\n  overlap_ep_comm\n"));
    assert!(
        assumed
            .iter()
            .any(|a| a.starts_with("overlap_ep_comm (unstated")),
        "{assumed:?}"
    );
    assert!(
        assumed
            .iter()
            .any(|a| a.starts_with("moe_dispatcher flex hybridep (unstated")
                && a.contains("QWEN3_235B_A22B_PRETRAIN_CONFIG_*_FP8_MX_V2")),
        "{assumed:?}"
    );

    let h100 = gb300
        .replace("GB300 (NVL72)", "H100-SXM5-80GB (DGX-H100)")
        .replace("\tmxfp8\t", "\tfp8\t");
    let (d, assumed) = dispatcher(&rows(&h100));
    assert_eq!(d.as_deref(), Some("moe_dispatcher alltoall"));
    assert!(!assumed.iter().any(|a| a.starts_with("overlap_ep_comm")));
    assert!(assumed
        .iter()
        .any(|a| a.starts_with("moe_dispatcher alltoall (unstated")));

    let stated = format!("{gb300} --moe-token-dispatcher-type alltoall");
    let (d, assumed) = dispatcher(&rows(&stated));
    assert_eq!(d.as_deref(), Some("moe_dispatcher alltoall"));
    assert!(!assumed.iter().any(|a| a.starts_with("moe_dispatcher")));

    let other = gb300.replace("NVIDIA-NeMo/Megatron-Bridge docs", "Some paper");
    let mut row = rows(&other);
    row.id = "paper_qwen3".into();
    let (d, _) = dispatcher(&row);
    assert_eq!(d.as_deref(), Some("moe_dispatcher allgather"));
}
