//! End-to-end tests of `venusc sim`: VenusSim's demo figures, determinism, symmetry, `expect`
//! checks and the Perfetto timeline.

use std::process::Command;

fn venusc(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_venusc"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn sim_json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["sim", "--format", "json", "--deterministic"];
    all.extend_from_slice(args);
    let (code, stdout, stderr) = venusc(&all);
    assert_eq!(code, 0, "{stderr}");
    serde_json::from_str(&stdout).unwrap()
}

fn phase(report: &serde_json::Value, name: &str) -> (f64, f64) {
    let p = &report["phases"][name];
    let round = |v: &serde_json::Value| (v.as_f64().unwrap() * 100.0).round() / 100.0;
    (round(&p["min_ms"]), round(&p["max_ms"]))
}

#[test]
fn venussim_demo_reports_venussims_own_compute_phases() {
    let r = sim_json(&["examples/venussim_demo.venus"]);
    assert_eq!(phase(&r, "forward-compute"), (227.29, 267.60));
    assert_eq!(phase(&r, "backward-compute"), (454.58, 535.19));
    assert_eq!(r["world_size"], 16);
    assert_eq!(r["scenario"], "venussim_demo");
    for field in [
        "iteration_time_ms",
        "tflops_per_gpu",
        "mfu",
        "tokens_per_second",
        "bubble_fraction",
    ] {
        assert!(
            r[field].as_f64().is_some_and(|v| v > 0.0),
            "{field}: {}",
            r[field]
        );
    }
    assert_eq!(r["memory"].as_array().unwrap().len(), 8);
    for key in [
        "stage",
        "weights_bytes",
        "gradients_bytes",
        "optimizer_bytes",
        "activations_bytes",
        "peak_bytes",
    ] {
        assert!(r["memory"][0].get(key).is_some(), "memory row lacks {key}");
    }
    for key in ["events", "simulated_ranks", "wall_ms"] {
        assert!(r["engine"].get(key).is_some(), "engine lacks {key}");
    }
}

#[test]
fn two_runs_give_byte_identical_json() {
    let run = || {
        venusc(&[
            "sim",
            "--format",
            "json",
            "--deterministic",
            "examples/venussim_demo.venus",
        ])
        .1
    };
    assert_eq!(run(), run());
}

/// The report without the `engine` section, which counts the work the engine did.
fn without_engine(mut v: serde_json::Value) -> serde_json::Value {
    v.as_object_mut().unwrap().remove("engine");
    v
}

#[test]
fn all_ranks_and_representatives_give_identical_reports_on_symmetric_plans() {
    for file in [
        "examples/venussim_demo.venus",
        "tests/fixtures/sym_tp2_cp2_64.venus",
        "tests/fixtures/sym_moe_ep_64.venus",
        "tests/fixtures/sym_tp8_pp4_vpp2_512.venus",
    ] {
        let few = sim_json(&[file]);
        let all = sim_json(&["--all-ranks", file]);
        assert!(
            few["engine"]["simulated_ranks"].as_u64() < all["engine"]["simulated_ranks"].as_u64(),
            "{file}"
        );
        assert_eq!(without_engine(few), without_engine(all), "{file}");
    }
}

#[test]
fn a_broken_expect_bound_fails_the_run_with_e0501() {
    let dir = std::env::temp_dir().join(format!("venusc-expect-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("expect.venus");
    std::fs::write(
        &file,
        "scenario s <\n  model llama2_7b\n  cluster dgx_h100\n  plan < tp 8 micro_batch 1 global_batch 64 >\n  expect < iteration_time_max 1ms >\n>\n",
    )
    .unwrap();
    let (code, stdout, stderr) = venusc(&["sim", file.to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stderr.contains("error[E0501]"), "{stderr}");
    assert!(stderr.contains("iteration_time_max"), "{stderr}");
    assert!(
        stdout.contains("iteration time"),
        "the report is still printed: {stdout}"
    );
}

#[test]
fn timeline_is_a_perfetto_trace_with_a_slice_per_node() {
    let path = std::env::temp_dir().join(format!("venusc-timeline-{}.json", std::process::id()));
    let (code, _, stderr) = venusc(&[
        "sim",
        "--timeline",
        path.to_str().unwrap(),
        "examples/venussim_demo.venus",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    std::fs::remove_file(&path).ok();
    let events = v["traceEvents"].as_array().unwrap();
    let slices = events.iter().filter(|e| e["ph"] == "X").count();
    let processes = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "process_name")
        .count();
    assert_eq!(processes, 8, "one process per simulated rank");
    assert!(
        events.iter().any(|e| e["ph"] == "X" && e["name"] == "F0.0"),
        "forward slices are named as in the schedule"
    );
    assert!(slices > 1000, "{slices}");
}

#[test]
fn timeline_of_zb_h1_names_the_input_and_weight_gradient_passes() {
    let path = std::env::temp_dir().join(format!("venusc-zb-timeline-{}.json", std::process::id()));
    let (code, _, stderr) = venusc(&[
        "sim",
        "--timeline",
        path.to_str().unwrap(),
        "tests/golden/schedule/zero_bubble.venus",
        "--scenario",
        "zb_h1_pp4_m8",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    std::fs::remove_file(&path).ok();
    let events = v["traceEvents"].as_array().unwrap();
    let pass_of = |name: &str| -> Vec<&str> {
        events
            .iter()
            .filter(|e| e["ph"] == "X" && e["name"] == name && e["tid"] == 0)
            .map(|e| e["args"]["pass"].as_str().unwrap_or("-"))
            .collect()
    };
    // 4 stages × tp 4 simulated as one representative per stage: W7 and B7 on each, F7's
    // nodes forwards.
    assert_eq!(pass_of("W7"), ["weight gradient"; 4]);
    assert!(pass_of("B7").iter().all(|&p| p == "input gradient"));
    assert!(!pass_of("B7").is_empty());
    assert!(pass_of("F7").iter().all(|&p| p == "forward"));
    assert!(!pass_of("F7").is_empty());
}

#[test]
fn emitted_demo_traces_run_on_the_engine_and_agree_with_sim() {
    let direct = sim_json(&["examples/venussim_demo.venus"]);
    for kind in ["simplified-trace", "template-trace"] {
        let dir = std::env::temp_dir().join(format!("venusc-trace-{kind}-{}", std::process::id()));
        let (code, _, stderr) = venusc(&[
            "compile",
            "examples/venussim_demo.venus",
            "--emit",
            kind,
            "-o",
            dir.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{stderr}");
        let traced = sim_json(&[
            "--trace",
            dir.to_str().unwrap(),
            "examples/venussim_demo.venus",
        ]);
        std::fs::remove_dir_all(&dir).ok();
        assert_eq!(
            phase(&traced, "forward-compute"),
            phase(&direct, "forward-compute"),
            "{kind}"
        );
        assert_eq!(
            phase(&traced, "backward-compute"),
            phase(&direct, "backward-compute"),
            "{kind}"
        );
        // The VenusSim traces have no optimizer node and no first-iteration parameter
        // all-gather; everything else is the same work.
        let (a, b) = (
            traced["iteration_time_ms"].as_f64().unwrap(),
            direct["iteration_time_ms"].as_f64().unwrap(),
        );
        assert!((a - b).abs() / b < 0.01, "{kind}: {a} vs {b}");
    }
}

#[test]
fn importing_venussims_demo_config_simulates_to_its_compute_phases() {
    let out = std::env::temp_dir().join(format!("venusc-import-{}.venus", std::process::id()));
    let (code, _, stderr) = venusc(&[
        "import",
        "tests/golden/venussim_demo/input/llm-sim-config.json",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let r = sim_json(&[out.to_str().unwrap()]);
    std::fs::remove_file(&out).ok();
    assert_eq!(phase(&r, "forward-compute"), (227.29, 267.60));
    assert_eq!(phase(&r, "backward-compute"), (454.58, 535.19));
}

#[test]
fn compile_emit_perfetto_writes_the_timeline_of_the_run() {
    let dir = std::env::temp_dir().join(format!("venusc-perfetto-{}", std::process::id()));
    let (code, _, stderr) = venusc(&[
        "compile",
        "examples/venussim_demo.venus",
        "--emit",
        "perfetto",
        "-o",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("venussim_demo.perfetto.json")).unwrap())
            .unwrap();
    std::fs::remove_dir_all(&dir).ok();
    let events = v["traceEvents"].as_array().unwrap();
    assert!(
        events
            .iter()
            .any(|e| e["ph"] == "X" && e["name"] == "B15.1"),
        "the last backward of chunk 1 is a slice"
    );
}

/// The report of `examples/sc21_gpt_1_7b.venus` with its cluster's GPU written as `gpu`:
/// the GPU is the only thing that differs between the files.
fn report_with_gpu(gpu: &str) -> serde_json::Value {
    let dir = std::env::temp_dir().join(format!("venusc-arch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let name = format!("g{}.venus", gpu.len());
    let path = dir.join(&name);
    let text = format!(
        "{gpu}\nmodel gpt : gpt_1_7b < >\ncluster selene : dgx_a100 < gpu {} nodes 4 >\n\
         plan sc21 < tp 1 dp 32 micro_batch 1 global_batch 512 recompute full >\n",
        if gpu.starts_with("gpu x") {
            "x"
        } else {
            gpu_ref(gpu)
        }
    );
    std::fs::write(&path, text).unwrap();
    let mut r = sim_json(&[path.to_str().unwrap()]);
    std::fs::remove_file(&path).unwrap();
    r["scenario"] = serde_json::Value::Null;
    without_engine(r)
}

fn gpu_ref(gpu: &str) -> &str {
    gpu.strip_prefix("# ").unwrap_or(gpu)
}

#[test]
fn a_renamed_or_inline_gpu_is_costed_as_the_gpu_it_copies() {
    // The stdlib A100 by name, a copy under another name, and an inline block inheriting it:
    // the calibration comes from `arch`, so all three predict the same iteration.
    let stdlib = report_with_gpu("# a100_80g");
    let renamed = report_with_gpu("gpu x : a100_80g < >");
    let inline = report_with_gpu("# a100_80g < >");
    assert_eq!(stdlib["iteration_time_ms"], renamed["iteration_time_ms"]);
    assert_eq!(stdlib, renamed);
    assert_eq!(stdlib, inline);
    // And the figure is the A100's (Ampere calibration), not Hopper's: a Hopper arch on the
    // same datasheet numbers predicts another iteration time.
    let hopper = report_with_gpu("# a100_80g < arch hopper >");
    assert_ne!(stdlib["iteration_time_ms"], hopper["iteration_time_ms"]);
}

/// The report of a 2-node Llama 2 7B run (tp 8 inside a node, dp 2 across) on a cluster with
/// these extra items.
fn report_with_cluster_items(tag: &str, dims: &str, items: &str) -> serde_json::Value {
    let dir = std::env::temp_dir().join(format!("venusc-fabric-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{tag}.venus"));
    let text = format!(
        "model m : llama2_7b < >\ncluster c < gpu h100_sxm\n{dims}\n{items} >\n\
         plan p < tp 8 sp dp 2 micro_batch 1 global_batch 16 >\n"
    );
    std::fs::write(&path, text).unwrap();
    let mut r = sim_json(&[path.to_str().unwrap()]);
    std::fs::remove_file(&path).unwrap();
    r["scenario"] = serde_json::Value::Null;
    without_engine(r)
}

const BARE_DIMS: &str = "dim nvlink fc 8 450GB/s 1us\ndim ib switch 2 50GB/s 5us";

#[test]
fn link_gives_a_dim_without_efficiency_the_measured_nccl_share() {
    // `link` sets 80% on NVLink through NVSwitch and 90% on InfiniBand: the same prediction
    // as writing those efficiencies on the dims.
    let linked = report_with_cluster_items(
        "linked",
        BARE_DIMS,
        "link nvlink nvswitch link ib infiniband",
    );
    let written = report_with_cluster_items(
        "written",
        "dim nvlink fc 8 450GB/s 1us 80%\ndim ib switch 2 50GB/s 5us 90%",
        "",
    );
    let bare = report_with_cluster_items("bare", BARE_DIMS, "");
    assert_eq!(linked, written);
    // Without `link` an unstated efficiency stays 100%: faster tensor-parallel traffic.
    assert!(phase(&bare, "tp-comm").1 < phase(&linked, "tp-comm").1);
    // A stated efficiency wins over the link's default.
    let stated = report_with_cluster_items(
        "stated",
        "dim nvlink fc 8 450GB/s 1us 80%\ndim ib switch 2 50GB/s 5us 90%",
        "link nvlink infiniband",
    );
    assert_eq!(stated, written);
}

#[test]
fn nvlink_sharp_shortens_tensor_parallel_all_reduce() {
    // Without `sp` the tp traffic is all-reduce, which in-network reduction nearly halves (S
    // against 2·7/8·S per GPU); with `sp` it is reduce-scatter and all-gather, which it leaves
    // alone.
    let plain = |sp: &str| {
        let dir = std::env::temp_dir().join(format!("venusc-sharp-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut out = Vec::new();
        for (tag, items) in [("plain", ""), ("sharp", "sharp nvlink")] {
            let path = dir.join(format!("{tag}{sp}.venus"));
            std::fs::write(
                &path,
                format!(
                    "model m : llama2_7b < >\ncluster c : dgx_h100 < nodes 2 {items} >\n\
                     plan p < tp 8 {sp} dp 2 micro_batch 1 global_batch 16 >\n"
                ),
            )
            .unwrap();
            out.push(sim_json(&[path.to_str().unwrap()]));
            std::fs::remove_file(&path).unwrap();
        }
        (phase(&out[0], "tp-comm").1, phase(&out[1], "tp-comm").1)
    };
    let (ring, sharp) = plain("");
    let ratio = sharp / ring;
    assert!(ratio > 0.5 && ratio < 0.65, "{sharp} vs {ring}");
    // With `sp` only the small all-reduces remain in the tp group (the vocab-parallel loss):
    // under 0.1% of the tp time moves.
    let (ring, sharp) = plain("sp");
    assert!(
        sharp <= ring && (ring - sharp) / ring < 1e-3,
        "{sharp} vs {ring}"
    );
}

#[test]
fn fat_tree_and_rails_change_only_the_traffic_they_model() {
    // dp 2 across two nodes: the gradient all-reduce is the only traffic on `ib`.
    let dims = "dim nvlink fc 8 450GB/s 1us 80%\ndim ib switch 2 50GB/s 5us 90%";
    let ideal = report_with_cluster_items("ideal", dims, "");
    // Both nodes under one leaf: nothing crosses the oversubscribed uplinks.
    let one_leaf = report_with_cluster_items("oneleaf", dims, "fat_tree ib 2 50%");
    assert_eq!(one_leaf, ideal);
    // One node per leaf at 2:1: the data-parallel all-reduce crosses leaves and slows down.
    let two_leaves = report_with_cluster_items("twoleaves", dims, "fat_tree ib 1 50%");
    assert!(phase(&two_leaves, "all-grads-sync").1 > phase(&ideal, "all-grads-sync").1);
    assert_eq!(phase(&two_leaves, "tp-comm"), phase(&ideal, "tp-comm"));
    // Rails: the dp groups join GPUs of the same local index, one rail switch apart, so the
    // prediction is that of the ideal switch.
    let rails = report_with_cluster_items("rails", dims, "rail ib");
    assert_eq!(rails, ideal);
}

#[test]
fn representatives_and_all_ranks_agree_on_fat_trees_and_rails() {
    // 4 nodes, tp 8 pp 2 dp 2: stage 0 on nodes 0-1, stage 1 on nodes 2-3. Leaves of 2 nodes
    // fit the layout (every rank of a stage crosses the same leaves), so one representative
    // per stage is simulated; leaves of 3 nodes do not (node 1 reaches node 3 across leaves,
    // node 0 reaches node 2 within one), so every rank is, and both give the same report.
    let dir = std::env::temp_dir().join(format!("venusc-fabric-sym-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (leaf, symmetric) in [(2, true), (3, false)] {
        let path = dir.join(format!("leaf{leaf}.venus"));
        std::fs::write(
            &path,
            format!(
                "model m : llama2_7b < >\ncluster c : dgx_h100 < nodes 4 rail ib fat_tree ib {leaf} 50% >\n\
                 plan p < tp 8 sp pp 2 micro_batch 1 global_batch 32 overlap_grad_reduce >\n"
            ),
        )
        .unwrap();
        let file = path.to_str().unwrap();
        let few = sim_json(&[file]);
        let all = sim_json(&["--all-ranks", file]);
        let (f, a) = (
            few["engine"]["simulated_ranks"].as_u64().unwrap(),
            all["engine"]["simulated_ranks"].as_u64().unwrap(),
        );
        assert_eq!(f < a, symmetric, "leaf {leaf}: {f} vs {a}");
        assert_eq!(without_engine(few), without_engine(all), "leaf {leaf}");
        std::fs::remove_file(&path).unwrap();
    }
}
/// DeepSeek-V3 as its report trains it (pp 16, ep 64, 2048 GPUs): the simulation runs, the
/// report carries the model card's parameter counts, and the expert all-to-all is priced.
#[test]
fn deepseek_v3_example_simulates_with_its_parameter_counts() {
    let r = sim_json(&["examples/deepseek_v3.venus"]);
    assert_eq!(r["world_size"], 2048);
    // 671B total and 37.55B active per token (37B without the input embedding, as the
    // report counts); the MTP module is apart.
    assert_eq!(r["parameters"]["total"], 671_027_286_016u64);
    assert_eq!(r["parameters"]["active"], 37_553_164_288u64);
    assert_eq!(r["parameters"]["mtp"], 11_610_103_808u64);
    assert_eq!(r["memory"].as_array().unwrap().len(), 16);
    // Megatron's FLOPs count with MLA, 3 dense layers and one MTP depth: 15,360 × 4096 tokens
    // at about 260 GFLOP each.
    let flops = r["flops_per_iteration"].as_f64().unwrap();
    assert!(
        (flops / (15360.0 * 4096.0) / 1e9 - 260.0).abs() < 5.0,
        "{flops}"
    );
    let (_, ep_max) = phase(&r, "ep-comm");
    assert!(ep_max > 0.0, "{r}");
    assert!(r["iteration_time_ms"].as_f64().unwrap() > 0.0);
    // The first stage holds the embedding and 3 dense + 1 MoE layer, the last one layer, the
    // output layer and the MTP module: both above a middle stage of 4 MoE layers.
    let peak = |s: usize| r["memory"][s]["weights_bytes"].as_u64().unwrap();
    assert!(peak(0) > peak(1) && peak(15) > peak(1), "{r}");
}

#[test]
fn qwen3_235b_example_simulates_with_its_parameter_counts() {
    let r = sim_json(&["examples/qwen3_235b_a22b.venus"]);
    assert_eq!(r["world_size"], 256);
    let b = |v: &serde_json::Value| v.as_u64().unwrap() as f64 / 1e9;
    assert!((b(&r["parameters"]["total"]) - 235.1).abs() < 0.05, "{r}");
    assert!((b(&r["parameters"]["active"]) - 22.19).abs() < 0.05, "{r}");
    assert_eq!(r["parameters"]["mtp"], 0);
}

#[test]
fn check_memory_shows_the_parameter_counts() {
    let (code, stdout, stderr) = venusc(&["check", "--memory", "examples/deepseek_v3.venus"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout
            .contains("parameters: 671.03B total, 37.55B active per token, 11.61B in MTP modules"),
        "{stdout}"
    );
}

#[test]
fn a_pipeline_layout_drives_each_stages_compute() {
    // 64 layers over pp 8: a layout of 8 per stage is the even split, to the picosecond.
    let even = sim_json(&["tests/fixtures/pipeline/even.venus"]);
    let same = sim_json(&["tests/fixtures/pipeline/same.venus"]);
    assert_eq!(even["iteration_time_ms"], same["iteration_time_ms"]);
    assert_eq!(
        phase(&even, "forward-compute"),
        phase(&same, "forward-compute")
    );
    // 4 layers on the first stage and 12 on the last: the first stage's forward takes half
    // the even stage's (the embedding aside), the last's 1.5 × plus the output layer.
    let moved = sim_json(&["tests/fixtures/pipeline/moved.venus"]);
    let (even_min, _) = phase(&even, "forward-compute");
    let (min, max) = phase(&moved, "forward-compute");
    assert_eq!((min, max), (171.54, 529.34));
    assert!(
        min < even_min / 2.0 + 2.0 && max > even_min * 1.5,
        "{min} {max} {even_min}"
    );
    assert!(
        moved["iteration_time_ms"].as_f64() > even["iteration_time_ms"].as_f64(),
        "the slowest stage sets the pace"
    );
}

#[test]
fn deepseek_v3_style_layout_over_pp8_vpp4_simulates() {
    // 61 layers, `Et|(tt|)*30L`: vpp 4 from the layout, 7 layers on stage 0 and 6 on stage 7.
    let r = sim_json(&["tests/ui/plan/valid_pipeline_layout.venus"]);
    let (min, max) = phase(&r, "forward-compute");
    assert!(min > 0.0 && min < max, "{min} {max}");
    assert_eq!(r["world_size"], 64);
}

#[test]
fn venussim_emit_refuses_a_layout_whose_chunks_differ() {
    let dir = std::env::temp_dir().join(format!("venusc-layout-emit-{}", std::process::id()));
    let out = dir.to_string_lossy().into_owned();
    let (code, _, stderr) = venusc(&[
        "compile",
        "tests/ui/plan/valid_pipeline_layout.venus",
        "--emit",
        "venussim",
        "-o",
        &out,
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("`pipeline_layout` makes them differ (stage 0: 1+2+2+2, stages 1-6: 2+2+2+2, stage 7: 2+2+2+0)"),
        "{stderr}"
    );
    // A layout of equal chunks is the even split VenusSim writes.
    let (code, _, stderr) = venusc(&[
        "compile",
        "tests/fixtures/pipeline/same.venus",
        "--emit",
        "venussim",
        "-o",
        &out,
    ]);
    assert_eq!(code, 0, "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `recompute_modules moe` reruns each MoE layer's forward before its backward, its
/// dispatch and combine all-to-alls included: 6 all-to-alls per layer and microbatch instead
/// of 4, so the expert-parallel phase grows by half; `block` recompute of half the layers
/// costs between no recompute and full recompute.
#[test]
fn moe_recompute_repeats_the_all_to_alls_and_block_recompute_costs_part_of_full() {
    let dir = std::env::temp_dir().join(format!("venusc-recompute-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, model: &str, plan: &str| {
        let path = dir.join(name);
        std::fs::write(
            &path,
            format!("model m : {model}\ncluster c : dgx_h100 < >\nplan p < {plan} >\n"),
        )
        .unwrap();
        path.to_str().unwrap().to_string()
    };
    let moe = "deepseek_v2_lite < layers 16 first_k_dense 0 >";
    let base = "ep 8 micro_batch 1 global_batch 64 distributed_optimizer recompute selective";
    let attn = sim_json(&[&write("a.venus", moe, base)]);
    let moe_rc = sim_json(&[&write(
        "b.venus",
        moe,
        &format!("{base} recompute_modules core_attn moe"),
    )]);
    let ep = |r: &serde_json::Value| r["phases"]["ep-comm"]["max_ms"].as_f64().unwrap();
    assert!(
        (ep(&moe_rc) / ep(&attn) - 1.5).abs() < 1e-9,
        "{} vs {}",
        ep(&moe_rc),
        ep(&attn)
    );
    let dense = "llama2_7b < >";
    let plan = "tp 4 pp 2 sp micro_batch 1 global_batch 64 distributed_optimizer";
    let time = |name: &str, extra: &str| {
        sim_json(&[&write(name, dense, &format!("{plan} {extra}"))])["iteration_time_ms"]
            .as_f64()
            .unwrap()
    };
    let (none, full) = (time("n.venus", ""), time("f.venus", "recompute full"));
    let block = time(
        "k.venus",
        "recompute full recompute_method block recompute_num_layers 8",
    );
    assert!(none < block && block < full, "{none} {block} {full}");
    // Half the layers rerun their forward: the cost is half of full recompute's, within the
    // pipeline's slack.
    let share = (block - none) / (full - none);
    assert!((share - 0.5).abs() < 0.02, "{share}");
    let _ = std::fs::remove_dir_all(&dir);
}
