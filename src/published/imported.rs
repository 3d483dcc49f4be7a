//! A row's command line through the Megatron-LM importer, and the key lines it gives.
//!
//! Input: a [`Row`] and the values its columns state (sizes, parallelism, batch, precision).
//! Output: [`Imported`], the model and plan blocks' key lines that `venusc import megatron`
//! writes for the columns' flags followed by the row's own `megatron_args`, and the flags it
//! does not model. The per-source rules (`scenario.rs`, `split.rs`) then edit these lines by key.
//! Invariants: validate reads no Megatron-LM flag itself: every flag goes through
//! [`crate::emit::import_megatron`], so a flag the importer learns flows into validate; the
//! row's words reach the importer literally (each one shell-quoted), the row's `megatron_args`
//! after the columns' flags, so a flag the row states wins (argparse's last-wins).

use super::tsv::Row;
use crate::diag::FileId;
use crate::emit::{import_megatron, MegatronOptions};
use crate::syntax::schema::Key;
use std::fmt::Display;

/// The key lines of one block (`hidden 4096`, `sp`), one key per line, edited by key.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Block {
    lines: Vec<String>,
}

impl Block {
    pub fn new(lines: Vec<String>) -> Block {
        Block { lines }
    }

    fn position(&self, key: Key) -> Option<usize> {
        self.lines
            .iter()
            .position(|l| l.split_whitespace().next() == Some(key.name()))
    }

    /// Whether the block writes `key`.
    pub fn has(&self, key: Key) -> bool {
        self.position(key).is_some()
    }

    /// The words after `key` on its line (`optim_grads_params torch` of `fsdp`).
    pub fn value(&self, key: Key) -> Option<&str> {
        let line = &self.lines[self.position(key)?];
        Some(line[key.name().len()..].trim())
    }

    /// Writes `key value`, replacing the key's line where there is one.
    pub fn set(&mut self, key: Key, value: impl Display) {
        self.put(format!("{} {value}", key.name()), key);
    }

    /// Writes the flag key `key`.
    pub fn set_flag(&mut self, key: Key) {
        self.put(key.name().to_string(), key);
    }

    fn put(&mut self, line: String, key: Key) {
        match self.position(key) {
            Some(i) => self.lines[i] = line,
            None => self.lines.push(line),
        }
    }

    /// Drops the key's line; whether there was one.
    pub fn remove(&mut self, key: Key) -> bool {
        let Some(i) = self.position(key) else {
            return false;
        };
        self.lines.remove(i);
        true
    }

    pub fn lines(&self) -> &[String] {
        &self.lines
    }
}

/// What the importer made of a row's command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Imported {
    pub model: Block,
    pub plan: Block,
    /// The flags the importer lists in W0012 (`--window-size 127,0: not modelled by venusc`).
    pub not_modelled: Vec<String>,
}

/// The GEMM precision a row states, as Megatron-LM's flags (RUNS.md's `precision` column).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gemm {
    Bf16,
    Fp16,
    /// Transformer Engine's per-tensor scaling, E4M3 forward and E5M2 backward.
    Fp8,
    /// 1×128 / 128×128 block scaling (DeepSeek-V3), E4M3.
    Fp8Blockwise,
    /// MXFP8: E4M3 with one E8M0 scale per 32 values.
    Mxfp8,
    /// NVFP4: E2M1 with one E4M3 scale per 16 values.
    Nvfp4,
}

impl Gemm {
    /// The flags of Megatron-LM's arguments.py (d98e8a64) that run the precision:
    /// `--fp8-format {e4m3,hybrid}`, `--fp8-recipe {tensorwise,delayed,mxfp8,blockwise}`,
    /// `--fp4-format e2m1`.
    fn flags(self) -> &'static [&'static str] {
        match self {
            Gemm::Bf16 => &["--bf16"],
            Gemm::Fp16 => &["--fp16"],
            Gemm::Fp8 => &["--bf16", "--fp8-format", "hybrid"],
            Gemm::Fp8Blockwise => &[
                "--bf16",
                "--fp8-format",
                "e4m3",
                "--fp8-recipe",
                "blockwise",
            ],
            Gemm::Mxfp8 => &["--bf16", "--fp8-format", "e4m3", "--fp8-recipe", "mxfp8"],
            Gemm::Nvfp4 => &["--bf16", "--fp4-format", "e2m1"],
        }
    }

    /// GEMMs below BF16.
    pub fn is_low(self) -> bool {
        !matches!(self, Gemm::Bf16 | Gemm::Fp16)
    }
}

/// Full recomputation as the columns state it, or selective.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecomputeColumn {
    None,
    Selective,
    Full,
}

/// The values a row's columns state (or its source's rules settle), each a Megatron-LM flag.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Columns {
    pub layers: u64,
    pub hidden: u64,
    pub heads: u64,
    pub seq: u64,
    pub vocab: u64,
    pub ffn: Option<u64>,
    pub kv_groups: Option<u64>,
    pub global_batch: u64,
    pub micro_batch: u64,
    pub tp: u64,
    pub pp: u64,
    pub vpp: u64,
    pub cp: u64,
    pub ep: u64,
    pub sp: bool,
    pub recompute: RecomputeColumn,
    pub distributed_optimizer: bool,
    pub gemm: Gemm,
}

impl Columns {
    /// The columns as Megatron-LM flags (arguments.py's names at d98e8a64).
    fn flags(&self) -> Vec<String> {
        let mut f: Vec<String> = Vec::new();
        fn count(f: &mut Vec<String>, flag: &str, n: u64) {
            f.push(flag.to_string());
            f.push(n.to_string());
        }
        count(&mut f, "--num-layers", self.layers);
        count(&mut f, "--hidden-size", self.hidden);
        count(&mut f, "--num-attention-heads", self.heads);
        count(&mut f, "--seq-length", self.seq);
        count(&mut f, "--vocab-size", self.vocab);
        if let Some(ffn) = self.ffn {
            count(&mut f, "--ffn-hidden-size", ffn);
        }
        count(&mut f, "--global-batch-size", self.global_batch);
        count(&mut f, "--micro-batch-size", self.micro_batch);
        count(&mut f, "--tensor-model-parallel-size", self.tp);
        count(&mut f, "--pipeline-model-parallel-size", self.pp);
        if self.vpp > 1 {
            count(&mut f, "--num-virtual-stages-per-pipeline-rank", self.vpp);
        }
        if self.cp > 1 {
            count(&mut f, "--context-parallel-size", self.cp);
        }
        if self.ep > 1 {
            count(&mut f, "--expert-model-parallel-size", self.ep);
        }
        if let Some(g) = self.kv_groups.filter(|&g| g != self.heads) {
            f.push("--group-query-attention".into());
            count(&mut f, "--num-query-groups", g);
        }
        if self.sp {
            f.push("--sequence-parallel".into());
        }
        match self.recompute {
            RecomputeColumn::None => {}
            RecomputeColumn::Selective => {
                f.extend(["--recompute-granularity", "selective"].map(String::from))
            }
            // venusc's `recompute full` is Megatron's `uniform` with one layer per group.
            RecomputeColumn::Full => f.extend(
                [
                    "--recompute-granularity",
                    "full",
                    "--recompute-method",
                    "uniform",
                    "--recompute-num-layers",
                    "1",
                ]
                .map(String::from),
            ),
        }
        if self.distributed_optimizer {
            f.push("--use-distributed-optimizer".into());
        }
        f.extend(self.gemm.flags().iter().map(|s| s.to_string()));
        f
    }
}

/// The words of a row's `megatron_args`: split at whitespace (RUNS.md: "space-separated, as on
/// its command line"), one level of surrounding quotes removed, as a shell would.
fn row_words(args: &str) -> impl Iterator<Item = &str> {
    args.split_whitespace().map(|w| {
        ['"', '\'']
            .iter()
            .find_map(|q| w.strip_prefix(*q).and_then(|v| v.strip_suffix(*q)))
            .unwrap_or(w)
    })
}

/// `word` as one literal shell word.
fn quoted(word: &str) -> String {
    format!("'{}'", word.replace('\'', "'\\''"))
}

/// The command line the importer reads for a row: the columns' flags, then the row's own.
pub fn command_line(row: &Row, columns: &Columns) -> String {
    let flags = columns.flags();
    flags
        .iter()
        .map(String::as_str)
        .chain(row_words(&row.megatron_args))
        .map(quoted)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Imports a row's command line on `cluster` with `gpus` GPUs; the importer's first error,
/// as `CODE: message`, when it refuses the flags.
pub fn import(row: &Row, columns: &Columns, cluster: &str, gpus: u64) -> Result<Imported, String> {
    let text = command_line(row, columns);
    let opts = MegatronOptions {
        file: FileId(0),
        name: "row".into(),
        source: format!("{} megatron_args", row.id),
        cluster: Some(cluster.to_string()),
        gpus: Some(gpus),
    };
    match import_megatron(&text, &opts) {
        Ok(i) => Ok(Imported {
            model: Block::new(i.model),
            plan: Block::new(i.plan),
            not_modelled: i.not_modelled,
        }),
        Err(errors) => Err(errors.first().map_or_else(
            || "the Megatron-LM importer refused the row's flags".to_string(),
            |d| {
                format!(
                    "{}: {} (the row's flags through `venusc import megatron`)",
                    d.code.as_str(),
                    d.message
                )
            },
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_replaces_and_removes_a_key_by_name() {
        let mut b = Block::new(vec!["tp 2".into(), "sp".into(), "fsdp optim torch".into()]);
        assert_eq!(b.value(Key::Fsdp), Some("optim torch"));
        b.set(Key::Tp, 4);
        assert!(b.remove(Key::Sp));
        assert!(!b.remove(Key::Sp));
        b.set_flag(Key::OverlapP2p);
        assert_eq!(b.lines(), ["tp 4", "fsdp optim torch", "overlap_p2p"]);
    }

    #[test]
    fn row_words_reach_the_importer_literally() {
        assert_eq!(quoted("Et|(tt|)*30L"), "'Et|(tt|)*30L'");
        assert_eq!(quoted("it's"), "'it'\\''s'");
        let words: Vec<&str> = row_words("--moe-layer-freq '([0]*3+[1]*58)' --x \"a\"").collect();
        assert_eq!(words, ["--moe-layer-freq", "([0]*3+[1]*58)", "--x", "a"]);
    }
}
