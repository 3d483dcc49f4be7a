//! Published throughput → iteration time, with each source's own FLOP convention
//! (published-runs.md §3.6).
//!
//! Input: a [`Row`] and its [`Source`]. Output: the [`Conversion`] between the iteration time
//! and the row's metric, both ways: the published value to the iteration time it implies, a
//! predicted iteration time to the metric. `iter_time_s` is taken as is;
//! `tokens_per_s_per_gpu` needs no FLOP count (`t = B·s / (X·n)`); `tflops_per_gpu` and `mfu`
//! divide the FLOPs of one iteration, counted as the source counts them, by `X·n` (and the
//! GPU's peak).

use crate::base::Seconds;

use super::scenario::Source;
use super::tsv::Row;
use super::Metric;

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

/// The FLOPs of one iteration as the row's source counts them, where the source has its own
/// convention: SC21 Eq. 3 for SC21, Megatron's July 2024 count for the Megatron-LM README.
/// `None` for every other source: RUNS.md then counts Megatron's current
/// `num_floating_point_operations` (`report::megatron_flops` of the scenario).
pub fn convention_flops(row: &Row, source: Source) -> Option<f64> {
    let b = row.global_batch? as f64;
    let s = row.seq? as f64;
    let l = row.layers? as f64;
    let h = row.hidden? as f64;
    let v = row.vocab? as f64;
    match source {
        Source::Sc21Table1 | Source::Sc21Other => Some(sc21_eq3(b, s, l, h, v)),
        Source::MegatronReadme => {
            let heads = row.heads? as f64;
            let groups = row.kv_groups.map(|g| g as f64).unwrap_or(heads);
            let ffn = row.ffn.map(|f| f as f64).unwrap_or(4.0 * h);
            Some(megatron_2024(b, s, l, h, heads, groups, ffn, false, v))
        }
        _ => None,
    }
}

/// How a speed metric follows from the iteration time `t`: `iter_time_s` is `t`, every other
/// one is a throughput `k / t` (tokens: `k = B·s / n`; TFLOP/s per GPU: `k = F / (n·10¹²)`;
/// MFU: `k = F / (n·peak)`, with `F` the FLOPs of one iteration).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Conversion {
    Time,
    Inverse(f64),
}

impl Conversion {
    /// The row's metric at iteration time `t`.
    pub fn metric(self, t: Seconds) -> f64 {
        match self {
            Conversion::Time => t.0,
            Conversion::Inverse(k) => k / t.0,
        }
    }

    /// The iteration time a published value `x` of the metric implies.
    pub fn time(self, x: f64) -> Seconds {
        match self {
            Conversion::Time => Seconds(x),
            Conversion::Inverse(k) => Seconds(k / x),
        }
    }
}

/// The conversion of a row's speed `metric` (`None` for `peak_mem_gib`, or when the row lacks
/// a count it needs). `flops` is the FLOPs of one iteration (TFLOP/s and MFU rows), `peak` the
/// GPU's dense BF16 FLOP/s (MFU rows).
pub fn conversion(row: &Row, metric: Metric, flops: f64, peak: f64) -> Option<Conversion> {
    let n = row.num_gpus.filter(|&n| n > 0)? as f64;
    Some(match metric {
        Metric::IterTime => Conversion::Time,
        Metric::TokensPerGpu => {
            let b = row.global_batch? as f64;
            let s = row.seq? as f64;
            Conversion::Inverse(b * s / n)
        }
        Metric::TflopsPerGpu => Conversion::Inverse(flops / (n * 1e12)),
        Metric::Mfu if peak > 0.0 => Conversion::Inverse(flops / (n * peak)),
        Metric::Mfu | Metric::PeakMem => return None,
    })
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
        let c = conversion(&row, Metric::TokensPerGpu, 0.0, 0.0).unwrap();
        let t = c.time(1000.0).0;
        assert!((t - 16.0 * 4096.0 / 8000.0).abs() < 1e-12);
        // And back: the metric at that time is the published value.
        assert!((c.metric(Seconds(t)) - 1000.0).abs() < 1e-9);
    }

    /// MFU is TFLOP/s over the GPU's dense BF16 peak: 400 TFLOP/s of 989 is 40.4%.
    #[test]
    fn mfu_and_tflops_share_the_flop_count() {
        let row = Row {
            num_gpus: Some(8),
            ..Row::default()
        };
        let flops = 8.0 * 400e12 * 2.0; // 400 TFLOP/s per GPU over a 2 s iteration
        let tflops = conversion(&row, Metric::TflopsPerGpu, flops, 989e12).unwrap();
        let mfu = conversion(&row, Metric::Mfu, flops, 989e12).unwrap();
        assert!((tflops.metric(Seconds(2.0)) - 400.0).abs() < 1e-9);
        assert!((mfu.metric(Seconds(2.0)) - 400.0 / 989.0).abs() < 1e-12);
        assert_eq!(conversion(&row, Metric::PeakMem, flops, 989e12), None);
    }
}
