//! `check` benchmark: the front end plus plan validation on a generated 1,000-line file of
//! realistic definitions (models, gpus, clusters, plans and the scenarios that combine them),
//! through the library facade `venusc::Session`, as `venusc check` and a language server drive it.
//!
//! Three figures, each the best of N runs (plain `std::time::Instant`):
//! - cold: a new session, load (stdlib included) and check — what `venusc check FILE` pays;
//! - re-check after a one-character edit (`set_file` with the modified bytes, check again) —
//!   what a language server pays per keystroke;
//! - re-check with nothing changed (the memoized answer).
//!
//! Target: a cold check under 5 ms. Run: `cargo bench --bench check`.

use std::path::Path;
use std::time::{Duration, Instant};

use venusc::Session;

/// A model family, a cluster generation and a plan shape per group; every plan is valid
/// for its model and cluster (tp 8 divides heads, pp divides layers, the world size agrees).
fn group(i: usize) -> String {
    let layers = [24, 32, 40, 48][i % 4];
    let hidden = [2048, 3072, 4096, 5120][i % 4];
    let heads = hidden / 128;
    let nodes = [2, 4, 8][i % 3];
    let pp = [1, 2, 4, 8][i % 4];
    // pp must divide the layers and the world (8 × nodes); tp 8 fills a node.
    let pp = if layers % pp == 0 && nodes % pp == 0 {
        pp
    } else {
        1
    };
    let dp = nodes / pp;
    let micro = [1, 2][i % 2];
    let global = micro * dp * 64;
    let recompute = ["selective", "full"][i % 2];
    let mfu = 40 + i % 20;
    let gpu = ["h100_sxm", "h200", "b200"][i % 3];
    format!(
        "# group {i}: a {layers}-layer model, {nodes} nodes, pp {pp}
model m{i} <
  hidden {hidden}  ffn {ffn}  layers {layers}
  heads {heads}  kv_groups 8
  vocab 128256  seq 4096
  swiglu untied_embeddings
>

gpu g{i} : {gpu} < mem_bw 4800GB/s >

cluster c{i} <
  gpu g{i}
  dim nvlink fc 8 450GB/s 1us
  dim ib switch {nodes} 50GB/s 5us
>

plan p{i} <
  tp 8 sp pp {pp} dp {dp}
  micro_batch {micro} global_batch {global}
  recompute {recompute}
  distributed_optimizer overlap_grad_reduce overlap_param_gather
  mfu {mfu}%
>

scenario s{i} < model m{i} cluster c{i} plan p{i} >

",
        ffn = hidden * 7 / 2,
    )
}

/// Groups until the text has at least `lines` lines.
fn generated(lines: usize) -> String {
    let mut text = String::from("# Generated for `cargo bench --bench check`.\n\n");
    let mut i = 0;
    while text.lines().count() < lines {
        text.push_str(&group(i));
        i += 1;
    }
    text
}

fn no_files(p: &Path) -> Result<Vec<u8>, venusc::session::UseError> {
    Err(format!("no file `{}` in the benchmark", p.display()).into())
}

fn best_of<T>(runs: u32, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut out = None;
    for _ in 0..runs {
        let t0 = Instant::now();
        let v = f();
        best = best.min(t0.elapsed());
        out = Some(v);
    }
    (best, out.expect("runs > 0"))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let text = generated(1_000);
    let path = Path::new("bench.venus");
    let lines = text.lines().count();

    // Cold: everything from bytes, as one `venusc check` run.
    let (cold, checked) = best_of(20, || {
        let mut session = Session::new();
        let root = session.load(path, text.as_bytes(), &mut no_files);
        session.check(root)
    });
    let errors: Vec<_> = checked
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .collect();
    let summary: Vec<String> = errors
        .iter()
        .map(|d| format!("{}: {}", d.code, d.message))
        .collect();
    assert!(
        errors.is_empty(),
        "the generated file must be valid:\n{}",
        summary.join("\n")
    );
    println!(
        "check, cold (new session, load + check): {lines} lines, {} scenarios, {} warnings: {:.3} ms (target < 5 ms)",
        checked.scenarios.len(),
        checked.diagnostics.len(),
        ms(cold)
    );

    // Warm: one session edited in place, as a language server keeps it. Each edit toggles one
    // digit of one plan's `mfu` (a real change of a typed value, valid both ways).
    let mut session = Session::new();
    let root = session.load(path, text.as_bytes(), &mut no_files);
    session.check(root);
    let needle = "mfu 45%";
    let at = text.find(needle).expect("a plan with mfu 45%") + needle.len() - 2;
    let variants: [Vec<u8>; 2] = [text.clone().into_bytes(), {
        let mut b = text.clone().into_bytes();
        b[at] = b'6';
        b
    }];
    let mut flip = 0;
    let (edit, after_edit) = best_of(50, || {
        flip ^= 1;
        session.db_mut().set_file(path, &variants[flip]);
        session.check(root)
    });
    assert!(!after_edit.has_errors());
    println!(
        "re-check after a one-character edit (set_file + check): {:.3} ms",
        ms(edit)
    );

    let (unchanged, _) = best_of(50, || session.check(root));
    println!("re-check with nothing changed: {:.3} ms", ms(unchanged));
}
