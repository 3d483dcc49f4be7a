//! The IDE layer: hover, completion, go-to-definition, document symbols, formatting edits and
//! quick fixes, as plain data.
//!
//! Input: a [`Session`] (the salsa database with the open files), a file and byte offsets.
//! Output: our own types with [`Loc`]s, [`Span`]s and Markdown strings. Any client can use
//! them: the language server converts them to lsp-types ([`crate::lsp`]), a report or a
//! binding can show the same hover summaries.
//!
//! Invariants: no protocol type appears here (lsp-types stay in `lsp`); nothing here reads a
//! file or prints; every answer comes from the same queries as `venusc check`
//! ([`Session::check`]); the grouping of tokens into items is the parser's token-role map
//! ([`venus_syntax::syntax::role`]), never a copy of its rules; unknown files give empty answers.

mod completion;
mod cursor;
mod hover;

#[cfg(test)]
mod tests;

use std::path::Path;

use venus_diag::diag::{Diagnostic, FileId, Loc, Span};
use venus_front::Session;
use venus_syntax::syntax::ast::{DefKind, TopItem};

pub use completion::completion;
pub use cursor::{cursor, cursor_in, Cursor, Role};
pub use hover::hover;

/// A hover answer: Markdown, and the span of the word it describes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hover {
    pub markdown: String,
    pub span: Span,
}

/// What a completion inserts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompletionKind {
    /// A top-level keyword (`model`, `use`) or a flag key (`swiglu`).
    Keyword,
    /// A key that takes arguments.
    Key,
    /// The name of a definition.
    Reference,
    /// A word of an enumeration (`1f1b`, `ring`, `on`).
    Word,
}

/// One completion candidate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Completion {
    pub label: String,
    pub kind: CompletionKind,
    /// One line shown beside the label (a key's signature, where a name is defined).
    pub detail: Option<String>,
    /// A key's documentation.
    pub doc: Option<String>,
}

/// A definition of a file, for an outline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Symbol {
    /// The definition's name, or its keyword when unnamed.
    pub name: String,
    /// `gpu : h100_sxm`, or the keyword alone.
    pub detail: String,
    pub kind: DefKind,
    /// The whole definition.
    pub span: Span,
    /// The name (or the keyword of an unnamed definition).
    pub selection: Span,
}

/// Replace the text at `loc` by `new_text`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextEdit {
    pub loc: Loc,
    pub new_text: String,
}

/// A quick fix for one diagnostic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeAction {
    /// ``replace `4` with `2` ``.
    pub title: String,
    /// The diagnostic it fixes.
    pub diagnostic: Diagnostic,
    pub edit: TextEdit,
}

/// Where the thing at `offset` of `file` is defined: the definition a name refers to, or the
/// start of the file a `use` path names.
pub fn definition(session: &Session, file: FileId, offset: u32) -> Option<Loc> {
    let db = session.db();
    let program = db.program(file);
    if let Some(r) = program.reference_at(file, offset) {
        return Some(r.target);
    }
    let parsed = db.parsed(file)?;
    for item in &parsed.ast.items {
        if let TopItem::Use(u) = item {
            if contains(u.path_span, offset) {
                let name = db.file_name(file);
                let dir = Path::new(&name).parent().unwrap_or(Path::new(""));
                let target = db.file_id(&dir.join(&u.path))?;
                return Some(Loc::new(target, Span::new(0, 0)));
            }
        }
    }
    None
}

/// The definitions of a file, in source order.
pub fn document_symbols(session: &Session, file: FileId) -> Vec<Symbol> {
    let Some(parsed) = session.db().parsed(file) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for item in &parsed.ast.items {
        let TopItem::Def(d) = item else { continue };
        let (name, selection) = match &d.name {
            Some(n) => (n.text.clone(), n.span),
            None => (d.kind.keyword().to_string(), d.kind_span),
        };
        out.push(Symbol {
            name,
            detail: match &d.base {
                Some(b) => format!("{} : {}", d.kind.keyword(), b.text),
                None => d.kind.keyword().to_string(),
            },
            kind: d.kind,
            span: d.span,
            selection,
        });
    }
    out
}

/// The whole-file edit that formats it; none when it is formatted, has syntax errors (the
/// formatter refuses those; the diagnostics already show them) or is a stdlib file.
pub fn formatting(session: &Session, file: FileId) -> Option<TextEdit> {
    if session.db().is_stdlib(file) {
        return None;
    }
    let text = session.db().file_text(file);
    match crate::fmt::format(&text) {
        Ok(formatted) if formatted != *text => Some(TextEdit {
            loc: Loc::new(file, Span::new(0, text.len())),
            new_text: formatted,
        }),
        _ => None,
    }
}

/// Quick fixes for the diagnostics of `file` whose primary span meets `start..=end` and that
/// carry a mechanical fix outside the stdlib.
pub fn code_actions(session: &Session, file: FileId, start: u32, end: u32) -> Vec<CodeAction> {
    let checked = session.check(file);
    let mut out = Vec::new();
    for d in &checked.diagnostics {
        let span = d.primary.loc.span;
        if d.primary.loc.file != file || span.start > end || span.end < start {
            continue;
        }
        let Some(fix) = &d.fix else { continue };
        if session.db().is_stdlib(fix.loc.file) {
            continue;
        }
        let fix_text = session.db().file_text(fix.loc.file);
        let old = source_of(&fix_text, fix.loc.span);
        out.push(CodeAction {
            title: format!("replace `{old}` with `{}`", fix.replacement),
            diagnostic: d.clone(),
            edit: TextEdit {
                loc: fix.loc,
                new_text: fix.replacement.clone(),
            },
        });
    }
    out
}

fn contains(span: Span, offset: u32) -> bool {
    span.start <= offset && offset <= span.end
}

fn source_of(text: &str, span: Span) -> &str {
    text.get(span.range()).unwrap_or("")
}
