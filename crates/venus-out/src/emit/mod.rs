//! Interop with legacy tooling: writers for VenusSim and Astra-Sim inputs and for VenusSim's
//! simplified / template text traces, and readers for VenusSim configs (`import`) and traces.
//!
//! Input: a validated [`Scenario`](venus_plan::plan::Scenario) (writers), or the bytes of VenusSim
//! files handed in through a reading closure (readers). Output: files written into a [`Sink`]
//! (the CLI backs it with a directory, tests with [`MemSink`]), a `.venus` text
//! ([`import`]), or a [`Trace`](venus_sim::trace::Trace) ([`read`]).
//! Invariants: the library does no file I/O of its own; every writer streams (a file is never
//! built as one string when it can grow with the world size); readers never panic on hostile
//! input and name the file and line of what is wrong. Formats are byte for byte those of
//! the spec (FORMATS.md) and the VenusSim reference (venussim.md §3, §4, §7).

pub mod astra;
pub mod hf;
pub mod import;
pub mod megatron;
pub mod read;
pub mod venussim;
pub mod vtrace;

use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, Write};

pub use astra::write_astra_sim;
pub use hf::{import_hf_config, is_hf_config};
pub use import::{import_venussim, ImportError, ImportErrorKind, Imported};
pub use megatron::{emit_megatron, import_megatron, MegatronImport, MegatronOptions};
pub use read::{read_trace, ReadError};
pub use venussim::{venussim_warnings, write_venussim};
pub use vtrace::{write_simplified_trace, write_template_trace};

/// Where writers put their files. `rel_path` is relative to the output directory and uses
/// `/` (`sim-config/system.json`); the sink creates parent directories as needed.
pub trait Sink {
    fn file(&mut self, rel_path: &str) -> io::Result<Box<dyn Write + '_>>;
}

/// A [`Sink`] that keeps every file in memory, for tests and for callers that post-process.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemSink {
    pub files: BTreeMap<String, Vec<u8>>,
}

impl MemSink {
    pub fn new() -> MemSink {
        MemSink::default()
    }

    /// The content of a file as text (lossy for non-UTF-8, which writers never produce).
    pub fn text(&self, rel_path: &str) -> Option<String> {
        self.files
            .get(rel_path)
            .map(|b| String::from_utf8_lossy(b).into_owned())
    }
}

impl Sink for MemSink {
    fn file(&mut self, rel_path: &str) -> io::Result<Box<dyn Write + '_>> {
        let buf = self.files.entry(rel_path.to_string()).or_default();
        buf.clear();
        Ok(Box::new(buf))
    }
}

/// Why a writer stopped.
#[derive(Debug)]
pub enum EmitError {
    /// The sink failed.
    Io(io::Error),
    /// The scenario has no schedule the format can express (e.g. a schedule too large to build).
    Unsupported(String),
    /// The files would hold more nodes than `sim`'s trace budget (E0601).
    OverBudget { nodes: u64, budget: u64 },
}

impl fmt::Display for EmitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EmitError::Io(e) => write!(f, "cannot write: {e}"),
            EmitError::Unsupported(m) => f.write_str(m),
            EmitError::OverBudget { nodes, budget } => write!(
                f,
                "the trace files would hold about {nodes} nodes, over the budget of {budget}: \
                 lower `iterations` or `global_batch`"
            ),
        }
    }
}

impl std::error::Error for EmitError {}

impl EmitError {
    /// The coded diagnostic of a failure the plan caused (E0601), labelled at its plan.
    pub fn diagnostic(
        &self,
        sc: &venus_plan::plan::Scenario,
        at: &venus_plan::plan::Provenance,
    ) -> Option<venus_diag::diag::Diagnostic> {
        let EmitError::OverBudget { nodes, budget } = self else {
            return None;
        };
        Some(
            venus_diag::diag::Diagnostic::new(
                venus_diag::diag::Code::E0601,
                format!(
                    "the trace files of `{}` would hold about {nodes} nodes, over the budget of \
                     {budget}",
                    sc.name
                ),
                at.plan,
                "this plan",
            )
            .with_help(crate::simulate::node_budget_help(
                sc,
                &crate::simulate::SimOptions::default(),
                *nodes,
                *budget,
            )),
        )
    }
}

impl From<io::Error> for EmitError {
    fn from(e: io::Error) -> EmitError {
        EmitError::Io(e)
    }
}

/// A plain-text note naming what the target tool will not model; writers still write.
pub type Warning = String;

/// `1000`, `0.5`, `1e-3`-free decimal rendering of a float for JSON/YAML: integral values
/// without a fraction, others with up to 6 significant decimals and no trailing zeros.
pub(crate) fn num(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 9.0e15 {
        format!("{}", v as i64)
    } else {
        let s = format!("{v:.6}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}
