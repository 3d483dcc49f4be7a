//! The server's state and its handlers: open documents in the salsa database, and one function
//! per LSP feature, each from lsp-types params to lsp-types results.
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

use super::context::{self, Role};
use super::line_index::LineIndex;
use crate::db::{Definition, Program, STDLIB};
use crate::diag::{self, FileId, Loc, Severity, Span};
use crate::syntax::ast::{self, DefKind, TopItem, ValueKind};
use crate::syntax::schema::{self, ArgType, BlockKind, KeySig};
use crate::ty::value::{typed, Arg, ValueCtx};
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
}

impl Default for Server {
    fn default() -> Self {
        Server::new()
    }
}

impl Server {
    pub fn new() -> Server {
        Server {
            session: Session::new(),
            docs: BTreeMap::new(),
            uris: HashMap::new(),
            published: HashMap::new(),
            closed: Vec::new(),
        }
    }

    pub fn session(&self) -> &Session {
        &self.session
    }

    // ---- documents ----

    /// Opens (or replaces) a document with the editor's text.
    pub fn open_document(&mut self, uri: &str, version: i32, text: &str) {
        if let Some(file) = stdlib_file(uri) {
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
        if let Ok(bytes) = std::fs::read(&path) {
            self.session.db_mut().set_file(&path, &bytes);
        }
    }

    /// A file changed on disk (from `workspace/didChangeWatchedFiles`): reloaded unless open.
    pub fn file_changed_on_disk(&mut self, uri: &str) {
        if self.docs.contains_key(uri) || stdlib_file(uri).is_some() {
            return;
        }
        let path = uri_to_path(uri);
        if let Ok(bytes) = std::fs::read(&path) {
            self.session.db_mut().set_file(&path, &bytes);
        }
        let roots: Vec<FileId> = self.docs.values().map(|d| d.file).collect();
        for root in roots {
            self.load_uses(root);
        }
    }

    /// The edge: reads the files `root` uses that are not loaded yet.
    fn load_uses(&mut self, root: FileId) {
        self.session.load_uses(root, &mut |p: &Path| {
            std::fs::read(p).map_err(|e| e.to_string())
        });
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
        match name.strip_prefix("<stdlib>/") {
            Some(rest) => format!("{STDLIB_SCHEME}:///{rest}"),
            None => path_to_uri(Path::new(&name)),
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
    pub fn document_diagnostics(&self, uri: &str) -> Option<Vec<lsp::Diagnostic>> {
        let (file, text) = self.doc(uri)?;
        if self.session.db().is_stdlib(file) {
            return Some(Vec::new());
        }
        let checked = self.session.check(file);
        let idx = LineIndex::new(&text);
        Some(
            checked
                .diagnostics
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

    // ---- go to definition ----

    pub fn definition(&self, uri: &str, pos: lsp::Position) -> Option<lsp::Location> {
        let (file, text) = self.doc(uri)?;
        let offset = LineIndex::new(&text).offset(pos.line, pos.character) as u32;
        let program = self.program_for(file);
        if let Some(r) = program.reference_at(file, offset) {
            return self.location(r.target);
        }
        // On a `use` path: the used file.
        let parsed = self.session.db().parsed(file)?;
        for item in &parsed.ast.items {
            if let TopItem::Use(u) = item {
                if contains(u.path_span, offset) {
                    let base = uri_to_path(uri);
                    let path = base.parent().unwrap_or(Path::new("")).join(&u.path);
                    let target = self.session.db().file_id(&path)?;
                    return self.location(Loc::new(target, Span::new(0, 0)));
                }
            }
        }
        None
    }

    /// The program of a document: its own for a user file; for a stdlib file, a program that
    /// sees every definition (the stdlib's files are roots of nothing).
    fn program_for(&self, file: FileId) -> std::sync::Arc<Program> {
        self.session.db().program(file)
    }

    // ---- hover ----

    pub fn hover(&self, uri: &str, pos: lsp::Position) -> Option<lsp::Hover> {
        let (file, text) = self.doc(uri)?;
        let idx = LineIndex::new(&text);
        let offset = idx.offset(pos.line, pos.character);
        let program = self.program_for(file);
        let at = offset as u32;
        let (markdown, span) = if let Some(r) = program.reference_at(file, at) {
            let def = program.definition_named_at(r.target)?;
            (self.describe_definition(&program, def), r.at.span)
        } else if let Some(def) = program
            .definitions
            .iter()
            .find(|d| d.name_loc.file == file && contains(d.name_loc.span, at))
        {
            (self.describe_definition(&program, def), def.name_loc.span)
        } else {
            let cursor = context::cursor(&text, offset);
            let word = cursor.word?;
            let Role::Key(block) = cursor.role else {
                return None;
            };
            let key = text.get(word.range())?;
            (self.describe_key(&program, file, block, key, word)?, word)
        };
        Some(lsp::Hover {
            contents: lsp::HoverContents::Markup(lsp::MarkupContent {
                kind: lsp::MarkupKind::Markdown,
                value: markdown,
            }),
            range: Some(range(&idx, span)),
        })
    }

    /// Hover on a key: its signature and doc, the value written here in base units, and what
    /// it overrides from the definition's bases.
    fn describe_key(
        &self,
        program: &Program,
        file: FileId,
        block: BlockKind,
        key: &str,
        key_span: Span,
    ) -> Option<String> {
        let sig = schema::lookup(block, key)?;
        let mut out = format!(
            "`{}` — {} key\n\n{}\n\nsignature: `{}`",
            sig.key,
            block.name(),
            sig.doc,
            crate::ty::check::signature(sig)
        );
        let parsed = self.session.db().parsed(file)?;
        let text = self.session.db().file_text(file);
        if let Some(item) = find_item(&parsed.ast, key_span) {
            let values = describe_values(sig, item, file, &text);
            if !values.is_empty() {
                let _ = write!(out, "\n\nvalue: {values}");
            }
        }
        // What the enclosing definition inherits for this key.
        let def = program.definitions.iter().find(|d| {
            d.loc.file == file && contains(d.loc.span, key_span.start) && d.kind_block() == block
        });
        if let Some(def) = def {
            let chain = self.chain(program, def);
            for (base, ast_def) in chain.iter().skip(1) {
                if let Some(item) = ast_def.body.items.iter().find(|i| i.key.text == key) {
                    let btext = self.session.db().file_text(base.loc.file);
                    let values = describe_values(sig, item, base.loc.file, &btext);
                    let _ = write!(
                        out,
                        "\n\noverrides `{} {}` from {} ({})",
                        key,
                        values,
                        def_title(base),
                        self.place(base.name_loc)
                    );
                    break;
                }
            }
        }
        Some(out)
    }

    /// `file:line` of a location, as diagnostics show it.
    fn place(&self, loc: Loc) -> String {
        let text = self.session.db().file_text(loc.file);
        let (line, _) = LineIndex::new(&text).position(loc.span.start as usize);
        format!("{}:{}", self.session.db().file_name(loc.file), line + 1)
    }

    /// A definition and its bases, nearest first, with their trees (cycles cut).
    fn chain(&self, program: &Program, def: &Definition) -> Vec<(Definition, ast::Def)> {
        let mut out: Vec<(Definition, ast::Def)> = Vec::new();
        let mut next = Some(def.clone());
        while let Some(d) = next.take() {
            if out.iter().any(|(seen, _)| seen.loc == d.loc) || out.len() > 64 {
                break;
            }
            let Some(ast_def) = self.ast_def(&d) else {
                break;
            };
            next = ast_def.base.as_ref().and_then(|b| {
                let r = program.reference_at(d.loc.file, b.span.start)?;
                program.definition_named_at(r.target).cloned()
            });
            out.push((d, ast_def));
        }
        out
    }

    fn ast_def(&self, def: &Definition) -> Option<ast::Def> {
        let parsed = self.session.db().parsed(def.loc.file)?;
        parsed.ast.items.iter().find_map(|item| match item {
            TopItem::Def(d) if d.span.start == def.loc.span.start => Some(d.clone()),
            _ => None,
        })
    }

    /// Hover on a definition's name or a reference to it: the resolved items with where each
    /// comes from, and for plans and scenarios the derived values.
    fn describe_definition(&self, program: &Program, def: &Definition) -> String {
        let mut out = format!("**{}**", def_title(def));
        let chain = self.chain(program, def);
        if let Some((_, d)) = chain.first() {
            if let Some(base) = &d.base {
                let _ = write!(out, " : `{}`", base.text);
            }
        }
        let _ = write!(out, " — {}", self.place(def.name_loc));
        // Resolved items: the definition's own, then each base's not yet written.
        let block = def.kind_block();
        let mut seen: Vec<String> = Vec::new();
        let mut lines: Vec<String> = Vec::new();
        for (i, (owner, d)) in chain.iter().enumerate() {
            let text = self.session.db().file_text(owner.loc.file);
            for item in &d.body.items {
                let id = item_identity(item);
                if seen.contains(&id) {
                    continue;
                }
                seen.push(id);
                let written = match schema::lookup(block, &item.key.text) {
                    Some(sig) => {
                        let v = describe_values(sig, item, owner.loc.file, &text);
                        if v.is_empty() {
                            item.key.text.clone()
                        } else {
                            format!("{} {v}", item.key.text)
                        }
                    }
                    None => source_of(&text, item.span).to_string(),
                };
                let from = if i == 0 {
                    String::new()
                } else {
                    format!(" — from {}", def_title(owner))
                };
                lines.push(format!("- `{written}`{from}"));
            }
        }
        if !lines.is_empty() {
            let _ = write!(out, "\n\n{}", lines.join("\n"));
        }
        if matches!(def.kind, DefKind::Plan | DefKind::Scenario) && !def.stdlib {
            out.push_str(&self.derived(def));
        }
        out
    }

    /// The derived values of every validated scenario that uses this plan (or is this
    /// scenario).
    fn derived(&self, def: &Definition) -> String {
        let root = def.loc.file;
        let checked = self.session.check(root);
        let mut out = String::new();
        let mut found = false;
        for (s, at) in checked.scenarios.iter().zip(&checked.provenance) {
            let uses_it = match def.kind {
                DefKind::Plan => {
                    at.plan.file == root
                        && (at.plan == def.name_loc || contains(def.loc.span, at.plan.span.start))
                }
                _ => at.scenario.file == root && contains(def.loc.span, at.scenario.span.start),
            };
            if !uses_it {
                continue;
            }
            found = true;
            out.push_str(&scenario_summary(s));
        }
        if !found {
            out.push_str("\n\nno derived values: no scenario using it passed validation");
        }
        out
    }

    // ---- completion ----

    pub fn completion(&self, uri: &str, pos: lsp::Position) -> Option<Vec<lsp::CompletionItem>> {
        let (file, text) = self.doc(uri)?;
        let offset = LineIndex::new(&text).offset(pos.line, pos.character);
        let cursor = context::cursor(&text, offset);
        let mut items = Vec::new();
        let keys = |items: &mut Vec<lsp::CompletionItem>, block: BlockKind| {
            for sig in schema::keys(block) {
                items.push(key_completion(sig));
            }
        };
        match cursor.role {
            Role::TopLevel => {
                for word in ["model", "gpu", "cluster", "plan", "scenario", "use"] {
                    items.push(lsp::CompletionItem {
                        label: word.into(),
                        kind: Some(lsp::CompletionItemKind::KEYWORD),
                        ..Default::default()
                    });
                }
            }
            Role::Key(block) => keys(&mut items, block),
            Role::FlagWord { block, .. } => {
                for w in schema::FLAG_WORDS {
                    items.push(word_completion(w));
                }
                keys(&mut items, block);
            }
            Role::Arg {
                block,
                slot,
                optional,
                ..
            } => {
                match slot {
                    ArgType::Ref(kind) => {
                        let program = self.program_for(file);
                        let mut names: BTreeMap<String, &Definition> = BTreeMap::new();
                        for d in &program.definitions {
                            if d.kind != kind {
                                continue;
                            }
                            if let Some(n) = &d.name {
                                // A user definition shadows the stdlib's.
                                let keep = names.get(n).is_none_or(|old| old.stdlib && !d.stdlib);
                                if keep {
                                    names.insert(n.clone(), d);
                                }
                            }
                        }
                        for (name, d) in names {
                            items.push(lsp::CompletionItem {
                                label: name,
                                kind: Some(lsp::CompletionItemKind::REFERENCE),
                                detail: Some(format!(
                                    "{} in {}",
                                    d.kind.keyword(),
                                    self.session.db().file_name(d.loc.file)
                                )),
                                ..Default::default()
                            });
                        }
                    }
                    ArgType::Enum(words) => {
                        for w in words {
                            items.push(word_completion(w));
                        }
                    }
                    _ => {}
                }
                if optional {
                    keys(&mut items, block);
                }
            }
            Role::Nothing => {}
        }
        Some(items)
    }

    // ---- symbols, formatting, code actions, stdlib ----

    #[allow(deprecated)] // `DocumentSymbol::deprecated` must be written to build the struct
    pub fn document_symbols(&self, uri: &str) -> Option<Vec<lsp::DocumentSymbol>> {
        let (file, text) = self.doc(uri)?;
        let idx = LineIndex::new(&text);
        let parsed = self.session.db().parsed(file)?;
        let mut out = Vec::new();
        for item in &parsed.ast.items {
            let TopItem::Def(d) = item else { continue };
            let (name, selection) = match &d.name {
                Some(n) => (n.text.clone(), n.span),
                None => (d.kind.keyword().to_string(), d.kind_span),
            };
            out.push(lsp::DocumentSymbol {
                name,
                detail: Some(match &d.base {
                    Some(b) => format!("{} : {}", d.kind.keyword(), b.text),
                    None => d.kind.keyword().to_string(),
                }),
                kind: match d.kind {
                    DefKind::Model => lsp::SymbolKind::CLASS,
                    DefKind::Gpu => lsp::SymbolKind::STRUCT,
                    DefKind::Cluster => lsp::SymbolKind::NAMESPACE,
                    DefKind::Plan => lsp::SymbolKind::OBJECT,
                    DefKind::Scenario => lsp::SymbolKind::MODULE,
                },
                tags: None,
                deprecated: None,
                range: range(&idx, d.span),
                selection_range: range(&idx, selection),
                children: None,
            });
        }
        Some(out)
    }

    /// The whole-document edit that formats it; empty when it is formatted or has syntax
    /// errors (the formatter refuses those; the diagnostics already show them).
    pub fn formatting(&self, uri: &str) -> Option<Vec<lsp::TextEdit>> {
        let (file, text) = self.doc(uri)?;
        if self.session.db().is_stdlib(file) {
            return Some(Vec::new());
        }
        match crate::fmt::format(&text) {
            Ok(formatted) if formatted != *text => {
                let idx = LineIndex::new(&text);
                Some(vec![lsp::TextEdit {
                    range: range(&idx, Span::new(0, text.len())),
                    new_text: formatted,
                }])
            }
            _ => Some(Vec::new()),
        }
    }

    /// Quick fixes for the diagnostics in `range` that carry a mechanical fix.
    pub fn code_actions(&self, uri: &str, requested: lsp::Range) -> Option<Vec<lsp::CodeAction>> {
        let (file, text) = self.doc(uri)?;
        let idx = LineIndex::new(&text);
        let start = idx.offset(requested.start.line, requested.start.character) as u32;
        let end = idx.offset(requested.end.line, requested.end.character) as u32;
        let checked = self.session.check(file);
        let mut out = Vec::new();
        for d in &checked.diagnostics {
            let span = d.primary.loc.span;
            if d.primary.loc.file != file || span.start > end || span.end < start {
                continue;
            }
            let Some(fix) = &d.fix else { continue };
            if self.session.db().is_stdlib(fix.loc.file) {
                continue;
            }
            let fix_text = self.session.db().file_text(fix.loc.file);
            let old = source_of(&fix_text, fix.loc.span);
            let Ok(target) = lsp::Uri::from_str(&self.uri_of(fix.loc.file)) else {
                continue;
            };
            let edit = lsp::TextEdit {
                range: range(&LineIndex::new(&fix_text), fix.loc.span),
                new_text: fix.replacement.clone(),
            };
            out.push(lsp::CodeAction {
                title: format!("replace `{old}` with `{}`", fix.replacement),
                kind: Some(lsp::CodeActionKind::QUICKFIX),
                diagnostics: Some(vec![self.to_lsp_diagnostic(d, &idx)]),
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

    /// The text of a stdlib document (`venus/stdlib`).
    pub fn stdlib_text(uri: &str) -> Option<&'static str> {
        let file = stdlib_file(uri)?;
        STDLIB.get(file.0 as usize).map(|(_, text)| *text)
    }
}

impl Definition {
    fn kind_block(&self) -> BlockKind {
        BlockKind::Def(self.kind)
    }
}

// ---- helpers ----

fn contains(span: Span, offset: u32) -> bool {
    span.start <= offset && offset <= span.end
}

fn source_of(text: &str, span: Span) -> &str {
    text.get(span.range()).unwrap_or("")
}

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

fn def_title(def: &Definition) -> String {
    match &def.name {
        Some(n) => format!("{} `{n}`", def.kind.keyword()),
        None => format!("unnamed {}", def.kind.keyword()),
    }
}

/// What makes two items the same for inheritance: the key, and for `dim` its NAME.
fn item_identity(item: &ast::Item) -> String {
    match (item.key.text.as_str(), item.args.first()) {
        (
            "dim",
            Some(ast::Value {
                kind: ValueKind::Name(n),
                ..
            }),
        ) => format!("dim {n}"),
        (key, _) => key.to_string(),
    }
}

/// The item under a key span, anywhere in the file (explicit stack: no recursion).
fn find_item(file: &ast::File, key_span: Span) -> Option<&ast::Item> {
    let mut blocks: Vec<&ast::Block> = file
        .items
        .iter()
        .filter_map(|i| match i {
            TopItem::Def(d) => Some(&d.body),
            TopItem::Use(_) => None,
        })
        .collect();
    while let Some(b) = blocks.pop() {
        for item in &b.items {
            if item.key.span == key_span {
                return Some(item);
            }
            let mut values: Vec<&ast::Value> = item.args.iter().collect();
            while let Some(v) = values.pop() {
                match &v.kind {
                    ValueKind::Block(inner) => blocks.push(inner),
                    ValueKind::List(vs) => values.extend(vs),
                    _ => {}
                }
            }
        }
    }
    None
}

/// An item's arguments as written, each with its value in plain units when it has a unit:
/// `80GiB (85899345920 bytes = 80.00 GiB)`.
fn describe_values(sig: &KeySig, item: &ast::Item, file: FileId, text: &str) -> String {
    let mut parts = Vec::new();
    for (i, v) in item.args.iter().enumerate() {
        let written = source_of(text, v.span);
        let meaning = match (sig.args.get(i), &v.kind) {
            (Some(&ty), ValueKind::Number(_) | ValueKind::Quantity { .. })
                if !matches!(ty, ArgType::Ref(_) | ArgType::Nested(_)) =>
            {
                let cx = ValueCtx {
                    loc: Loc::new(file, v.span),
                    text: written,
                    key: &item.key.text,
                };
                match typed(ty, v, &cx) {
                    Ok((arg, _)) => describe_arg(&arg),
                    Err(_) => None,
                }
            }
            _ => None,
        };
        parts.push(match meaning {
            Some(m) if m != written => format!("{written} ({m})"),
            _ => written.to_string(),
        });
    }
    parts.join(" ")
}

fn describe_arg(arg: &Arg) -> Option<String> {
    Some(match arg {
        Arg::Bytes(b) => format!("{} bytes = {b}", b.0),
        Arg::Bandwidth(b) => format!("{b}, {:.3e} bytes/s", b.0),
        Arg::Time(t) => format!("{t}"),
        Arg::Rate(r) => format!("{r}, {:.4e} FLOP/s", r.0),
        Arg::Ratio(r) => format!("{r}"),
        Arg::Count(_) | Arg::Name(_) | Arg::Word(_) => return None,
    })
}

/// The derived values of a validated scenario, as Markdown.
fn scenario_summary(s: &crate::plan::Scenario) -> String {
    let mut out = String::new();
    let gpu = &s.cluster.gpu;
    let _ = write!(
        out,
        "\n\n**scenario `{}`**: world {} = tp {} × pp {} × cp {} × dp {}",
        s.name, s.world, s.tp, s.pp, s.cp, s.dp
    );
    let _ = write!(
        out,
        "\n- microbatches: {} (global_batch {} / (micro_batch {} × dp {}))",
        s.microbatches, s.global_batch, s.micro_batch, s.dp
    );
    if let Some(schedule) = s.schedule {
        let _ = write!(
            out,
            "\n- schedule: {}{}, bubble {:.1}%",
            schedule.word(),
            if s.vpp > 1 {
                format!(" (vpp {})", s.vpp)
            } else {
                String::new()
            },
            s.bubble_fraction() * 100.0
        );
    }
    let _ = write!(out, "\n- layers per stage: {}", s.split.describe());
    let _ = write!(
        out,
        "\n- peak memory per stage (GPU `{}` has {}):",
        gpu.name, gpu.memory
    );
    let cap = gpu.memory.0.max(1) as f64;
    for m in &s.memory {
        let _ = write!(
            out,
            "\n  - stage {}: {} ({:.0}% of GPU memory)",
            m.stage,
            m.peak,
            m.peak.0 as f64 / cap * 100.0
        );
    }
    out
}

fn key_completion(sig: &'static KeySig) -> lsp::CompletionItem {
    lsp::CompletionItem {
        label: sig.key.into(),
        kind: Some(if sig.is_flag() {
            lsp::CompletionItemKind::KEYWORD
        } else {
            lsp::CompletionItemKind::PROPERTY
        }),
        detail: Some(crate::ty::check::signature(sig)),
        documentation: Some(lsp::Documentation::String(sig.doc.into())),
        ..Default::default()
    }
}

fn word_completion(word: &str) -> lsp::CompletionItem {
    lsp::CompletionItem {
        label: word.into(),
        kind: Some(lsp::CompletionItemKind::ENUM_MEMBER),
        ..Default::default()
    }
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
