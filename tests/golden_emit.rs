//! Golden tests for `venusc`'s interop formats on VenusSim's demo (tests/golden/venussim_demo).
//!
//! Every emitted file is compared byte for byte with its golden copy. To accept a deliberate
//! format change, run `UPDATE_GOLDEN=1 cargo test --test golden_emit` and review the diff.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use venusc::emit::{self, MemSink};
use venusc::plan::{validate, Scenario};

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/venussim_demo")
}

/// Reads files under the golden input directory, by the paths the importer asks for.
fn demo_reader(path: &str) -> std::io::Result<Vec<u8>> {
    let base = golden_dir().join("input");
    let p = Path::new(path);
    if p.is_absolute() {
        // VenusSim's demo points at `/home/VenusSim/...`, which must not resolve here.
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "absolute",
        ));
    }
    std::fs::read(base.join(p))
}

fn import_demo() -> emit::Imported {
    emit::import_venussim("llm-sim-config.json", &mut demo_reader).expect("demo imports")
}

fn demo_scenario(iterations: Option<u64>) -> Scenario {
    let mut def = import_demo().def;
    if let Some(n) = iterations {
        def.plan.iterations = Some(venusc::ty::Spanned::new(n, def.plan.loc));
    }
    let (sc, diags) = validate(&def);
    sc.unwrap_or_else(|| panic!("demo validates: {diags:?}"))
}

/// Compares every file of `sink` with `golden_dir()/sub/...`, or rewrites them with
/// `UPDATE_GOLDEN=1`.
fn check_golden(sub: &str, files: &BTreeMap<String, Vec<u8>>) {
    let dir = golden_dir().join(sub);
    let update = std::env::var("UPDATE_GOLDEN").is_ok_and(|v| v == "1");
    for (rel, bytes) in files {
        let path = dir.join(rel);
        if update {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, bytes).unwrap();
            continue;
        }
        let want = std::fs::read(&path).unwrap_or_else(|e| {
            panic!(
                "missing golden {} ({e}); run with UPDATE_GOLDEN=1",
                path.display()
            )
        });
        if &want != bytes {
            panic!(
                "{} differs from its golden copy; run with UPDATE_GOLDEN=1 and review the diff",
                path.display()
            );
        }
    }
}

#[test]
fn import_of_demo_matches_golden_venus_file() {
    let imp = import_demo();
    let mut files = BTreeMap::new();
    files.insert(
        "venussim_demo.venus".to_string(),
        imp.venus.clone().into_bytes(),
    );
    check_golden("import", &files);
    assert!(imp.venus.contains("dim dim0 fc 8 450GB/s 1000ns"));
    assert!(imp.venus.contains("dim dim1 ring 2 50GB/s 6000ns"));
    assert!(imp.venus.contains("pp 8 vpp 2 tp 1 dp 2"));
    assert!(imp.venus.contains("micro_batch 2 global_batch 64"));
    assert!(imp.venus.contains("peak 1000TFLOP/s"));
    assert!(imp.venus.contains("mfu 100%"));
}

#[test]
fn import_of_demo_reports_lifo_and_unused_snapshot_data() {
    let w = import_demo().warnings;
    assert!(
        w.iter().any(|m| m.contains("`scheduling-policy` \"LIFO\"")),
        "{w:?}"
    );
    assert!(
        w.iter()
            .any(|m| m.contains("`step_snapshot_data` is unused")),
        "{w:?}"
    );
    assert_eq!(w.len(), 2, "{w:?}");
}

#[test]
fn venussim_emit_of_demo_matches_golden_files() {
    let sc = demo_scenario(None);
    let mut sink = MemSink::new();
    let warnings = emit::write_venussim(&sc, &mut sink).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        sink.files.keys().cloned().collect::<Vec<_>>(),
        [
            "llm-sim-config.json",
            "sim-config/comm-group.json",
            "sim-config/memory.json",
            "sim-config/network.yml",
            "sim-config/system.json"
        ]
    );
    check_golden("venussim", &sink.files);
    let groups = sink.text("sim-config/comm-group.json").unwrap();
    assert!(groups.starts_with("{\"dp_group\": [[0, 1], [2, 3],"));
    assert!(groups.contains("\"embedding_group\": [[0, 14], [1, 15]]"));
    assert!(groups.contains("\"position_embedding_group\": [[0], [1]]"));
    let system = sink.text("sim-config/system.json").unwrap();
    assert!(system.contains("\"scheduling-policy\": \"FIFO\""));
    assert!(system.contains("\"peak-perf\": 1000"));
}

/// import → scenario → emit gives every `trace_generator_config` key back with its value,
/// except the paths and the snapshot data the demo does not use (use_step_snapshot 0).
#[test]
fn import_then_emit_gives_back_every_trace_generator_key() {
    let original: serde_json::Value =
        serde_json::from_slice(&demo_reader("llm-sim-config.json").unwrap()).unwrap();
    let original = original["trace_generator_config"]
        .as_object()
        .unwrap()
        .clone();
    let sc = demo_scenario(None);
    let mut sink = MemSink::new();
    emit::write_venussim(&sc, &mut sink).unwrap();
    let emitted: serde_json::Value =
        serde_json::from_str(&sink.text("llm-sim-config.json").unwrap()).unwrap();
    let emitted = emitted["trace_generator_config"].as_object().unwrap();
    let skip = ["output_filepath", "log_filename", "step_snapshot_data"];
    let mut compared = 0;
    for (k, v) in &original {
        assert!(emitted.contains_key(k), "emit lacks `{k}`");
        if skip.contains(&k.as_str()) {
            continue;
        }
        assert_eq!(&emitted[k], v, "key `{k}`");
        compared += 1;
    }
    assert_eq!(compared, 37);
    assert_eq!(emitted.len(), original.len());
}

#[test]
fn astra_sim_emit_of_demo_matches_golden_files() {
    let sc = demo_scenario(None);
    let mut sink = MemSink::new();
    let w = emit::write_astra_sim(&sc, &mut sink).unwrap();
    assert_eq!(w.len(), 1, "{w:?}");
    check_golden("astra-sim", &sink.files);
    let net = sink.text("network.yml").unwrap();
    assert!(net.contains("topology: [ FullyConnected, Ring ]"));
    assert!(net.contains("npus_count: [ 8, 2 ]"));
    assert!(net.contains("bandwidth: [ 450.0, 50.0 ]"));
    assert!(net.contains("latency: [ 1000.0, 6000.0 ]"));
    let groups = sink.text("comm-group.json").unwrap();
    // dp groups 1-8, pp groups 9-10, embedding groups 11-12.
    assert!(groups.contains("\"1\": [0, 1]"));
    assert!(groups.contains("\"9\": [0, 2, 4, 6, 8, 10, 12, 14]"));
    assert!(groups.contains("\"12\": [1, 15]"));
}

#[test]
fn template_trace_of_demo_matches_golden_files() {
    let sc = demo_scenario(Some(2));
    let mut sink = MemSink::new();
    let w = emit::write_template_trace(&sc, &mut sink).unwrap();
    assert!(w.is_empty(), "{w:?}");
    check_golden("template-trace", &sink.files);
    let t0 = sink.text("demo~template~.0.et").unwrap();
    assert!(t0.starts_with("1272\n") || t0.lines().next().is_some());
}
