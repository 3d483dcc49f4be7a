//! The server's state and its handlers: open documents in the salsa database, and one function
//! per LSP feature, each from lsp-types params to lsp-types results. The answers themselves
//! come from [`crate::ide`] as plain data; a handler converts positions to byte offsets and
//! the answer to lsp-types, nothing more.
//!
//! Invariants: handlers never panic on any params (unknown documents give empty results,
//! malformed params are rejected by the caller before a handler runs); only
//! [`Server::load_uses`] reads files (the edge); every answer comes from the same queries as
//! `venusc check` ([`Session::check`]).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use lsp_types as lsp;

use super::line_index::LineIndex;
use crate::db::STDLIB;
use crate::diag::{self, FileId, Loc, Severity, Span};
use crate::ide;
use crate::syntax::ast::DefKind;
use crate::Session;

/// The URI scheme of the stdlib's read-only documents: `venus-stdlib:///gpus.venus`.
pub const STDLIB_SCHEME: &str = "venus-stdlib";
/// The custom request that returns a stdlib document's text: params `{ "uri": URI }`, result
/// `{ "uri": URI, "text": TEXT }`.
pub const STDLIB_REQUEST: &str = "venus/stdlib";

struct Document {
    file: FileId,
    version: i32,
}

/// The language server's state.
pub struct Server {
    session: Session,
    /// Open documents by URI (as the client spells it).
    docs: BTreeMap<String, Document>,
    /// The URI each user file was opened with (other files get a `file://` URI from their path).
    uris: HashMap<FileId, String>,
    /// What was last published per URI, so unchanged diagnostics are not sent again.
    published: HashMap<String, Vec<lsp::Diagnostic>>,
    /// Closed documents whose diagnostics must be cleared in the editor.
    closed: Vec<String>,
    /// The workspace folder every `use` must stay inside (E0109); `None`: each document's
    /// own directory.
    root: Option<PathBuf>,
    /// A directory holding the stdlib as real files (written by the loop at start-up), so
    /// go-to-definition into the stdlib gives `file://` URIs every client can open; `None`:
    /// `venus-stdlib:` URIs served by the `venus/stdlib` request.
    stdlib_dir: Option<PathBuf>,
}

impl Default for Server {
    fn default() -> Self {
        Server::new()
    }
}

impl Server {
    pub fn new() -> Server {
        Server::with_session(Session::new())
    }

    /// A server on the given session (one whose database logs its queries, in tests).
    pub fn with_session(session: Session) -> Server {
        Server {
            session,
            docs: BTreeMap::new(),
            uris: HashMap::new(),
            published: HashMap::new(),
            closed: Vec::new(),
            root: None,
            stdlib_dir: None,
        }
    }

    /// Serves the stdlib from `dir`, which holds each stdlib file under its own name (see
    /// [`stdlib_files`]).
    pub fn set_stdlib_dir(&mut self, dir: Option<PathBuf>) {
        self.stdlib_dir = dir;
    }

    /// The stdlib file a URI names: `venus-stdlib:///NAME`, or `file://` of `NAME` in the
    /// stdlib directory.
    fn stdlib_file_of(&self, uri: &str) -> Option<FileId> {
        stdlib_file(uri).or_else(|| {
            let dir = self.stdlib_dir.as_ref()?;
            let path = uri_to_path(uri);
            let name = path.strip_prefix(dir).ok()?.to_str()?.to_string();
            stdlib_file(&format!("{STDLIB_SCHEME}:///{name}"))
        })
    }

    /// Sets the project root (the client's workspace folder or `rootUri`).
    pub fn set_root(&mut self, root: Option<PathBuf>) {
        self.root = root;
    }

    pub fn session(&self) -> &Session {
        &self.session
    }

    // ---- documents ----

    /// Opens (or replaces) a document with the editor's text.
    pub fn open_document(&mut self, uri: &str, version: i32, text: &str) {
        if let Some(file) = self.stdlib_file_of(uri) {
            self.docs
                .insert(uri.to_string(), Document { file, version });
            return;
        }
        let path = uri_to_path(uri);
        let file = self.session.db_mut().set_file(&path, text.as_bytes());
        self.uris.insert(file, uri.to_string());
        self.docs
            .insert(uri.to_string(), Document { file, version });
        self.load_uses(file);
    }

    /// Applies content changes (full text, or ranges in order) to an open document.
    pub fn change_document(
        &mut self,
        uri: &str,
        version: i32,
        changes: &[lsp::TextDocumentContentChangeEvent],
    ) {
        let Some(doc) = self.docs.get(uri) else {
            return;
        };
        if self.session.db().is_stdlib(doc.file) {
            return;
        }
        let file = doc.file;
        let mut text = self.session.db().file_text(file).to_string();
        for change in changes {
            match change.range {
                Some(range) => {
                    let idx = LineIndex::new(&text);
                    let start = idx.offset(range.start.line, range.start.character);
                    let end = idx.offset(range.end.line, range.end.character).max(start);
                    text.replace_range(start..end, &change.text);
                }
                None => text = change.text.clone(),
            }
        }
        let path = uri_to_path(uri);
        self.session.db_mut().set_file(&path, text.as_bytes());
        if let Some(doc) = self.docs.get_mut(uri) {
            doc.version = version;
        }
        self.load_uses(file);
    }

    /// Replaces an open document's whole text (a full-text `didChange`).
    pub fn replace_document(&mut self, uri: &str, version: i32, text: &str) {
        let change = lsp::TextDocumentContentChangeEvent {
            range: None,
            range_length: None,
            text: text.to_string(),
        };
        self.change_document(uri, version, &[change]);
    }

    /// Closes a document: the file on disk becomes the truth again for the files that use it.
    pub fn close_document(&mut self, uri: &str) {
        let Some(doc) = self.docs.remove(uri) else {
            return;
        };
        if self.published.remove(uri).is_some_and(|d| !d.is_empty()) {
            self.closed.push(uri.to_string());
        }
        if self.session.db().is_stdlib(doc.file) {
            return;
        }
        let path = uri_to_path(uri);
        if let Ok(bytes) = crate::files::read(&path, crate::files::Input::Venus) {
            self.session.db_mut().set_file(&path, &bytes);
        }
    }

    /// A file changed on disk (from `workspace/didChangeWatchedFiles`): reloaded unless open.
    pub fn file_changed_on_disk(&mut self, uri: &str) {
        if self.docs.contains_key(uri) || self.stdlib_file_of(uri).is_some() {
            return;
        }
        let path = uri_to_path(uri);
        if let Ok(bytes) = crate::files::read(&path, crate::files::Input::Venus) {
            self.session.db_mut().set_file(&path, &bytes);
        }
        let roots: Vec<FileId> = self.docs.values().map(|d| d.file).collect();
        for root in roots {
            self.load_uses(root);
        }
    }

    /// The edge: reads the files `root` uses that are not loaded yet, through the one reader
    /// (regular files under the cap, inside the project root: never a FIFO, `/dev/zero` or
    /// the server's own stdin).
    fn load_uses(&mut self, root: FileId) {
        let dir = match &self.root {
            Some(dir) => dir.clone(),
            None => {
                let name = PathBuf::from(self.session.db().file_name(root));
                match name.parent() {
                    Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
                    _ => PathBuf::from("."),
                }
            }
        };
        match crate::files::Root::at(&dir, false) {
            Ok(project) => self.session.load_uses(root, &mut project.reader()),
            // The root is gone (a deleted folder): every `use` reports why.
            Err(f) => self.session.load_uses(root, &mut |_: &Path| {
                Err(crate::session::UseError::from(f.message.clone()))
            }),
        }
    }

    fn doc(&self, uri: &str) -> Option<(FileId, std::sync::Arc<str>)> {
        let doc = self.docs.get(uri)?;
        Some((doc.file, self.session.db().file_text(doc.file)))
    }

    // ---- URIs ----

    fn uri_of(&self, file: FileId) -> String {
        if let Some(uri) = self.uris.get(&file) {
            return uri.clone();
        }
        let name = self.session.db().file_name(file);
        match (name.strip_prefix("<stdlib>/"), &self.stdlib_dir) {
            (Some(rest), Some(dir)) => path_to_uri(&dir.join(rest)),
            (Some(rest), None) => format!("{STDLIB_SCHEME}:///{rest}"),
            (None, _) => path_to_uri(Path::new(&name)),
        }
    }

    fn location(&self, loc: Loc) -> Option<lsp::Location> {
        let text = self.session.db().file_text(loc.file);
        Some(lsp::Location {
            uri: lsp::Uri::from_str(&self.uri_of(loc.file)).ok()?,
            range: range(&LineIndex::new(&text), loc.span),
        })
    }

    // ---- diagnostics ----

    /// The diagnostics of one open document, as `venusc check` reports them on that file.
    pub fn document_diagnostics(&mut self, uri: &str) -> Option<Vec<lsp::Diagnostic>> {
        let (file, text) = self.doc(uri)?;
        if self.session.db().is_stdlib(file) {
            return Some(Vec::new());
        }
        let checked = self.session.check(file);
        // A sweep file (lists in plan items) shows what `venusc check` reports for it.
        let path = uri_to_path(uri);
        let diagnostics = crate::sweep::check_diagnostics(&mut self.session, &path, file, &checked);
        let idx = LineIndex::new(&text);
        Some(
            diagnostics
                .iter()
                .filter(|d| d.primary.loc.file == file)
                .map(|d| self.to_lsp_diagnostic(d, &idx))
                .collect(),
        )
    }

    fn to_lsp_diagnostic(&self, d: &diag::Diagnostic, idx: &LineIndex) -> lsp::Diagnostic {
        let mut message = d.message.clone();
        if !d.primary.message.is_empty() && !d.message.contains(&d.primary.message) {
            let _ = write!(message, "\n{}", d.primary.message);
        }
        if let Some(help) = &d.help {
            let _ = write!(message, "\nhelp: {help}");
        }
        for note in &d.notes {
            let _ = write!(message, "\nnote: {note}");
        }
        let related: Vec<lsp::DiagnosticRelatedInformation> = d
            .secondary
            .iter()
            .filter_map(|l| {
                Some(lsp::DiagnosticRelatedInformation {
                    location: self.location(l.loc)?,
                    message: l.message.clone(),
                })
            })
            .collect();
        lsp::Diagnostic {
            range: range(idx, d.primary.loc.span),
            severity: Some(match d.severity {
                Severity::Error => lsp::DiagnosticSeverity::ERROR,
                Severity::Warning => lsp::DiagnosticSeverity::WARNING,
            }),
            code: Some(lsp::NumberOrString::String(d.code.as_str().to_string())),
            source: Some("venusc".into()),
            message,
            related_information: (!related.is_empty()).then_some(related),
            ..Default::default()
        }
    }

    /// The `textDocument/publishDiagnostics` params of every open document whose diagnostics
    /// changed since they were last published.
    pub fn diagnostics_to_publish(&mut self) -> Vec<lsp::PublishDiagnosticsParams> {
        let uris: Vec<String> = self.docs.keys().cloned().collect();
        let mut out = Vec::new();
        for uri in std::mem::take(&mut self.closed) {
            if let Ok(parsed) = lsp::Uri::from_str(&uri) {
                out.push(lsp::PublishDiagnosticsParams {
                    uri: parsed,
                    diagnostics: Vec::new(),
                    version: None,
                });
            }
        }
        for uri in uris {
            let Some(diagnostics) = self.document_diagnostics(&uri) else {
                continue;
            };
            if self.published.get(&uri) == Some(&diagnostics) {
                continue;
            }
            self.published.insert(uri.clone(), diagnostics.clone());
            let Ok(parsed) = lsp::Uri::from_str(&uri) else {
                continue;
            };
            out.push(lsp::PublishDiagnosticsParams {
                uri: parsed,
                diagnostics,
                version: self.docs.get(&uri).map(|d| d.version),
            });
        }
        out
    }

    // ---- go to definition, hover, completion ----

    /// The byte offset of a position in an open document.
    fn offset(&self, uri: &str, pos: lsp::Position) -> Option<(FileId, usize)> {
        let (file, text) = self.doc(uri)?;
        Some((file, LineIndex::new(&text).offset(pos.line, pos.character)))
    }

    pub fn definition(&self, uri: &str, pos: lsp::Position) -> Option<lsp::Location> {
        let (file, offset) = self.offset(uri, pos)?;
        self.location(ide::definition(&self.session, file, offset as u32)?)
    }

    pub fn hover(&self, uri: &str, pos: lsp::Position) -> Option<lsp::Hover> {
        let (file, text) = self.doc(uri)?;
        let idx = LineIndex::new(&text);
        let offset = idx.offset(pos.line, pos.character);
        let h = ide::hover(&self.session, file, offset as u32)?;
        Some(lsp::Hover {
            contents: lsp::HoverContents::Markup(lsp::MarkupContent {
                kind: lsp::MarkupKind::Markdown,
                value: h.markdown,
            }),
            range: Some(range(&idx, h.span)),
        })
    }

    pub fn completion(&self, uri: &str, pos: lsp::Position) -> Option<Vec<lsp::CompletionItem>> {
        let (file, offset) = self.offset(uri, pos)?;
        let items = ide::completion(&self.session, file, offset);
        Some(items.into_iter().map(completion_item).collect())
    }

    // ---- symbols, formatting, code actions, stdlib ----

    #[allow(deprecated)] // `DocumentSymbol::deprecated` must be written to build the struct
    pub fn document_symbols(&self, uri: &str) -> Option<Vec<lsp::DocumentSymbol>> {
        let (file, text) = self.doc(uri)?;
        let idx = LineIndex::new(&text);
        let symbols = ide::document_symbols(&self.session, file);
        Some(
            symbols
                .into_iter()
                .map(|sym| lsp::DocumentSymbol {
                    name: sym.name,
                    detail: Some(sym.detail),
                    kind: match sym.kind {
                        DefKind::Model => lsp::SymbolKind::CLASS,
                        DefKind::Gpu => lsp::SymbolKind::STRUCT,
                        DefKind::Cluster => lsp::SymbolKind::NAMESPACE,
                        DefKind::Plan => lsp::SymbolKind::OBJECT,
                        DefKind::Scenario => lsp::SymbolKind::MODULE,
                    },
                    tags: None,
                    deprecated: None,
                    range: range(&idx, sym.span),
                    selection_range: range(&idx, sym.selection),
                    children: None,
                })
                .collect(),
        )
    }

    /// The whole-document edit that formats it; empty when it is formatted or has syntax
    /// errors (the formatter refuses those; the diagnostics already show them).
    pub fn formatting(&self, uri: &str) -> Option<Vec<lsp::TextEdit>> {
        let (file, _) = self.doc(uri)?;
        let edit = ide::formatting(&self.session, file);
        Some(edit.and_then(|e| self.text_edit(&e)).into_iter().collect())
    }

    /// Quick fixes for the diagnostics in `range` that carry a mechanical fix.
    pub fn code_actions(&self, uri: &str, requested: lsp::Range) -> Option<Vec<lsp::CodeAction>> {
        let (file, text) = self.doc(uri)?;
        let idx = LineIndex::new(&text);
        let start = idx.offset(requested.start.line, requested.start.character) as u32;
        let end = idx.offset(requested.end.line, requested.end.character) as u32;
        let mut out = Vec::new();
        for action in ide::code_actions(&self.session, file, start, end) {
            let Ok(target) = lsp::Uri::from_str(&self.uri_of(action.edit.loc.file)) else {
                continue;
            };
            let Some(edit) = self.text_edit(&action.edit) else {
                continue;
            };
            out.push(lsp::CodeAction {
                title: action.title,
                kind: Some(lsp::CodeActionKind::QUICKFIX),
                diagnostics: Some(vec![self.to_lsp_diagnostic(&action.diagnostic, &idx)]),
                edit: Some(lsp::WorkspaceEdit {
                    changes: Some(HashMap::from([(target, vec![edit])])),
                    ..Default::default()
                }),
                is_preferred: Some(true),
                ..Default::default()
            });
        }
        Some(out)
    }

    /// An edit in the lines and UTF-16 columns of its file.
    fn text_edit(&self, edit: &ide::TextEdit) -> Option<lsp::TextEdit> {
        let text = self.session.db().file_text(edit.loc.file);
        Some(lsp::TextEdit {
            range: range(&LineIndex::new(&text), edit.loc.span),
            new_text: edit.new_text.clone(),
        })
    }

    /// The text of a stdlib document (`venus/stdlib`).
    pub fn stdlib_text(uri: &str) -> Option<&'static str> {
        let file = stdlib_file(uri)?;
        STDLIB.get(file.0 as usize).map(|(_, text)| *text)
    }
}

// ---- helpers ----

pub(crate) fn range(idx: &LineIndex, span: Span) -> lsp::Range {
    let (sl, sc) = idx.position(span.start as usize);
    let (el, ec) = idx.position(span.end as usize);
    lsp::Range {
        start: lsp::Position {
            line: sl,
            character: sc,
        },
        end: lsp::Position {
            line: el,
            character: ec,
        },
    }
}

/// A completion in the protocol's terms.
fn completion_item(c: ide::Completion) -> lsp::CompletionItem {
    lsp::CompletionItem {
        label: c.label,
        kind: Some(match c.kind {
            ide::CompletionKind::Keyword => lsp::CompletionItemKind::KEYWORD,
            ide::CompletionKind::Key => lsp::CompletionItemKind::PROPERTY,
            ide::CompletionKind::Reference => lsp::CompletionItemKind::REFERENCE,
            ide::CompletionKind::Word => lsp::CompletionItemKind::ENUM_MEMBER,
        }),
        detail: c.detail,
        documentation: c.doc.map(lsp::Documentation::String),
        ..Default::default()
    }
}

/// The stdlib files as (file name, text), for the loop to write into its stdlib directory.
pub fn stdlib_files() -> impl Iterator<Item = (&'static str, &'static str)> {
    STDLIB
        .iter()
        .filter_map(|(path, text)| Some((path.strip_prefix("<stdlib>/")?, *text)))
}

/// The stdlib file a `venus-stdlib:///NAME` URI names.
fn stdlib_file(uri: &str) -> Option<FileId> {
    let rest = uri.strip_prefix(STDLIB_SCHEME)?.strip_prefix(':')?;
    let name = rest.trim_start_matches('/');
    STDLIB
        .iter()
        .position(|(path, _)| path.strip_prefix("<stdlib>/") == Some(name))
        .map(|i| FileId(i as u32))
}

/// The path of a `file://` URI (percent-decoded); other URIs (`untitled:`) are used as is.
pub fn uri_to_path(uri: &str) -> PathBuf {
    let Some(rest) = uri.strip_prefix("file://") else {
        return PathBuf::from(uri);
    };
    // `file://host/path`: the authority is dropped (local files only).
    let path = match rest.find('/') {
        Some(i) => &rest[i..],
        None => rest,
    };
    PathBuf::from(percent_decode(path))
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                out.push((hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0)) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A `file://` URI for a path (absolute paths; relative ones are taken from the current
/// directory).
pub fn path_to_uri(path: &Path) -> String {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    };
    let mut out = String::from("file://");
    let s = absolute.to_string_lossy();
    if !s.starts_with('/') {
        out.push('/');
    }
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}
