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

/// The model dimensions Megatron-LM's current `num_floating_point_operations` reads, from a
/// row's columns and its `megatron_args`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlopModel {
    pub batch: f64,
    pub seq: f64,
    pub layers: f64,
    pub hidden: f64,
    pub heads: f64,
    pub groups: f64,
    pub kv_channels: f64,
    pub ffn: f64,
    pub swiglu: bool,
    /// The padded vocabulary (`make_vocab_size_divisible_by` 128 × tp).
    pub vocab: f64,
    pub mtp_layers: f64,
    pub moe: Option<FlopMoe>,
    pub mla: Option<FlopMla>,
}

/// The routed-expert part of a [`FlopModel`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlopMoe {
    pub moe_layers: f64,
    pub moe_ffn: f64,
    pub shared_ffn: f64,
    pub topk: f64,
    /// Whether the last decoder layer is an MoE layer (its MTP layers then are too).
    pub last_is_moe: bool,
}

/// Multi-latent attention dimensions of a [`FlopModel`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlopMla {
    /// `None`: no query compression (`--q-lora-rank` unset).
    pub q_lora_rank: Option<f64>,
    pub kv_lora_rank: f64,
    pub qk_head_dim: f64,
    pub qk_pos_emb_head_dim: f64,
    pub v_head_dim: f64,
}

/// Megatron-LM's `num_floating_point_operations` (`transformer_flops`) at commit d98e8a64,
/// megatron/training/training.py:802–1240 (BSHD: every sample is `seq` tokens), causal
/// attention; MLA and MoE branches included. 3 passes (forward, dgrad, wgrad) × 2 (FMA).
pub fn megatron_current(m: &FlopModel) -> f64 {
    let (fb, fma) = (3.0, 2.0);
    let ffn_factor = if m.swiglu { 3.0 } else { 2.0 };
    let (mut moe_layers, mut dense_layers, topk, moe_ffn, shared_ffn) = match m.moe {
        Some(e) => (
            e.moe_layers,
            m.layers - e.moe_layers,
            e.topk,
            e.moe_ffn,
            e.shared_ffn,
        ),
        None => (0.0, m.layers, 0.0, 0.0, 0.0),
    };
    let last_is_moe = m.moe.is_some_and(|e| e.last_is_moe);
    if last_is_moe {
        moe_layers += m.mtp_layers;
    } else {
        dense_layers += m.mtp_layers;
    }
    let attn_layers = m.layers + m.mtp_layers;
    let h = m.hidden;
    let (self_attn, core) = match m.mla {
        Some(a) => {
            let qk = a.qk_head_dim + a.qk_pos_emb_head_dim;
            let q_term = match a.q_lora_rank {
                None => h * m.heads * qk,
                Some(r) => r * (h + m.heads * qk + 1.0),
            };
            let linear = fb
                * fma
                * (q_term
                    + a.kv_lora_rank * (h + m.heads * (a.qk_head_dim + a.v_head_dim) + 1.0)
                    + h * a.qk_pos_emb_head_dim
                    + m.heads * a.v_head_dim * h);
            let core = fb * fma * (m.heads * qk / 2.0 + m.heads * a.v_head_dim / 2.0);
            (linear, core)
        }
        None => {
            let q = m.kv_channels * m.heads;
            let kv = m.kv_channels * m.groups;
            let linear = fb * fma * (h * (q + 2.0 * kv) + q * h);
            (linear, fb * fma * q / 2.0 * 2.0)
        }
    };
    let tokens = m.batch * m.seq;
    tokens
        * (fb
            * fma
            * h
            * (m.ffn * ffn_factor * dense_layers
                + moe_ffn * topk * ffn_factor * moe_layers
                + shared_ffn * ffn_factor * moe_layers)
            + self_attn * attn_layers
            + fb * fma * m.mtp_layers * (3.0 * h + 2.0 * h * h)
            + fb * fma * h * m.vocab * (m.mtp_layers + 1.0))
        + m.batch * m.seq * m.seq * core * attn_layers
}

/// The value of `--flag` in a space-separated Megatron-LM flag list (`None`: absent, or a
/// switch without a value).
pub fn flag_value<'a>(args: &'a str, flag: &str) -> Option<&'a str> {
    let mut words = args.split_whitespace();
    words.find(|w| *w == flag)?;
    words.next().filter(|v| !v.starts_with("--"))
}

fn flag_number(args: &str, flag: &str) -> Option<f64> {
    flag_value(args, flag)?
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
}

/// The MoE layer count and whether the last layer is MoE, from `--moe-layer-freq`: an int N
/// (every N-th layer, from layer 0) or Megatron's list form `([0]*3+[1]*58)`
/// (megatron/training/arguments.py `moe_freq_type`). Absent: every layer.
fn moe_pattern(args: &str, layers: u64) -> Option<(u64, bool)> {
    let Some(freq) = flag_value(args, "--moe-layer-freq") else {
        return Some((layers, true));
    };
    if let Ok(n) = freq.parse::<u64>() {
        if n == 0 {
            return None;
        }
        let count = layers.div_ceil(n);
        return Some((count, (layers - 1) % n == 0));
    }
    let mut pattern = Vec::new();
    for part in freq.trim_matches(|c| c == '(' || c == ')').split('+') {
        let (value, times) = part.split_once('*')?;
        let value: u64 = value.trim_matches(|c| c == '[' || c == ']').parse().ok()?;
        let times: usize = times.parse().ok()?;
        if times > 1 << 20 {
            return None;
        }
        pattern.extend(std::iter::repeat_n(value, times));
    }
    (pattern.len() as u64 == layers).then(|| (pattern.iter().sum(), pattern.last() == Some(&1)))
}

/// `num_floating_point_operations`' inputs of a row that states its architecture in
/// Megatron-LM flags (`megatron_args`), `None` when one it needs is missing.
pub fn flop_model(row: &Row) -> Option<FlopModel> {
    let args = row.megatron_args.as_str();
    let layers = row.layers?;
    let hidden = row.hidden? as f64;
    let heads = row.heads? as f64;
    let tp = row.tp.unwrap_or(1).max(1);
    let multiple = 128 * tp;
    let vocab = row.vocab?.div_ceil(multiple) * multiple;
    let moe = match flag_number(args, "--num-experts") {
        Some(_) => {
            let (moe_layers, last_is_moe) = moe_pattern(args, layers)?;
            Some(FlopMoe {
                moe_layers: moe_layers as f64,
                moe_ffn: flag_number(args, "--moe-ffn-hidden-size")
                    .or(row.ffn.map(|f| f as f64))?,
                shared_ffn: flag_number(args, "--moe-shared-expert-intermediate-size")
                    .unwrap_or(0.0),
                topk: flag_number(args, "--moe-router-topk").unwrap_or(2.0),
                last_is_moe,
            })
        }
        None => None,
    };
    let mla = args
        .split_whitespace()
        .any(|w| w == "--multi-latent-attention")
        .then(|| {
            Some(FlopMla {
                q_lora_rank: flag_number(args, "--q-lora-rank"),
                kv_lora_rank: flag_number(args, "--kv-lora-rank")?,
                qk_head_dim: flag_number(args, "--qk-head-dim")?,
                qk_pos_emb_head_dim: flag_number(args, "--qk-pos-emb-head-dim")?,
                v_head_dim: flag_number(args, "--v-head-dim")?,
            })
        });
    let mla = match mla {
        Some(None) => return None,
        Some(Some(a)) => Some(a),
        None => None,
    };
    Some(FlopModel {
        batch: row.global_batch? as f64,
        seq: row.seq? as f64,
        layers: layers as f64,
        hidden,
        heads,
        groups: row.kv_groups.map_or(heads, |g| g as f64),
        kv_channels: flag_number(args, "--kv-channels").unwrap_or(hidden / heads),
        ffn: row.ffn.map_or(4.0 * hidden, |f| f as f64),
        swiglu: args.split_whitespace().any(|w| w == "--swiglu"),
        vocab: vocab as f64,
        mtp_layers: flag_number(args, "--mtp-num-layers").unwrap_or(0.0),
        moe,
        mla,
    })
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
                // The Megatron-Core DeepSeek-V3 notes report Megatron's own TFLOP/s
                // ("FLOPs per Megatron num_floating_point_operations (MLA branch)").
                Source::McoreDsv3 => megatron_current(&flop_model(row)?),
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
