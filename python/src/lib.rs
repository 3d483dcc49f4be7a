//! The extension module `venusc._venusc`: the library facade driven as `src/cli.rs` drives it
//! (the same `files` reader and project root, `api::select`, `simulate`, `sweep`, the
//! importers), answering in plain Python values that the package `venusc/` wraps.
//!
//! Input: the text or path a Python caller gave, and `sim`'s or `sweep`'s options. Output: a
//! tuple `(payload, diagnostics, error)`: the payload is the JSON the CLI prints (`sim
//! --format json`, `sweep --format json`), serialized by the same code so the figures are
//! the CLI's to the last bit; `diagnostics` are tuples `(severity, code, message, file,
//! line, column, help)`; `error` is a message with no code (the payload is `None` then, or
//! when an error diagnostic stopped the work). Invariants: the GIL is released for all the
//! work (loading, checking, simulating, sweeping), and bad input never panics across the
//! boundary: it comes back as diagnostics.

use std::path::{Path, PathBuf};

use pyo3::prelude::*;
use venusc::diag::render::{self, SourceFiles};
use venusc::diag::{Code, Diagnostic, FileId};
use venusc::files::{self, Failure, Input, Root};
use venusc::Session;

/// One diagnostic as Python receives it: severity, code (`None` for an uncoded message),
/// message, file, line and column (1-based; `None` without a place), help.
type PyDiagnostic = (
    String,
    Option<String>,
    String,
    Option<String>,
    Option<usize>,
    Option<usize>,
    Option<String>,
);

/// What every function returns: the payload, the diagnostics, an uncoded error message.
type Answer = (Option<String>, Vec<PyDiagnostic>, Option<String>);

/// The diagnostics with their places resolved in `files`.
fn located(diagnostics: &[Diagnostic], files: &SourceFiles) -> Vec<PyDiagnostic> {
    render::locate(diagnostics, files)
        .into_iter()
        .map(|d| {
            (
                d.severity,
                Some(d.code.to_string()),
                d.message,
                Some(d.position.file),
                Some(d.position.line),
                Some(d.position.column),
                d.help,
            )
        })
        .collect()
}

/// A file failure (E07xx: unreadable, too large, outside the root) has no place in a source.
fn failure(f: &Failure) -> Answer {
    let d = (
        "error".to_string(),
        Some(f.code.as_str().to_string()),
        f.message.clone(),
        None,
        None,
        None,
        Some(f.help.clone()),
    );
    (None, vec![d], None)
}

/// Where a source came from: a file (its `use`s resolved next to it, the project root the
/// CLI would take) or text (named `<string>`, its `use`s resolved in the working directory).
struct Source {
    path: PathBuf,
    bytes: Vec<u8>,
    root: Root,
}

/// The root rules of the CLI's `--root` and `--allow-outside-root`.
#[derive(Clone, Copy)]
struct RootRule<'a> {
    root: Option<&'a str>,
    allow_outside: bool,
}

fn source(text_or_path: &str, is_path: bool, rule: RootRule<'_>) -> Result<Source, Failure> {
    let explicit = rule.root.map(Path::new);
    if is_path {
        let path = PathBuf::from(text_or_path);
        let bytes = files::read(&path, Input::Venus)?;
        let root = Root::for_inputs(std::slice::from_ref(&path), explicit, rule.allow_outside)?;
        Ok(Source { path, bytes, root })
    } else {
        let root = Root::at(explicit.unwrap_or(Path::new(".")), rule.allow_outside)?;
        Ok(Source {
            path: PathBuf::from("<string>"),
            bytes: text_or_path.as_bytes().to_vec(),
            root,
        })
    }
}

/// `venusc check` of one file: its diagnostics (a sweep file's as `sweep` prepares it).
fn check_one(text_or_path: &str, is_path: bool, rule: RootRule<'_>) -> Answer {
    let src = match source(text_or_path, is_path, rule) {
        Ok(s) => s,
        Err(f) => return failure(&f),
    };
    let mut session = Session::new();
    let id = session.load(&src.path, &src.bytes, &mut src.root.reader());
    let checked = session.check(id);
    let mut results = vec![checked];
    venusc::session::drop_incomplete_leaves_used_elsewhere(&mut results);
    let mut diagnostics =
        venusc::sweep::check_diagnostics(&mut session, &src.path, id, &results[0]);
    let mut seen = std::collections::HashSet::new();
    diagnostics.retain(|d| seen.insert(d.clone()));
    let files = session.source_files();
    (Some(String::new()), located(&diagnostics, &files), None)
}

/// `sim`'s options.
struct SimRequest<'a> {
    scenario: Option<&'a str>,
    iterations: Option<u32>,
    all_ranks: bool,
    deterministic: bool,
}

/// `venusc sim --format json`: the report's JSON then, after a NUL, the HTML summary; the
/// warnings and any missed `expect` bound as diagnostics.
fn sim_one(text_or_path: &str, is_path: bool, rule: RootRule<'_>, req: &SimRequest<'_>) -> Answer {
    let src = match source(text_or_path, is_path, rule) {
        Ok(s) => s,
        Err(f) => return failure(&f),
    };
    let mut session = Session::new();
    let id = session.load(&src.path, &src.bytes, &mut src.root.reader());
    let selected = venusc::api::select(&session, id, req.scenario);
    let files = session.source_files();
    let selected = match selected {
        Ok(s) => s,
        Err(d) => return (None, located(&d, &files), None),
    };
    let (sc, at, mut diagnostics) = (selected.scenario, selected.provenance, selected.warnings);
    let opts = venusc::simulate::SimOptions {
        all_ranks: req.all_ranks,
        iterations: req.iterations,
    };
    let sim = match venusc::simulate::simulate(&sc, &opts) {
        Ok(s) => s,
        Err(e) => {
            // Every simulation failure is a coded diagnostic (E0601, E0602, E0620, ...).
            diagnostics.push(e.diagnostic(&sc, &at, &opts));
            return (None, located(&diagnostics, &files), None);
        }
    };
    let report = venusc::api::finish_report(&sim.report, req.deterministic, &diagnostics, &files);
    let mut payload = venusc::report::json(&report);
    payload.push('\0');
    payload.push_str(&venusc::report::summary_html(&sc, &report));
    diagnostics.extend(venusc::report::check_expect(
        &sc.expect, &at.expect, &report,
    ));
    (Some(payload), located(&diagnostics, &files), None)
}

/// `sweep`'s options.
struct SweepRequest<'a> {
    scenario: Option<&'a str>,
    auto: bool,
    allow_cross_node_tp: bool,
    headroom: f64,
    objective: &'a str,
    /// `--prune --top K`: simulate only the plans that can rank among the best K, list those.
    prune: Option<u64>,
}

fn objective(word: &str) -> Option<venusc::sweep::Objective> {
    use venusc::sweep::Objective;
    match word {
        "time" => Some(Objective::Time),
        "throughput" => Some(Objective::Throughput),
        "gpu-hours" | "gpu_hours" => Some(Objective::GpuHours),
        "mfu" => Some(Objective::Mfu),
        "goodput" => Some(Objective::Goodput),
        "time-to-train" | "time_to_train" => Some(Objective::TimeToTrain),
        "cost" => Some(Objective::Cost),
        _ => None,
    }
}

/// `venusc sweep --format json`, and the sweep's timing line as the CLI prints it.
fn sweep_one(
    text_or_path: &str,
    is_path: bool,
    rule: RootRule<'_>,
    req: &SweepRequest<'_>,
) -> Answer {
    let Some(objective) = objective(req.objective) else {
        let message = format!(
            "`{}` is not an objective: use `time`, `throughput`, `gpu-hours`, `mfu`, `goodput`, \
             `time-to-train` or `cost`",
            req.objective
        );
        return (None, Vec::new(), Some(message));
    };
    if !(0.0..1.0).contains(&req.headroom) {
        let message = format!(
            "a headroom of {} is not a share of memory: give one from 0 up to below 1, as 0.1",
            req.headroom
        );
        return (None, Vec::new(), Some(message));
    }
    if req.prune == Some(0) {
        let message =
            "`prune=0` keeps no plan: give the number of best plans to keep, as `prune=10`"
                .to_string();
        return (None, Vec::new(), Some(message));
    }
    let src = match source(text_or_path, is_path, rule) {
        Ok(s) => s,
        Err(f) => return failure(&f),
    };
    let options = venusc::sweep::SweepOptions {
        scenario: req.scenario.map(str::to_string),
        auto: req.auto.then_some(venusc::sweep::AutoOptions {
            allow_cross_node_tp: req.allow_cross_node_tp,
        }),
        headroom: venusc::ty::Ratio(req.headroom),
        objective,
        // Every candidate, as the CLI without `--prune`, unless the caller prunes.
        prune: req.prune,
    };
    let mut session = Session::new();
    let id = session.load(&src.path, &src.bytes, &mut src.root.reader());
    let sw = match venusc::sweep::prepare(&mut session, &src.path, id, &options) {
        Ok(sw) => sw,
        Err(venusc::sweep::PrepareError::Diagnostics(d)) => {
            return (None, located(&d, &session.source_files()), None)
        }
        Err(venusc::sweep::PrepareError::Usage(e)) => return (None, Vec::new(), Some(e)),
    };
    let (outcome, _timing) = venusc::sweep::run(&mut session, &sw, None, &venusc::sweep::Silent);
    (
        Some(venusc::sweep::output::json(&outcome)),
        Vec::new(),
        None,
    )
}

/// `venusc import megatron`: the `.venus` text, the import's warnings and the check of the
/// text (as the file `NAME.venus` in the working directory, as the CLI checks it).
fn megatron_one(script: &str, name: &str, cluster: Option<String>, gpus: Option<u64>) -> Answer {
    let file = FileId(0);
    let (text, decode_error) = venusc::api::script_text(script.as_bytes(), file);
    let mut sources = SourceFiles::new();
    sources.add(file, "<flags>", text.clone());
    if let Some(d) = decode_error {
        return (None, located(&[d], &sources), None);
    }
    let opts = venusc::emit::MegatronOptions {
        file,
        name: name.to_string(),
        source: "<flags>".to_string(),
        cluster,
        gpus,
    };
    let imported = match venusc::emit::import_megatron(&text, &opts) {
        Ok(i) => i,
        Err(errors) => return (None, located(&errors, &sources), None),
    };
    let mut out = located(&imported.warnings, &sources);
    let root = match Root::at(Path::new("."), false) {
        Ok(r) => r,
        Err(f) => return failure(&f),
    };
    let mut session = Session::new();
    let path = PathBuf::from(format!("{name}.venus"));
    let id = session.load(&path, imported.venus.as_bytes(), &mut root.reader());
    let checked = session.check(id);
    out.extend(located(&checked.diagnostics, &session.source_files()));
    (Some(imported.venus), out, None)
}

/// `venusc import CONFIG.json` of a HuggingFace config: the `.venus` text and its notes as
/// warnings without a code.
fn hf_one(label: &str, name: &str, bytes: &[u8]) -> Answer {
    use venusc::emit::ImportErrorKind;
    match venusc::emit::import_hf_config(label, name, bytes) {
        Ok(i) => {
            let warnings = i
                .warnings
                .into_iter()
                .map(|w| ("warning".to_string(), None, w, None, None, None, None))
                .collect();
            (Some(i.venus), warnings, None)
        }
        Err(e) => {
            let (code, help) = match e.kind {
                ImportErrorKind::Unrepresentable => (Code::E0605, None),
                ImportErrorKind::Unreadable => (
                    Code::E0703,
                    Some(format!(
                        "check the path `{label}` and that it is a regular file"
                    )),
                ),
                _ => (
                    Code::E0607,
                    Some(format!(
                        "fix that field of `{}`, or export the config again",
                        e.file
                    )),
                ),
            };
            let d = (
                "error".to_string(),
                Some(code.as_str().to_string()),
                e.to_string(),
                Some(label.to_string()),
                None,
                None,
                help,
            );
            (None, vec![d], None)
        }
    }
}

/// `check(text_or_path, is_path, root, allow_outside_root)`.
#[pyfunction]
#[pyo3(signature = (text_or_path, is_path, root=None, allow_outside_root=false))]
fn check(
    py: Python<'_>,
    text_or_path: String,
    is_path: bool,
    root: Option<String>,
    allow_outside_root: bool,
) -> Answer {
    py.allow_threads(|| {
        let rule = RootRule {
            root: root.as_deref(),
            allow_outside: allow_outside_root,
        };
        check_one(&text_or_path, is_path, rule)
    })
}

#[pyfunction]
#[pyo3(signature = (text_or_path, is_path, scenario=None, iterations=None, all_ranks=false,
    deterministic=false, root=None, allow_outside_root=false))]
#[allow(clippy::too_many_arguments)]
fn simulate(
    py: Python<'_>,
    text_or_path: String,
    is_path: bool,
    scenario: Option<String>,
    iterations: Option<u32>,
    all_ranks: bool,
    deterministic: bool,
    root: Option<String>,
    allow_outside_root: bool,
) -> Answer {
    py.allow_threads(|| {
        let rule = RootRule {
            root: root.as_deref(),
            allow_outside: allow_outside_root,
        };
        let req = SimRequest {
            scenario: scenario.as_deref(),
            iterations,
            all_ranks,
            deterministic,
        };
        sim_one(&text_or_path, is_path, rule, &req)
    })
}

#[pyfunction]
#[pyo3(signature = (text_or_path, is_path, scenario=None, auto=false,
    allow_cross_node_tp=false, headroom=0.0, objective="time".to_string(), root=None,
    allow_outside_root=false, prune=None))]
#[allow(clippy::too_many_arguments)]
fn sweep(
    py: Python<'_>,
    text_or_path: String,
    is_path: bool,
    scenario: Option<String>,
    auto: bool,
    allow_cross_node_tp: bool,
    headroom: f64,
    objective: String,
    root: Option<String>,
    allow_outside_root: bool,
    prune: Option<u64>,
) -> Answer {
    py.allow_threads(|| {
        let rule = RootRule {
            root: root.as_deref(),
            allow_outside: allow_outside_root,
        };
        let req = SweepRequest {
            scenario: scenario.as_deref(),
            auto,
            allow_cross_node_tp,
            headroom,
            objective: &objective,
            prune,
        };
        sweep_one(&text_or_path, is_path, rule, &req)
    })
}

#[pyfunction]
#[pyo3(signature = (script, name="megatron".to_string(), cluster=None, gpus=None))]
fn import_megatron(
    py: Python<'_>,
    script: String,
    name: String,
    cluster: Option<String>,
    gpus: Option<u64>,
) -> Answer {
    py.allow_threads(|| megatron_one(&script, &name, cluster, gpus))
}

/// A HuggingFace config given as JSON text (`label` names it in messages) or as a path.
#[pyfunction]
#[pyo3(signature = (json_or_path, is_path, name=None))]
fn import_hf(py: Python<'_>, json_or_path: String, is_path: bool, name: Option<String>) -> Answer {
    py.allow_threads(|| {
        if !is_path {
            let name = name.unwrap_or_else(|| "model".to_string());
            return hf_one("<config>", &name, json_or_path.as_bytes());
        }
        let path = PathBuf::from(&json_or_path);
        match files::read(&path, Input::Config) {
            Ok(bytes) => {
                let name = name.unwrap_or_else(|| files::model_name(&path));
                hf_one(&json_or_path, &name, &bytes)
            }
            Err(f) => failure(&f),
        }
    })
}

/// The threads a sweep simulates on (rayon's pool, as the CLI's).
#[pyfunction]
fn threads() -> usize {
    rayon::current_num_threads()
}

#[pymodule]
fn _venusc(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(sweep, m)?)?;
    m.add_function(wrap_pyfunction!(import_megatron, m)?)?;
    m.add_function(wrap_pyfunction!(import_hf, m)?)?;
    m.add_function(wrap_pyfunction!(threads, m)?)?;
    m.add("VERSION", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
