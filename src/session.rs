//! The facade the CLI and the language server drive: load a root file and the files it uses
//! (through a reader the caller supplies — this module does no I/O), then check it.
//!
//! Input: paths and bytes. Output: the front end's [`Program`], the validated
//! [`plan::Scenario`]s, and every diagnostic of the program (front end and plan validation),
//! sorted and each once.

use std::path::Path;
use std::sync::Arc;

use crate::db::{Database, Program};
use crate::diag::render::SourceFiles;
use crate::diag::{Diagnostic, FileId};
use crate::plan;

/// What `check` found for one root file.
#[derive(Clone, Debug)]
pub struct Checked {
    pub program: Arc<Program>,
    /// The scenarios that passed validation, in source order.
    pub scenarios: Vec<plan::Scenario>,
    pub diagnostics: Vec<Diagnostic>,
}

impl Checked {
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    /// The scenario `name`, or the only one (E0108 otherwise; `None` when earlier errors
    /// already explain why there is nothing to run).
    pub fn select(&self, name: Option<&str>) -> Result<&plan::Scenario, Option<Diagnostic>> {
        let def = self.program.select_scenario(name)?;
        self.scenarios
            .iter()
            .find(|s| s.name == def.name)
            .ok_or(None)
    }
}

/// Reads a file for the session: `Err` carries the reason shown in E0107.
pub type Reader<'a> = dyn FnMut(&Path) -> Result<Vec<u8>, String> + 'a;

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
        let program = self.db.program(root);
        let mut diagnostics = program.diagnostics.clone();
        let mut scenarios = Vec::new();
        for def in &program.scenarios {
            let (scenario, diags) = plan::validate(def);
            diagnostics.extend(diags);
            scenarios.extend(scenario);
        }
        crate::resolve::sort_diagnostics(&mut diagnostics);
        Checked {
            program,
            scenarios,
            diagnostics,
        }
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
