//! The pipeline split and point-to-point overlap of a published row: the Megatron-LM flags its
//! `megatron_args` states, else one rule per source for what the source's framework does.
//!
//! Input: a [`Row`] and the sizes the scenario builder settled (layers, pp, vpp, MTP depths).
//! Output: [`PipelineItems`], the plan items to write and the assumptions behind them.
//! Invariant: a rule is a function of the source and the row's columns, never of its id.

use super::scenario::has_flag;
use super::tsv::Row;
use venus_plan::plan::derive::{split_accounting, split_layers};
use venus_plan::plan::pipeline_layout;

/// Plan items for the pipeline split, and the assumptions made for them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PipelineItems {
    /// Items of the plan block, one per line (`account_for_embedding`, `pipeline_layout "…"`).
    pub items: Vec<String>,
    /// `key value (rule)` for each value the source does not state.
    pub assumed: Vec<String>,
}

/// The sizes the builder settled for a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sizes {
    pub layers: u64,
    pub pp: u64,
    pub vpp: u64,
    /// Multi-token prediction depths of the generated model.
    pub mtp: u64,
}

/// Whether the row ran on torchtitan (the v2 `framework` column, else its source).
pub fn is_torchtitan(row: &Row) -> bool {
    row.framework == "torchtitan" || row.source.contains("torchtitan")
}

/// Whether a torchtitan row ran an interleaved (multi-stage) schedule.
pub fn torchtitan_interleaved(row: &Row) -> bool {
    row.notes.contains("'Interleaved")
}

/// The virtual stages per rank torchtitan builds for an interleaved schedule when the run
/// names no split points: 2.
// pytorch/torchtitan@9dec370 torchtitan/parallelisms/pipelining_utils.py:18-30
// (`generate_split_points`: `num_stages_per_rank = 2` for a `PipelineScheduleMulti`).
pub const TORCHTITAN_STAGES_PER_RANK: u64 = 2;

/// The value after `flag` in a Megatron-LM argument string (`--flag VALUE`).
fn arg_value<'a>(args: &'a str, flag: &str) -> Option<&'a str> {
    let mut words = args.split_whitespace();
    words.find(|w| *w == flag)?;
    words
        .next()
        .map(|v| v.trim_matches(|c| c == '"' || c == '\''))
}

/// The pipeline items of a row.
pub fn pipeline_items(row: &Row, s: Sizes) -> PipelineItems {
    let mut out = PipelineItems::default();
    let args = row.megatron_args.as_str();
    stated_items(args, &mut out);
    if has_flag(args, "--overlap-p2p-communication") {
        out.items.push("overlap_p2p".into());
    } else if is_bridge(row) && s.pp >= 2 && s.vpp > 1 {
        out.items.push("overlap_p2p".into());
        out.assumed.push(
            "overlap_p2p (Megatron-Bridge's comm overlap config turns it on for pp > 1 with vpp > 1: \
             src/megatron/bridge/training/comm_overlap.py)"
                .into(),
        );
    }
    let stated = !out.items.iter().all(|i| i == "overlap_p2p");
    if stated || s.pp < 2 || split_layers(s.layers, s.pp, s.vpp, None, None).is_ok() {
        return out;
    }
    if is_torchtitan(row) {
        torchtitan_split(s, &mut out);
    } else if is_bridge(row) {
        bridge_split(row, s, &mut out);
    }
    out
}

fn is_bridge(row: &Row) -> bool {
    row.source.contains("Megatron-Bridge") && !is_torchtitan(row)
}

/// The split flags the row's `megatron_args` state, as plan items.
fn stated_items(args: &str, out: &mut PipelineItems) {
    if has_flag(args, "--account-for-embedding-in-pipeline-split") {
        out.items.push("account_for_embedding".into());
    }
    if has_flag(args, "--account-for-loss-in-pipeline-split") {
        out.items.push("account_for_loss".into());
    }
    for (flag, key) in [
        ("--decoder-first-pipeline-num-layers", "first_stage_layers"),
        ("--decoder-last-pipeline-num-layers", "last_stage_layers"),
    ] {
        if let Some(n) = arg_value(args, flag).and_then(|v| v.parse::<u64>().ok()) {
            out.items.push(format!("{key} {n}"));
        }
    }
    if let Some(layout) = arg_value(args, "--pipeline-model-parallel-layout") {
        out.items.push(format!("pipeline_layout \"{layout}\""));
    }
}

/// Megatron-Bridge's recipes when the layers do not split evenly: Llama 3.1 405B and Qwen3
/// count the embedding and the loss as layers; DeepSeek-V3 and Kimi-K2 write a layout.
// Megatron-Bridge@067f987 src/megatron/bridge/recipes/llama/h100/llama3.py:1226-1228 and
// src/megatron/bridge/recipes/qwen/h100/qwen3_moe.py:260-262 (`account_for_*_in_pipeline_split
// = True`); src/megatron/bridge/recipes/deepseek/h100/deepseek_v3.py:50-68 and
// recipes/kimi/h100/kimi_k2.py (`_get_*_pipeline_layout`: ⌈layers / stages⌉ per stage).
fn bridge_split(row: &Row, s: Sizes, out: &mut PipelineItems) {
    let layout_family = row.model.starts_with("DeepSeek") || row.model.starts_with("Kimi");
    if layout_family {
        let Some(counts) = pipeline_layout::balanced(s.layers, s.pp.saturating_mul(s.vpp)) else {
            return;
        };
        let text = pipeline_layout::render(&counts, s.mtp);
        out.items.push(format!("pipeline_layout \"{text}\""));
        // The value is in the generated plan; the rule's text holds no `(` (grouping).
        out.assumed.push(
            "pipeline_layout (Megatron-Bridge's DeepSeek-V3/Kimi-K2 recipes: ⌈layers / stages⌉ per virtual stage, the rest with the loss on the last)"
                .into(),
        );
    } else if split_accounting(s.layers, s.pp, s.vpp, true, true).is_ok() {
        out.items
            .push("account_for_embedding account_for_loss".into());
        out.assumed.push(
            "account_for_embedding (Megatron-Bridge's Llama 3.1 405B and Qwen3 recipes count the embedding and the loss as layers)"
                .into(),
        );
    }
}

/// torchtitan's split points when none are given: every virtual stage holds ⌊layers / stages⌋
/// layers, and the stages after the first take one more each while the remainder lasts.
// pytorch/torchtitan@9dec370 torchtitan/parallelisms/pipelining_utils.py:31-48
// (`generate_split_points`: base_interval, extra_layers given to middle stages); stage i is
// chunk i / pp of rank i % pp for the looped interleaved schedules.
pub fn torchtitan_counts(layers: u64, stages: u64) -> Option<Vec<u64>> {
    if stages == 0 || stages > layers || stages > pipeline_layout::MAX_STAGES {
        return None;
    }
    let base = layers / stages;
    let mut extra = layers % stages;
    let mut counts = Vec::with_capacity(usize::try_from(stages).ok()?);
    let mut used = 0u64;
    for i in 0..stages - 1 {
        let n = if i > 0 && extra > 0 {
            extra -= 1;
            base + 1
        } else {
            base
        };
        counts.push(n);
        used += n;
    }
    counts.push(layers - used);
    Some(counts)
}

fn torchtitan_split(s: Sizes, out: &mut PipelineItems) {
    let Some(counts) = torchtitan_counts(s.layers, s.pp.saturating_mul(s.vpp)) else {
        return;
    };
    let text = pipeline_layout::render(&counts, s.mtp);
    out.items.push(format!("pipeline_layout \"{text}\""));
    out.assumed.push(
        "pipeline_layout (torchtitan's generated split points: ⌊layers / stages⌋ per stage, one more on middle stages for the remainder)"
            .into(),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torchtitan_splits_126_layers_over_8_and_16_stages_as_its_split_points() {
        // 126 over 8: base 15, 6 extra → 15, 16 × 6, 15.
        let c = torchtitan_counts(126, 8).unwrap();
        assert_eq!(c, vec![15, 16, 16, 16, 16, 16, 16, 15]);
        assert_eq!(pipeline_layout::render(&c, 0), "Et*15|(t*16|)*6t*15L");
        // Interleaved, 2 stages per rank: base 7, 14 extra → 7, 8 × 14, 7.
        let c = torchtitan_counts(126, 16).unwrap();
        assert_eq!((c[0], c[1], c[14], c[15]), (7, 8, 8, 7));
        assert_eq!(c.iter().sum::<u64>(), 126);
        assert_eq!(torchtitan_counts(4, 8), None);
    }

    #[test]
    fn stated_megatron_flags_become_plan_items() {
        let mut out = PipelineItems::default();
        stated_items(
            "--swiglu --account-for-embedding-in-pipeline-split --decoder-last-pipeline-num-layers 5 --pipeline-model-parallel-layout Et|(tt|)*30L",
            &mut out,
        );
        assert_eq!(
            out.items,
            vec![
                "account_for_embedding".to_string(),
                "last_stage_layers 5".to_string(),
                "pipeline_layout \"Et|(tt|)*30L\"".to_string()
            ]
        );
    }
}
