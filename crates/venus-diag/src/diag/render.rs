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
        let (Some(file), Some(&idx)) = (self.get(id), self.index.get(&id)) else {
            return (1, 1);
        };
        let offset = clamp_to_char_boundary(file.source(), offset as usize);
        // Binary search over the line starts: scanning from the file start for every position
        // made JSON output quadratic in (diagnostics × file size).
        codespan_reporting::files::Files::location(&self.files, idx, offset)
            .map_or((1, 1), |l| (l.line_number, l.column_number))
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
///
/// codespan prints every line a label touches in full, so a label on a 1 MB line would print
/// 1 MB per diagnostic. A diagnostic with a label on a line longer than [`MAX_SHOWN_LINE`] is
/// rendered from a compact view of its file (see [`Compact`]): only the labelled lines, long
/// ones cut to the parts around the labels, with the real line and column numbers. A labelled
/// line with control characters is shown from that copy too, each control character escaped
/// (`\u{1b}`), so a hostile file cannot drive the terminal through a snippet.
pub fn human(diagnostics: &[Diagnostic], files: &SourceFiles, color: bool) -> String {
    let config = term::Config::default();
    let mut buffer = if color {
        term::termcolor::Buffer::ansi()
    } else {
        term::termcolor::Buffer::no_color()
    };
    for d in diagnostics {
        let cs_diag = to_codespan(d, files);
        let view = ShownFiles::new(files, &cs_diag);
        let cs_diag = view.map(cs_diag);
        // Rendering into memory can only fail on a missing file, which `to_codespan` prevents.
        let _ = term::emit_to_write_style(&mut buffer, &config, &view, &cs_diag);
    }
    String::from_utf8_lossy(buffer.as_slice()).into_owned()
}

/// The longest line (in bytes) shown in full in a human snippet.
const MAX_SHOWN_LINE: usize = 400;
/// Context kept before a label's start or end on a long line, in bytes.
const BEFORE: usize = 40;
/// Context kept after a label's start or end on a long line, in bytes.
const AFTER: usize = 80;

/// A compact copy of one file for one diagnostic: the labelled lines only (long ones cut to
/// windows around the label ends, joined by `…`), one after the other.
struct Compact {
    source: String,
    /// Kept pieces: (original start, original end, start in `source`), sorted, disjoint.
    pieces: Vec<(usize, usize, usize)>,
    /// Start offset in `source` of each compact line, and its original 1-based line number.
    lines: Vec<(usize, usize)>,
}

impl Compact {
    /// `points`: the label starts and ends in this file (original offsets).
    fn build(
        file: &codespan_reporting::files::SimpleFile<String, String>,
        points: &[usize],
    ) -> Compact {
        let text = file.source().as_str();
        let mut line_ranges: Vec<(usize, std::ops::Range<usize>)> = Vec::new();
        for &p in points {
            let index = codespan_reporting::files::Files::line_index(file, (), p).unwrap_or(0);
            if line_ranges.iter().all(|(i, _)| *i != index) {
                let range =
                    codespan_reporting::files::Files::line_range(file, (), index).unwrap_or(0..0);
                line_ranges.push((index, range));
            }
        }
        line_ranges.sort_by_key(|(i, _)| *i);
        let mut c = Compact {
            source: String::new(),
            pieces: Vec::new(),
            lines: Vec::new(),
        };
        for (index, range) in line_ranges {
            c.lines.push((c.source.len(), index + 1));
            let body = text.get(range.clone()).unwrap_or("");
            let body_end = range.start + body.trim_end_matches(['\n', '\r']).len();
            let mut windows: Vec<(usize, usize)> = points
                .iter()
                .filter(|&&p| range.start <= p && p <= range.end)
                .map(|&p| {
                    let from = p.saturating_sub(BEFORE).max(range.start);
                    let to = (p + AFTER).min(body_end).max(from);
                    (
                        clamp_to_char_boundary(text, from),
                        clamp_to_char_boundary(text, to),
                    )
                })
                .collect();
            if body_end - range.start <= MAX_SHOWN_LINE {
                windows = vec![(range.start, body_end)];
            }
            windows.sort_unstable();
            let mut pos = range.start;
            for (a, b) in windows {
                let a = a.max(pos);
                if a > pos {
                    c.source.push('…');
                }
                if b > a {
                    c.push_escaped(text, a, b);
                }
                pos = pos.max(b);
            }
            if pos < body_end {
                c.source.push('…');
            }
            // A label end at the line break maps here.
            c.pieces.push((body_end, body_end, c.source.len()));
            c.source.push('\n');
        }
        c
    }

    /// Copies `text[a..b]`, each control character as its escape (`\u{1b}`) in a piece of
    /// its own, so offsets around it still map one to one.
    fn push_escaped(&mut self, text: &str, a: usize, b: usize) {
        let part = text.get(a..b).unwrap_or("");
        let mut run = a;
        for (i, ch) in part.char_indices() {
            let at = a + i;
            if !super::has_control(ch.encode_utf8(&mut [0; 4])) {
                continue;
            }
            if at > run {
                self.pieces.push((run, at, self.source.len()));
                self.source.push_str(text.get(run..at).unwrap_or(""));
            }
            self.pieces
                .push((at, at + ch.len_utf8(), self.source.len()));
            super::push_escaped(&mut self.source, ch);
            run = at + ch.len_utf8();
        }
        if b > run {
            self.pieces.push((run, b, self.source.len()));
            self.source.push_str(text.get(run..b).unwrap_or(""));
        }
    }

    /// An original offset in the copy (offsets in a cut part snap to the piece before).
    fn map(&self, offset: usize) -> usize {
        let i = self.pieces.partition_point(|p| p.0 <= offset);
        match i.checked_sub(1).and_then(|i| self.pieces.get(i)) {
            Some(&(start, end, new)) => new + offset.min(end) - start,
            None => 0,
        }
    }

    /// An offset of the copy in the original file (inverse of [`Compact::map`]).
    fn unmap(&self, offset: usize) -> usize {
        let i = self.pieces.partition_point(|p| p.2 <= offset);
        match i.checked_sub(1).and_then(|i| self.pieces.get(i)) {
            Some(&(start, end, new)) => (start + (offset - new)).min(end),
            None => 0,
        }
    }

    fn line_index(&self, offset: usize) -> usize {
        self.lines
            .partition_point(|l| l.0 <= offset)
            .saturating_sub(1)
    }
}

/// What codespan reads for one diagnostic: the original files, except those with a label on
/// a long line, which are read through their [`Compact`] copy.
struct ShownFiles<'a> {
    original: &'a SourceFiles,
    compact: BTreeMap<usize, Compact>,
}

impl<'a> ShownFiles<'a> {
    fn new(original: &'a SourceFiles, d: &cs::Diagnostic<usize>) -> ShownFiles<'a> {
        let mut points: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for l in &d.labels {
            points
                .entry(l.file_id)
                .or_default()
                .extend([l.range.start, l.range.end]);
        }
        let mut compact = BTreeMap::new();
        for (idx, points) in points {
            let Ok(file) = original.files.get(idx) else {
                continue;
            };
            // A long line, or one with control characters (ESC would reach the terminal
            // raw): shown from the compact copy, which cuts and escapes.
            let needs_copy = points.iter().any(|&p| {
                codespan_reporting::files::Files::line_index(file, (), p)
                    .and_then(|i| codespan_reporting::files::Files::line_range(file, (), i))
                    .is_ok_and(|r| {
                        r.len() > MAX_SHOWN_LINE
                            || file.source().get(r).is_some_and(|line| {
                                super::has_control(line.trim_end_matches(['\n', '\r']))
                            })
                    })
            });
            if needs_copy {
                compact.insert(idx, Compact::build(file, &points));
            }
        }
        ShownFiles { original, compact }
    }

    /// The diagnostic with its label ranges moved into the compact copies.
    fn map(&self, mut d: cs::Diagnostic<usize>) -> cs::Diagnostic<usize> {
        for l in &mut d.labels {
            if let Some(c) = self.compact.get(&l.file_id) {
                let start = c.map(l.range.start);
                let end = c.map(l.range.end).max(start);
                l.range = start..end;
            }
        }
        d
    }
}

type FilesResult<T> = Result<T, codespan_reporting::files::Error>;

impl<'a> codespan_reporting::files::Files<'a> for ShownFiles<'a> {
    type FileId = usize;
    type Name = String;
    type Source = &'a str;

    fn name(&'a self, id: usize) -> FilesResult<String> {
        self.original.files.name(id)
    }
    fn source(&'a self, id: usize) -> FilesResult<&'a str> {
        match self.compact.get(&id) {
            Some(c) => Ok(&c.source),
            None => self.original.files.source(id),
        }
    }
    fn line_index(&'a self, id: usize, byte: usize) -> FilesResult<usize> {
        match self.compact.get(&id) {
            Some(c) => Ok(c.line_index(byte)),
            None => self.original.files.line_index(id, byte),
        }
    }
    fn line_number(&'a self, id: usize, line: usize) -> FilesResult<usize> {
        match self.compact.get(&id) {
            Some(c) => Ok(c.lines.get(line).map_or(line + 1, |l| l.1)),
            None => Ok(line + 1),
        }
    }
    fn line_range(&'a self, id: usize, line: usize) -> FilesResult<std::ops::Range<usize>> {
        match self.compact.get(&id) {
            Some(c) => {
                let start = c.lines.get(line).map_or(c.source.len(), |l| l.0);
                let end = c.lines.get(line + 1).map_or(c.source.len(), |l| l.0);
                Ok(start..end)
            }
            None => self.original.files.line_range(id, line),
        }
    }
    fn location(
        &'a self,
        id: usize,
        byte: usize,
    ) -> FilesResult<codespan_reporting::files::Location> {
        match self.compact.get(&id) {
            Some(c) => {
                let offset = c.unmap(byte);
                let file = self
                    .original
                    .index
                    .iter()
                    .find_map(|(f, &i)| (i == id).then_some(*f));
                let (line_number, column_number) =
                    file.map_or((1, 1), |f| self.original.line_col(f, offset as u32));
                Ok(codespan_reporting::files::Location {
                    line_number,
                    column_number,
                })
            }
            None => self.original.files.location(id, byte),
        }
    }
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
struct JsonReport {
    files: usize,
    errors: usize,
    warnings: usize,
    diagnostics: Vec<LocatedDiagnostic>,
}

/// One diagnostic with its positions resolved to file names and 1-based lines and columns:
/// the objects of `check --format json`'s `diagnostics` list (DIAGNOSTICS.md,
/// "Machine-readable form"), and of the JSON and HTML reports' `warnings`. Plain data: it
/// holds no [`Loc`], so it may travel past validation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LocatedDiagnostic {
    pub code: &'static str,
    pub severity: String,
    pub message: String,
    #[serde(flatten)]
    pub position: Position,
    pub labels: Vec<LocatedLabel>,
    pub help: Option<String>,
    pub notes: Vec<String>,
}

/// A label of a [`LocatedDiagnostic`]; the primary one is first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LocatedLabel {
    pub message: String,
    pub primary: bool,
    #[serde(flatten)]
    pub position: Position,
}

/// A span as a file name and 1-based start and end line and column.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Position {
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub end_line: usize,
    pub end_column: usize,
}

fn position(loc: Loc, files: &SourceFiles) -> Position {
    let range = files.clamp(loc);
    let (line, column) = files.line_col(loc.file, range.start as u32);
    let (end_line, end_column) = files.line_col(loc.file, range.end as u32);
    Position {
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

/// The diagnostics with their positions resolved; `labels` lists every label, the primary
/// one first (marked `"primary": true`).
pub fn locate(diagnostics: &[Diagnostic], files: &SourceFiles) -> Vec<LocatedDiagnostic> {
    diagnostics
        .iter()
        .map(|d| LocatedDiagnostic {
            code: d.code.as_str(),
            severity: d.severity.to_string(),
            message: d.message.clone(),
            position: position(d.primary.loc, files),
            labels: std::iter::once((&d.primary, true))
                .chain(d.secondary.iter().map(|l| (l, false)))
                .map(|(l, primary)| LocatedLabel {
                    message: l.message.clone(),
                    primary,
                    position: position(l.loc, files),
                })
                .collect(),
            help: d.help.clone(),
            notes: d.notes.clone(),
        })
        .collect()
}

/// The JSON object of `venusc check --format json` (DIAGNOSTICS.md, "Machine-readable form"):
/// the counts and the [`locate`]d diagnostics.
pub fn json(diagnostics: &[Diagnostic], files: &SourceFiles, file_count: usize) -> String {
    let (errors, warnings) = counts(diagnostics);
    let report = JsonReport {
        files: file_count,
        errors,
        warnings,
        diagnostics: locate(diagnostics, files),
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
        // Notes carry what the annotation has no snippet for (a used file's first error and
        // its line, a memory breakdown).
        for note in &d.notes {
            body.push_str(&format!("\n{note}"));
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
    fn human_snippets_escape_control_characters_of_the_source_line() {
        let mut files = SourceFiles::new();
        let text = "plan < tp 8 \u{1b}]0;pwned\u{7} \u{1b}[31m >\nnext line\n";
        files.add(FileId(0), "evil.venus", text);
        let at = text.find('\u{1b}').unwrap();
        let d = Diagnostic::new(
            Code::E0001,
            "unexpected character `\\u{1b}`",
            Loc::new(FileId(0), Span::new(at, at + 1)),
            "not part of the language",
        );
        let out = human(&[d], &files, false);
        assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "{out}");
        assert!(
            out.contains("plan < tp 8 \\u{1b}]0;pwned\\u{7} \\u{1b}[31m >"),
            "{out}"
        );
        assert!(out.contains("evil.venus:1:13"), "{out}");
    }

    #[test]
    fn github_lists_the_notes_before_the_help() {
        let (mut diags, files) = sample();
        diags[0]
            .notes
            .push("first error, at x.venus:1:1: unexpected `root`".into());
        let out = github(&diags, &files);
        assert!(
            out.ends_with("dp 4 makes 32 GPUs%0Afirst error, at x.venus:1:1: unexpected `root`%0Ahelp: use `dp 2`\n"),
            "{out}"
        );
    }

    #[test]
    fn human_snippets_without_control_characters_are_unchanged() {
        let (diags, files) = sample();
        let out = human(&diags, &files, false);
        assert!(out.contains("2 │   pp 8 dp 4"), "{out}");
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
        assert!(human(std::slice::from_ref(&d), &files, false).contains("x.venus"));
        assert!(json(&[d], &files, 1).contains("\"line\": 1"));
    }

    #[test]
    fn a_label_on_a_long_line_shows_a_window_with_the_real_column() {
        let mut files = SourceFiles::new();
        let text = format!(
            "plan <\n{}target{} >\n",
            "a ".repeat(5_000),
            " b".repeat(5_000)
        );
        let at = text.find("target").unwrap();
        files.add(FileId(0), "long.venus", text.clone());
        let d = Diagnostic::new(
            Code::E0001,
            "m",
            Loc::new(FileId(0), Span::new(at, at + 6)),
            "here",
        );
        let out = human(&[d], &files, false);
        assert!(out.contains("long.venus:2:10001"), "{out}");
        assert!(
            out.contains("2 │ …a a a") && out.contains("a a target b b"),
            "{out}"
        );
        assert!(out.contains("^^^^^^ here"), "{out}");
        assert!(out.len() < 1_000, "{} bytes: {out}", out.len());
    }
}
