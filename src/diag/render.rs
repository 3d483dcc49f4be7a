//! Rendering diagnostics at the edge: human (codespan-reporting), JSON and GitHub workflow
//! commands. Input: diagnostics and the text of the files they point into. Output: a string.
//! Nothing else in the crate formats a diagnostic for people.

use std::collections::BTreeMap;

use codespan_reporting::diagnostic as cs;
use codespan_reporting::files::SimpleFiles;
use codespan_reporting::term;
use serde::Serialize;

use super::{Diagnostic, FileId, Label, Loc, Severity};

/// The text and display name of every file a diagnostic may point into.
#[derive(Default)]
pub struct SourceFiles {
    files: SimpleFiles<String, String>,
    index: BTreeMap<FileId, usize>,
}

impl SourceFiles {
    pub fn new() -> SourceFiles {
        SourceFiles::default()
    }

    pub fn add(&mut self, id: FileId, name: impl Into<String>, text: impl Into<String>) {
        if self.index.contains_key(&id) {
            return;
        }
        let idx = self.files.add(name.into(), text.into());
        self.index.insert(id, idx);
    }

    pub fn contains(&self, id: FileId) -> bool {
        self.index.contains_key(&id)
    }

    fn get(&self, id: FileId) -> Option<&codespan_reporting::files::SimpleFile<String, String>> {
        self.index.get(&id).and_then(|&i| self.files.get(i).ok())
    }

    pub fn name(&self, id: FileId) -> &str {
        self.get(id).map_or("<unknown>", |f| f.name().as_str())
    }

    /// 1-based (line, column) of a byte offset; the column counts characters.
    pub fn line_col(&self, id: FileId, offset: u32) -> (usize, usize) {
        let (Some(file), Some(&idx)) = (self.get(id), self.index.get(&id)) else { return (1, 1) };
        let offset = clamp_to_char_boundary(file.source(), offset as usize);
        // Binary search over the line starts: scanning from the file start for every position
        // made JSON output quadratic in (diagnostics × file size).
        codespan_reporting::files::Files::location(&self.files, idx, offset).map_or((1, 1), |l| (l.line_number, l.column_number))
    }

    /// A span clamped into the file, so a stale or hostile span can never make rendering fail.
    fn clamp(&self, loc: Loc) -> std::ops::Range<usize> {
        let Some(file) = self.get(loc.file) else {
            return 0..0;
        };
        let text = file.source();
        let start = clamp_to_char_boundary(text, loc.span.start as usize);
        let end = clamp_to_char_boundary(text, (loc.span.end as usize).max(start));
        start..end
    }
}

fn clamp_to_char_boundary(text: &str, mut offset: usize) -> usize {
    offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// Human-readable rendering, with ANSI colour when `color` is set.
pub fn human(diagnostics: &[Diagnostic], files: &SourceFiles, color: bool) -> String {
    let config = term::Config::default();
    let mut buffer = if color {
        term::termcolor::Buffer::ansi()
    } else {
        term::termcolor::Buffer::no_color()
    };
    for d in diagnostics {
        let cs_diag = to_codespan(d, files);
        // Rendering into memory can only fail on a missing file, which `to_codespan` prevents.
        let _ = term::emit_to_write_style(&mut buffer, &config, &files.files, &cs_diag);
    }
    String::from_utf8_lossy(buffer.as_slice()).into_owned()
}

fn to_codespan(d: &Diagnostic, files: &SourceFiles) -> cs::Diagnostic<usize> {
    let severity = match d.severity {
        Severity::Error => cs::Severity::Error,
        Severity::Warning => cs::Severity::Warning,
    };
    let mut labels = Vec::new();
    let mut lost = Vec::new();
    let mut push = |label: &Label, primary: bool| match files.index.get(&label.loc.file) {
        Some(&idx) => {
            let range = files.clamp(label.loc);
            let l = if primary {
                cs::Label::primary(idx, range)
            } else {
                cs::Label::secondary(idx, range)
            };
            labels.push(l.with_message(label.message.clone()));
        }
        None => lost.push(label.message.clone()),
    };
    push(&d.primary, true);
    for s in &d.secondary {
        push(s, false);
    }
    let mut notes: Vec<String> = d.notes.clone();
    notes.extend(lost);
    if let Some(help) = &d.help {
        notes.push(format!("help: {help}"));
    }
    cs::Diagnostic::new(severity)
        .with_code(d.code.as_str())
        .with_message(d.message.clone())
        .with_labels(labels)
        .with_notes(notes)
}

#[derive(Serialize)]
struct JsonReport<'a> {
    files: usize,
    errors: usize,
    warnings: usize,
    diagnostics: Vec<JsonDiagnostic<'a>>,
}

#[derive(Serialize)]
struct JsonDiagnostic<'a> {
    code: &'static str,
    severity: String,
    message: &'a str,
    #[serde(flatten)]
    position: JsonPosition,
    labels: Vec<JsonLabel<'a>>,
    help: Option<&'a str>,
    notes: &'a [String],
}

#[derive(Serialize)]
struct JsonLabel<'a> {
    message: &'a str,
    primary: bool,
    #[serde(flatten)]
    position: JsonPosition,
}

#[derive(Serialize)]
struct JsonPosition {
    file: String,
    line: usize,
    column: usize,
    end_line: usize,
    end_column: usize,
}

fn position(loc: Loc, files: &SourceFiles) -> JsonPosition {
    let range = files.clamp(loc);
    let (line, column) = files.line_col(loc.file, range.start as u32);
    let (end_line, end_column) = files.line_col(loc.file, range.end as u32);
    JsonPosition {
        file: files.name(loc.file).to_string(),
        line,
        column,
        end_line,
        end_column,
    }
}

/// Counts of (errors, warnings).
pub fn counts(diagnostics: &[Diagnostic]) -> (usize, usize) {
    let errors = diagnostics.iter().filter(|d| d.is_error()).count();
    (errors, diagnostics.len() - errors)
}

/// The JSON object of `venusc check --format json` (DIAGNOSTICS.md, "Machine-readable form").
/// `labels` lists every label, the primary one first (marked `"primary": true`).
pub fn json(diagnostics: &[Diagnostic], files: &SourceFiles, file_count: usize) -> String {
    let (errors, warnings) = counts(diagnostics);
    let report = JsonReport {
        files: file_count,
        errors,
        warnings,
        diagnostics: diagnostics
            .iter()
            .map(|d| JsonDiagnostic {
                code: d.code.as_str(),
                severity: d.severity.to_string(),
                message: &d.message,
                position: position(d.primary.loc, files),
                labels: std::iter::once((&d.primary, true))
                    .chain(d.secondary.iter().map(|l| (l, false)))
                    .map(|(l, primary)| JsonLabel {
                        message: &l.message,
                        primary,
                        position: position(l.loc, files),
                    })
                    .collect(),
                help: d.help.as_deref(),
                notes: &d.notes,
            })
            .collect(),
    };
    let mut out = serde_json::to_string_pretty(&report).unwrap_or_default();
    out.push('\n');
    out
}

/// GitHub Actions workflow commands, one per diagnostic:
/// `::error file=F,line=L,col=C,endLine=..,endColumn=..,title=E0301::message`.
pub fn github(diagnostics: &[Diagnostic], files: &SourceFiles) -> String {
    let mut out = String::new();
    for d in diagnostics {
        let p = position(d.primary.loc, files);
        let level = match d.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let mut body = format!("{}: {}", d.code, d.message);
        if !d.primary.message.is_empty() {
            body.push_str(&format!("\n{}", d.primary.message));
        }
        if let Some(help) = &d.help {
            body.push_str(&format!("\nhelp: {help}"));
        }
        out.push_str(&format!(
            "::{level} file={},line={},col={},endLine={},endColumn={},title={}::{}\n",
            escape_property(&p.file),
            p.line,
            p.column,
            p.end_line,
            p.end_column,
            d.code,
            escape_data(&body)
        ));
    }
    out
}

/// Workflow-command data escaping (the runner's `escapeData`).
fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Workflow-command property escaping (the runner's `escapeProperty`).
fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::{Code, Span};

    fn sample() -> (Vec<Diagnostic>, SourceFiles) {
        let mut files = SourceFiles::new();
        files.add(FileId(0), "demo.venus", "plan <\n  pp 8 dp 4\n>\n");
        let d = Diagnostic::new(
            Code::E0301,
            "plan needs 32 GPUs but cluster has 16",
            Loc::new(FileId(0), Span::new(14, 18)),
            "dp 4 makes 32 GPUs",
        )
        .with_secondary(Loc::new(FileId(0), Span::new(9, 13)), "pp 8")
        .with_help("use `dp 2`");
        (vec![d], files)
    }

    #[test]
    fn json_positions_are_one_based_lines_and_columns() {
        let (diags, files) = sample();
        let v: serde_json::Value = serde_json::from_str(&json(&diags, &files, 1)).unwrap();
        assert_eq!(v["errors"], 1);
        assert_eq!(v["warnings"], 0);
        let d = &v["diagnostics"][0];
        assert_eq!(d["code"], "E0301");
        assert_eq!(
            (d["line"].as_u64(), d["column"].as_u64()),
            (Some(2), Some(8))
        );
        assert_eq!(
            (d["end_line"].as_u64(), d["end_column"].as_u64()),
            (Some(2), Some(12))
        );
        assert_eq!(d["labels"].as_array().unwrap().len(), 2);
        assert_eq!(d["labels"][1]["column"], 3);
        assert_eq!(d["help"], "use `dp 2`");
    }

    #[test]
    fn github_escapes_newlines_and_property_separators() {
        let (diags, mut files) = sample();
        files.add(FileId(1), "a,b:c.venus", "");
        let out = github(&diags, &files);
        assert_eq!(
            out,
            "::error file=demo.venus,line=2,col=8,endLine=2,endColumn=12,title=E0301::E0301: plan needs 32 GPUs but cluster has 16%0Adp 4 makes 32 GPUs%0Ahelp: use `dp 2`\n"
        );
        assert_eq!(escape_property("a,b:c"), "a%2Cb%3Ac");
    }

    #[test]
    fn human_rendering_shows_code_labels_and_help() {
        let (diags, files) = sample();
        let out = human(&diags, &files, false);
        assert!(
            out.starts_with("error[E0301]: plan needs 32 GPUs but cluster has 16"),
            "{out}"
        );
        assert!(out.contains("demo.venus:2:8"), "{out}");
        assert!(out.contains("= help: use `dp 2`"), "{out}");
    }

    #[test]
    fn spans_past_the_end_are_clamped_not_fatal() {
        let mut files = SourceFiles::new();
        files.add(FileId(0), "x.venus", "é");
        let d = Diagnostic::new(Code::E0001, "m", Loc::new(FileId(0), Span::new(1, 99)), "l");
        assert!(human(&[d.clone()], &files, false).contains("x.venus"));
        assert!(json(&[d], &files, 1).contains("\"line\": 1"));
    }
}
