//! Every input through the one reader, every output through the one writer, end to end: the
//! reliability report's H2, H3, L3, L4, M5 and M6 reproducers on the binary, in scratch
//! directories (FIFOs made with `mkfifo`). Each run has a hang guard: a FIFO read would block
//! forever, `/dev/zero` would grow until killed.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("venusc-inputs-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
    fn path(&self, rel: &str) -> PathBuf {
        self.0.join(rel)
    }
    fn write(&self, rel: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        let p = self.path(rel);
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(&p, bytes).unwrap();
        p
    }
    fn fifo(&self, rel: &str) -> PathBuf {
        let p = self.path(rel);
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d).unwrap();
        }
        let ok = Command::new("mkfifo").arg(&p).status().unwrap().success();
        assert!(ok, "mkfifo {}", p.display());
        p
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct Out {
    exit: i32,
    stdout: String,
    stderr: String,
}

impl Out {
    fn all(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

/// Runs `venusc ARGS` in `dir` (stdout and stderr to files), failing on a hang or a signal.
fn venusc(dir: &Path, args: &[&str]) -> Out {
    let out = dir.join(".stdout");
    let err = dir.join(".stderr");
    let mut child = Command::new(env!("CARGO_BIN_EXE_venusc"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if let Some(spent) =
            super::guard::overdue(child.id(), start, super::guard::BLOCKED_WALL_LIMIT)
        {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`venusc {args:?}` still running after {spent}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let exit = status
        .code()
        .unwrap_or_else(|| panic!("`venusc {args:?}` died from a signal: {status}"));
    Out {
        exit,
        stdout: std::fs::read_to_string(&out).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err).unwrap_or_default(),
    }
}

/// The demo scenario, which checks clean.
fn demo() -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/venussim_demo.venus"),
    )
    .unwrap()
}

/// Lines of a passwd-like file, none of which may reach the output.
const SECRET: &str = "root:x:0:0:root:/root:/bin/bash\nsecond-line-secret:x:1:1::/:/bin/sh\nthird-line-secret:x:2:2::/:/bin/sh\n";

#[cfg(unix)]
#[test]
fn use_of_dev_zero_a_fifo_a_link_to_dev_zero_and_dev_stdin_is_e0107_at_once() {
    let s = Scratch::new("use-devices");
    s.fifo("f.venus");
    std::os::unix::fs::symlink("/dev/zero", s.path("zero_link.venus")).unwrap();
    for used in [
        "/dev/zero",
        "f.venus",
        "zero_link.venus",
        "/dev/stdin",
        "/dev/urandom",
    ] {
        s.write("p.venus", format!("use \"{used}\"\n{}", demo()));
        let started = Instant::now();
        let out = venusc(&s.0, &["check", "--allow-outside-root", "p.venus"]);
        assert_eq!(out.exit, 1, "{used}: {}", out.all());
        assert!(out.stdout.contains("error[E0107]"), "{used}: {}", out.all());
        assert!(
            out.stdout.contains("not a regular file"),
            "{used}: {}",
            out.stdout
        );
        assert!(started.elapsed() < Duration::from_secs(30), "{used}");
    }
}

#[test]
fn a_used_file_over_sixteen_mib_is_e0107_too_large() {
    let s = Scratch::new("use-big");
    let big = std::fs::File::create(s.path("big.venus")).unwrap();
    big.set_len(1 << 30).unwrap(); // sparse: 1 GiB of NULs on disk for free
    s.write("p.venus", format!("use \"big.venus\"\n{}", demo()));
    let out = venusc(&s.0, &["check", "p.venus"]);
    assert_eq!(out.exit, 1, "{}", out.all());
    assert!(
        out.stdout
            .contains("cannot read `big.venus`: it is larger than 16 MiB"),
        "{}",
        out.stdout
    );
}

#[cfg(unix)]
#[test]
fn check_dir_with_a_fifo_reports_it_and_checks_the_other_files() {
    let s = Scratch::new("dir-fifo");
    s.fifo("d/b.venus");
    s.write("d/a.venus", demo());
    let out = venusc(&s.0, &["check", "d"]);
    assert_eq!(out.exit, 2, "{}", out.all());
    assert!(
        out.stderr
            .contains("error[E0701]: cannot read `d/b.venus`: it is a FIFO"),
        "{}",
        out.stderr
    );
    // The other file is still checked: the JSON counts it alone.
    let out = venusc(&s.0, &["check", "--format", "json", "d"]);
    assert_eq!(out.exit, 2, "{}", out.all());
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        (v["files"].as_u64(), v["errors"].as_u64()),
        (Some(1), Some(0)),
        "{v}"
    );
    let out = venusc(&s.0, &["fmt", "--check", "d"]);
    assert_eq!(out.exit, 2, "{}", out.all());
    assert!(out.stderr.contains("E0701"), "{}", out.stderr);
}

#[test]
fn use_outside_the_root_is_e0109_and_never_echoes_the_file() {
    let s = Scratch::new("root");
    s.write("secret/passwd", SECRET);
    s.write("proj/secret_link_target_inside.venus", SECRET);
    #[cfg(unix)]
    std::os::unix::fs::symlink(s.path("secret/passwd"), s.path("proj/link.venus")).unwrap();
    let mut uses = vec![
        "../secret/passwd",
        "/etc/passwd",
        "../../../../../../etc/passwd",
    ];
    if cfg!(unix) {
        uses.push("link.venus");
    }
    for used in uses {
        s.write("proj/p.venus", format!("use \"{used}\"\n{}", demo()));
        for format in ["human", "json", "github"] {
            let out = venusc(&s.path("proj"), &["check", "--format", format, "p.venus"]);
            assert_eq!(out.exit, 1, "{used} {format}: {}", out.all());
            assert!(
                out.all().contains("E0109"),
                "{used} {format}: {}",
                out.all()
            );
            assert!(
                !out.all().contains("root:x:0") && !out.all().contains("line-secret"),
                "{used} {format} echoes the file: {}",
                out.all()
            );
        }
    }
    // `--root` wide enough admits the file: it is then read, and as a used file that does not
    // parse it shows one escaped line, never the rest.
    s.write(
        "proj/p.venus",
        format!("use \"../secret/passwd\"\n{}", demo()),
    );
    for format in ["human", "json", "github"] {
        let out = venusc(
            &s.path("proj"),
            &["--root", "..", "check", "--format", format, "p.venus"],
        );
        assert_eq!(out.exit, 1, "{format}: {}", out.all());
        assert!(out.all().contains("E0107"), "{format}: {}", out.all());
        assert!(
            !out.all().contains("line-secret"),
            "{format}: {}",
            out.all()
        );
    }
}

#[test]
fn a_garbage_file_inside_the_root_shows_only_its_first_line_escaped_and_cut() {
    let s = Scratch::new("garbage");
    let first = format!("root:\u{1b}]0;pwned\u{7}:{}", "z".repeat(300));
    s.write("garbage.venus", format!("{first}\n{SECRET}"));
    s.write("p.venus", format!("use \"garbage.venus\"\n{}", demo()));
    for format in ["human", "json", "github"] {
        let out = venusc(&s.0, &["check", "--format", format, "p.venus"]);
        assert_eq!(out.exit, 1, "{format}: {}", out.all());
        let all = out.all();
        assert!(all.contains("E0107"), "{format}: {all}");
        assert!(!all.contains("line-secret"), "{format}: {all}");
        assert!(
            !all.contains('\u{1b}') && !all.contains('\u{7}'),
            "{format}: {all}"
        );
        assert!(!all.contains(&"z".repeat(100)), "{format}: {all}");
    }
    // Every format carries the first error and its one escaped, cut line.
    for format in ["human", "json", "github"] {
        let out = venusc(&s.0, &["check", "--format", format, "p.venus"]);
        assert!(
            out.stdout.contains("1 | root:\\u{1b}]0;pwned\\u{7}:zzz")
                || out
                    .stdout
                    .contains("1 | root:\\\\u{1b}]0;pwned\\\\u{7}:zzz"),
            "{format}: {}",
            out.stdout
        );
        assert!(
            out.stdout.contains("first error, at garbage.venus:1:"),
            "{format}: {}",
            out.stdout
        );
    }
}

#[cfg(unix)]
#[test]
fn check_and_fmt_of_a_dir_with_symlink_loops_see_each_file_once() {
    let s = Scratch::new("loops");
    s.write(
        "d/a.venus",
        std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/invalid/e0301_world_size.venus"),
        )
        .unwrap(),
    );
    std::os::unix::fs::symlink(".", s.path("d/self")).unwrap();
    std::os::unix::fs::symlink(".", s.path("d/other")).unwrap();
    let out = venusc(&s.0, &["check", "--format", "json", "d"]);
    assert_eq!(out.exit, 1, "{}", out.all());
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["files"], 1, "{}", out.stdout);
    let e0301 = v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "E0301")
        .count();
    assert_eq!(e0301, 1, "{}", out.stdout);
    let out = venusc(&s.0, &["fmt", "--check", "d"]);
    assert!(out.exit <= 1, "{}", out.all());
    assert!(out.stdout.lines().count() <= 1, "{}", out.stdout);
}

#[cfg(unix)]
#[test]
fn fmt_killed_by_the_file_size_limit_leaves_the_file_whole() {
    let s = Scratch::new("fmt-xfsz");
    // 301 plans, badly laid out: the formatted text is over 8 KiB.
    let mut text = String::new();
    for i in 0..301 {
        text.push_str(&format!(
            "plan p{i} <   tp 8    pp 1 micro_batch 1 global_batch 64 >\n"
        ));
    }
    let victim = s.write("victim.venus", &text);
    let bin = env!("CARGO_BIN_EXE_venusc");
    let status = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -f 8; exec '{bin}' fmt victim.venus"))
        .current_dir(&s.0)
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(!status.success(), "the write past the limit fails");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), text);
}

#[cfg(unix)]
#[test]
fn fmt_of_two_files_formats_the_second_when_the_first_fails() {
    let s = Scratch::new("fmt-two");
    s.fifo("a.venus");
    let b = s.write("b.venus", "plan p <   tp 8 >\n");
    let out = venusc(&s.0, &["fmt", "a.venus", "b.venus"]);
    assert_eq!(out.exit, 2, "{}", out.all());
    assert!(out.stderr.contains("E0701"), "{}", out.stderr);
    assert_eq!(std::fs::read_to_string(&b).unwrap(), "plan p < tp 8 >\n");
}

#[test]
fn outputs_that_are_inputs_are_refused_with_e0705() {
    let s = Scratch::new("refuse");
    let demo_text = demo();
    let file = s.write("demo.venus", &demo_text);
    let out = venusc(&s.0, &["sim", "demo.venus", "--timeline", "./demo.venus"]);
    assert_eq!(out.exit, 2, "{}", out.all());
    assert!(out.stderr.contains("error[E0705]"), "{}", out.stderr);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), demo_text);

    let sweep = demo_text.replace("micro_batch 1", "micro_batch [1 2]");
    let sw = s.write("sweep.venus", &sweep);
    let out = venusc(
        &s.0,
        &["sweep", "sweep.venus", "--emit-best", "sweep.venus"],
    );
    assert_eq!(out.exit, 2, "{}", out.all());
    assert!(out.stderr.contains("error[E0705]"), "{}", out.stderr);
    assert_eq!(std::fs::read_to_string(&sw).unwrap(), sweep);
}

#[test]
fn timeline_is_written_whole_and_its_directory_must_exist() {
    let s = Scratch::new("timeline");
    s.write("demo.venus", demo());
    let out = venusc(&s.0, &["sim", "demo.venus", "--timeline", "no/dir/t.json"]);
    assert_eq!(out.exit, 2, "{}", out.all());
    assert!(out.stderr.contains("error[E0704]"), "{}", out.stderr);
    let out = venusc(&s.0, &["sim", "demo.venus", "--timeline", "t.json"]);
    assert_eq!(out.exit, 0, "{}", out.all());
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(s.path("t.json")).unwrap()).unwrap();
    assert!(v.is_object() || v.is_array());
    // No temporary left beside it.
    let names: Vec<String> = std::fs::read_dir(&s.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("venusc-tmp"))
        .collect();
    assert!(names.is_empty(), "{names:?}");
}

#[cfg(unix)]
#[test]
fn import_validate_merge_and_trace_inputs_refuse_fifos_and_devices() {
    let s = Scratch::new("other-inputs");
    // import: the demo config with `system` pointing at /dev/zero.
    let config = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/golden/venussim_demo/input/llm-sim-config.json"),
    )
    .unwrap();
    let system = "/home/VenusSim/trace-generator/demo/llm-sim-example/sim-config/system.json";
    assert!(config.contains(system));
    s.write("cfg.json", config.replace(system, "/dev/zero"));
    let out = venusc(&s.0, &["import", "cfg.json"]);
    assert!(out.exit == 1 || out.exit == 2, "{}", out.all());
    assert!(out.stderr.contains("not a regular file"), "{}", out.stderr);
    // validate and sweep --merge on a FIFO.
    s.fifo("table.tsv");
    let out = venusc(&s.0, &["validate", "table.tsv"]);
    assert_eq!(out.exit, 2, "{}", out.all());
    assert!(out.stderr.contains("error[E0701]"), "{}", out.stderr);
    let out = venusc(&s.0, &["sweep", "--merge", "table.tsv"]);
    assert_eq!(out.exit, 2, "{}", out.all());
    assert!(out.stderr.contains("error[E0701]"), "{}", out.stderr);
    // sim --trace: `../sim-config/comm-group.json` a FIFO, no comm-group.json in DIR.
    s.write("demo.venus", demo());
    let traces = venusc(
        &s.0,
        &[
            "compile",
            "demo.venus",
            "--emit",
            "simplified-trace",
            "-o",
            "t/traces",
        ],
    );
    assert_eq!(traces.exit, 0, "{}", traces.all());
    let group = s.path("t/traces/comm-group.json");
    if group.exists() {
        std::fs::remove_file(&group).unwrap();
    }
    std::fs::create_dir_all(s.path("t/sim-config")).unwrap();
    s.fifo("t/sim-config/comm-group.json");
    let out = venusc(&s.0, &["sim", "demo.venus", "--trace", "t/traces"]);
    assert_eq!(out.exit, 1, "{}", out.all());
    assert!(out.stderr.contains("not a regular file"), "{}", out.stderr);
}

#[test]
fn trace_errors_cut_and_escape_the_token() {
    let s = Scratch::new("trace-token");
    s.write("demo.venus", demo());
    let out = venusc(
        &s.0,
        &[
            "compile",
            "demo.venus",
            "--emit",
            "simplified-trace",
            "-o",
            "t",
        ],
    );
    assert_eq!(out.exit, 0, "{}", out.all());
    let et = std::fs::read_dir(s.path("t"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "et"))
        .unwrap();
    let token = format!("\u{1b}[31m\u{1b}]0;pwned\u{7}{}", "9".repeat(1_000_000));
    std::fs::write(&et, format!("{token}\n")).unwrap();
    let out = venusc(&s.0, &["sim", "demo.venus", "--trace", "t"]);
    assert_eq!(out.exit, 1, "{:.2000}", out.all());
    assert!(out.stderr.contains("error[E0706]"), "{:.2000}", out.stderr);
    assert!(
        out.stderr.len() < 2000,
        "{} bytes of stderr",
        out.stderr.len()
    );
    assert!(!out.stderr.contains('\u{1b}'), "{:.2000}", out.stderr);
    assert!(out.stderr.contains("\\u{1b}[31m"), "{:.2000}", out.stderr);
}

#[test]
fn emit_scenarios_never_writes_outside_its_directory() {
    let s = Scratch::new("emit-scenarios");
    let table = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/data/published-runs.tsv"),
    )
    .unwrap();
    let mut lines = table.lines();
    let header = lines.next().unwrap();
    let row = lines.find(|l| !l.trim().is_empty()).unwrap();
    let (id, rest) = row.split_once('\t').unwrap();
    let mut hostile = format!("{header}\n");
    for bad in [
        "../../escaped_dotdot",
        "/tmp/venusc-absolute-id",
        "a/b",
        id,
        id,
    ] {
        hostile.push_str(&format!("{bad}\t{rest}\n"));
    }
    s.write("runs.tsv", &hostile);
    std::fs::create_dir_all(s.path("x/y")).unwrap();
    let out = venusc(
        &s.path("x/y"),
        &["validate", "../../runs.tsv", "--emit-scenarios", "out"],
    );
    assert_eq!(out.exit, 1, "{}", out.all());
    assert_eq!(
        out.stderr.matches("error[E0708]").count(),
        4,
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("used by an earlier row"),
        "{}",
        out.stderr
    );
    assert!(!s.path("escaped_dotdot.venus").exists());
    assert!(!Path::new("/tmp/venusc-absolute-id.venus").exists());
    let written: Vec<_> = std::fs::read_dir(s.path("x/y/out"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(written, [format!("{id}.venus")]);
}

mod properties {
    //! Property tests of the entry points this file covers: the formatter on mutated shipped
    //! files and random bytes (never panics; idempotent whenever it formats), and the reader
    //! on random file kinds (always a coded answer, at once).

    use std::path::Path;

    use proptest::prelude::*;

    use super::super::hostile::{apply, examples, mutation};

    /// The formatter on `text`: when it formats, formatting the output again changes nothing.
    fn fmt_fixed_point(text: &str) -> Result<(), TestCaseError> {
        if let Ok(once) = venusc::fmt::format(text) {
            let twice = venusc::fmt::format(&once);
            prop_assert_eq!(twice.as_ref(), Ok(&once), "input:\n{}", text);
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

        #[test]
        fn fmt_of_a_mutated_shipped_file_never_panics_and_is_idempotent(
            pick in any::<prop::sample::Index>(),
            edits in prop::collection::vec(mutation(), 1..6),
        ) {
            let files = examples();
            let (_, original) = &files[pick.index(files.len())];
            let mut bytes = original.clone();
            for m in &edits {
                apply(&mut bytes, m);
            }
            let (text, _) = venusc::syntax::decode(&bytes, venusc::diag::FileId(0));
            fmt_fixed_point(&text)?;
        }

        #[test]
        fn fmt_of_random_bytes_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
            let (text, _) = venusc::syntax::decode(&bytes, venusc::diag::FileId(0));
            fmt_fixed_point(&text)?;
        }
    }

    /// A file kind to read, made in a scratch directory.
    #[derive(Clone, Debug)]
    enum Kind {
        Regular(u64),
        AtCap(i8),
        Fifo,
        Dir,
        Missing,
        LinkTo(Box<Kind>),
        DevNull,
        DevZero,
    }

    fn kind() -> impl Strategy<Value = Kind> {
        let leaf = prop_oneof![
            (0u64..4096).prop_map(Kind::Regular),
            (-1i8..=1).prop_map(Kind::AtCap),
            Just(Kind::Fifo),
            Just(Kind::Dir),
            Just(Kind::Missing),
            Just(Kind::DevNull),
            Just(Kind::DevZero),
        ];
        leaf.prop_recursive(2, 4, 1, |inner| {
            inner.prop_map(|k| Kind::LinkTo(Box::new(k)))
        })
    }

    /// Makes `kind` at `path`; the code the reader must answer with (`None`: it reads it).
    fn make(kind: &Kind, path: &Path) -> Option<venusc::diag::Code> {
        use venusc::diag::Code;
        let cap = venusc::files::Input::Venus.cap();
        match kind {
            Kind::Regular(n) => {
                std::fs::File::create(path).unwrap().set_len(*n).unwrap();
                None
            }
            Kind::AtCap(d) => {
                let len = cap.saturating_add_signed(i64::from(*d));
                std::fs::File::create(path).unwrap().set_len(len).unwrap();
                (len > cap).then_some(Code::E0702)
            }
            Kind::Fifo => {
                let ok = std::process::Command::new("mkfifo")
                    .arg(path)
                    .status()
                    .unwrap();
                assert!(ok.success());
                Some(Code::E0701)
            }
            Kind::Dir => {
                std::fs::create_dir(path).unwrap();
                Some(Code::E0701)
            }
            Kind::Missing => Some(Code::E0703),
            Kind::DevNull | Kind::DevZero => {
                let dev = if matches!(kind, Kind::DevNull) {
                    "/dev/null"
                } else {
                    "/dev/zero"
                };
                std::os::unix::fs::symlink(dev, path).unwrap();
                Some(Code::E0701)
            }
            Kind::LinkTo(inner) => {
                let target = std::path::PathBuf::from(format!("{}.target", path.display()));
                let code = make(inner, &target);
                std::os::unix::fs::symlink(&target, path).unwrap();
                code
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        #[cfg(target_os = "linux")]
        #[test]
        fn the_reader_answers_every_file_kind_at_once_with_its_code(k in kind()) {
            let dir = super::Scratch::new("reader-prop");
            let path = dir.path("input.venus");
            let expected = make(&k, &path);
            let started = std::time::Instant::now();
            let got = venusc::files::read(&path, venusc::files::Input::Venus);
            prop_assert!(started.elapsed() < std::time::Duration::from_secs(10));
            prop_assert_eq!(got.as_ref().err().map(|f| f.code), expected, "{:?}", k);
        }
    }
}
