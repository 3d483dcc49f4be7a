//! Golden op orders of the zero-bubble and DualPipe schedules: `venusc compile --emit schedule`
//! of each scenario in tests/golden/schedule/zero_bubble.venus equals the file the reference's
//! own scheduling code produces (`get_hand_schedule`, sail-sg/zero-bubble-pipeline-parallelism,
//! transcribed in tests/golden/schedule/zero_bubble.py; `DualPipe.step` and `DualPipeV.step`,
//! deepseek-ai/DualPipe, transcribed in tests/golden/schedule/dualpipe.py; rerun either script
//! with `python3` to regenerate its files).

use std::path::Path;
use std::process::Command;

const PLANS: &str = "tests/golden/schedule/zero_bubble.venus";

/// Every golden file of the generator's list, by scenario name.
const GOLDEN: &[&str] = &[
    "zb_h1_pp4_m8",
    "zb_h1_pp4_m16",
    "zb_h1_pp8_m8",
    "zb_h1_pp8_m16",
    "zb_h2_pp4_m8",
    "zb_h2_pp4_m16",
    "zb_h2_pp8_m16",
];

/// The DualPipe golden files (dualpipe.py's list).
const DUALPIPE_GOLDEN: &[&str] = &[
    "dualpipe_pp4_m8",
    "dualpipe_pp4_m16",
    "dualpipe_pp8_m16",
    "dualpipev_pp4_m8",
    "dualpipev_pp4_m16",
    "dualpipev_pp8_m16",
];

/// The ZBV golden files (zbv.py's list).
const ZBV_GOLDEN: &[&str] = &["zbv_pp4_m8", "zbv_pp4_m16", "zbv_pp8_m8", "zbv_pp8_m16"];

fn emit_schedule(scenario: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_venusc"))
        .args([
            "compile",
            PLANS,
            "--scenario",
            scenario,
            "--emit",
            "schedule",
        ])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{scenario}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn zero_bubble_emit_schedule_equals_the_reference_generators_order() {
    let dir = Path::new("tests/golden/schedule");
    for name in GOLDEN {
        let want = std::fs::read_to_string(dir.join(format!("{name}.txt")))
            .unwrap_or_else(|e| panic!("golden {name}.txt: {e}"));
        let got = emit_schedule(name);
        assert_eq!(got, want, "{name} differs from the reference's order");
        // One line per pipeline rank, 3·m compute ops on each.
        let pp: usize = name[name.find("pp").unwrap() + 2..name.find("_m").unwrap()]
            .parse()
            .unwrap();
        let m: usize = name[name.find("_m").unwrap() + 2..].parse().unwrap();
        assert_eq!(got.lines().count(), pp);
        assert!(got.lines().all(|l| l.split(' ').count() == 1 + 3 * m));
    }
}

#[test]
fn dualpipe_emit_schedule_equals_the_reference_step_loops_order() {
    let dir = Path::new("tests/golden/schedule");
    for name in DUALPIPE_GOLDEN {
        let want = std::fs::read_to_string(dir.join(format!("{name}.txt")))
            .unwrap_or_else(|e| panic!("golden {name}.txt: {e}"));
        let got = emit_schedule(name);
        assert_eq!(got, want, "{name} differs from the reference's order");
        let pp: usize = name[name.find("pp").unwrap() + 2..name.find("_m").unwrap()]
            .parse()
            .unwrap();
        let m: usize = name[name.find("_m").unwrap() + 2..].parse().unwrap();
        assert_eq!(got.lines().count(), pp);
        // DualPipe: m forwards and m backwards per rank (m/2 per direction); DualPipeV: 2·m
        // (every microbatch on both arms). Each W follows its B.
        let per_chunk = if name.starts_with("dualpipev") {
            m
        } else {
            m / 2
        };
        for line in got.lines() {
            let ops: Vec<&str> = line.split(' ').skip(1).collect();
            let count = |p: char| ops.iter().filter(|o| o.starts_with(p)).count();
            assert_eq!(count('F'), 2 * per_chunk, "{name}: {line}");
            assert_eq!(count('B'), 2 * per_chunk, "{name}: {line}");
            for (i, w) in ops.iter().enumerate().filter(|(_, o)| o.starts_with('W')) {
                let b = format!("B{}", &w[1..]);
                assert!(ops[..i].contains(&b.as_str()), "{name}: {w} before {b}");
            }
        }
    }
}

#[test]
fn zbv_emit_schedule_equals_the_reference_greedy_schedulers_order() {
    let dir = Path::new("tests/golden/schedule");
    for name in ZBV_GOLDEN {
        let want = std::fs::read_to_string(dir.join(format!("{name}.txt")))
            .unwrap_or_else(|e| panic!("golden {name}.txt: {e}"));
        let got = emit_schedule(name);
        assert_eq!(got, want, "{name} differs from the reference's order");
        let pp: usize = name[name.find("pp").unwrap() + 2..name.find("_m").unwrap()]
            .parse()
            .unwrap();
        let m: usize = name[name.find("_m").unwrap() + 2..].parse().unwrap();
        assert_eq!(got.lines().count(), pp);
        // Every microbatch on both arms of the V: 2·m each of F, B and W, each W after its B
        // and each B after its F.
        for line in got.lines() {
            let ops: Vec<&str> = line.split(' ').skip(1).collect();
            for p in ['F', 'B', 'W'] {
                assert_eq!(
                    ops.iter().filter(|o| o.starts_with(p)).count(),
                    2 * m,
                    "{name}"
                );
            }
            let at = |op: String| ops.iter().position(|o| *o == op).unwrap();
            for (i, o) in ops.iter().enumerate().filter(|(_, o)| o.starts_with('W')) {
                assert!(at(format!("B{}", &o[1..])) < i, "{name}: {o} before its B");
                assert!(at(format!("F{}", &o[1..])) < at(format!("B{}", &o[1..])));
            }
        }
    }
}

/// The `("name", ..., pp, m)` rows of a generator's `GOLDEN` list, as file names.
fn listed_in(script: &str) -> Vec<String> {
    let script = std::fs::read_to_string(script).unwrap();
    script
        .lines()
        .filter_map(|l| {
            let l = l.trim().strip_prefix("(\"")?;
            let (name, rest) = l.split_once("\", ")?;
            let nums: Vec<&str> = rest.trim_end_matches("),").split(", ").collect();
            let n = nums.len();
            Some(format!(
                "{name}_pp{}_m{}",
                nums.get(n.checked_sub(2)?)?,
                nums.get(n - 1)?
            ))
        })
        .collect()
}

#[test]
fn the_golden_generators_list_exactly_the_golden_files() {
    let mut listed = listed_in("tests/golden/schedule/zero_bubble.py");
    listed.extend(listed_in("tests/golden/schedule/dualpipe.py"));
    listed.extend(listed_in("tests/golden/schedule/zbv.py"));
    listed.sort();
    let mut files: Vec<String> = std::fs::read_dir("tests/golden/schedule")
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().ok()?;
            name.strip_suffix(".txt").map(str::to_string)
        })
        .collect();
    files.sort();
    let mut golden: Vec<String> = GOLDEN
        .iter()
        .chain(DUALPIPE_GOLDEN)
        .chain(ZBV_GOLDEN)
        .map(|s| s.to_string())
        .collect();
    golden.sort();
    assert_eq!(listed, files);
    assert_eq!(files, golden);
}

/// The files of `compile --emit KIND -o DIR` for `scenario`, by name, and the warnings.
fn emit_files(scenario: &str, kind: &str) -> (Vec<(String, Vec<u8>)>, String) {
    let dir = std::env::temp_dir().join(format!(
        "venusc-zb-{scenario}-{kind}-{}",
        std::process::id()
    ));
    let out = Command::new(env!("CARGO_BIN_EXE_venusc"))
        .args([
            "compile",
            PLANS,
            "--scenario",
            scenario,
            "--emit",
            kind,
            "-o",
        ])
        .arg(&dir)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut files = Vec::new();
    let mut stack = vec![dir.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                // Files are named after the scenario.
                let rel = p.strip_prefix(&dir).unwrap().display().to_string();
                let rel = rel.replace(scenario, "SCENARIO");
                files.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    std::fs::remove_dir_all(&dir).ok();
    files.sort();
    (files, String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn venussim_traces_of_a_zero_bubble_plan_are_its_1f1b_traces_with_a_warning() {
    let (zb, warnings) = emit_files("zb_h1_pp4_m8", "simplified-trace");
    let (one, plain) = emit_files("one_f_one_b_pp4_m8", "simplified-trace");
    assert!(zb.len() > 4, "{}", zb.len());
    assert!(zb == one, "the traces differ");
    assert!(warnings.contains(
        "VenusSim has no zero-bubble schedule and no weight-gradient pass: `zb_h1` is emitted as 1F1B"
    ));
    assert!(!plain.contains("zero-bubble"));
}
