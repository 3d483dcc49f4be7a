//! Language-server latency: re-checking a 1,000-line file after a one-character edit, in the
//! server's database (set the new text, recompute the document's diagnostics as published).
//! Target: under 2 ms per edit. Run with `cargo bench --bench lsp`.

use std::time::Instant;

use venusc::lsp::Server;

/// A 1,000-line file: 60 models of 14 lines plus plans and a scenario using the last model.
fn big_file() -> String {
    let mut s = String::new();
    let mut lines = 0;
    let mut i = 0;
    while lines < 980 {
        s.push_str(&format!(
            "model m{i} <\n  hidden 4096\n  ffn 16384\n  layers 32\n  heads 32\n  kv_groups 8\n  vocab 32000\n  seq 4096\n  swiglu\n>\n\n"
        ));
        lines += 11;
        i += 1;
    }
    s.push_str("cluster c : dgx_h100 < nodes 4 >\n\nplan p <\n  tp 8\n  pp 4\n  micro_batch 1\n  global_batch 64\n  distributed_optimizer\n>\n\n");
    s.push_str(&format!(
        "scenario s <\n  model m{}\n  cluster c\n  plan p\n>\n",
        i - 1
    ));
    s
}

fn main() {
    let uri = "file:///bench/big.venus";
    let text = big_file();
    assert!(text.lines().count() >= 1000, "{}", text.lines().count());
    let mut server = Server::new();
    server.open_document(uri, 1, &text);
    let first = server.document_diagnostics(uri).map_or(0, |d| d.len());
    // One character: `hidden 4096` ↔ `hidden 4097` in the middle of the file, alternating.
    let at = text.len() / 2 + text[text.len() / 2..].find("hidden 4096").unwrap_or(0) + 10;
    let variants = [text.clone(), {
        let mut t = text.clone();
        t.replace_range(at..at + 1, "7");
        t
    }];
    let rounds = 200;
    let mut samples = Vec::with_capacity(rounds);
    for round in 0..rounds {
        let start = Instant::now();
        server.replace_document(uri, round as i32 + 2, &variants[round % 2]);
        let n = server.document_diagnostics(uri).map_or(0, |d| d.len());
        samples.push(start.elapsed());
        assert_eq!(n, first);
    }
    samples.sort();
    let median = samples[rounds / 2];
    let p90 = samples[rounds * 9 / 10];
    println!(
        "lsp re-check of a {}-line file after a one-character edit: median {:.3} ms, p90 {:.3} ms ({} diagnostics)",
        text.lines().count(),
        median.as_secs_f64() * 1e3,
        p90.as_secs_f64() * 1e3,
        first
    );
}
