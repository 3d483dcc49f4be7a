//! `venusc report`: the HTML report as a person sees it (rendered in headless Chromium), its
//! self-containment, its determinism, escaping and output errors; and the JSON report's
//! additions (resolved plan, warnings, tokens, the `train` block's cost).
//!
//! The browser test needs Debian's `chromium` (`.ci/run` installs it): without one it is
//! skipped with a message, unless `CI` is set, where a missing browser fails it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const LLAMA: &str = "examples/llama3_405b_16k.venus";

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

/// A fresh directory for one test's files.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("venusc-report-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `venusc report FILE -o OUT`; the page.
fn render(file: &str, out: &Path) -> String {
    let (code, _, stderr) = venusc(&["report", file, "-o", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("wrote the report of"), "{stderr}");
    std::fs::read_to_string(out).unwrap()
}

/// The browser to render with: `$CHROMIUM`, else `chromium` or `chromium-browser` on PATH.
fn chromium() -> Option<String> {
    let candidates = std::env::var("CHROMIUM")
        .ok()
        .into_iter()
        .chain(["chromium".to_string(), "chromium-browser".to_string()]);
    candidates.into_iter().find(|c| {
        Command::new(c)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

/// Runs the browser headless with `args` and the page; its stdout. Fails after two minutes.
fn headless(browser: &str, profile: &Path, args: &[&str], page: &Path) -> String {
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--hide-scrollbars",
            &format!("--user-data-dir={}", profile.display()),
        ])
        .args(args)
        .arg(page)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut s).map(|_| s)
    });
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "{browser} exited with {status}");
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{browser} did not finish within two minutes");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    reader.join().unwrap().unwrap()
}

/// Non-empty slices per pipeline stage, from the Perfetto export of the same simulation:
/// for each stage, the lowest simulated rank's complete events that last longer than zero
/// (the report's window is the whole one-iteration run).
fn slices_per_stage(file: &str, dir: &Path) -> Vec<(u64, u64, usize)> {
    let timeline = dir.join("timeline.json");
    let (code, _, stderr) = venusc(&["sim", file, "--timeline", timeline.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&timeline).unwrap()).unwrap();
    let events = v["traceEvents"].as_array().unwrap();
    // `rank 12 (pp3 tp0 dp0)` → (12, 3)
    let mut stage_of = std::collections::BTreeMap::new();
    for e in events.iter().filter(|e| e["name"] == "process_name") {
        let name = e["args"]["name"].as_str().unwrap();
        let pp = name.split("(pp").nth(1).unwrap().split(' ').next().unwrap();
        stage_of.insert(e["pid"].as_u64().unwrap(), pp.parse::<u64>().unwrap());
    }
    let mut lowest = std::collections::BTreeMap::new();
    for (&rank, &stage) in &stage_of {
        lowest.entry(stage).or_insert(rank);
    }
    lowest
        .into_iter()
        .map(|(stage, rank)| {
            let n = events
                .iter()
                .filter(|e| e["ph"] == "X" && e["pid"] == rank)
                .filter(|e| e["dur"].as_f64().unwrap() > 0.0)
                .count();
            (stage, rank, n)
        })
        .collect()
}

/// The rows of the dumped DOM's timeline: (stage, rank, slices).
fn dom_rows(dom: &str) -> Vec<(u64, u64, usize)> {
    dom.split("<g class=\"row\" ")
        .skip(1)
        .map(|chunk| {
            let body = &chunk[..chunk.find("</g>").unwrap()];
            let attr = |name: &str| -> u64 {
                let at = body.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
                body[at..].split('"').next().unwrap().parse().unwrap()
            };
            (
                attr("data-stage"),
                attr("data-rank"),
                body.matches("<rect class=\"s\"").count(),
            )
        })
        .collect()
}

#[test]
fn html_report_renders_in_headless_chromium_with_a_row_per_stage_and_every_slice() {
    let Some(browser) = chromium() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set but no `chromium` is installed: `.ci/run` installs it (apt-get install chromium)"
        );
        eprintln!(
            "skipped: no `chromium` on PATH (install Debian's `chromium` to run the HTML report's browser test)"
        );
        return;
    };
    let dir = scratch("chromium");
    let page = dir.join("report.html");
    let html = render(LLAMA, &page);
    let dom = headless(&browser, &dir.join("profile"), &["--dump-dom"], &page);
    let body = &dom[dom.find("<body").unwrap()..];
    let body_tag = &body[..body.find('>').unwrap()];
    assert!(
        !body_tag.contains("data-errors"),
        "the page's script failed: {body_tag}"
    );
    assert!(
        body_tag.contains("data-ok=\"1\""),
        "the page's script did not finish: {body_tag}"
    );
    // The script drew the axis for the view: ticks in ms up to the iteration's 14.5 s.
    assert!(dom.contains(" ms</text>"));

    let want = slices_per_stage(LLAMA, &dir);
    let rows = dom_rows(&dom);
    assert_eq!(rows.len(), 16, "one row per pipeline stage of pp 16");
    assert_eq!(rows, want);
    assert!(rows.iter().all(|&(_, _, n)| n > 1000), "{rows:?}");
    // The page as written has the same rows: the browser added and dropped none.
    assert_eq!(dom_rows(&html), want);
    for kind in ["F", "B", "send", "recv", "tp-comm", "all-grads-sync"] {
        assert!(
            dom.contains(&format!("data-kind=\"{kind}\"")),
            "legend lacks {kind}"
        );
    }

    let shot = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/report.png");
    let _ = std::fs::remove_file(&shot);
    headless(
        &browser,
        &dir.join("profile"),
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1400,1000",
        ],
        &page,
    );
    let png = std::fs::read(&shot).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    // A blank 1400 × 1000 page compresses to a few kilobytes; the drawn one does not.
    assert!(png.len() > 30_000, "{} bytes", png.len());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn html_report_names_no_external_url_and_loads_nothing() {
    let dir = scratch("urls");
    let html = render(LLAMA, &dir.join("r.html"));
    for forbidden in [
        "http://", "https://", "src=", "href=", "url(", "@import", "<link",
    ] {
        assert!(!html.contains(forbidden), "the page contains `{forbidden}`");
    }
    assert!(html.starts_with("<!DOCTYPE html>\n"));
    assert!(html.ends_with("</html>\n"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn html_report_is_byte_identical_for_the_same_input() {
    let dir = scratch("determinism");
    let a = render(LLAMA, &dir.join("a.html"));
    let b = render(LLAMA, &dir.join("b.html"));
    assert!(a == b, "two renders differ");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn html_report_shows_the_summary_memory_phases_and_warnings() {
    let dir = scratch("content");
    let html = render(LLAMA, &dir.join("r.html"));
    let (_, json, _) = venusc(&["sim", LLAMA, "--format", "json", "--deterministic"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let iteration = format!(
        "<td>{:.3} ms</td>",
        v["iteration_time_ms"].as_f64().unwrap()
    );
    assert!(html.contains(&iteration), "{iteration}");
    assert!(html.contains("<td>16,777,216</td>"), "tokens per iteration");
    assert!(html.contains("<td>7 8 8 8 8 8 8 8 8 8 8 8 8 8 8 7</td>"));
    // One stacked bar per stage, one segment per memory term.
    assert_eq!(html.matches("<g class=\"bar\"").count(), 16);
    for term in ["weights", "gradients", "optimizer", "activations"] {
        assert_eq!(
            html.matches(&format!("data-term=\"{term}\"")).count(),
            16,
            "{term}"
        );
    }
    for phase in ["forward-compute", "all-grads-sync", "params-all-gather"] {
        assert!(html.contains(&format!("<tr><td>{phase}</td>")), "{phase}");
    }
    // The example's W0003, with its computed help.
    assert!(html.contains("<h2>warnings (1)</h2>"));
    assert!(html.contains("<li data-code=\"W0003\"><b>W0003</b> warning: pipeline bubble is"));
    assert!(html.contains("help: raise `global_batch` to 5760"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn html_report_escapes_the_text_that_came_from_the_input() {
    let dir = scratch("escape");
    let file = dir.join("a<b>&'q'.venus");
    std::fs::copy(LLAMA, &file).unwrap();
    let out = dir.join("r.html");
    let (code, _, stderr) = venusc(&[
        "report",
        file.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(
        html.contains("a&lt;b&gt;&amp;&#39;q&#39;.venus:28:11"),
        "file name escaped"
    );
    assert!(!html.contains("a<b>"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn html_report_to_an_unwritable_path_is_e0704_and_writes_nothing() {
    let dir = scratch("unwritable");
    let out = dir.join("missing-dir/r.html");
    let (code, _, stderr) = venusc(&["report", LLAMA, "-o", out.to_str().unwrap()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("error[E0704]"), "{stderr}");
    assert!(stderr.contains("help:"), "{stderr}");
    assert!(!out.exists());
    // The scenario file itself is never overwritten.
    let (code, _, stderr) = venusc(&["report", LLAMA, "-o", LLAMA]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("error[E0705]"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

// ------------------------------------------------------------------ the JSON report's additions

fn sim_json(file: &str) -> serde_json::Value {
    let (code, stdout, stderr) = venusc(&["sim", file, "--format", "json", "--deterministic"]);
    assert_eq!(code, 0, "{stderr}");
    serde_json::from_str(&stdout).unwrap()
}

#[test]
fn json_report_has_the_resolved_plan_tokens_and_warnings() {
    let v = sim_json(LLAMA);
    let p = &v["plan"];
    assert_eq!(
        (&p["tp"], &p["pp"], &p["dp"], &p["cp"], &p["vpp"]),
        (&8.into(), &16.into(), &128.into(), &1.into(), &1.into())
    );
    assert_eq!(p["microbatches"], 16);
    assert_eq!(p["schedule"], "1f1b");
    assert_eq!(p["recompute"], "full");
    assert_eq!(p["precision"], "bf16");
    assert_eq!(p["sp"], true);
    let layers: Vec<u64> = p["layers_per_stage"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_u64().unwrap())
        .collect();
    assert_eq!(layers.len(), 16);
    assert_eq!(layers.iter().sum::<u64>(), 126);
    assert_eq!((layers[0], layers[1], layers[15]), (7, 8, 7));
    assert_eq!(v["tokens_per_iteration"], 2048 * 8192);
    assert_eq!(v["train"], serde_json::Value::Null);
    let w = &v["warnings"][0];
    assert_eq!(v["warnings"].as_array().unwrap().len(), 1);
    assert_eq!(w["code"], "W0003");
    assert_eq!(w["severity"], "warning");
    assert_eq!((&w["line"], &w["column"]), (&28.into(), &11.into()));
    assert!(w["help"]
        .as_str()
        .unwrap()
        .starts_with("raise `global_batch` to 5760"));
    assert!(v["parameters"]["total"].as_u64().unwrap() > 405_000_000_000);
}

#[test]
fn json_report_prices_the_train_blocks_token_budget() {
    let dir = scratch("train");
    let file = dir.join("train.venus");
    std::fs::write(&file, PRICED).unwrap();
    let v = sim_json_of(&file, "priced");
    let tokens_per_iteration = v["tokens_per_iteration"].as_u64().unwrap();
    let t = &v["train"];
    assert_eq!(t["tokens"], 15_000_000_000_000u64);
    let iterations = 15_000_000_000_000u64 / tokens_per_iteration;
    assert_eq!(t["iterations"], iterations);
    let seconds = iterations as f64 * v["iteration_time_ms"].as_f64().unwrap() / 1e3;
    let world = v["world_size"].as_f64().unwrap();
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs();
    assert!(close(t["time_days"].as_f64().unwrap(), seconds / 86_400.0));
    let gpu_hours = seconds * world / 3600.0;
    assert!(close(t["gpu_hours"].as_f64().unwrap(), gpu_hours));
    assert_eq!(t["price_per_gpu_hour"], 2.5);
    assert!(close(t["cost_dollars"].as_f64().unwrap(), gpu_hours * 2.5));
    let _ = std::fs::remove_dir_all(&dir);
}

/// GPT 1.7B of the SC21 paper on 32 A100s, priced for a 15T-token budget.
pub const PRICED: &str = "model gpt : gpt_1_7b < >
cluster selene : dgx_a100 < nodes 4 >
plan sc21 < tp 1 dp 32 micro_batch 1 global_batch 512 recompute full >
scenario priced <
  model gpt cluster selene plan sc21
  train < tokens 15T price 2.5 >
>
";

fn sim_json_of(file: &Path, scenario: &str) -> serde_json::Value {
    let (code, stdout, stderr) = venusc(&[
        "sim",
        file.to_str().unwrap(),
        "--scenario",
        scenario,
        "--format",
        "json",
        "--deterministic",
    ]);
    assert_eq!(code, 0, "{stderr}");
    serde_json::from_str(&stdout).unwrap()
}

// ------------------------------------------------------------------ docs/report.schema.json

fn schema() -> jsonschema::Validator {
    let text = std::fs::read_to_string("docs/report.schema.json").unwrap();
    let schema: serde_json::Value = serde_json::from_str(&text).unwrap();
    jsonschema::meta::validate(&schema).unwrap_or_else(|e| panic!("not a valid schema: {e}"));
    jsonschema::draft202012::new(&schema).unwrap()
}

/// Every way `report` breaks the schema, one line each.
fn violations(validator: &jsonschema::Validator, report: &serde_json::Value) -> Vec<String> {
    validator
        .iter_errors(report)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

#[test]
fn every_examples_json_report_follows_docs_report_schema_and_its_breakdown_adds_up() {
    let validator = schema();
    let mut files: Vec<String> = std::fs::read_dir("examples")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "venus"))
        .map(|p| p.display().to_string())
        .collect();
    files.sort();
    assert!(files.len() >= 10, "{files:?}");
    // The examples simulate in parallel: the slowest one bounds the test's time.
    let reports: Vec<(String, serde_json::Value)> = std::thread::scope(|s| {
        let handles: Vec<_> = files
            .iter()
            .map(|f| s.spawn(move || (f.clone(), sim_json(f))))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (file, report) in &reports {
        assert_eq!(
            violations(&validator, report),
            Vec::<String>::new(),
            "{file}"
        );
        assert_breakdown_adds_up(file, report);
    }
    // A report with a priced `train` block (no example states a price) follows it too.
    let dir = scratch("schema");
    let priced = dir.join("priced.venus");
    std::fs::write(&priced, PRICED).unwrap();
    let report = sim_json_of(&priced, "priced");
    assert!(report["train"]["cost_dollars"].is_number());
    assert_eq!(violations(&validator, &report), Vec::<String>::new());
    let _ = std::fs::remove_dir_all(&dir);
}

/// compute + bubble + exposed communication + other idle = the iteration time, and the bubble
/// term is the bubble fraction of it.
fn assert_breakdown_adds_up(file: &str, report: &serde_json::Value) {
    let b = &report["breakdown"];
    let ms = |v: &serde_json::Value| v.as_f64().unwrap();
    let exposed: f64 = b["exposed_ms"].as_object().unwrap().values().map(ms).sum();
    let sum = ms(&b["compute_ms"]) + ms(&b["bubble_ms"]) + exposed + ms(&b["other_idle_ms"]);
    let iteration = ms(&report["iteration_time_ms"]);
    assert!(iteration > 0.0, "{file}");
    assert!(
        (sum - iteration).abs() <= 1e-9 * iteration,
        "{file}: {sum} != {iteration}"
    );
    let bubble = ms(&report["bubble_fraction"]) * iteration;
    assert!(
        (ms(&b["bubble_ms"]) - bubble).abs() <= 1e-9 * iteration,
        "{file}"
    );
}

/// pp 8 with 7 microbatches: 1F1B reaches its steady state (every stage busy at once) only
/// with m ≥ pp, so one microbatch per stage less never fills the pipeline, and every stage
/// idles the (pp − 1) slots of the closed form, (pp − 1) / (m + pp − 1) = 7 / 14. 64 layers
/// (8 per stage) and a 4096-word vocabulary keep the embedding and output layers small beside
/// a stage; micro_batch 4 keeps the optimizer step small beside the pipeline; one node, so
/// the P2P transfers run over NVLink.
const PP8_SHORT: &str = "model deep : gpt_1_7b < layers 64 vocab 4096 >
cluster box : dgx_a100 < nodes 1 >
plan short < tp 1 pp 8 micro_batch 4 global_batch 28 allow W0003 >
scenario pp8 < model deep cluster box plan short >
";

#[test]
fn bubble_of_a_pp8_pipeline_one_microbatch_per_stage_short_is_the_closed_form() {
    let dir = scratch("pp8");
    let file = dir.join("pp8.venus");
    std::fs::write(&file, PP8_SHORT).unwrap();
    let v = sim_json_of(&file, "pp8");
    assert_eq!(v["plan"]["microbatches"], 7);
    assert_eq!(v["schedule_bubble_fraction"], 0.5);
    let bubble = v["bubble_fraction"].as_f64().unwrap();
    assert!((bubble - 0.5).abs() <= 0.005 * 0.5, "bubble {bubble}");
    // The wait for the other stages is bubble, not communication: the transfers and the
    // embedding all-reduce proper are under 1 % of the iteration.
    let iteration = v["iteration_time_ms"].as_f64().unwrap();
    let exposed: f64 = v["breakdown"]["exposed_ms"]
        .as_object()
        .unwrap()
        .values()
        .map(|t| t.as_f64().unwrap())
        .sum();
    assert!(exposed < 0.01 * iteration, "{exposed} of {iteration}");
    assert_breakdown_adds_up("pp8", &v);
    // `venusc schedule` shows the same closed form.
    let (code, stdout, stderr) = venusc(&["schedule", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("bubble 50.0% "), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_report_schema_rejects_a_report_missing_a_field_or_with_an_unknown_one() {
    let validator = schema();
    let good = sim_json("examples/sc21_gpt_1_7b.venus");
    assert!(violations(&validator, &good).is_empty());
    let mut missing = good.clone();
    missing.as_object_mut().unwrap().remove("plan");
    assert_eq!(violations(&validator, &missing).len(), 1);
    let mut unknown = good.clone();
    unknown["bubble"] = 0.5.into();
    assert_eq!(violations(&validator, &unknown).len(), 1);
    let mut wrong = good;
    wrong["plan"]["schedule"] = "zigzag".into();
    wrong["memory"][0]["peak_bytes"] = (-1).into();
    assert_eq!(violations(&validator, &wrong).len(), 2);
}

// ------------------------------------------------------------------ venusc diff

/// Two DGX A100 nodes and a small model, as the sweep tests use; two sweeps over disjoint
/// `tp` lists, so their winners differ at least in `tp`.
const SWEEP_DEFS: &str = "model tiny < hidden 1024 layers 8 heads 16 vocab 32000 seq 1024 >
cluster pod : dgx_a100 < nodes 2 >
";

/// `venusc sweep FILE --emit-best BEST --format json`: the winner's row.
fn sweep_winner(dir: &Path, name: &str, tp: &str) -> (PathBuf, serde_json::Value) {
    let file = dir.join(format!("{name}.venus"));
    let text = format!(
        "{SWEEP_DEFS}plan p <\n  tp [{tp}] pp [1 2]\n  micro_batch 1 global_batch 32\n>\nscenario {name} < model tiny cluster pod plan p >\n"
    );
    std::fs::write(&file, text).unwrap();
    let best = dir.join(format!("{name}-best.venus"));
    let (code, stdout, stderr) = venusc(&[
        "sweep",
        file.to_str().unwrap(),
        "--format",
        "json",
        "--emit-best",
        best.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    (best, v["results"][0].clone())
}

#[test]
fn diff_of_two_sweep_winners_names_the_changed_keys_and_moves_every_figure() {
    let dir = scratch("diff");
    let (a, wa) = sweep_winner(&dir, "narrow", "1 2");
    let (b, wb) = sweep_winner(&dir, "wide", "4 8");
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let html = dir.join("diff.html");
    let (code, stdout, stderr) = venusc(&[
        "diff",
        a,
        b,
        "--format",
        "json",
        "-o",
        html.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let d: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let tp = d["plan"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["key"] == "tp")
        .unwrap_or_else(|| panic!("no tp change: {}", d["plan"]));
    assert_eq!(tp["a"], wa["plan"]["tp"].to_string());
    assert_eq!(tp["b"], wb["plan"]["tp"].to_string());
    let figure = |name: &str| {
        d["figures"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == name)
            .unwrap_or_else(|| panic!("no figure {name}"))
            .clone()
    };
    let it = figure("iteration time");
    let (ta, tb) = (it["a"].as_f64().unwrap(), it["b"].as_f64().unwrap());
    assert_eq!(Some(ta), wa["iteration_time_ms"].as_f64());
    assert_eq!(Some(tb), wb["iteration_time_ms"].as_f64());
    assert!((it["change"].as_f64().unwrap() - (tb - ta)).abs() < 1e-9);
    let pct = it["relative_percent"].as_f64().unwrap();
    assert!((pct - (tb - ta) / ta * 100.0).abs() < 1e-9);
    assert_eq!(
        figure("throughput")["a"].as_f64(),
        wa["tflops_per_gpu"].as_f64()
    );
    // Every figure of both reports is there: the headline, the breakdown, the phases, memory.
    for name in [
        "mfu",
        "pipeline bubble",
        "compute",
        "other idle",
        "recv max",
        "stage 0 peak",
    ] {
        let f = figure(name);
        assert!(f["a"].is_number() && f["b"].is_number(), "{f}");
    }
    // The text goes through the table renderer; the page names no URL.
    let (code, text, stderr) = venusc(&["diff", a, b]);
    assert_eq!(code, 0, "{stderr}");
    let tp_line = text
        .lines()
        .find(|l| l.trim_start().starts_with("tp "))
        .unwrap();
    assert_eq!(
        tp_line.split_whitespace().collect::<Vec<_>>(),
        ["tp", tp["a"].as_str().unwrap(), tp["b"].as_str().unwrap()]
    );
    assert!(text.contains("  figure "), "{text}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<table id=\"figures\">"));
    assert!(!page.contains("http"), "the page names no URL");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two plans that differ only in keys the resolved summary does not list (the loss, the
/// attention kernel, the MoE dispatcher with its backend): `diff` names each from the key
/// table, with `default` on the side that leaves it unwritten, and nothing else.
#[test]
fn diff_names_every_changed_plan_key_from_the_key_table() {
    let dir = scratch("diff-keys");
    let base = "model m : mixtral_8x7b < layers 4 >\ncluster c : dgx_h100 < nodes 1 >\n";
    let a = dir.join("a.venus");
    let b = dir.join("b.venus");
    std::fs::write(
        &a,
        format!("{base}plan < ep 8 micro_batch 1 global_batch 64 distributed_optimizer >\n"),
    )
    .unwrap();
    std::fs::write(
        &b,
        format!(
            "{base}plan < ep 8 micro_batch 1 global_batch 64 distributed_optimizer \
             cross_entropy torch attention flash2 moe_dispatcher flex hybridep >\n"
        ),
    )
    .unwrap();
    let (code, stdout, stderr) = venusc(&[
        "diff",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let d: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let changed: Vec<(String, String, String)> = d["plan"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            let s = |f: &str| k[f].as_str().unwrap().to_string();
            (s("key"), s("a"), s("b"))
        })
        .collect();
    let want = [
        ("attention", "default", "flash2"),
        ("cross_entropy", "default", "torch"),
        ("moe_dispatcher", "default", "flex hybridep"),
    ]
    .map(|(k, a, b)| (k.to_string(), a.to_string(), b.to_string()));
    assert_eq!(changed, want);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn diff_of_one_file_needs_two_scenarios_and_bad_input_is_a_diagnostic() {
    let (code, _, stderr) = venusc(&["diff", "examples/sc21_gpt_1_7b.venus"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("needs two scenarios, got 0 `--scenario`"),
        "{stderr}"
    );
    let dir = scratch("diff-bad");
    let bad = dir.join("bad.venus");
    std::fs::write(&bad, "plan p < tp 3 >\n").unwrap();
    let (code, stdout, stderr) = venusc(&[
        "diff",
        "examples/sc21_gpt_1_7b.venus",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stdout.is_empty());
    assert!(stderr.contains("error[E"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

// ------------------------------------------------------------------ venusc sweep --html

#[test]
fn sweep_html_draws_the_pareto_front_and_links_every_point_to_its_plan() {
    let dir = scratch("sweep-html");
    let file = dir.join("lists.venus");
    std::fs::write(
        &file,
        format!("{SWEEP_DEFS}plan p <\n  tp [1 2 4] pp [1 2]\n  micro_batch 1 global_batch 32\n>\nscenario s < model tiny cluster pod plan p >\n"),
    )
    .unwrap();
    let page = dir.join("sweep.html");
    let (code, stdout, stderr) = venusc(&[
        "sweep",
        file.to_str().unwrap(),
        "--format",
        "json",
        "--html",
        page.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("wrote the sweep's page to"), "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let results = v["results"].as_array().unwrap();
    let html = std::fs::read_to_string(&page).unwrap();
    // One point and one ranking row per simulated plan, each point linking to its row.
    assert_eq!(html.matches("<circle ").count(), results.len());
    assert!(results.len() >= 4, "{}", results.len());
    for r in results {
        let n = r["candidate"].as_u64().unwrap();
        assert!(
            html.contains(&format!("<a href=\"#plan-{n}\">")),
            "point {n}"
        );
        assert!(html.contains(&format!("<tr id=\"plan-{n}\"")), "row {n}");
    }
    // The front is the plans no other beats on time and memory together.
    let front = html.matches("class=\"pt front-pt\"").count();
    assert!((1..=results.len()).contains(&front), "{front}");
    assert_eq!(html.matches("class=\"front-row\"").count(), front);
    // Self-contained: only links within the page.
    for forbidden in [
        "http://", "https://", "src=", "url(", "@import", "<link", "<script",
    ] {
        assert!(!html.contains(forbidden), "the page contains `{forbidden}`");
    }
    assert_eq!(
        html.matches("href=\"").count(),
        html.matches("href=\"#plan-").count()
    );
    if let Some(browser) = chromium() {
        let dom = headless(&browser, &dir.join("profile"), &["--dump-dom"], &page);
        assert_eq!(dom.matches("<circle ").count(), results.len());
        assert!(dom.contains("<table id=\"ranking\">"));
    } else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set but no `chromium` is installed"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
