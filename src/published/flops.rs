//! Published throughput → iteration time, with each source's own FLOP convention
//! (published-runs.md §3.6).
//!
//! Input: a [`Row`] and its [`Source`]. Output: the iteration time the source implies, in
//! seconds. `iter_time_s` is taken as is; `tokens_per_s_per_gpu` needs no FLOP count
//! (`t = B·s / (X·n)`); `tflops_per_gpu` divides the FLOPs of one iteration, counted as the
//! source counts them, by `X·n`.

use crate::base::Seconds;

use super::scenario::Source;
use super::tsv::Row;

/// SC21 Eq. 3: `96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h))`, recompute-inclusive (four passes over
/// the layers, three over the logits), full non-causal s² attention.
pub fn sc21_eq3(b: f64, s: f64, l: f64, h: f64, v: f64) -> f64 {
    96.0 * b * s * l * h * h * (1.0 + s / (6.0 * h) + v / (16.0 * l * h))
}

/// Megatron-LM `num_floating_point_operations` as of July 2024 (before commit 8873b55d6a):
/// `12·B·s·L·h²·[(1 + g/n + s/h)·q/h + (ffn/h)·glu + V/(2Lh)]`, model FLOPs, non-causal;
/// `glu` is 3/2 with SwiGLU. For a GPT model it equals Korthikanti Eq. 7.
#[allow(clippy::too_many_arguments)]
pub fn megatron_2024(
    b: f64,
    s: f64,
    l: f64,
    h: f64,
    heads: f64,
    groups: f64,
    ffn: f64,
    swiglu: bool,
    v: f64,
) -> f64 {
    let q = h; // kv_channels · heads = h for these models
    let glu = if swiglu { 1.5 } else { 1.0 };
    12.0 * b
        * s
        * l
        * h
        * h
        * ((1.0 + groups / heads + s / h) * q / h + ffn / h * glu + v / (2.0 * l * h))
}

/// The published iteration time of a row, seconds; `None` when the row's metric or numbers do
/// not allow one (e.g. a TFLOP/s figure whose FLOP convention needs an architecture the row
/// does not give).
pub fn published_iteration_time(row: &Row, source: Source) -> Option<Seconds> {
    published_seconds(row, source).map(Seconds)
}

fn published_seconds(row: &Row, source: Source) -> Option<f64> {
    let x = row.value.filter(|v| *v > 0.0)?;
    let n = row.num_gpus.filter(|&n| n > 0)? as f64;
    let b = row.global_batch? as f64;
    let s = row.seq? as f64;
    match row.metric.as_str() {
        "iter_time_s" => Some(x),
        "tokens_per_s_per_gpu" => Some(b * s / (x * n)),
        "tflops_per_gpu" => {
            let l = row.layers? as f64;
            let h = row.hidden? as f64;
            let v = row.vocab? as f64;
            let flops = match source {
                Source::Sc21Table1 | Source::Sc21Other => sc21_eq3(b, s, l, h, v),
                Source::MegatronReadme => {
                    let heads = row.heads? as f64;
                    let groups = row.kv_groups.map(|g| g as f64).unwrap_or(heads);
                    let ffn = row.ffn.map(|f| f as f64).unwrap_or(4.0 * h);
                    megatron_2024(b, s, l, h, heads, groups, ffn, false, v)
                }
                _ => return None,
            };
            Some(flops / (x * 1e12 * n))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// published-runs.md §1.1 derives 3.53 s for the 1.7B row (137 TFLOP/s, 32 GPUs).
    #[test]
    fn sc21_eq3_reproduces_the_derived_iteration_time_of_the_1_7b_row() {
        let f = sc21_eq3(512.0, 2048.0, 24.0, 2304.0, 51200.0);
        let t = f / (137e12 * 32.0);
        assert!((t - 3.53).abs() < 0.01, "{t}");
    }

    /// published-runs.md §1.3 derives 0.89 s for the 32B row (459.6 TFLOP/s, 384 GPUs).
    #[test]
    fn megatron_2024_reproduces_the_derived_iteration_time_of_the_32b_row() {
        let f = megatron_2024(
            192.0, 4096.0, 48.0, 7168.0, 56.0, 56.0, 28672.0, false, 131072.0,
        );
        let t = f / (459.6e12 * 384.0);
        assert!((t - 0.89).abs() < 0.01, "{t}");
    }

    #[test]
    fn tokens_per_second_converts_without_a_flop_count() {
        let row = Row {
            metric: "tokens_per_s_per_gpu".into(),
            value: Some(1000.0),
            num_gpus: Some(8),
            global_batch: Some(16),
            seq: Some(4096),
            ..Row::default()
        };
        let t = published_iteration_time(&row, Source::Bridge).unwrap().0;
        assert!((t - 16.0 * 4096.0 / 8000.0).abs() < 1e-12);
    }
}
