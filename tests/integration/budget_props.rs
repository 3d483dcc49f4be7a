//! Property tests of the entry points the budgets protect: `sim` on small-but-hostile
//! numbers, `sim --trace` on mutated trace directories, `sweep --merge` on mutated shards and
//! `import` on mutated configs. None may panic: each ends in a report or an error (a coded
//! diagnostic where the input caused it). Each runs a few dozen cases, about 10 s in a debug
//! build.

use std::collections::BTreeMap;
use std::path::Path;

use proptest::prelude::*;
use venusc::emit::{self, MemSink};
use venusc::simulate::{simulate, SimOptions};

const DEMO: &str = include_str!("../../examples/venussim_demo.venus");

/// The one scenario of `text`, when it checks clean.
fn checked(text: &str) -> Option<(venusc::plan::Scenario, venusc::plan::Provenance)> {
    let mut session = venusc::Session::new();
    let root = session.load(Path::new("p.venus"), text.as_bytes(), &mut |p: &Path| {
        Err(format!("no such file `{}`", p.display()).into())
    });
    let checked = session.check(root);
    if checked.has_errors() {
        return None;
    }
    let sc = checked.scenarios.first()?.clone();
    let at = checked.provenance_of(&sc);
    Some((sc, at))
}

/// Numbers at the edges of what `check` accepts: tiny rates, huge counts and times.
fn hostile_demo() -> impl Strategy<Value = String> {
    (
        prop::sample::select(vec!["1", "3", "5000", "4000000000"]),
        prop::sample::select(vec!["100%", "0.000000000000001", "1e-30", "50%"]),
        prop::sample::select(vec![
            "1000TFLOP/s",
            "30000000FLOP/s",
            "1FLOP/s",
            "1e30TFLOP/s",
        ]),
        prop::sample::select(vec![
            "450GB/s 1000ns",
            "1B/s 1000ns",
            "450GB/s 1000000000s",
            "1e30GB/s 0ns",
        ]),
        prop::sample::select(vec!["32", "64", "128000"]),
        prop::sample::select(vec!["64", "1024", "65536"]),
    )
        .prop_map(|(iterations, mfu, peak, link, layers, gb)| {
            DEMO.replace("mfu 100%", &format!("mfu {mfu}"))
                .replace("iterations 5", &format!("iterations {iterations}"))
                .replace("peak 1000TFLOP/s", &format!("peak {peak}"))
                .replace("450GB/s 1000ns", link)
                .replace("layers 32", &format!("layers {layers}"))
                .replace("global_batch 64", &format!("global_batch {gb}"))
        })
}

/// The demo's simplified traces (written once per process), to mutate.
fn demo_traces() -> &'static BTreeMap<String, Vec<u8>> {
    static TRACES: std::sync::OnceLock<BTreeMap<String, Vec<u8>>> = std::sync::OnceLock::new();
    TRACES.get_or_init(|| {
        let (sc, _) = checked(DEMO).expect("the demo checks");
        let mut sink = MemSink::default();
        emit::write_simplified_trace(&sc, &mut sink).expect("the demo emits");
        sink.files
    })
}

/// A shard of a small sweep, as JSON, to mutate.
fn shard_json() -> &'static [String] {
    static SHARDS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    SHARDS.get_or_init(|| {
        let text = "model tiny < hidden 1024 layers 8 heads 12 vocab 32000 seq 1024 >\n\
                    cluster pod : dgx_a100 < nodes 2 >\n\
                    plan p < tp [1 2 4 8] pp [1 2] micro_batch 1 global_batch 32 >\n";
        let mut session = venusc::Session::new();
        let root = session.load(Path::new("s.venus"), text.as_bytes(), &mut |_| {
            Err("none".to_string().into())
        });
        let sw = venusc::sweep::prepare(
            &mut session,
            Path::new("s.venus"),
            root,
            &Default::default(),
        )
        .expect("the sweep prepares");
        (1..=2)
            .map(|i| {
                let shard = venusc::sweep::Shard { index: i, count: 2 };
                let (o, _) =
                    venusc::sweep::run(&mut session, &sw, Some(shard), &venusc::sweep::Silent);
                venusc::sweep::output::json(&o)
            })
            .collect()
    })
}

/// Replaces the `k`-th run of digits of `text` (mod their count) with `with`.
fn replace_number(text: &str, k: usize, with: &str) -> String {
    let bytes = text.as_bytes();
    let runs: Vec<(usize, usize)> = (0..bytes.len())
        .filter(|&i| bytes[i].is_ascii_digit() && (i == 0 || !bytes[i - 1].is_ascii_digit()))
        .map(|i| {
            let len = bytes[i..].iter().take_while(|b| b.is_ascii_digit()).count();
            (i, i + len)
        })
        .collect();
    match runs.get(k % runs.len().max(1)) {
        Some(&(start, end)) => format!("{}{with}{}", &text[..start], &text[end..]),
        None => text.to_string(),
    }
}

const NUMBERS: &[&str] = &[
    "0",
    "-1",
    "1e-300",
    "1e300",
    "18446744073709551615",
    "4294967296",
    "NaN",
    "1048576",
    "2",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn sim_on_hostile_numbers_reports_or_gives_a_coded_diagnostic(text in hostile_demo()) {
        if let Some((sc, at)) = checked(&text) {
            let opts = SimOptions::default();
            match simulate(&sc, &opts) {
                Ok(sim) => prop_assert!(sim.report.iteration_time.0.is_finite()),
                Err(e) => {
                    // A hostile number that validation let through is the input's problem, with
                    // a fix (E0601/E0602), never the internal-error code.
                    let d = e.diagnostic(&sc, &at, &opts);
                    prop_assert!(d.code != venusc::diag::Code::E0620, "internal failure: {e}");
                }
            }
        }
    }

    #[test]
    fn replay_of_mutated_traces_never_panics(
        file in any::<prop::sample::Index>(),
        k in any::<usize>(),
        with in prop::sample::select(NUMBERS),
    ) {
        let traces = demo_traces();
        let names: Vec<String> = traces.keys().cloned().collect();
        let target = names[file.index(names.len())].clone();
        let edited = replace_number(&String::from_utf8_lossy(&traces[&target]), k, with);
        let (sc, _) = checked(DEMO).unwrap();
        let mut read = |p: &str| {
            if p == target {
                Ok(edited.clone().into_bytes())
            } else {
                traces.get(p).cloned().ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "no"))
            }
        };
        // A report or an error; never a panic (which fails the case).
        let _ = venusc::simulate::replay(&sc, &names, &mut read, None);
    }

    #[test]
    fn merge_of_mutated_shards_never_panics_and_errors_stay_short(
        which in 0usize..2,
        k in any::<usize>(),
        with in prop::sample::select(NUMBERS),
    ) {
        let shards = shard_json();
        let mut texts = shards.to_vec();
        texts[which] = replace_number(&texts[which], k, with);
        let parts: Result<Vec<_>, _> = texts.iter().map(|t| venusc::sweep::output::read_json(t)).collect();
        if let Ok(parts) = parts {
            match venusc::sweep::merge(parts) {
                Ok(merged) => {
                    // Whatever merged still adds up, with finite non-negative times.
                    let accounted = merged.results.len() as u64 + merged.pruned_total();
                    prop_assert_eq!(accounted, merged.candidates);
                    prop_assert!(merged.results.iter().all(|r| r.iteration_time_ms() >= 0.0));
                }
                Err(e) => prop_assert!(e.len() < 1024, "{} bytes", e.len()),
            }
        }
    }

    #[test]
    fn import_of_mutated_configs_never_panics_and_writes_parsable_files(
        file in 0usize..3,
        k in any::<usize>(),
        with in prop::sample::select(NUMBERS),
    ) {
        let target = ["llm-sim-config.json", "sim-config/system.json", "sim-config/network.yml"][file];
        let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/venussim_demo/input");
        let mut read = |p: &str| {
            let bytes = std::fs::read(base.join(p))?;
            if p == target {
                Ok(replace_number(&String::from_utf8_lossy(&bytes), k, with).into_bytes())
            } else {
                Ok(bytes)
            }
        };
        if let Ok(imported) = emit::import_venussim("llm-sim-config.json", &mut read) {
            let parsed = venusc::syntax::parse(&imported.venus, venusc::diag::FileId(0));
            prop_assert!(
                parsed.diagnostics.is_empty(),
                "{:?}\n{}",
                parsed.diagnostics,
                imported.venus
            );
        }
    }
}
