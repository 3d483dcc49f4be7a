//! The salsa database: source files as inputs, the front-end stages as tracked queries.
//!
//! Inputs: every source file ([`SourceFile`]: path, text, id; the stdlib's with durability
//! HIGH), the set of loaded user files and the paths that could not be read ([`Workspace`]),
//! and the stdlib file list ([`Stdlib`]). Queries: [`parse_file`] and [`file_index`] per file,
//! [`prelude`] (depends on stdlib files only), and [`program_query`] (resolution and type
//! checking of one root file and the files it uses) → [`Program`].
//!
//! Invariants: nothing here does I/O — the CLI or the language server reads files and calls
//! [`Database::set_file`] / [`Database::set_unreadable`] for the paths
//! [`Database::unresolved_uses`] asks for. Editing a user file never re-executes a query on a
//! stdlib input. Paths are normalised lexically (`a/./b/../c` → `a/c`), never canonicalised.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use salsa::{Durability, Setter};

use crate::resolve::problem::ResolveProblem;
use crate::resolve::{self, FileIndex, LoadedFile, Prelude, Resolver, UseError, UseTarget};
use crate::ty::{PartialScenario, ScenarioDef};
use venus_diag::diag::{suggest, Diagnostic, FileId, Loc};
use venus_syntax::syntax::ast::{self, DefKind};

/// The stdlib, embedded in the binary, with the pseudo-paths diagnostics show.
pub const STDLIB: &[(&str, &str)] = &[
    (
        "<stdlib>/gpus.venus",
        include_str!("../../../stdlib/gpus.venus"),
    ),
    (
        "<stdlib>/models.venus",
        include_str!("../../../stdlib/models.venus"),
    ),
    (
        "<stdlib>/clusters.venus",
        include_str!("../../../stdlib/clusters.venus"),
    ),
];

/// One source file.
#[salsa::input(debug)]
pub struct SourceFile {
    #[returns(copy)]
    pub id: FileId,
    #[returns(ref)]
    pub path: PathBuf,
    #[returns(clone)]
    pub text: Arc<str>,
    /// E0001 for bytes that are not UTF-8 (from `syntax::decode`).
    #[returns(clone)]
    pub decode_diagnostics: Arc<Vec<Diagnostic>>,
}

/// The user files loaded so far, and the paths the driver could not read.
#[salsa::input(debug)]
pub struct Workspace {
    #[returns(ref)]
    pub files: BTreeMap<PathBuf, SourceFile>,
    #[returns(ref)]
    pub unreadable: BTreeMap<PathBuf, UseError>,
}

/// The stdlib's files.
#[salsa::input(debug)]
pub struct Stdlib {
    #[returns(ref)]
    pub files: Vec<SourceFile>,
}

/// A parsed file: the tree and the syntax diagnostics (decode errors included).
#[derive(Clone, Debug, PartialEq)]
pub struct ParsedFile {
    pub ast: Arc<ast::File>,
    pub diagnostics: Arc<Vec<Diagnostic>>,
}

impl ParsedFile {
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

#[salsa::tracked(returns(ref))]
pub fn parse_file(db: &dyn salsa::Database, file: SourceFile) -> ParsedFile {
    let parsed = venus_syntax::syntax::parse(&file.text(db), file.id(db));
    let mut diagnostics = (*file.decode_diagnostics(db)).clone();
    diagnostics.extend(parsed.diagnostics);
    ParsedFile {
        ast: Arc::new(parsed.file),
        diagnostics: Arc::new(diagnostics),
    }
}

/// The definitions and `use`s of one file.
#[salsa::tracked(returns(ref))]
pub fn file_index(db: &dyn salsa::Database, file: SourceFile) -> FileIndex {
    FileIndex::build(file.id(db), &parse_file(db, file).ast)
}

/// The stdlib's names; depends on stdlib files only.
#[salsa::tracked(returns(ref))]
pub fn prelude(db: &dyn salsa::Database, stdlib: Stdlib) -> Prelude {
    let indexes: Vec<&FileIndex> = stdlib
        .files(db)
        .iter()
        .map(|f| file_index(db, *f))
        .collect();
    Prelude::build(&indexes)
}

/// A definition, for go-to-definition, hover and document symbols.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Definition {
    pub kind: DefKind,
    pub name: Option<String>,
    /// The name (or keyword of an unnamed definition).
    pub name_loc: Loc,
    /// The whole definition.
    pub loc: Loc,
    pub stdlib: bool,
}

/// A name written at `at` that means the definition at `target` (its name).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reference {
    pub at: Loc,
    pub target: Loc,
    pub kind: DefKind,
}

/// Everything the front end knows about one root file.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    pub root: FileId,
    /// The root and every file it uses, in load order.
    pub files: Vec<FileId>,
    /// The root's scenarios that type-checked, in source order.
    pub scenarios: Vec<ScenarioDef>,
    /// The root's scenarios whose definitions had errors but could still be typed (plan
    /// validation runs on them, skipping the rules that read a rejected key).
    pub partial_scenarios: Vec<PartialScenario>,
    /// The name and location of every scenario of the root, checked or not.
    pub scenario_names: Vec<(String, Loc)>,
    /// Every diagnostic of the program, sorted by file and position, each once.
    pub diagnostics: Vec<Diagnostic>,
    /// E0108 of a library root (definitions, no scenario): not a problem of the file, only
    /// of running it, so [`Program::select_scenario`] returns it and `check` does not.
    pub no_scenario: Option<Diagnostic>,
    /// The definitions of the program's files and of the stdlib.
    pub definitions: Vec<Definition>,
    /// The stdlib's GPUs, typed, in stdlib order (plan validation names them in helps).
    pub stdlib_gpus: Vec<crate::ty::StdlibGpu>,
    /// Every resolved name.
    pub references: Vec<Reference>,
}

impl Program {
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    /// The reference whose span contains `offset` in `file` (for go-to-definition).
    pub fn reference_at(&self, file: FileId, offset: u32) -> Option<&Reference> {
        self.references
            .iter()
            .find(|r| r.at.file == file && r.at.span.start <= offset && offset <= r.at.span.end)
    }

    /// The scenario to run: `name` (from `--scenario`), or the only one. `Err(None)` when
    /// the program has errors that already explain why there is nothing to run; otherwise
    /// `Err(Some(E0108))`.
    #[allow(clippy::result_large_err)] // the error is a diagnostic to render, on a cold path
    pub fn select_scenario(&self, name: Option<&str>) -> Result<&ScenarioDef, Option<Diagnostic>> {
        let names: Vec<String> = self.scenario_names.iter().map(|(n, _)| n.clone()).collect();
        match name {
            Some(name) => {
                if let Some(s) = self.scenarios.iter().find(|s| s.name == name) {
                    return Ok(s);
                }
                if names.iter().any(|n| n == name) {
                    return Err(None);
                }
                let nearest = suggest(name, names.iter().map(String::as_str)).map(str::to_string);
                Err(Some(
                    ResolveProblem::UnknownScenario {
                        name: name.to_string(),
                        nearest,
                        names,
                        loc: Loc::new(self.root, venus_diag::diag::Span::new(0, 0)),
                    }
                    .diagnostic(),
                ))
            }
            None => match (self.scenario_names.as_slice(), self.scenarios.as_slice()) {
                ([_], [one]) => Ok(one),
                ([], _) => Err(self.no_scenario.clone()),
                ([_], _) => Err(None),
                (all, _) => Err(Some(
                    ResolveProblem::NoneChosen {
                        scenarios: all.to_vec(),
                    }
                    .diagnostic(),
                )),
            },
        }
    }

    /// The definition whose name is at `loc`.
    pub fn definition_named_at(&self, loc: Loc) -> Option<&Definition> {
        self.definitions.iter().find(|d| d.name_loc == loc)
    }
}

/// The directory a `use` in `file` is relative to, joined with the `use` path.
fn use_path(file: &Path, used: &str) -> PathBuf {
    normalize(&file.parent().unwrap_or(Path::new("")).join(used))
}

/// Lexical normalisation: drops `.`, folds `dir/..`; keeps leading `..` of relative paths.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => match out.components().next_back() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                _ => out.push(".."),
            },
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Resolution and type checking of `root` and the files it uses.
#[salsa::tracked(returns(clone))]
pub fn program_query(
    db: &dyn salsa::Database,
    ws: Workspace,
    stdlib: Stdlib,
    root: SourceFile,
) -> Arc<Program> {
    let mut order = vec![root];
    let mut seen = BTreeSet::from([root.id(db)]);
    let mut user = Vec::new();
    let mut diagnostics = Vec::new();
    let mut broken = BTreeSet::new();
    let mut i = 0;
    while let Some(&file) = order.get(i) {
        i += 1;
        let parsed = parse_file(db, file);
        // A used file that does not parse is reported once, as E0107 at its `use` with one
        // escaped line (`resolve::broken_use`): it may not be meant to be read at all.
        if file == root || !parsed.has_errors() {
            diagnostics.extend(parsed.diagnostics.iter().cloned());
        } else {
            broken.insert(file.id(db));
        }
        let mut uses = Vec::new();
        for u in &file_index(db, file).uses {
            let path = use_path(file.path(db), &u.path);
            let target = match ws.files(db).get(&path) {
                Some(&target) => {
                    if seen.insert(target.id(db)) {
                        order.push(target);
                    }
                    let first_error = match target == root {
                        true => None,
                        false => parse_file(db, target)
                            .diagnostics
                            .iter()
                            .filter(|d| d.is_error())
                            .min_by_key(|d| d.primary.loc.span.start)
                            .cloned()
                            .map(Box::new),
                    };
                    UseTarget::Loaded {
                        file: target.id(db),
                        first_error,
                    }
                }
                None => {
                    UseTarget::Unreadable(ws.unreadable(db).get(&path).cloned().unwrap_or_else(
                        || UseError::from(format!("`{}` was not loaded", path.display())),
                    ))
                }
            };
            uses.push(target);
        }
        user.push(loaded(db, file, uses));
    }
    let std_files: Vec<LoadedFile> = stdlib
        .files(db)
        .iter()
        .map(|&f| loaded(db, f, Vec::new()))
        .collect();
    for f in stdlib.files(db) {
        diagnostics.extend(parse_file(db, *f).diagnostics.iter().cloned());
    }
    let prelude = prelude(db, stdlib);
    diagnostics.extend(prelude.diagnostics.iter().cloned());

    let resolver = Resolver::new(root.id(db), &user, &std_files, prelude);
    let (scenarios, partial_scenarios) = crate::ty::check::check_program_all(&resolver);
    let stdlib_gpus = crate::ty::check::stdlib_gpus(&resolver);
    let scenario_names = resolver.scenario_names();
    let no_scenario = resolver.take_no_scenario();
    diagnostics.extend(resolver.take_diagnostics());
    diagnostics.retain(|d| !broken.contains(&d.primary.loc.file));
    resolve::sort_diagnostics(&mut diagnostics);

    let mut definitions = Vec::new();
    for f in user.iter().chain(&std_files) {
        if let Some(index) = resolver.index(f.id) {
            let stdlib = resolver.is_stdlib(f.id);
            definitions.extend(index.defs.iter().map(|d| Definition {
                kind: d.kind,
                name: d.name.clone(),
                name_loc: d.name_loc,
                loc: d.loc,
                stdlib,
            }));
        }
    }
    let references = resolver
        .references()
        .iter()
        .filter_map(|r| {
            let e = resolver.entry(r.target)?;
            Some(Reference {
                at: r.at,
                target: e.name_loc,
                kind: e.kind,
            })
        })
        .collect();
    Arc::new(Program {
        root: root.id(db),
        files: user.iter().map(|f| f.id).collect(),
        scenarios,
        partial_scenarios,
        scenario_names,
        diagnostics,
        no_scenario,
        definitions,
        stdlib_gpus,
        references,
    })
}

fn loaded(db: &dyn salsa::Database, file: SourceFile, uses: Vec<UseTarget>) -> LoadedFile {
    LoadedFile {
        id: file.id(db),
        name: file.path(db).to_string_lossy().into_owned(),
        text: file.text(db),
        ast: parse_file(db, file).ast.clone(),
        uses,
    }
}

/// The database. Cheap to clone (for a language server's snapshots).
#[salsa::db]
#[derive(Clone)]
pub struct Database {
    storage: salsa::Storage<Self>,
    /// Set once in [`Database::new`] (an input handle needs the database to exist first).
    inputs: Option<(Workspace, Stdlib)>,
    /// Indexed by `FileId`.
    by_id: Vec<SourceFile>,
    /// The queries executed, when this database logs them (unit tests here, and
    /// [`Database::with_query_log`]): the tests of incrementality read it.
    executed: Option<Arc<std::sync::Mutex<Vec<salsa::DatabaseKeyIndex>>>>,
}

#[salsa::db]
impl salsa::Database for Database {}

impl Default for Database {
    fn default() -> Self {
        Database::new()
    }
}

impl Database {
    /// A database with the stdlib loaded (file ids 0, 1, ...) and no user file.
    pub fn new() -> Database {
        Database::build(cfg!(test))
    }

    /// A database like [`Database::new`]'s that logs every query it executes, for tests of
    /// incrementality in the crates above ([`Database::take_executed`] reads the log).
    #[doc(hidden)]
    pub fn with_query_log() -> Database {
        Database::build(true)
    }

    /// Query names and keys executed since the last call (none unless the database logs them).
    #[doc(hidden)]
    pub fn take_executed(&self) -> Vec<(String, salsa::Id)> {
        use salsa::Database as _;
        let Some(log) = &self.executed else {
            return Vec::new();
        };
        let keys = std::mem::take(&mut *log.lock().unwrap_or_else(|e| e.into_inner()));
        keys.into_iter()
            .map(|k| {
                (
                    self.ingredient_debug_name(k.ingredient_index())
                        .into_owned(),
                    k.key_index(),
                )
            })
            .collect()
    }

    fn build(log: bool) -> Database {
        let executed: Option<Arc<std::sync::Mutex<Vec<salsa::DatabaseKeyIndex>>>> =
            log.then(Arc::default);
        let storage = match &executed {
            Some(log) => {
                let log = log.clone();
                salsa::Storage::new(Some(Box::new(move |event: salsa::Event| {
                    if let salsa::EventKind::WillExecute { database_key } = event.kind {
                        log.lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push(database_key);
                    }
                })))
            }
            None => salsa::Storage::default(),
        };
        let mut db = Database {
            storage,
            inputs: None,
            by_id: Vec::new(),
            executed,
        };
        let workspace = Workspace::builder(BTreeMap::new(), BTreeMap::new()).new(&db);
        let mut files = Vec::new();
        for (i, (path, text)) in STDLIB.iter().enumerate() {
            let id = FileId(i as u32);
            let f = SourceFile::builder(
                id,
                PathBuf::from(path),
                Arc::from(*text),
                Arc::new(Vec::new()),
            )
            .durability(Durability::HIGH)
            .new(&db);
            db.by_id.push(f);
            files.push(f);
        }
        let stdlib = Stdlib::builder(files).durability(Durability::HIGH).new(&db);
        db.inputs = Some((workspace, stdlib));
        db
    }

    fn workspace(&self) -> Workspace {
        self.inputs
            .expect("inputs are created in `Database::new`")
            .0
    }

    fn stdlib(&self) -> Stdlib {
        self.inputs
            .expect("inputs are created in `Database::new`")
            .1
    }

    /// Loads or updates the file at `path` (normalised); returns its id.
    pub fn set_file(&mut self, path: &Path, bytes: &[u8]) -> FileId {
        let path = normalize(path);
        let existing = self.workspace().files(self).get(&path).copied();
        let id = existing.map_or(FileId(self.by_id.len() as u32), |f| f.id(self));
        let (text, decode) = venus_syntax::syntax::decode(bytes, id);
        let text: Arc<str> = Arc::from(text);
        match existing {
            Some(f) => {
                if *f.text(self) != *text {
                    f.set_text(self).to(text);
                }
                if *f.decode_diagnostics(self) != decode {
                    f.set_decode_diagnostics(self).to(Arc::new(decode));
                }
            }
            None => {
                let f = SourceFile::new(self, id, path.clone(), text, Arc::new(decode));
                self.by_id.push(f);
                let mut files = self.workspace().files(self).clone();
                files.insert(path.clone(), f);
                self.workspace().set_files(self).to(files);
            }
        }
        if self.workspace().unreadable(self).contains_key(&path) {
            let mut unreadable = self.workspace().unreadable(self).clone();
            unreadable.remove(&path);
            self.workspace().set_unreadable(self).to(unreadable);
        }
        id
    }

    /// Records that `path` (as returned by [`Database::unresolved_uses`]) was not given:
    /// a reason (E0107) or the reader's [`UseError`].
    pub fn set_unreadable(&mut self, path: &Path, reason: impl Into<UseError>) {
        let reason = reason.into();
        let path = normalize(path);
        if self.workspace().unreadable(self).get(&path) == Some(&reason) {
            return;
        }
        let mut unreadable = self.workspace().unreadable(self).clone();
        unreadable.insert(path, reason);
        self.workspace().set_unreadable(self).to(unreadable);
    }

    /// Paths named by `use` from `root`, transitively, that are neither loaded nor known to be
    /// unreadable, normalised, in discovery order.
    pub fn unresolved_uses(&self, root: FileId) -> Vec<PathBuf> {
        let Some(&root) = self.by_id.get(root.0 as usize) else {
            return Vec::new();
        };
        let files = self.workspace().files(self);
        let unreadable = self.workspace().unreadable(self);
        let mut order = vec![root];
        let mut seen = BTreeSet::from([root.id(self)]);
        let mut missing = Vec::new();
        let mut i = 0;
        while let Some(&file) = order.get(i) {
            i += 1;
            for u in &file_index(self, file).uses {
                let path = use_path(file.path(self), &u.path);
                match files.get(&path) {
                    Some(&f) if seen.insert(f.id(self)) => order.push(f),
                    Some(_) => {}
                    None if !unreadable.contains_key(&path) && !missing.contains(&path) => {
                        missing.push(path)
                    }
                    None => {}
                }
            }
        }
        missing
    }

    /// The program rooted at `root`: typed scenarios and every diagnostic.
    pub fn program(&self, root: FileId) -> Arc<Program> {
        match self.by_id.get(root.0 as usize) {
            Some(&f) => program_query(self, self.workspace(), self.stdlib(), f),
            None => Arc::new(Program {
                root,
                files: Vec::new(),
                scenarios: Vec::new(),
                partial_scenarios: Vec::new(),
                scenario_names: Vec::new(),
                diagnostics: Vec::new(),
                no_scenario: None,
                definitions: Vec::new(),
                stdlib_gpus: Vec::new(),
                references: Vec::new(),
            }),
        }
    }

    /// The parse of one file (for the formatter and the language server).
    pub fn parsed(&self, file: FileId) -> Option<ParsedFile> {
        self.by_id
            .get(file.0 as usize)
            .map(|&f| parse_file(self, f).clone())
    }

    pub fn file_id(&self, path: &Path) -> Option<FileId> {
        self.workspace()
            .files(self)
            .get(&normalize(path))
            .map(|f| f.id(self))
    }

    /// The path shown in diagnostics (`<stdlib>/gpus.venus` for the stdlib).
    pub fn file_name(&self, file: FileId) -> String {
        self.by_id
            .get(file.0 as usize)
            .map_or_else(String::new, |f| f.path(self).to_string_lossy().into_owned())
    }

    pub fn file_text(&self, file: FileId) -> Arc<str> {
        self.by_id
            .get(file.0 as usize)
            .map_or_else(|| Arc::from(""), |f| f.text(self))
    }

    /// Every file id, stdlib first.
    pub fn files(&self) -> Vec<FileId> {
        (0..self.by_id.len() as u32).map(FileId).collect()
    }

    pub fn is_stdlib(&self, file: FileId) -> bool {
        (file.0 as usize) < STDLIB.len()
    }
}

#[cfg(test)]
mod tests;
