//! The plain steps the CLI and the Python binding (`python/`) share, so both give the same
//! answers: select a checked file's scenario, finish a simulation's report as `sim` prints
//! it, and take a launch script's text from its bytes.
//!
//! Input: a [`Session`] that has loaded the file, bytes. Output: data (a scenario with its
//! warnings, a report, diagnostics). No I/O: the callers read the files through `files` and
//! render the diagnostics at their edge.

use venus_diag::diag::render::{self, SourceFiles};
use venus_diag::diag::{Diagnostic, FileId, Loc, Span};
use venus_front::Session;
use venus_out::emit::megatron::MegatronProblem;
use venus_out::report::Report;
use venus_plan::plan::{Provenance, Scenario};

/// A file's scenario that checked without errors, and the warnings of its file.
pub struct Selected {
    pub scenario: Scenario,
    pub provenance: Provenance,
    pub warnings: Vec<Diagnostic>,
}

/// Checks the file loaded as `root` and selects the scenario `name` (or its only one). On
/// failure: every diagnostic of the check, with E0108 when the selection itself failed.
pub fn select(
    session: &Session,
    root: FileId,
    name: Option<&str>,
) -> Result<Selected, Vec<Diagnostic>> {
    let checked = session.check(root);
    let mut diagnostics = checked.diagnostics.clone();
    let selected = checked.select(name);
    if let Err(Some(d)) = &selected {
        diagnostics.push(Diagnostic::clone(d));
    }
    match selected {
        Ok(sc) if !checked.has_errors() => Ok(Selected {
            scenario: sc.clone(),
            provenance: checked.provenance_of(sc),
            warnings: diagnostics,
        }),
        _ => Err(diagnostics),
    }
}

/// The report `sim` prints: the engine's wall time zeroed when `deterministic`, and the
/// file's warnings located in `files`.
pub fn finish_report(
    report: &Report,
    deterministic: bool,
    warnings: &[Diagnostic],
    files: &SourceFiles,
) -> Report {
    let report = if deterministic {
        report.clone().deterministic()
    } else {
        report.clone()
    };
    report.with_warnings(render::locate(warnings, files))
}

/// A launch script's text, or E0609 at its first byte that is not UTF-8 text (a binary file,
/// a NUL byte); the text shown then is the valid prefix.
pub fn script_text(bytes: &[u8], file: FileId) -> (String, Option<Diagnostic>) {
    let (valid, bad_at) = match std::str::from_utf8(bytes) {
        Ok(t) => (t, t.find('\0')),
        Err(e) => {
            let upto = e.valid_up_to();
            let t = std::str::from_utf8(&bytes[..upto]).unwrap_or_default();
            (t, Some(upto))
        }
    };
    match bad_at {
        None => (valid.to_string(), None),
        Some(at) => {
            let text = valid[..at.min(valid.len())].to_string();
            let d = MegatronProblem::NotText {
                byte: at,
                loc: Loc::new(file, Span::new(at, at)),
            }
            .diagnostic();
            (text, Some(d))
        }
    }
}
