//! The pipeline split and point-to-point overlap of a published row: what the Megatron-LM
//! importer made of its `megatron_args`, then one rule per source for what the source's
//! framework does.
//!
//! Input: a [`Row`], the sizes the scenario builder settled (layers, pp, vpp, MTP depths) and
//! the imported plan. Output: the plan edited in place, and the assumptions behind each edit.
//! Invariant: a rule is a function of the source and the row's columns, never of its id; no
//! flag is read here (the importer read them).

use super::imported::Block;
use super::tsv::Row;
use crate::syntax::schema::Key;
use venus_plan::plan::derive::{split_accounting, split_layers};
use venus_plan::plan::pipeline_layout;

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

/// The keys that state a pipeline split.
const SPLIT_KEYS: [Key; 5] = [
    Key::AccountForEmbedding,
    Key::AccountForLoss,
    Key::FirstStageLayers,
    Key::LastStageLayers,
    Key::PipelineLayout,
];

/// The source's rules on the imported plan's pipeline: point-to-point overlap, and a split
/// for layers that do not divide evenly when the row states none.
pub fn pipeline_rules(row: &Row, s: Sizes, plan: &mut Block, assumed: &mut Vec<String>) {
    p2p_rules(row, plan, assumed);
    let stated = SPLIT_KEYS.iter().any(|&k| plan.has(k));
    if stated || s.pp < 2 || split_layers(s.layers, s.pp, s.vpp, None, None).is_ok() {
        return;
    }
    if is_torchtitan(row) {
        torchtitan_split(s, plan, assumed);
    } else if is_bridge(row) {
        bridge_split(row, s, plan, assumed);
    }
}

/// The importer overlaps an interleaved pipeline's sends and receives, Megatron-LM's default
/// since 2023-10-12 (NVIDIA/Megatron-LM 4eeff55d1f "Make overlap_p2p_comm the default":
/// `--no-overlap-p2p-communication`, arguments.py at d98e8a64). Before it the overlap was
/// opt-in (`--overlap-p2p-communication`, f9283c5a8a, 2023-05-31) and before that absent, so
/// the sources that ran an older Megatron-LM and do not state the flag run without it: SC21
/// (2021) and MegaScale's 2023 Megatron-LM baseline (which keeps the 2023 gather too,
/// [`super::scenario::Source`]'s `aligns_param_gather`). torchtitan is not Megatron:
/// PyTorch's pipelining schedules batch each step's sends and receives
/// (torch/distributed/pipelining/schedules.py `_batch_p2p`).
fn p2p_rules(row: &Row, plan: &mut Block, assumed: &mut Vec<String>) {
    use super::scenario::Source;
    let why = match Source::of(row) {
        Source::Sc21Table1 | Source::Sc21Other => "SC21's 2021 Megatron-LM had no p2p overlap",
        Source::MegaScale => {
            "MegaScale's 2023 Megatron-LM predates the default, Megatron-LM 4eeff55d1f"
        }
        _ if is_torchtitan(row) => "torchtitan batches each step's sends and receives",
        _ => return,
    };
    if plan.remove(Key::OverlapP2p) {
        assumed.push(format!("overlap_p2p off ({why})"));
    }
}

fn is_bridge(row: &Row) -> bool {
    row.source.contains("Megatron-Bridge") && !is_torchtitan(row)
}

/// Megatron-Bridge's recipes when the layers do not split evenly: Llama 3.1 405B and Qwen3
/// count the embedding and the loss as layers; DeepSeek-V3 and Kimi-K2 write a layout.
// Megatron-Bridge@067f987 src/megatron/bridge/recipes/llama/h100/llama3.py:1226-1228 and
// src/megatron/bridge/recipes/qwen/h100/qwen3_moe.py:260-262 (`account_for_*_in_pipeline_split
// = True`); src/megatron/bridge/recipes/deepseek/h100/deepseek_v3.py:50-68 and
// recipes/kimi/h100/kimi_k2.py (`_get_*_pipeline_layout`: ⌈layers / stages⌉ per stage).
fn bridge_split(row: &Row, s: Sizes, plan: &mut Block, assumed: &mut Vec<String>) {
    let layout_family = row.model.starts_with("DeepSeek") || row.model.starts_with("Kimi");
    if layout_family {
        let Some(counts) = pipeline_layout::balanced(s.layers, s.pp.saturating_mul(s.vpp)) else {
            return;
        };
        let text = pipeline_layout::render(&counts, s.mtp);
        plan.set(Key::PipelineLayout, format!("\"{text}\""));
        // The value is in the generated plan; the rule's text holds no `(` (grouping).
        assumed.push(
            "pipeline_layout (Megatron-Bridge's DeepSeek-V3/Kimi-K2 recipes: ⌈layers / stages⌉ per virtual stage, the rest with the loss on the last)"
                .into(),
        );
    } else if split_accounting(s.layers, s.pp, s.vpp, true, true).is_ok() {
        plan.set_flag(Key::AccountForEmbedding);
        plan.set_flag(Key::AccountForLoss);
        assumed.push(
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

fn torchtitan_split(s: Sizes, plan: &mut Block, assumed: &mut Vec<String>) {
    let Some(counts) = torchtitan_counts(s.layers, s.pp.saturating_mul(s.vpp)) else {
        return;
    };
    let text = pipeline_layout::render(&counts, s.mtp);
    plan.set(Key::PipelineLayout, format!("\"{text}\""));
    assumed.push(
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
}
