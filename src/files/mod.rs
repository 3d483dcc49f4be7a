//! The one reader and the one writer of every file venusc touches, and the project root a
//! `use` must stay inside. The CLI and the language server call these; nothing else reads or
//! writes a file.
//!
//! Reading ([`read`]): the path must be a regular file after following links (a FIFO would
//! block forever, `/dev/zero` never ends, `/dev/stdin` is the language server's own input), it
//! is opened without blocking, and at most its [`Input`] cap plus one byte is read, whatever
//! the metadata says (`/proc` files report size 0). Writing ([`AtomicFile`], [`write_atomic`]):
//! a temporary file in the target's directory, written, flushed to disk, given the old file's
//! permissions and renamed over it, so a full disk or a kill never leaves half a file; an
//! output that is an input of the same command is refused (E0705). Walking ([`venus_files`]):
//! each directory is visited once by its canonical path, so a symlink loop ends, and each file
//! is listed once.
//!
//! Every failure is a [`Failure`] with a code (E07xx) and a computed help.

use std::collections::HashSet;
use std::fmt;
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Component, Path, PathBuf};

use crate::diag::Code;
use crate::session::UseError;

#[cfg(test)]
mod tests;

/// What a file is read as; each kind has its own size cap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// A `.venus` file (named or `use`d).
    Venus,
    /// A VenusSim `llm-sim-config.json`, `system.json` or `network.yml`.
    Config,
    /// The published-runs table of `validate`.
    Table,
    /// A `sweep --format json` shard output for `--merge`.
    Shard,
    /// One file of a `sim --trace` directory (`*.et`, `comm-group.json`, mapping files).
    Trace,
}

const MIB: u64 = 1 << 20;

impl Input {
    /// The largest file of this kind read, in bytes.
    pub fn cap(self) -> u64 {
        match self {
            // The largest shipped `.venus` file is under 30 KB and a generated sweep of 10^5
            // plans a few MB; spans are `u32` and decoding holds two copies, so 16 MiB keeps
            // a hostile file far from the limits while no real file comes near it.
            Input::Venus => 16 * MIB,
            // VenusSim's configs are a few KB; a table of every published run is under 1 MB.
            Input::Config | Input::Table => 16 * MIB,
            // A shard lists at most its candidates, ~300 bytes each: 10^6 of them fit.
            Input::Shard => 512 * MIB,
            // A rank's simplified trace is ~60 bytes a node; 2^24 nodes (a 100k-layer model at
            // tp 8) is ~1 GB. The reader holds the file, so this is also its memory bound.
            Input::Trace => 2048 * MIB,
        }
    }

    fn what(self) -> &'static str {
        match self {
            Input::Venus => "`.venus` files",
            Input::Config => "VenusSim config files",
            Input::Table => "published-runs tables",
            Input::Shard => "shard outputs",
            Input::Trace => "trace files",
        }
    }
}

/// A file operation that failed: its code, a one-line message and the fix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    pub code: Code,
    pub message: String,
    pub help: String,
}

impl fmt::Display for Failure {
    /// `error[E0701]: message` and `  = help: ...` on the next line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "error[{}]: {}\n  = help: {}",
            self.code, self.message, self.help
        )
    }
}

fn shown(path: &Path) -> String {
    crate::diag::escape_excerpt(&path.display().to_string(), 200)
}

/// A file kind in words (`a FIFO`), for a path that is not a regular file.
fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    "not a regular file"
}

/// Why a path was not read, before it becomes a [`Failure`] or a `use`'s [`UseError`].
#[derive(Debug)]
enum Refusal {
    Io(std::io::Error),
    NotRegular(&'static str),
    TooLarge { cap: u64, what: &'static str },
}

impl Refusal {
    fn reason(&self) -> String {
        match self {
            Refusal::Io(e) => e.to_string(),
            Refusal::NotRegular("a directory") => "it is a directory".to_string(),
            Refusal::NotRegular(kind) => format!("it is {kind}, not a regular file"),
            Refusal::TooLarge { cap, what } => {
                format!("it is larger than {} MiB, the cap for {what}", cap / MIB)
            }
        }
    }

    fn help(&self, path: &Path) -> Option<String> {
        match self {
            Refusal::Io(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Refusal::Io(_) => Some(format!(
                "check the permissions of `{}` and that it is readable",
                shown(path)
            )),
            Refusal::NotRegular(_) => Some(format!(
                "name a regular file: `{}` can only be read as a stream, which venusc never \
                 does (it could block or never end)",
                shown(path)
            )),
            Refusal::TooLarge { cap, .. } => Some(format!(
                "split `{}` into files under {} MiB",
                shown(path),
                cap / MIB
            )),
        }
    }

    fn code(&self) -> Code {
        match self {
            Refusal::Io(_) => Code::E0703,
            Refusal::NotRegular(_) => Code::E0701,
            Refusal::TooLarge { .. } => Code::E0702,
        }
    }
}

/// Opens `path` for reading when it is a regular file, without blocking on a FIFO swapped
/// in between the check and the open.
fn open_regular(path: &Path) -> Result<File, Refusal> {
    let meta = std::fs::metadata(path).map_err(Refusal::Io)?;
    if !meta.is_file() {
        return Err(Refusal::NotRegular(kind_of(&meta)));
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(O_NONBLOCK);
    }
    let file = options.open(path).map_err(Refusal::Io)?;
    let meta = file.metadata().map_err(Refusal::Io)?;
    if !meta.is_file() {
        return Err(Refusal::NotRegular(kind_of(&meta)));
    }
    Ok(file)
}

/// `O_NONBLOCK` (no libc dependency for one constant): open(2) on a FIFO then returns at once
/// instead of waiting for a writer; reads of a regular file ignore it.
#[cfg(all(
    unix,
    any(target_os = "macos", target_os = "ios", target_os = "freebsd")
))]
const O_NONBLOCK: i32 = 0x0004;
#[cfg(all(
    unix,
    not(any(target_os = "macos", target_os = "ios", target_os = "freebsd"))
))]
const O_NONBLOCK: i32 = 0o4000;

fn read_capped(path: &Path, kind: Input) -> Result<Vec<u8>, Refusal> {
    let cap = kind.cap();
    let too_large = Refusal::TooLarge {
        cap,
        what: kind.what(),
    };
    let file = open_regular(path)?;
    if file.metadata().is_ok_and(|m| m.len() > cap) {
        return Err(too_large);
    }
    let mut bytes = Vec::new();
    // `take`: the size in the metadata is not trusted (`/proc` files say 0, a file may grow).
    file.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(Refusal::Io)?;
    if bytes.len() as u64 > cap {
        return Err(too_large);
    }
    Ok(bytes)
}

/// Reads a file named on the command line (or found in a directory named there).
pub fn read(path: &Path, kind: Input) -> Result<Vec<u8>, Failure> {
    read_capped(path, kind).map_err(|r| Failure {
        code: r.code(),
        message: format!("cannot read `{}`: {}", shown(path), r.reason()),
        help: r.help(path).unwrap_or_else(|| {
            format!(
                "check the path `{}`: it is relative to the current directory",
                shown(path)
            )
        }),
    })
}

/// [`read`] for text: invalid UTF-8 is E0703 too.
pub fn read_text(path: &Path, kind: Input) -> Result<String, Failure> {
    let bytes = read(path, kind)?;
    String::from_utf8(bytes).map_err(|e| Failure {
        code: Code::E0703,
        message: format!(
            "cannot read `{}`: byte {} is not UTF-8",
            shown(path),
            e.utf8_error().valid_up_to()
        ),
        help: format!("save `{}` as UTF-8 text", shown(path)),
    })
}

/// The directory every `use` must resolve into, unless the user allowed any path.
#[derive(Clone, Debug)]
pub struct Root {
    /// Canonical (symlinks resolved), so a link cannot smuggle a path out.
    dir: PathBuf,
    /// As the user wrote or implied it, for messages.
    shown: String,
    allow_outside: bool,
}

impl Root {
    /// `--root DIR` when given, else the directory of the one named file (or the directory
    /// named), else the deepest directory holding every named path.
    pub fn for_inputs(
        inputs: &[PathBuf],
        explicit: Option<&Path>,
        allow_outside: bool,
    ) -> Result<Root, Failure> {
        if let Some(dir) = explicit {
            return Root::at(dir, allow_outside);
        }
        let dirs: Vec<PathBuf> = inputs
            .iter()
            .map(|p| {
                if p.is_dir() {
                    p.clone()
                } else {
                    match p.parent() {
                        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
                        _ => PathBuf::from("."),
                    }
                }
            })
            .collect();
        match dirs.as_slice() {
            [] => Root::at(Path::new("."), allow_outside),
            [one] => Root::at(one, allow_outside),
            many => {
                let canon: Vec<PathBuf> = many.iter().map(|d| absolute(d)).collect();
                let mut common = canon[0].clone();
                for d in &canon[1..] {
                    while !d.starts_with(&common) {
                        if !common.pop() {
                            break;
                        }
                    }
                }
                Root::at(&common, allow_outside)
            }
        }
    }

    /// The root at `dir` (which must exist).
    pub fn at(dir: &Path, allow_outside: bool) -> Result<Root, Failure> {
        let canon = std::fs::canonicalize(dir).map_err(|e| Failure {
            code: Code::E0709,
            message: format!("cannot use `{}` as the project root: {e}", shown(dir)),
            help: "give `--root` an existing directory that holds the files and what they use"
                .to_string(),
        })?;
        Ok(Root {
            dir: canon,
            shown: dir.display().to_string(),
            allow_outside,
        })
    }

    /// Whether `path` (a `use` target, already joined to its file's directory) may be read:
    /// its canonical path, or for a missing file its absolute lexical path, is under the root.
    pub fn admits(&self, path: &Path) -> Result<(), UseError> {
        if self.allow_outside {
            return Ok(());
        }
        let target = std::fs::canonicalize(path).unwrap_or_else(|_| absolute(path));
        if target.starts_with(&self.dir) {
            return Ok(());
        }
        Err(UseError {
            code: Code::E0109,
            reason: format!(
                "`{}` resolves outside the project root `{}`",
                shown(path),
                self.shown
            ),
            help: Some(format!(
                "keep used files under `{}`, or name a root that holds both with `--root {}` \
                 (`--allow-outside-root` lifts the check)",
                self.shown,
                shown(&relative_to_cwd(&common_ancestor(&self.dir, &target)))
            )),
        })
    }

    /// The reader of `use`d files: inside the root, a regular `.venus` file under the cap.
    pub fn reader(&self) -> impl FnMut(&Path) -> Result<Vec<u8>, UseError> + '_ {
        move |path: &Path| {
            self.admits(path)?;
            read_capped(path, Input::Venus).map_err(|r| UseError {
                code: Code::E0107,
                reason: r.reason(),
                help: r.help(path),
            })
        }
    }
}

/// The deepest directory holding both (absolute) paths.
fn common_ancestor(a: &Path, b: &Path) -> PathBuf {
    let mut common = PathBuf::new();
    for (x, y) in a.components().zip(b.components()) {
        if x != y {
            break;
        }
        common.push(x);
    }
    common
}

/// `path` relative to the current directory when it is under it (`.` for the directory
/// itself), else as it is: what a user types after `--root`.
fn relative_to_cwd(path: &Path) -> PathBuf {
    let cwd = std::env::current_dir()
        .and_then(std::fs::canonicalize)
        .unwrap_or_default();
    match path.strip_prefix(&cwd) {
        Ok(rel) if rel.as_os_str().is_empty() => PathBuf::from("."),
        Ok(rel) => rel.to_path_buf(),
        Err(_) => path.to_path_buf(),
    }
}

/// `path` made absolute against the current directory and normalised lexically (for paths
/// that do not exist, so cannot be canonicalised).
fn absolute(path: &Path) -> PathBuf {
    if let Ok(c) = std::fs::canonicalize(path) {
        return c;
    }
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    // The longest existing prefix canonicalised, so `/link/missing.venus` is judged where
    // the link points.
    let mut existing = out.clone();
    let mut rest = Vec::new();
    while !existing.exists() {
        match existing.file_name() {
            Some(name) => rest.push(name.to_os_string()),
            None => return out,
        }
        if !existing.pop() {
            return out;
        }
    }
    let mut canon = std::fs::canonicalize(&existing).unwrap_or(existing);
    for name in rest.iter().rev() {
        canon.push(name);
    }
    canon
}

/// The `.venus` files of the named paths: a directory is searched recursively (each
/// directory once, by canonical path: a symlink loop ends), files sorted per directory
/// argument, and every file listed once even when reached by two paths.
pub fn venus_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, Failure> {
    let mut out = Vec::new();
    let mut dirs = HashSet::new();
    let mut files = HashSet::new();
    for p in paths {
        let mut found = Vec::new();
        if p.is_dir() {
            walk(p, &mut dirs, &mut found)?;
            found.sort();
        } else {
            found.push(p.clone());
        }
        for f in found {
            if files.insert(std::fs::canonicalize(&f).unwrap_or_else(|_| f.clone())) {
                out.push(f);
            }
        }
    }
    Ok(out)
}

fn walk(dir: &Path, seen: &mut HashSet<PathBuf>, out: &mut Vec<PathBuf>) -> Result<(), Failure> {
    let cannot = |e: std::io::Error| Failure {
        code: Code::E0709,
        message: format!("cannot read directory `{}`: {e}", shown(dir)),
        help: format!("check the permissions of `{}`", shown(dir)),
    };
    let canon = std::fs::canonicalize(dir).map_err(cannot)?;
    if !seen.insert(canon) {
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(cannot)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            walk(&path, seen, out)?;
        } else if path.extension().is_some_and(|e| e == "venus") {
            out.push(path);
        }
    }
    Ok(())
}

/// Refuses `output` when it is one of `inputs` (same file after following links): writing
/// it would destroy what the command read.
pub fn refuse_input(output: &Path, inputs: &[&Path]) -> Result<(), Failure> {
    let Ok(out) = std::fs::canonicalize(output) else {
        return Ok(());
    };
    for input in inputs {
        if std::fs::canonicalize(input).is_ok_and(|i| i == out) {
            return Err(Failure {
                code: Code::E0705,
                message: format!(
                    "refusing to write `{}`: it is an input of this command",
                    shown(output)
                ),
                help: format!(
                    "write to another file, e.g. `{}`",
                    shown(&sibling(output, "out"))
                ),
            });
        }
    }
    Ok(())
}

/// `dir/name.TAG.ext` beside `path`, for helps.
fn sibling(path: &Path, tag: &str) -> PathBuf {
    let stem = path
        .file_stem()
        .map_or("out".into(), |s| s.to_string_lossy());
    let name = match path.extension() {
        Some(ext) => format!("{stem}.{tag}.{}", ext.to_string_lossy()),
        None => format!("{stem}.{tag}"),
    };
    path.with_file_name(name)
}

/// A file being written: a temporary beside the target until [`AtomicFile::commit`] renames
/// it over the target. Dropped without a commit, the temporary is removed and the target is
/// untouched.
pub struct AtomicFile {
    target: PathBuf,
    temp: PathBuf,
    out: Option<BufWriter<File>>,
}

impl AtomicFile {
    pub fn create(target: &Path) -> Result<AtomicFile, Failure> {
        // Through a link, the file the link points at is replaced, not the link.
        let target = std::fs::canonicalize(target).unwrap_or_else(|_| target.to_path_buf());
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let name = target
            .file_name()
            .map_or("out".into(), |n| n.to_string_lossy());
        let mut attempt = 0u32;
        loop {
            let temp = dir.join(format!(
                ".{name}.{}-{attempt}.venusc-tmp",
                std::process::id()
            ));
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&temp)
            {
                Ok(f) => {
                    return Ok(AtomicFile {
                        target,
                        temp,
                        out: Some(BufWriter::new(f)),
                    })
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 100 => {
                    attempt += 1;
                }
                Err(e) => return Err(write_failure(&target, &e)),
            }
        }
    }

    /// Flushes, syncs and renames the temporary over the target (keeping the target's
    /// permissions when it existed).
    pub fn commit(mut self) -> Result<(), Failure> {
        let fail = |e: std::io::Error, t: &Path| write_failure(t, &e);
        let Some(out) = self.out.take() else {
            return Err(fail(
                std::io::Error::other("already committed"),
                &self.target,
            ));
        };
        let file = out
            .into_inner()
            .map_err(|e| fail(e.into_error(), &self.target))?;
        if let Ok(meta) = std::fs::metadata(&self.target) {
            file.set_permissions(meta.permissions())
                .map_err(|e| fail(e, &self.target))?;
        }
        file.sync_all().map_err(|e| fail(e, &self.target))?;
        drop(file);
        std::fs::rename(&self.temp, &self.target).map_err(|e| fail(e, &self.target))?;
        self.temp = PathBuf::new();
        Ok(())
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if !self.temp.as_os_str().is_empty() {
            self.out = None;
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

/// The contents go to the temporary file.
impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match &mut self.out {
            Some(w) => w.write(buf),
            None => Err(std::io::Error::other("file already committed")),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.out {
            Some(w) => w.flush(),
            None => Ok(()),
        }
    }
}

fn write_failure(target: &Path, e: &std::io::Error) -> Failure {
    Failure {
        code: Code::E0704,
        message: format!("cannot write `{}`: {e}", shown(target)),
        help: format!(
            "free space or fix the permissions in `{}`; the old file, if any, is unchanged",
            shown(target.parent().unwrap_or(Path::new(".")))
        ),
    }
}

/// Writes `bytes` to `path` atomically (see [`AtomicFile`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    let mut file = AtomicFile::create(path)?;
    file.write_all(bytes).map_err(|e| write_failure(path, &e))?;
    file.commit()
}

/// The model name of an imported HuggingFace config or launch script: its directory's name when the file is a
/// `config.json` (`Llama-3.1-8B/config.json` → `llama_3_1_8b`), else the file's stem; lowercase,
/// other characters as `_`, never starting with a digit. Here because a `config.json`'s
/// name comes from its directory, which resolving the path reads.
pub fn model_name(path: &Path) -> String {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("model");
    let base = if stem == "config" {
        path.canonicalize()
            .ok()
            .and_then(|p| {
                p.parent()
                    .and_then(|d| d.file_name())
                    .and_then(|n| n.to_str().map(str::to_string))
            })
            .unwrap_or_else(|| "model".to_string())
    } else {
        stem.to_string()
    };
    let mut name: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    if !name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        name.insert(0, 'm');
    }
    name
}
