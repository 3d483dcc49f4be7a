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
    /// v2 `nvlink_domain`: GPUs per NVLink domain the job uses (`None`: column or cell absent).
    pub nvlink_domain: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TsvError {
    Empty,
    MissingColumn(&'static str),
}

impl fmt::Display for TsvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TsvError::Empty => write!(f, "the table has no header line"),
            TsvError::MissingColumn(c) => write!(f, "the table has no `{c}` column"),
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

/// Parses the table. Columns are found by header name, so their order does not matter.
pub fn parse(text: &str) -> Result<Vec<Row>, TsvError> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header: Vec<&str> = lines.next().ok_or(TsvError::Empty)?.split('\t').collect();
    let mut index = [0usize; COLUMNS.len()];
    for (slot, name) in index.iter_mut().zip(COLUMNS) {
        *slot = header
            .iter()
            .position(|h| h.trim() == name)
            .ok_or(TsvError::MissingColumn(name))?;
    }
    let col = |name: &str| COLUMNS.iter().position(|c| *c == name).map(|i| index[i]);
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
        // A v2 column: found by name when the header has it.
        let optional = |name: &str| {
            let i = header.iter().position(|h| h.trim() == name)?;
            cells.get(i)?.trim().parse::<u64>().ok()
        };
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
            nvlink_domain: optional("nvlink_domain"),
        });
    }
    Ok(rows)
}
