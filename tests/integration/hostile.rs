//! Hostile input end to end (DIAGNOSTICS.md: "No input, however malformed, may panic, hang or
//! exhaust memory: it gets a diagnostic").
//!
//! The binary runs on generated files in a scratch directory under the system temp dir; each
//! run must exit with 0 or 1 (never a signal, never 101 from a panic) within a generous hang
//! guard — speed is measured by `benches/check.rs`, not here. A proptest mutates the shipped
//! examples and drives the library (`Session`) and every renderer on the result.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use venusc::diag::render;

/// How long an in-process run (the proptest's `Session`, on a thread of this process) may take
/// before it counts as hung: wall time, five times the binary's CPU limit, for a loaded machine.
const HANG_GUARD: Duration = super::guard::BLOCKED_WALL_LIMIT;

/// A directory of its own under the temp dir, removed on drop (also when a test fails).
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Scratch {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = std::env::temp_dir().join(format!(
            "venusc-hostile-{}-{test}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What one run of `venusc check --format json FILE` did.
struct Run {
    exit: i32,
    stdout: String,
}

impl Run {
    fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {:.500}", self.stdout))
    }

    /// Each code once, in order of first appearance.
    fn codes(&self) -> Vec<String> {
        let mut codes: Vec<String> = Vec::new();
        for d in self.json()["diagnostics"].as_array().unwrap() {
            let c = d["code"].as_str().unwrap().to_string();
            if !codes.contains(&c) {
                codes.push(c);
            }
        }
        codes
    }
}

/// Runs the binary on `file`; stdout goes to a file (a pipe nobody reads could fill up and look
/// like a hang). Panics on a signal, a panic exit (101), any exit but 0 or 1, or a hang.
fn check_file(scratch: &Scratch, file: &Path) -> Run {
    let out_path = scratch.0.join("stdout.json");
    let out = std::fs::File::create(&out_path).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_venusc"))
        .args(["check", "--format", "json"])
        .arg(file)
        .env("NO_COLOR", "1")
        .stdout(out)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if let Some(spent) = super::guard::overdue(child.id(), start, super::guard::WALL_LIMIT) {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "`venusc check {}` still running after {spent}",
                file.display()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let exit = status.code().unwrap_or_else(|| {
        panic!(
            "`venusc check {}` died from a signal: {status}",
            file.display()
        )
    });
    assert!(
        exit == 0 || exit == 1,
        "`venusc check {}` exited {exit} (101 is a panic)",
        file.display()
    );
    Run {
        exit,
        stdout: std::fs::read_to_string(&out_path).unwrap(),
    }
}

/// A complete scenario's model and cluster, so the hostile part reaches every stage.
const PRELUDE: &str = "model m : llama2_7b < >\ncluster c : dgx_h100 < >\n";

/// Deterministic pseudo-random bytes (xorshift), so a failure reproduces.
fn noise(len: usize, mut seed: u64) -> Vec<u8> {
    (0..len)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 24) as u8
        })
        .collect()
}

#[test]
fn random_binary_bytes_are_e0001_not_a_crash() {
    let scratch = Scratch::new("binary");
    let mut bytes = noise(64 * 1024, 0x9E37_79B9_7F4A_7C15);
    bytes[100] = 0; // a NUL, for certain
    bytes[200] = 0xFF; // never valid UTF-8
    let file = scratch.write("binary.venus", &bytes);
    let run = check_file(&scratch, &file);
    assert_eq!(run.exit, 1);
    assert!(
        run.codes().contains(&"E0001".to_string()),
        "{:?}",
        run.codes()
    );
}

#[test]
fn two_hundred_thousand_nested_blocks_are_one_nesting_error() {
    let scratch = Scratch::new("nested");
    let text = format!("{PRELUDE}plan {}", "<".repeat(200_000));
    let file = scratch.write("nested.venus", text.as_bytes());
    let run = check_file(&scratch, &file);
    assert_eq!(run.exit, 1);
    let v = run.json();
    let errors = v["errors"].as_u64().unwrap();
    // The nesting limit stops the descent: a handful of errors, not one per `<`.
    assert!(
        (1..=10).contains(&errors),
        "{errors} errors: {:.2000}",
        run.stdout
    );
    assert!(
        run.codes().iter().any(|c| c == "E0001" || c == "E0002"),
        "{:?}",
        run.codes()
    );
}

#[test]
fn a_two_megabyte_number_is_out_of_range() {
    let scratch = Scratch::new("bignum");
    let text = format!(
        "model m : llama2_7b < vocab {} >\ncluster c : dgx_h100 < >\nplan < tp 8 micro_batch 1 global_batch 64 >\n",
        "9".repeat(2_000_000)
    );
    let file = scratch.write("bignum.venus", text.as_bytes());
    let run = check_file(&scratch, &file);
    assert_eq!(run.exit, 1);
    assert_eq!(run.codes(), ["E0202"]);
}

#[test]
fn two_hundred_thousand_items_in_one_block_check_clean() {
    // `dim` is the one repeatable key: 200,000 distinct dims of size 1 are a valid cluster of 8
    // GPUs (the first dim holds them all).
    let scratch = Scratch::new("items");
    let mut text = String::from(
        "model m : llama2_7b < >\ncluster c <\n  gpu h100_sxm\n  dim nvlink fc 8 450GB/s 1us\n",
    );
    for i in 0..200_000 {
        text.push_str(&format!("  dim d{i} switch 1 50GB/s\n"));
    }
    text.push_str(">\nplan < tp 8 micro_batch 1 global_batch 64 >\n");
    let file = scratch.write("items.venus", text.as_bytes());
    let run = check_file(&scratch, &file);
    assert_eq!(run.exit, 0, "{:.2000}", run.stdout);
    assert_eq!(run.json()["diagnostics"].as_array().map(Vec::len), Some(0));
}

/// Every duplicate is an E0102, but a file shows at most 200 diagnostics (the last one notes
/// how many more there are): 200,000 duplicates on one line used to print 158 MB of JSON.
#[test]
fn two_hundred_thousand_duplicate_keys_show_two_hundred_and_a_count() {
    let scratch = Scratch::new("dupkeys");
    let text = format!(
        "{PRELUDE}plan < global_batch 64 {}>\n",
        "micro_batch 1 ".repeat(200_000)
    );
    let file = scratch.write("dupkeys.venus", text.as_bytes());
    let run = check_file(&scratch, &file);
    assert_eq!(run.exit, 1);
    assert_eq!(run.codes(), ["E0102"]);
    let v = run.json();
    assert_eq!(v["errors"], 200);
    assert_eq!(
        v["diagnostics"][199]["notes"][0],
        "199799 more diagnostics in this file not shown (at most 200 per file): fix these and check again"
    );
    assert!(
        run.stdout.len() < 1_000_000,
        "{} bytes of JSON",
        run.stdout.len()
    );
}

/// The human rendering of a flood on a 2.8 MB line cuts the line around each label.
#[test]
fn a_flood_on_one_long_line_renders_in_bounded_output() {
    let scratch = Scratch::new("dupkeys_human");
    let text = format!(
        "{PRELUDE}plan < global_batch 64 {}>\n",
        "micro_batch 1 ".repeat(200_000)
    );
    let file = scratch.write("dupkeys.venus", text.as_bytes());
    let out = Command::new(env!("CARGO_BIN_EXE_venusc"))
        .args(["check", "--color", "never"])
        .arg(&file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.len() < 400_000, "{} bytes", stdout.len());
    assert!(stdout.contains("dupkeys.venus:3:2796"), "{:.3000}", stdout);
    assert!(stdout.contains("200 errors, 0 warnings emitted"));
}

/// Random bytes are one "not a text file" error (plus what the text before it has), not one
/// error per stray byte.
#[test]
fn random_bytes_are_reported_as_not_a_text_file() {
    let scratch = Scratch::new("random");
    // A fixed xorshift stream: deterministic, and full of NUL and invalid UTF-8.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let bytes: Vec<u8> = (0..65_536)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    let file = scratch.write("random.venus", &bytes);
    let run = check_file(&scratch, &file);
    assert_eq!(run.exit, 1);
    let v = run.json();
    let messages: Vec<&str> = v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["message"].as_str())
        .collect();
    assert!(
        messages.contains(&"this is not a text file"),
        "{messages:?}"
    );
    assert!(messages.len() <= 10, "{messages:?}");
}

#[test]
fn a_one_megabyte_line_is_checked_like_a_short_one() {
    let scratch = Scratch::new("longline");
    let name = "a".repeat(1_000_000);
    let text = format!("model {name} : llama2_7b < >\ncluster c : dgx_h100 < >\nplan < tp 8 micro_batch 1 global_batch 64 >\n");
    let file = scratch.write("longline.venus", text.as_bytes());
    let run = check_file(&scratch, &file);
    assert_eq!(run.exit, 0, "{:.2000}", run.stdout);
    assert_eq!(run.json()["diagnostics"].as_array().map(Vec::len), Some(0));
}

#[test]
fn deeply_nested_lists_are_one_nesting_error() {
    let scratch = Scratch::new("lists");
    let text = format!(
        "{PRELUDE}plan < tp {}{} micro_batch 1 global_batch 64 >\n",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let file = scratch.write("lists.venus", text.as_bytes());
    let run = check_file(&scratch, &file);
    assert_eq!(run.exit, 1);
    let errors = run.json()["errors"].as_u64().unwrap();
    assert!(
        (1..=10).contains(&errors),
        "{errors} errors: {:.2000}",
        run.stdout
    );
    assert!(
        run.codes().contains(&"E0001".to_string()),
        "{:?}",
        run.codes()
    );
}

/// A file of nothing but `>` is one E0001 for the whole run (each `>` used to be its own, each
/// rendering the whole line: quadratic output).
#[test]
fn a_file_of_only_closing_angles_finishes() {
    let scratch = Scratch::new("gt");
    let file = scratch.write("gt.venus", ">".repeat(1_000_000).as_bytes());
    let run = check_file(&scratch, &file);
    assert_eq!(run.exit, 1);
    assert_eq!(run.codes(), ["E0001"]);
    let v = run.json();
    assert_eq!(v["errors"], 1);
    assert_eq!(
        v["diagnostics"][0]["message"],
        "1000000 unexpected closing brackets"
    );
}

/// The same, small enough to pass today: still each `>` once, and the run ends.
#[test]
fn a_short_run_of_closing_angles_is_reported_and_finishes() {
    let scratch = Scratch::new("gt_short");
    let file = scratch.write("gt.venus", ">".repeat(200).as_bytes());
    let run = check_file(&scratch, &file);
    assert_eq!(run.exit, 1);
    assert!(
        run.codes().contains(&"E0001".to_string()),
        "{:?}",
        run.codes()
    );
}

// ---------------------------------------------------------------------------------------------
// Mutations of the shipped examples, through the library.

pub(crate) fn examples() -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir("examples")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "venus"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| (p.display().to_string(), std::fs::read(&p).unwrap()))
        .collect()
}

/// One edit of a file's bytes; positions are taken modulo the current length.
#[derive(Clone, Debug)]
pub(crate) enum Mutation {
    Delete { at: usize, len: usize },
    Insert { at: usize, text: Vec<u8> },
    Duplicate { at: usize, len: usize },
    Replace { at: usize, byte: u8 },
}

/// Fragments that stress the grammar more than random bytes do.
const FRAGMENTS: &[&str] = &[
    "<",
    ">",
    "[",
    "]",
    "\"",
    "#",
    ";",
    ":",
    " ",
    "\n",
    "0",
    "99999999999999999999999",
    "1e999",
    "-3",
    "4_",
    "GB/s",
    "Gb/s",
    "%",
    "model",
    "plan",
    "cluster",
    "scenario",
    "use \"x.venus\"",
    "tp",
    "pp 0",
    "vpp 9",
    "dim",
    "nodes",
    "global_batch",
    "sp",
    "é",
    "\u{0}",
];

pub(crate) fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 1usize..64).prop_map(|(at, len)| Mutation::Delete { at, len }),
        (any::<usize>(), prop::sample::select(FRAGMENTS)).prop_map(|(at, f)| Mutation::Insert {
            at,
            text: f.as_bytes().to_vec()
        }),
        (any::<usize>(), prop::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(at, text)| Mutation::Insert { at, text }),
        (any::<usize>(), 1usize..256).prop_map(|(at, len)| Mutation::Duplicate { at, len }),
        (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Mutation::Replace { at, byte }),
    ]
}

pub(crate) fn apply(bytes: &mut Vec<u8>, m: &Mutation) {
    let n = bytes.len();
    let pos = |at: usize| if n == 0 { 0 } else { at % (n + 1) };
    match m {
        Mutation::Delete { at, len } => {
            let start = pos(*at).min(n);
            let end = start.saturating_add(*len).min(n);
            bytes.drain(start..end);
        }
        Mutation::Insert { at, text } => {
            let at = pos(*at);
            bytes.splice(at..at, text.iter().copied());
        }
        Mutation::Duplicate { at, len } => {
            let start = pos(*at).min(n);
            let end = start.saturating_add(*len).min(n);
            let copy = bytes[start..end].to_vec();
            bytes.splice(end..end, copy);
        }
        Mutation::Replace { at, byte } => {
            if n > 0 {
                bytes[*at % n] = *byte;
            }
        }
    }
}

/// Load, check and render `bytes` on a worker thread: the number of errors, or `Err` on a
/// panic or a hang.
fn check_in_worker(name: String, bytes: Vec<u8>) -> Result<usize, String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let outcome = std::panic::catch_unwind(move || {
            let mut session = venusc::Session::new();
            let path = Path::new(&name);
            // `use`d files are never read from disk here: a mutation must not reach outside.
            let root = session.load(path, &bytes, &mut |p: &Path| {
                Err(format!("not loaded in this test: `{}`", p.display()).into())
            });
            let result = session.check(root);
            let files = session.source_files();
            let human = render::human(&result.diagnostics, &files, true);
            let json = render::json(&result.diagnostics, &files, 1);
            let github = render::github(&result.diagnostics, &files);
            assert!(
                serde_json::from_str::<serde_json::Value>(&json).is_ok(),
                "renderer wrote invalid JSON"
            );
            assert_eq!(human.is_empty(), result.diagnostics.is_empty());
            assert!(github.lines().count() >= result.diagnostics.len());
            result.diagnostics.iter().filter(|d| d.is_error()).count()
        });
        let _ = tx.send(outcome.map_err(|e| {
            e.downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        }));
    });
    match rx.recv_timeout(HANG_GUARD) {
        Ok(Ok(n)) => Ok(n),
        Ok(Err(panic)) => Err(format!("panicked: {panic}")),
        Err(_) => Err(format!("no result after {HANG_GUARD:?}")),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn mutated_examples_never_panic_or_hang(
        which in any::<prop::sample::Index>(),
        mutations in prop::collection::vec(mutation(), 1..8),
    ) {
        let all = examples();
        let (name, mut bytes) = all[which.index(all.len())].clone();
        for m in &mutations {
            apply(&mut bytes, m);
        }
        let outcome = check_in_worker(name.clone(), bytes);
        prop_assert!(outcome.is_ok(), "{name} after {mutations:?}: {}", outcome.unwrap_err());
    }
}

#[test]
fn unmutated_examples_have_no_errors_through_the_worker() {
    // The proptest's harness itself: the examples have no errors, so any error a mutation
    // produces comes from the mutation.
    for (name, bytes) in examples() {
        assert_eq!(check_in_worker(name.clone(), bytes), Ok(0), "{name}");
    }
}
