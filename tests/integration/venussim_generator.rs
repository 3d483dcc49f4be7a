//! venusc's VenusSim traces against VenusSim's own generator (tests/golden/venussim, see its
//! README for the command and the VenusSim commit): for the demo and a pp 4 plan, both with
//! overlapped P2P, every template and simplified trace file, the template mapping and the output
//! rule are byte-equal to what VenusSim wrote; comm-group.json has the same content (VenusSim
//! indents it, `llm_sim.py` rewrites it anyway). CI never runs VenusSim.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use venusc::emit::{self, MemSink};
use venusc::plan::Scenario;

use super::golden_emit::{demo_scenario, scenario_of};

fn fixture_dir(plan: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/venussim")
        .join(plan)
}

/// The pp 4 plan: the imported demo with pp 4 vpp 2 dp 4 (8 microbatches).
fn pp4_scenario() -> Scenario {
    let text = std::fs::read_to_string(fixture_dir("pp4").join("pp4.venus")).unwrap();
    scenario_of("pp4.venus", &text)
}

/// Asserts that every file VenusSim wrote under `plan/kind` is byte-equal to venusc's file of
/// the same name, and returns how many were compared.
fn assert_equal_to_venussim(plan: &str, kind: &str, files: &BTreeMap<String, Vec<u8>>) -> usize {
    let dir = fixture_dir(plan).join(kind);
    let mut compared = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let theirs = std::fs::read(&path).unwrap();
        let ours = files
            .get(&name)
            .unwrap_or_else(|| panic!("venusc wrote no `{name}` ({plan} {kind})"));
        assert!(
            *ours == theirs,
            "{plan} {kind}: `{name}` differs from VenusSim's generator output"
        );
        compared += 1;
    }
    let groups: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture_dir(plan).join("comm-group.json")).unwrap())
            .unwrap();
    let ours: serde_json::Value = serde_json::from_slice(&files["comm-group.json"]).unwrap();
    assert_eq!(ours, groups, "{plan}: comm-group.json content");
    compared
}

fn template(sc: &Scenario) -> BTreeMap<String, Vec<u8>> {
    let mut sink = MemSink::new();
    emit::write_template_trace(sc, &mut sink).unwrap();
    sink.files
}

fn simplified(sc: &Scenario) -> BTreeMap<String, Vec<u8>> {
    let mut sink = MemSink::new();
    emit::write_simplified_trace(sc, &mut sink).unwrap();
    sink.files
}

#[test]
fn template_traces_of_the_demo_are_venussims_generator_output_byte_for_byte() {
    let files = template(&demo_scenario(Some(5)));
    // 8 templates, the mapping and the output rule.
    assert_eq!(
        assert_equal_to_venussim("demo", "template-trace", &files),
        10
    );
}

#[test]
fn simplified_traces_of_the_demo_are_venussims_generator_output_byte_for_byte() {
    let files = simplified(&demo_scenario(Some(5)));
    // 16 rank files and the output rule.
    assert_eq!(
        assert_equal_to_venussim("demo", "simplified-trace", &files),
        17
    );
}

#[test]
fn template_traces_of_a_pp4_plan_are_venussims_generator_output_byte_for_byte() {
    let files = template(&pp4_scenario());
    assert_eq!(assert_equal_to_venussim("pp4", "template-trace", &files), 6);
}

#[test]
fn simplified_traces_of_a_pp4_plan_are_venussims_generator_output_byte_for_byte() {
    let files = simplified(&pp4_scenario());
    assert_eq!(
        assert_equal_to_venussim("pp4", "simplified-trace", &files),
        17
    );
}

fn fixture_scenario(plan: &str) -> Scenario {
    let file = format!("{plan}.venus");
    let text = std::fs::read_to_string(fixture_dir(plan).join(&file)).unwrap();
    scenario_of(&file, &text)
}

/// Without interleaving VenusSim names each pass by its phase (`forward~warmup~i`,
/// `forward~1F1B~i`, `backward~1F1B~i`, `backward~cooldown~i`), and with `delay_grad_reduce`
/// every stage but the first issues its reduce-scatter after the cooldown's last send.
#[test]
fn template_traces_of_a_1f1b_plan_are_venussims_generator_output_byte_for_byte() {
    let files = template(&fixture_scenario("f1b"));
    assert_eq!(assert_equal_to_venussim("f1b", "template-trace", &files), 6);
    let stage1 = String::from_utf8(files["f1b~template~.4.et"].clone()).unwrap();
    for name in [
        "_forward~warmup~1\n",
        "_forward~1F1B~5\n",
        "_backward~1F1B~5\n",
        "_backward~cooldown~1\n",
    ] {
        assert_eq!(stage1.matches(name).count(), 5, "{name}");
    }
}

#[test]
fn simplified_traces_of_a_1f1b_plan_are_venussims_generator_output_byte_for_byte() {
    let files = simplified(&fixture_scenario("f1b"));
    assert_eq!(
        assert_equal_to_venussim("f1b", "simplified-trace", &files),
        17
    );
}

/// A replayed snapshot: nodes are `comp_replay_<uid>_forward~k`, and with interleaving a
/// model chunk replays the time of its virtual stage (only chunk 0 of the first stage is
/// "first"), as VenusSim's `is_pipeline_first_stage` decides.
#[test]
fn template_traces_of_a_replayed_plan_are_venussims_generator_output_byte_for_byte() {
    let files = template(&fixture_scenario("replay"));
    assert_eq!(
        assert_equal_to_venussim("replay", "template-trace", &files),
        6
    );
    let stage0 = String::from_utf8(files["replay~template~.0.et"].clone()).unwrap();
    // first 288 ms, middle 285 ms: a third of each for a forward.
    assert!(stage0.contains("comp_replay_1_forward~0\n1 0\n96000000\n"));
    assert!(stage0.contains("_forward~4\n1 17\n95000000\n"));
}

/// One overlapped `send_forward_recv_forward` of stage 1, as VenusSim's generator writes it:
/// receive and send both hang off the forward before the call, one merge joins the three, then
/// the 1-op timer node; the next forward depends on the timer node.
#[test]
fn an_overlapped_call_is_issued_in_parallel_merged_at_once_and_timer_synced() {
    let files = template(&demo_scenario(Some(5)));
    let t = String::from_utf8(files["demo~template~.2.et"].clone()).unwrap();
    assert!(t.starts_with("1447\n"), "{}", &t[..20]);
    assert_eq!(t.matches("_timer_sync_node\n").count(), 225);
    let call = "3\nnccl:recv_from_-1_to_0_tag_1\n1 2\n16777216 2 -1 0 1\n\
                4\nnccl:send_from_0_to_1_tag_0\n1 2\n16777216 2 0 1 0\n\
                5\ncomp_771_merge_branch\n3 2 3 4\n1 1\n\
                6\ncomp_770_timer_sync_node\n1 5\n1 1\n\
                7\ncomp_772_forward~1\n1 6\n";
    assert!(t.contains(call), "stage 1's second forward call");
}

fn venusc(args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_venusc"))
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

fn temp_dir(what: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("venusc-{what}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// VenusSim's own 5-iteration demo traces, laid out as `llm_sim.py` leaves them (`trace/` and
/// `sim-config/comm-group.json`), in a fresh directory.
fn venussim_demo_run() -> PathBuf {
    let run = temp_dir("venussim-demo-run");
    std::fs::create_dir_all(run.join("trace")).unwrap();
    std::fs::create_dir_all(run.join("sim-config")).unwrap();
    let fx = fixture_dir("demo");
    for entry in std::fs::read_dir(fx.join("template-trace")).unwrap() {
        let p = entry.unwrap().path();
        std::fs::copy(&p, run.join("trace").join(p.file_name().unwrap())).unwrap();
    }
    std::fs::copy(
        fx.join("comm-group.json"),
        run.join("sim-config/comm-group.json"),
    )
    .unwrap();
    run
}

fn iteration_ms(args: &[&str]) -> f64 {
    let mut all = vec!["sim", "--format", "json", "--deterministic"];
    all.extend_from_slice(args);
    let (code, stdout, stderr) = venusc(&all);
    assert_eq!(code, 0, "{stderr}");
    let r: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    r["iteration_time_ms"].as_f64().unwrap()
}

/// `sim --trace` of VenusSim's 5-iteration demo reports one iteration, as VenusSim's report
/// does (5310.60 ms in all, 1062.12 per iteration, next to `venusc sim`'s own 1063.60: its own
/// trace prices what the replayed one does not carry, 0.14 % more);
/// `--iterations 1` reads the same traces as one iteration of the whole run.
#[test]
fn sim_trace_of_a_five_iteration_trace_reports_one_iteration() {
    let run = venussim_demo_run();
    let trace = run.join("trace");
    let plan = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/venussim_demo/import/venussim_demo.venus");
    let (trace, plan) = (trace.to_str().unwrap(), plan.to_str().unwrap());
    let mean = iteration_ms(&["--trace", trace, plan]);
    assert!((mean - 1062.12).abs() < 0.01, "{mean}");
    let whole = iteration_ms(&["--trace", trace, "--iterations", "1", plan]);
    assert!((whole - 5310.60).abs() < 0.01, "{whole}");
    assert!((whole / 5.0 - mean).abs() < 1e-6, "{whole} {mean}");
    let own = iteration_ms(&[plan]);
    assert!((own - mean).abs() / mean < 0.002, "{own} vs {mean}");
    let _ = std::fs::remove_dir_all(&run);
}

/// `--venussim-root` makes the config name the simulator built in that checkout and absolute
/// paths under the output directory; a directory that is not a VenusSim checkout is refused.
#[test]
fn venussim_root_gives_a_config_that_runs_from_any_directory() {
    let root = temp_dir("venussim-root");
    std::fs::create_dir_all(root.join("trace-generator")).unwrap();
    std::fs::write(root.join("trace-generator/llm_sim.py"), "").unwrap();
    let out = temp_dir("venussim-root-out").join("vs");
    let plan = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/venussim_demo.venus");
    let args = |root: &Path| {
        vec![
            "compile".to_string(),
            plan.display().to_string(),
            "--emit".to_string(),
            "venussim".to_string(),
            "-o".to_string(),
            out.display().to_string(),
            "--venussim-root".to_string(),
            root.display().to_string(),
        ]
    };
    let a = args(&root);
    let (code, _, stderr) = venusc(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 0, "{stderr}");
    let config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("llm-sim-config.json")).unwrap()).unwrap();
    let root_abs = std::fs::canonicalize(&root).unwrap();
    let out_abs = std::fs::canonicalize(&out).unwrap();
    assert_eq!(
        config["simulator_config"]["binary"],
        format!(
            "{}/llm-simulator/build/astra_analytical/build/bin/AstraSim_Analytical_Congestion_Unaware",
            root_abs.display()
        )
    );
    for key in ["system", "network", "remote_memory", "comm_group"] {
        let p = config["simulator_config"][key].as_str().unwrap();
        assert!(Path::new(p).is_absolute(), "{key}: {p}");
        assert!(Path::new(p).is_file(), "{key}: {p} was written");
        assert!(p.starts_with(&out_abs.display().to_string()), "{key}: {p}");
    }
    let bad = root.join("trace-generator");
    let (code, _, stderr) = venusc(&args(&bad).iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 2);
    assert!(
        stderr.contains("holds no `trace-generator/llm_sim.py`"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&root);
    let _ = std::fs::remove_dir_all(out.parent().unwrap());
}

/// Without the distributed optimizer the traces reduce gradients with an all-reduce of the
/// whole buffer and gather no parameters, as `venusc sim` models it.
#[test]
fn a_plan_without_the_distributed_optimizer_emits_an_all_reduce_and_no_all_gather() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/golden/venussim_demo/import/venussim_demo.venus"),
    )
    .unwrap()
    .replace(
        "distributed_optimizer overlap_grad_reduce overlap_param_gather",
        "overlap_grad_reduce",
    );
    let sc = scenario_of("nodistopt.venus", &text);
    let files = simplified(&sc);
    let r2 = String::from_utf8(files["nodistopt.2.et"].clone()).unwrap();
    // Both chunks of the one iteration, 486,572,544 fp32 gradients each.
    assert_eq!(
        r2.matches("nccl:grad_allreduce~iter~0~pp_rank~1~").count(),
        2
    );
    assert!(r2.contains("486572544 4 dp_group\n"));
    assert!(!r2.contains("reducescatter"));
    assert!(!r2.contains("allgather"));
}
