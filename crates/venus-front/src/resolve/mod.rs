//! Resolution: names, `use`, the stdlib prelude and inheritance.
//!
//! Input: the parsed files of one program (the root file and the files it `use`s, each with
//! the outcome of its `use` declarations) and the stdlib [`Prelude`].
//! Output: a [`Resolver`] that answers "which definition does this name mean here"
//! ([`Resolver::lookup`]), "what are the items of this definition after inheritance"
//! ([`Resolver::merged`]) and "which scenarios does the root define" ([`Resolver::scenarios`]),
//! plus E0104–E0108 and W0004.
//!
//! Scoping rules (lexical, per file; documented in `LANGUAGE.md` of the spec):
//! - names are per kind: a model and a plan may share a name;
//! - a name is looked up in the file that wrote it: first that file's own definitions, then the
//!   definitions of the files it `use`s directly (not transitively), then the stdlib prelude.
//!   So a root definition shadows a used one, and both shadow the stdlib;
//! - stdlib definitions see only the prelude: a user's `h100_sxm` never changes `dgx_h100`;
//! - `model llama2_7b : llama2_7b < seq 4096 >` is allowed: a base with the definition's own
//!   name means the definition it shadows (looked up past the file's own definitions);
//! - `use` cycles are allowed: every file is loaded once, and each file sees only the
//!   definitions of the files it names.
//!
//! Invariants: every lookup of a name is recorded (for W0004 and go-to-definition); no
//! recursion depth depends on user input (inheritance chains are walked with a loop).

mod merge;
pub mod problem;
mod scenario;

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::Arc;

use problem::{FirstError, ResolveProblem, UnknownHelp};
use venus_diag::diag::{suggest, Code, Diagnostic, FileId, Loc, Span};
use venus_syntax::syntax::ast::{self, DefKind, TopItem};
use venus_syntax::syntax::schema::{self, ArgType, BlockKind};

pub use merge::{MergedDef, MergedItem, Origin};
pub use scenario::ScenarioSource;

/// One definition: a top-level item of a file, addressed by the file and its index among the
/// file's top-level items.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DefId {
    pub file: FileId,
    pub item: u32,
}

/// A definition as the index of its file sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DefEntry {
    pub id: DefId,
    pub kind: DefKind,
    pub name: Option<String>,
    /// The name, or the keyword of an unnamed `cluster` / `plan`.
    pub name_loc: Loc,
    /// The whole definition.
    pub loc: Loc,
}

/// A `use` declaration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UseEntry {
    pub path: String,
    pub loc: Loc,
}

/// The definitions and `use`s of one file, with E0106 for duplicate names.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct FileIndex {
    pub defs: Vec<DefEntry>,
    pub uses: Vec<UseEntry>,
    /// First definition of each (kind, name); later duplicates are reported and ignored.
    pub by_name: BTreeMap<(DefKind, String), DefId>,
    pub diagnostics: Vec<Diagnostic>,
}

impl FileIndex {
    pub fn build(file: FileId, ast: &ast::File) -> FileIndex {
        let mut index = FileIndex::default();
        for (i, top) in ast.items.iter().enumerate() {
            match top {
                TopItem::Use(u) => index.uses.push(UseEntry {
                    path: u.path.clone(),
                    loc: Loc::new(file, u.path_span),
                }),
                TopItem::Def(def) => {
                    let id = DefId {
                        file,
                        item: i as u32,
                    };
                    let name_loc =
                        Loc::new(file, def.name.as_ref().map_or(def.kind_span, |n| n.span));
                    let entry = DefEntry {
                        id,
                        kind: def.kind,
                        name: def.name.as_ref().map(|n| n.text.clone()),
                        name_loc,
                        loc: Loc::new(file, def.span),
                    };
                    if let Some(name) = &entry.name {
                        let key = (def.kind, name.clone());
                        if let Some(first) = index.by_name.get(&key) {
                            let first_loc = index.get(*first).map_or(name_loc, |d| d.name_loc);
                            let problem = ResolveProblem::DefinedTwiceInFile {
                                kind: def.kind,
                                name: name.clone(),
                                loc: name_loc,
                                first: first_loc,
                            };
                            index.diagnostics.push(problem.diagnostic());
                        } else {
                            index.by_name.insert(key, id);
                        }
                    }
                    index.defs.push(entry);
                }
            }
        }
        index
    }

    pub fn get(&self, id: DefId) -> Option<&DefEntry> {
        // `defs` is in source order, so sorted by id.
        self.defs
            .binary_search_by_key(&id, |d| d.id)
            .ok()
            .and_then(|i| self.defs.get(i))
    }
}

/// The stdlib's definitions, in scope everywhere unless shadowed.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Prelude {
    pub by_name: BTreeMap<(DefKind, String), DefId>,
    pub diagnostics: Vec<Diagnostic>,
}

impl Prelude {
    /// Merges the indexes of the stdlib files. A name defined twice across stdlib files is an
    /// E0106 like in one file: the stdlib is one namespace.
    pub fn build(indexes: &[&FileIndex]) -> Prelude {
        let mut prelude = Prelude::default();
        for index in indexes {
            prelude
                .diagnostics
                .extend(index.diagnostics.iter().cloned());
            for (key, &id) in &index.by_name {
                if let Some(first) = prelude.by_name.get(key) {
                    let loc = index.get(id).map_or(Loc::default(), |d| d.name_loc);
                    let first_loc = indexes
                        .iter()
                        .find_map(|i| i.get(*first))
                        .map_or(loc, |d| d.name_loc);
                    let problem = ResolveProblem::DefinedTwiceInStdlib {
                        kind: key.0,
                        name: key.1.clone(),
                        loc,
                        first: first_loc,
                    };
                    prelude.diagnostics.push(problem.diagnostic());
                } else {
                    prelude.by_name.insert(key.clone(), id);
                }
            }
        }
        prelude
    }
}

/// What became of one `use` declaration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UseTarget {
    /// The file is part of the program; `first_error` is the first error of its parse, when
    /// it has one (the file's own diagnostics are then not shown, only one E0107 line).
    Loaded {
        file: FileId,
        first_error: Option<Box<Diagnostic>>,
    },
    /// The driver did not give the file (its code, reason and fix).
    Unreadable(UseError),
}

/// Why the driver did not give a `use`d file. The driver's reader applies the input policy
/// (a regular file under a size cap, inside the project root), so it chooses the code.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct UseError {
    /// E0107 (cannot be read) or E0109 (outside the project root).
    pub code: Code,
    /// Why, in a few words (`no such file`, `a FIFO, not a regular file`).
    pub reason: String,
    /// The fix the reader computed; `None` leaves the resolver's (check the path).
    pub help: Option<String>,
}

/// A plain reason is an unreadable file (E0107).
impl From<String> for UseError {
    fn from(reason: String) -> UseError {
        UseError {
            code: Code::E0107,
            reason,
            help: None,
        }
    }
}

/// E0107 or E0109 for a `use` the driver did not give.
fn unreadable_use(u: &UseEntry, e: &UseError, from: &str) -> ResolveProblem {
    ResolveProblem::UnreadableUse {
        code: e.code,
        path: u.path.clone(),
        loc: u.loc,
        reason: e.reason.clone(),
        help: e.help.clone(),
        from: from.to_string(),
    }
}

/// The most of a used file's line an E0107 note shows: enough to find the place, too little
/// to copy a file that was never meant to be read (a `use "/etc/passwd"`) into a CI log.
pub const USED_SNIPPET_CHARS: usize = 80;

/// E0107 for a used file that does not parse. The file was not named by the user (only
/// `use`d), so its text is shown as one escaped line of at most [`USED_SNIPPET_CHARS`]
/// characters at its first error, and none of its own diagnostics are rendered.
fn broken_use(
    u: &UseEntry,
    target: Option<&LoadedFile>,
    first: &Diagnostic,
    name: &str,
) -> ResolveProblem {
    let first_error = target.map(|f| {
        let at = (first.primary.loc.span.start as usize).min(f.text.len());
        let line_start = f.text[..at].rfind('\n').map_or(0, |i| i + 1);
        let line_end = f.text[at..].find('\n').map_or(f.text.len(), |i| at + i);
        FirstError {
            line: f.text[..at].matches('\n').count() + 1,
            column: f.text[line_start..at].chars().count() + 1,
            message: venus_diag::diag::escape_excerpt(&first.message, USED_SNIPPET_CHARS),
            shown: venus_diag::diag::escape_excerpt(
                f.text[line_start..line_end].trim_end_matches('\r'),
                USED_SNIPPET_CHARS,
            ),
        }
    });
    ResolveProblem::BrokenUse {
        path: u.path.clone(),
        loc: u.loc,
        name: name.to_string(),
        first_error,
    }
}

/// A parsed source file handed to the resolver.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadedFile {
    pub id: FileId,
    /// The path as shown to users (`models.venus`, `<stdlib>/gpus.venus`).
    pub name: String,
    pub text: Arc<str>,
    pub ast: Arc<ast::File>,
    /// One entry per `use` of the file, in source order (empty for stdlib files).
    pub uses: Vec<UseTarget>,
}

impl LoadedFile {
    pub fn stem(&self) -> String {
        Path::new(&self.name)
            .file_stem()
            .map_or_else(|| self.name.clone(), |s| s.to_string_lossy().into_owned())
    }
}

/// A name that was looked up, and what it found (for go-to-definition and W0004).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Reference {
    pub at: Loc,
    pub target: DefId,
}

/// Resolution of one program. Interior mutability collects diagnostics, uses and the merge
/// cache while the type checker asks questions in whatever order it needs.
pub struct Resolver<'a> {
    root: FileId,
    files: HashMap<FileId, &'a LoadedFile>,
    stdlib: BTreeSet<FileId>,
    indexes: HashMap<FileId, FileIndex>,
    prelude: &'a Prelude,
    diagnostics: RefCell<Vec<Diagnostic>>,
    references: RefCell<BTreeSet<Reference>>,
    merged: RefCell<HashMap<DefId, Option<Arc<MergedDef>>>>,
    unknown_helps: RefCell<HashMap<(FileId, DefKind, String), UnknownHelp>>,
    /// Definitions an E0104 suggests ("did you mean `small`?"): counted as used, since the
    /// fix of the typo uses them (no W0004 beside the E0104).
    suggested: RefCell<BTreeSet<DefId>>,
    /// E0108 for a root with definitions but no scenario: a library, clean for `check`; the
    /// diagnostic is kept for `sim`, which has nothing to run.
    no_scenario: RefCell<Option<Diagnostic>>,
}

impl<'a> Resolver<'a> {
    /// `user` holds the root and every file it uses (transitively); `stdlib` the prelude's files.
    pub fn new(
        root: FileId,
        user: &'a [LoadedFile],
        stdlib: &'a [LoadedFile],
        prelude: &'a Prelude,
    ) -> Resolver<'a> {
        let mut files = HashMap::new();
        let mut indexes = HashMap::new();
        let mut diagnostics = Vec::new();
        for f in user.iter().chain(stdlib) {
            files.insert(f.id, f);
            let index = FileIndex::build(f.id, &f.ast);
            if !stdlib.iter().any(|s| s.id == f.id) {
                diagnostics.extend(index.diagnostics.iter().cloned());
            }
            indexes.insert(f.id, index);
        }
        let resolver = Resolver {
            root,
            files,
            stdlib: stdlib.iter().map(|f| f.id).collect(),
            indexes,
            prelude,
            diagnostics: RefCell::new(diagnostics),
            references: RefCell::new(BTreeSet::new()),
            merged: RefCell::new(HashMap::new()),
            unknown_helps: RefCell::new(HashMap::new()),
            suggested: RefCell::new(BTreeSet::new()),
            no_scenario: RefCell::new(None),
        };
        for f in user {
            resolver.report_uses(f);
        }
        resolver
    }

    /// The stdlib's definitions of `kind`, in stdlib order (file, then position).
    pub fn prelude_defs(&self, kind: DefKind) -> Vec<(String, DefId)> {
        let mut defs: Vec<(String, DefId)> = self
            .prelude
            .by_name
            .iter()
            .filter(|((k, _), _)| *k == kind)
            .map(|((_, name), &id)| (name.clone(), id))
            .collect();
        defs.sort_by_key(|(_, id)| *id);
        defs
    }

    pub fn root(&self) -> FileId {
        self.root
    }

    pub fn file(&self, id: FileId) -> Option<&'a LoadedFile> {
        self.files.get(&id).copied()
    }

    pub fn index(&self, id: FileId) -> Option<&FileIndex> {
        self.indexes.get(&id)
    }

    pub fn is_stdlib(&self, id: FileId) -> bool {
        self.stdlib.contains(&id)
    }

    pub fn def(&self, id: DefId) -> Option<&'a ast::Def> {
        match self.files.get(&id.file)?.ast.items.get(id.item as usize)? {
            TopItem::Def(d) => Some(d),
            TopItem::Use(_) => None,
        }
    }

    pub fn entry(&self, id: DefId) -> Option<&DefEntry> {
        self.indexes.get(&id.file)?.get(id)
    }

    /// The source text of `loc`, when it is in a loaded file.
    pub fn text(&self, loc: Loc) -> Option<&'a str> {
        self.files.get(&loc.file)?.text.get(loc.span.range())
    }

    pub fn report(&self, d: Diagnostic) {
        self.diagnostics.borrow_mut().push(d);
    }

    /// Reports a problem of resolution, as its diagnostic.
    fn problem(&self, p: ResolveProblem) {
        self.report(p.diagnostic());
    }

    /// E0107 for every `use` that could not be read or has syntax errors; the reader's code
    /// (E0109: outside the project root) where it refused the file.
    fn report_uses(&self, file: &LoadedFile) {
        let Some(index) = self.indexes.get(&file.id) else {
            return;
        };
        for (u, target) in index.uses.iter().zip(&file.uses) {
            match target {
                UseTarget::Unreadable(e) => self.problem(unreadable_use(u, e, &file.name)),
                UseTarget::Loaded {
                    file: target,
                    first_error: Some(first),
                } => {
                    let loaded = self.files.get(target).copied();
                    let name = loaded.map_or(u.path.clone(), |f| f.name.clone());
                    self.problem(broken_use(u, loaded, first, &name));
                }
                UseTarget::Loaded { .. } => {}
            }
        }
    }

    /// Files whose definitions `file` sees after its own, in `use` order.
    fn used_files(&self, file: FileId) -> Vec<FileId> {
        let Some(f) = self.files.get(&file) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for t in &f.uses {
            if let UseTarget::Loaded { file: id, .. } = t {
                if *id != file && !out.contains(id) {
                    out.push(*id);
                }
            }
        }
        out
    }

    /// Looks `name` of `kind` up from `from` (the file that wrote it), without reporting.
    /// `skip_own` looks past the file's own definitions (a base naming its own definition).
    pub fn find(&self, from: FileId, kind: DefKind, name: &str, skip_own: bool) -> Lookup {
        let key = (kind, name.to_string());
        if self.is_stdlib(from) {
            return self
                .prelude
                .by_name
                .get(&key)
                .map_or(Lookup::Missing, |&id| Lookup::Found(id));
        }
        if !skip_own {
            if let Some(&id) = self.indexes.get(&from).and_then(|i| i.by_name.get(&key)) {
                return Lookup::Found(id);
            }
        }
        let found: Vec<DefId> = self
            .used_files(from)
            .iter()
            .filter_map(|f| self.indexes.get(f)?.by_name.get(&key).copied())
            .collect();
        match found.as_slice() {
            [] => self
                .prelude
                .by_name
                .get(&key)
                .map_or(Lookup::Missing, |&id| Lookup::Found(id)),
            [one] => Lookup::Found(*one),
            [first, second, ..] => Lookup::Ambiguous(*first, *second),
        }
    }

    /// Looks a reference up, records it, and reports E0104 (unknown) or E0106 (defined by two
    /// used files) at `at`.
    pub fn lookup(&self, at: Loc, kind: DefKind, name: &str) -> Option<DefId> {
        self.lookup_inner(at, kind, name, false)
    }

    fn lookup_inner(&self, at: Loc, kind: DefKind, name: &str, skip_own: bool) -> Option<DefId> {
        match self.find(at.file, kind, name, skip_own) {
            Lookup::Found(id) => {
                self.references
                    .borrow_mut()
                    .insert(Reference { at, target: id });
                Some(id)
            }
            Lookup::Ambiguous(a, b) => {
                let defs = [a, b]
                    .into_iter()
                    .filter_map(|id| {
                        self.entry(id)
                            .map(|e| (e.name_loc, self.file_name(id.file)))
                    })
                    .collect();
                self.problem(ResolveProblem::Ambiguous {
                    kind,
                    name: name.to_string(),
                    at,
                    files: [self.file_name(a.file), self.file_name(b.file)],
                    defs,
                });
                self.references
                    .borrow_mut()
                    .insert(Reference { at, target: a });
                Some(a)
            }
            Lookup::Missing => {
                self.problem(self.unknown_reference(at, kind, name));
                None
            }
        }
    }

    fn file_name(&self, id: FileId) -> String {
        self.files
            .get(&id)
            .map_or_else(|| format!("file {}", id.0), |f| f.name.clone())
    }

    /// Every name of `kind` visible from `from`, for "did you mean".
    pub fn names_in_scope(&self, from: FileId, kind: DefKind) -> BTreeSet<String> {
        let mut names = BTreeSet::new();
        let of = |by_name: &BTreeMap<(DefKind, String), DefId>, names: &mut BTreeSet<String>| {
            names.extend(
                by_name
                    .keys()
                    .filter(|(k, _)| *k == kind)
                    .map(|(_, n)| n.clone()),
            );
        };
        of(&self.prelude.by_name, &mut names);
        if !self.is_stdlib(from) {
            for f in std::iter::once(from).chain(self.used_files(from)) {
                if let Some(i) = self.indexes.get(&f) {
                    of(&i.by_name, &mut names);
                }
            }
        }
        names
    }

    fn unknown_reference(&self, at: Loc, kind: DefKind, name: &str) -> ResolveProblem {
        // The help depends only on the file, kind and name: computed once for a name that is
        // wrong many times (each costs an edit distance per name in scope).
        let key = (at.file, kind, name.to_string());
        let cached = self.unknown_helps.borrow().get(&key).cloned();
        let help = match cached {
            Some(help) => help,
            None => {
                let help = self.unknown_help(at.file, kind, name);
                self.unknown_helps.borrow_mut().insert(key, help.clone());
                help
            }
        };
        // The definition a "did you mean" proposes is recorded as used.
        if let Some(s) = help.suggestion() {
            if let Lookup::Found(id) = self.find(at.file, kind, s, false) {
                self.suggested.borrow_mut().insert(id);
            }
        }
        ResolveProblem::UnknownReference {
            kind,
            name: name.to_string(),
            at,
            help,
        }
    }

    fn unknown_help(&self, file: FileId, kind: DefKind, name: &str) -> UnknownHelp {
        let names = self.names_in_scope(file, kind);
        if let Some(s) = suggest(name, names.iter().map(String::as_str)) {
            return UnknownHelp::DidYouMean(s.to_string());
        }
        let other = DefKind::ALL
            .into_iter()
            .find(|&k| k != kind && matches!(self.find(file, k, name, false), Lookup::Found(_)));
        if let Some(k) = other {
            return UnknownHelp::OtherKind(k);
        }
        if names.is_empty() {
            UnknownHelp::Define
        } else {
            UnknownHelp::DefineOrUse {
                names: names.iter().take(6).cloned().collect(),
                more: names.len() > 6,
            }
        }
    }

    /// The user files of the program (not the stdlib), in id order.
    pub fn user_files(&self) -> Vec<FileId> {
        let mut user: Vec<FileId> = self
            .files
            .keys()
            .copied()
            .filter(|f| !self.is_stdlib(*f))
            .collect();
        user.sort();
        user
    }

    /// Every reference looked up so far.
    pub fn references(&self) -> Vec<Reference> {
        self.references.borrow().iter().copied().collect()
    }

    /// Resolves every name written in user files (bases and references, inline blocks
    /// included), so that unknown names are reported even in definitions no scenario uses,
    /// and so that W0004 knows what is referenced.
    pub fn resolve_all_names(&self) {
        for file in self.user_files() {
            let Some(index) = self.indexes.get(&file) else {
                continue;
            };
            for entry in &index.defs {
                let Some(def) = self.def(entry.id) else {
                    continue;
                };
                if let Some(base) = &def.base {
                    self.lookup_base(entry.id, def, base);
                }
                self.resolve_block_names(file, BlockKind::Def(def.kind), &def.body);
            }
        }
    }

    /// The references inside one block: arguments typed `Ref` that are names, and inline blocks
    /// (walked with an explicit stack; the schema bounds the nesting anyway).
    fn resolve_block_names(&self, file: FileId, kind: BlockKind, block: &ast::Block) {
        let mut stack = vec![(kind, block)];
        while let Some((kind, block)) = stack.pop() {
            for item in &block.items {
                let Some(sig) = schema::lookup(kind, &item.key.text) else {
                    continue;
                };
                for (arg, ty) in item.args.iter().zip(sig.args) {
                    match (&arg.kind, ty) {
                        (ast::ValueKind::Name(n), ArgType::Ref(k)) => {
                            self.lookup(Loc::new(file, arg.span), *k, n);
                        }
                        (ast::ValueKind::Block(b), ArgType::Ref(k)) => {
                            if let Some(base) = &b.base {
                                self.lookup(Loc::new(file, base.span), *k, &base.text);
                            }
                            stack.push((BlockKind::Def(*k), b))
                        }
                        (ast::ValueKind::Block(b), ArgType::Nested(k)) => stack.push((*k, b)),
                        _ => {}
                    }
                }
            }
        }
    }

    /// The base of `id`: a base with the definition's own name means the shadowed definition.
    /// With nothing to shadow (`gpu g : g < ... >` and no other `g` in scope), the definition
    /// inherits from itself: E0105, a cycle of length 1.
    fn lookup_base(&self, id: DefId, def: &ast::Def, base: &ast::Ident) -> Option<DefId> {
        let at = Loc::new(id.file, base.span);
        let own = def.name.as_ref().is_some_and(|n| n.text == base.text);
        if own && self.find(id.file, def.kind, &base.text, true) == Lookup::Missing {
            self.report_cycle(&[id]);
            return None;
        }
        self.lookup_inner(at, def.kind, &base.text, own)
    }

    /// Whether `e` is a second definition of a name in its file (E0106 reports it).
    pub fn is_duplicate(&self, e: &DefEntry) -> bool {
        let Some(index) = self.indexes.get(&e.id.file) else {
            return false;
        };
        e.name
            .as_ref()
            .is_some_and(|n| index.by_name.get(&(e.kind, n.clone())) != Some(&e.id))
    }

    /// W0004 for every named definition of the root (not a scenario) that nothing
    /// references. Nothing is reported when the root has no scenario (a library, meant to be
    /// `use`d), nor for the definitions of the files it uses: a library is shared, and one
    /// run using part of it is not a reason to warn. A duplicate (E0106) is not warned about.
    pub fn report_unused(&self) {
        if self.scenario_names().is_empty() {
            return;
        }
        let mut referenced: BTreeSet<DefId> =
            self.references.borrow().iter().map(|r| r.target).collect();
        referenced.extend(self.suggested.borrow().iter().copied());
        let mut implicit = BTreeSet::new();
        if let Some(ScenarioSource::Implicit {
            model,
            cluster,
            plan,
            ..
        }) = self.implicit_scenario()
        {
            implicit.extend([model, cluster, plan]);
        }
        for file in [self.root] {
            let Some(index) = self.indexes.get(&file) else {
                continue;
            };
            for e in &index.defs {
                let duplicate = e
                    .name
                    .as_ref()
                    .is_some_and(|n| index.by_name.get(&(e.kind, n.clone())) != Some(&e.id));
                if e.kind == DefKind::Scenario
                    || duplicate
                    || referenced.contains(&e.id)
                    || implicit.contains(&e.id)
                {
                    continue;
                }
                self.problem(ResolveProblem::Unused {
                    kind: e.kind,
                    name: e.name.clone(),
                    loc: e.name_loc,
                });
            }
        }
    }

    /// Every diagnostic reported so far, sorted by file and position, each once.
    pub fn take_diagnostics(&self) -> Vec<Diagnostic> {
        let mut d = std::mem::take(&mut *self.diagnostics.borrow_mut());
        sort_diagnostics(&mut d);
        d
    }
}

/// Sorts by file, position and code, and keeps one diagnostic per problem
/// ([`Diagnostic::is_same_problem`]: the same code at the same place and the same typed problem):
/// an item inherited by two definitions is checked twice but reported once. The message orders
/// diagnostics of one code at one place (a reading order users see), and decides nothing: one
/// problem renders one message, so its copies sort next to each other. The sort is stable, so
/// the first reporter's copy is the one kept.
pub fn sort_diagnostics(d: &mut Vec<Diagnostic>) {
    d.sort_by(|a, b| (a.primary.loc, a.code, &a.message).cmp(&(b.primary.loc, b.code, &b.message)));
    d.dedup_by(|b, a| a.is_same_problem(b));
}

/// The outcome of a lookup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    Found(DefId),
    /// Two directly used files define the name (the first is taken after reporting).
    Ambiguous(DefId, DefId),
    Missing,
}

/// A span covering nothing at the start of a file, for diagnostics about a whole file.
pub(crate) fn file_start(file: FileId) -> Loc {
    Loc::new(file, Span::new(0, 0))
}

#[cfg(test)]
mod tests;
