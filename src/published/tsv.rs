//! The published-runs table: one measured training run per line, tab-separated, with a header.
//!
//! Input: the TSV text. Output: [`Row`]s with every numeric column parsed (`None` when the
//! cell is empty or not a number). Invariant: the reader never panics; a line with fewer cells
//! than the header is padded with empty cells, and a missing required column is an error.

use std::fmt;

/// One published run, as the table states it.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Row {
    pub id: String,
    pub source: String,
    pub model: String,
    pub layers: Option<u64>,
    pub hidden: Option<u64>,
    pub ffn: Option<u64>,
    pub heads: Option<u64>,
    pub kv_groups: Option<u64>,
    pub vocab: Option<u64>,
    pub seq: Option<u64>,
    pub global_batch: Option<u64>,
    pub micro_batch: Option<u64>,
    pub tp: Option<u64>,
    pub pp: Option<u64>,
    pub vpp: Option<u64>,
    pub dp: Option<u64>,
    pub cp: Option<u64>,
    pub ep: Option<u64>,
    /// `seq_parallel` as written (`yes`, `no` or empty).
    pub seq_parallel: String,
    /// `recompute` as written (`full`, `selective ...` or empty).
    pub recompute: String,
    /// `dist_optimizer` as written.
    pub dist_optimizer: String,
    pub gpu: String,
    pub num_gpus: Option<u64>,
    /// `iter_time_s`, `tokens_per_s_per_gpu` or `tflops_per_gpu`.
    pub metric: String,
    pub value: Option<f64>,
    pub notes: String,
    /// v2 columns (`RUNS.md`); empty or `None` in a v1 table, which lacks them.
    /// `precision` as written (`bf16`, `fp8`, `mxfp8`, `nvfp4`, ...).
    pub precision: String,
    /// GPUs per NVLink (scale-up) domain the job uses.
    pub nvlink_domain: Option<u64>,
    /// Scale-out bandwidth per GPU, Gb/s, one direction.
    pub nic_gbps: Option<f64>,
    /// HBM per GPU as the run's hardware had it.
    pub gpu_memory_gib: Option<f64>,
    /// `megatron`, `torchtitan`, `deepspeed` or `other`.
    pub framework: String,
    /// `pretrain`, `sft` or `lora`.
    pub task: String,
    /// The Megatron-LM flags the source states, space-separated as on its command line.
    pub megatron_args: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TsvError {
    Empty,
    /// The required columns the header lacks, in [`COLUMNS`] order.
    MissingColumns(Vec<&'static str>),
}

impl fmt::Display for TsvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TsvError::Empty => write!(f, "the table has no header line"),
            TsvError::MissingColumns(missing) => {
                let names: Vec<String> = missing.iter().map(|c| format!("`{c}`")).collect();
                match names.as_slice() {
                    [one] => write!(f, "the table has no {one} column"),
                    many => write!(
                        f,
                        "the table lacks {} columns: {}",
                        many.len(),
                        many.join(", ")
                    ),
                }
            }
        }
    }
}

impl std::error::Error for TsvError {}

const COLUMNS: [&str; 27] = [
    "id",
    "source",
    "model",
    "params_b",
    "layers",
    "hidden",
    "ffn_hidden",
    "heads",
    "kv_groups",
    "vocab",
    "seq_len",
    "global_batch",
    "micro_batch",
    "tp",
    "pp",
    "vpp",
    "dp",
    "cp",
    "ep",
    "seq_parallel",
    "recompute",
    "dist_optimizer",
    "gpu",
    "num_gpus",
    "metric",
    "value",
    "notes",
];

/// Columns of the v2 table (`RUNS.md`) read when present: a v1 table has none of them.
const OPTIONAL: [&str; 7] = [
    "precision",
    "nvlink_domain",
    "nic_gbps",
    "gpu_memory_gib",
    "framework",
    "task",
    "megatron_args",
];

/// The help of a table without its columns: the ones it must have, the ones it may have, and
/// the complete table that ships with venusc.
pub fn columns_help() -> String {
    format!(
        "a table's header names these columns, in any order: {}; and may name {} \
         (`docs/data/published-runs.tsv` is a complete table)",
        COLUMNS.join(", "),
        OPTIONAL.join(", ")
    )
}

/// Parses the table. Columns are found by header name, so their order does not matter.
pub fn parse(text: &str) -> Result<Vec<Row>, TsvError> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header: Vec<&str> = lines.next().ok_or(TsvError::Empty)?.split('\t').collect();
    let found = COLUMNS.map(|name| header.iter().position(|h| h.trim() == name));
    let missing: Vec<&'static str> = COLUMNS
        .iter()
        .zip(&found)
        .filter(|(_, at)| at.is_none())
        .map(|(name, _)| *name)
        .collect();
    if !missing.is_empty() {
        return Err(TsvError::MissingColumns(missing));
    }
    let index = found.map(|at| at.unwrap_or(0));
    let optional: Vec<Option<usize>> = OPTIONAL
        .iter()
        .map(|name| header.iter().position(|h| h.trim() == *name))
        .collect();
    let col = |name: &str| {
        COLUMNS
            .iter()
            .position(|c| *c == name)
            .map(|i| index[i])
            .or_else(|| {
                OPTIONAL
                    .iter()
                    .position(|c| *c == name)
                    .and_then(|i| optional[i])
            })
    };
    let mut rows = Vec::new();
    for line in lines {
        let cells: Vec<&str> = line.split('\t').collect();
        let cell = |name: &str| -> &str {
            col(name)
                .and_then(|i| cells.get(i))
                .map(|c| c.trim())
                .unwrap_or("")
        };
        let count = |name: &str| cell(name).parse::<u64>().ok();
        let number = |name: &str| cell(name).parse::<f64>().ok().filter(|v| v.is_finite());
        rows.push(Row {
            id: cell("id").to_string(),
            source: cell("source").to_string(),
            model: cell("model").to_string(),
            layers: count("layers"),
            hidden: count("hidden"),
            ffn: count("ffn_hidden"),
            heads: count("heads"),
            kv_groups: count("kv_groups"),
            vocab: count("vocab"),
            seq: count("seq_len"),
            global_batch: count("global_batch"),
            micro_batch: count("micro_batch"),
            tp: count("tp"),
            pp: count("pp"),
            vpp: count("vpp"),
            dp: count("dp"),
            cp: count("cp"),
            ep: count("ep"),
            seq_parallel: cell("seq_parallel").to_string(),
            recompute: cell("recompute").to_string(),
            dist_optimizer: cell("dist_optimizer").to_string(),
            gpu: cell("gpu").to_string(),
            num_gpus: count("num_gpus"),
            metric: cell("metric").to_string(),
            value: cell("value").parse::<f64>().ok().filter(|v| v.is_finite()),
            notes: cell("notes").to_string(),
            precision: cell("precision").to_string(),
            nvlink_domain: count("nvlink_domain"),
            nic_gbps: number("nic_gbps"),
            gpu_memory_gib: number("gpu_memory_gib"),
            framework: cell("framework").to_string(),
            task: cell("task").to_string(),
            megatron_args: cell("megatron_args").to_string(),
        });
    }
    Ok(rows)
}
