//! The facade the CLI and the language server drive: load a root file and the files it uses
//! (through a reader the caller supplies — this module does no I/O), then check it.
//!
//! Input: paths and bytes. Output: the front end's [`Program`], the validated
//! [`plan::Scenario`]s, and every diagnostic of the program (front end and plan validation),
//! sorted and each once.

use std::path::Path;
use std::sync::Arc;

use crate::db::{Database, Program};
pub use crate::resolve::UseError;
use venus_diag::diag::render::SourceFiles;
use venus_diag::diag::{Code, Diagnostic, FileId};
use venus_plan::plan;

/// One of the validators [`Session::check_with`] runs on every scenario.
type Validate = fn(
    &crate::ty::ScenarioDef,
    &[crate::ty::StdlibGpu],
) -> (Option<plan::Scenario>, Vec<Diagnostic>);

/// What `check` found for one root file.
#[derive(Clone, Debug)]
pub struct Checked {
    pub program: Arc<Program>,
    /// The scenarios that passed validation, in source order.
    pub scenarios: Vec<plan::Scenario>,
    /// Where each of `scenarios` was written (same order).
    pub provenance: Vec<plan::Provenance>,
    pub diagnostics: Vec<Diagnostic>,
}

impl Checked {
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    /// The scenario `name`, or the only one (E0108 otherwise; `None` when earlier errors
    /// already explain why there is nothing to run). Boxed: the diagnostic is large and this
    /// is a cold path, so the `Ok` case stays one pointer wide.
    pub fn select(&self, name: Option<&str>) -> Result<&plan::Scenario, Option<Box<Diagnostic>>> {
        let def = self
            .program
            .select_scenario(name)
            .map_err(|e| e.map(Box::new))?;
        self.scenarios
            .iter()
            .find(|s| s.name == def.name)
            .ok_or(None)
    }

    /// Where a scenario of this check was written (the default for one it does not hold).
    pub fn provenance_of(&self, sc: &plan::Scenario) -> plan::Provenance {
        self.scenarios
            .iter()
            .position(|s| s.name == sc.name)
            .and_then(|i| self.provenance.get(i).copied())
            .unwrap_or_default()
    }
}

/// How many diagnostics of one file are shown. A hostile or broken file (200,000 duplicate
/// keys) would otherwise print hundreds of megabytes that nobody reads; past the first few
/// hundred, fixing the first ones and re-running is the only useful advice.
pub const MAX_PER_FILE: usize = 200;

/// Keeps the first `max` diagnostics of each file (`diagnostics` sorted by file and position,
/// so the choice is deterministic) and notes on the last one kept how many were left out.
pub fn cap_per_file(diagnostics: &mut Vec<Diagnostic>, max: usize) {
    let mut per_file: std::collections::BTreeMap<FileId, (usize, usize)> =
        std::collections::BTreeMap::new();
    diagnostics.retain(|d| {
        let (kept, dropped) = per_file.entry(d.primary.loc.file).or_default();
        if *kept < max {
            *kept += 1;
            true
        } else {
            *dropped += 1;
            false
        }
    });
    // The last kept diagnostic of each capped file gets the note.
    let mut seen: std::collections::BTreeMap<FileId, usize> = std::collections::BTreeMap::new();
    for d in diagnostics.iter_mut() {
        let file = d.primary.loc.file;
        let index = seen.entry(file).or_default();
        *index += 1;
        if let Some(&(kept, dropped)) = per_file.get(&file) {
            if dropped > 0 && *index == kept {
                let noun = if dropped == 1 {
                    "diagnostic"
                } else {
                    "diagnostics"
                };
                d.notes.push(format!(
                    "{dropped} more {noun} in this file not shown (at most {max} per file): fix these and check again"
                ));
            }
        }
    }
}

/// `check` of several roots at once (a repository: `venusc check .`): a definition of one root
/// that its own program leaves unused is checked as a complete leaf (E0103 when it lacks a
/// required key), but another root may use it or inherit from it (`lib/plans.venus` holds a
/// partial plan that `runs/a.venus` completes). Drops those E0103s of each root, for
/// definitions of the root's own file that its program does not reference and another
/// root's program does. That other root checks the definition in its context.
pub fn drop_incomplete_leaves_used_elsewhere(checked: &mut [Checked]) {
    let referenced_by: Vec<std::collections::HashSet<venus_diag::diag::Loc>> = checked
        .iter()
        .map(|c| c.program.references.iter().map(|r| r.target).collect())
        .collect();
    for (i, c) in checked.iter_mut().enumerate() {
        let root = c.program.root;
        let used_elsewhere = |loc: &venus_diag::diag::Loc| {
            referenced_by
                .iter()
                .enumerate()
                .any(|(j, set)| j != i && set.contains(loc))
        };
        c.diagnostics.retain(|d| {
            let loc = d.primary.loc;
            !(d.code == Code::E0103
                && loc.file == root
                && !referenced_by[i].contains(&loc)
                && c.program.definitions.iter().any(|def| def.name_loc == loc)
                && used_elsewhere(&loc))
        });
    }
}

/// The `allow` items of `block` (spanning `span`) and of the inline blocks inside it, each
/// with the span it covers. Walked with an explicit stack: nesting depth is the parser's
/// business, not a reason to recurse here.
fn allow_items_in(
    file: FileId,
    span: venus_diag::diag::Span,
    block: &venus_syntax::syntax::ast::Block,
    out: &mut Vec<(FileId, venus_diag::diag::Span, Code)>,
) {
    use venus_syntax::syntax::ast::ValueKind;
    let mut stack = vec![(span, block)];
    while let Some((span, block)) = stack.pop() {
        for item in &block.items {
            for arg in &item.args {
                match &arg.kind {
                    ValueKind::Name(word) if item.key.text == "allow" => {
                        // Only warnings: `allow E0301` is E0204 and silences nothing.
                        if let Some(code) = Code::parse(word)
                            .filter(|c| c.severity() == venus_diag::diag::Severity::Warning)
                        {
                            out.push((file, span, code));
                        }
                    }
                    ValueKind::Block(inner) => stack.push((arg.span, inner)),
                    _ => {}
                }
            }
        }
    }
}

/// Reads a file for the session: `Err` carries the code (E0107, E0109), reason and fix the
/// `use` reports; a plain `String` converts to E0107.
pub type Reader<'a> = dyn FnMut(&Path) -> Result<Vec<u8>, UseError> + 'a;

pub struct Session {
    db: Database,
}

impl Default for Session {
    fn default() -> Self {
        Session::new()
    }
}

impl Session {
    pub fn new() -> Session {
        Session {
            db: Database::new(),
        }
    }

    /// A session on the given database (one that logs its queries, in tests).
    pub fn with_db(db: Database) -> Session {
        Session { db }
    }

    pub fn db(&self) -> &Database {
        &self.db
    }

    pub fn db_mut(&mut self) -> &mut Database {
        &mut self.db
    }

    /// Sets the root file's bytes and loads every file it uses, transitively.
    pub fn load(&mut self, path: &Path, bytes: &[u8], read: &mut Reader<'_>) -> FileId {
        let root = self.db.set_file(path, bytes);
        self.load_uses(root, read);
        root
    }

    /// Loads the `use`d files of `root` that are not loaded yet (each path once).
    pub fn load_uses(&mut self, root: FileId, read: &mut Reader<'_>) {
        let mut tried = std::collections::HashSet::new();
        loop {
            let pending: Vec<_> = self
                .db
                .unresolved_uses(root)
                .into_iter()
                .filter(|p| tried.insert(p.clone()))
                .collect();
            if pending.is_empty() {
                break;
            }
            for path in pending {
                match read(&path) {
                    Ok(bytes) => {
                        self.db.set_file(&path, &bytes);
                    }
                    Err(reason) => self.db.set_unreadable(&path, reason),
                }
            }
        }
    }

    /// Front end plus plan validation of every scenario of `root`.
    pub fn check(&self, root: FileId) -> Checked {
        self.check_with(root, crate::validate::validate_in)
    }

    /// [`Session::check`], but a scenario whose only error is E0401 is kept in
    /// `Checked::scenarios` (the error stays in the diagnostics): `venusc validate` compares
    /// its memory with a measured peak. `sim` and `check` never use it.
    pub fn check_keeping_over_memory(&self, root: FileId) -> Checked {
        self.check_with(root, crate::validate::validate_keeping_over_memory_in)
    }

    fn check_with(&self, root: FileId, validate: Validate) -> Checked {
        let program = self.db.program(root);
        let mut diagnostics = program.diagnostics.clone();
        if self.has_structural_errors(root) {
            // The missing model, cluster or plan was most likely lost to the syntax error:
            // "no scenario" would only repeat it.
            diagnostics.retain(|d| d.code != Code::E0108 || d.primary.loc.file != root);
        }
        let mut scenarios = Vec::new();
        let mut provenance = Vec::new();
        for def in &program.scenarios {
            let (scenario, diags) = validate(def, &program.stdlib_gpus);
            diagnostics.extend(diags);
            if let Some(scenario) = scenario {
                scenarios.push(scenario);
                provenance.push(crate::provenance(def));
            }
        }
        for partial in &program.partial_scenarios {
            diagnostics.extend(crate::validate::validate_partial_in(
                partial,
                &program.stdlib_gpus,
            ));
        }
        self.apply_allow_items(&program, &mut diagnostics);
        for d in diagnostics.iter_mut().filter(|d| !d.is_error()) {
            d.notes.push(format!(
                "to accept it, write `allow {0}` in the block or pass `--allow {0}`",
                d.code
            ));
        }
        crate::resolve::sort_diagnostics(&mut diagnostics);
        cap_per_file(&mut diagnostics, MAX_PER_FILE);
        Checked {
            program,
            scenarios,
            provenance,
            diagnostics,
        }
    }

    /// Drops the warnings an `allow CODE` item silences: those whose primary label lies in
    /// the definition (or inline block) that holds the item, in the program's files.
    fn apply_allow_items(&self, program: &Program, diagnostics: &mut Vec<Diagnostic>) {
        let mut allowed: Vec<(FileId, venus_diag::diag::Span, Code)> = Vec::new();
        for &file in &program.files {
            let Some(parsed) = self.db.parsed(file) else {
                continue;
            };
            for item in &parsed.ast.items {
                if let venus_syntax::syntax::ast::TopItem::Def(def) = item {
                    allow_items_in(file, def.span, &def.body, &mut allowed);
                }
            }
        }
        if allowed.is_empty() {
            return;
        }
        diagnostics.retain(|d| {
            let at = d.primary.loc;
            !allowed.iter().any(|(file, span, code)| {
                *code == d.code
                    && *file == at.file
                    && span.start <= at.span.start
                    && at.span.end <= span.end
            })
        });
    }

    /// True when `file`'s parse reported a structural error (E0001, E0002): some of its text
    /// was not read as the definitions it was meant to be.
    fn has_structural_errors(&self, file: FileId) -> bool {
        self.db.parsed(file).is_some_and(|p| {
            p.diagnostics
                .iter()
                .any(|d| matches!(d.code, Code::E0001 | Code::E0002))
        })
    }

    /// Every loaded file (user and stdlib), for rendering diagnostics.
    pub fn source_files(&self) -> SourceFiles {
        let mut files = SourceFiles::new();
        for id in self.db.files() {
            files.add(id, self.db.file_name(id), self.db.file_text(id).to_string());
        }
        files
    }
}
