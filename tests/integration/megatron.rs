//! `venusc import megatron` and `compile --emit megatron`: golden files (tests/golden/megatron:
//! each `X.sh` with the `.venus` it imports to, the diagnostics of the import and of checking
//! its output, and the flags emitted back), the round trip on every shipped example, and the
//! command line end to end. To accept a deliberate change: `UPDATE_GOLDEN=1 cargo test --test
//! integration megatron` and review the diff.

use std::path::{Path, PathBuf};
use std::process::Command;

use venusc::diag::render::{self, SourceFiles};
use venusc::diag::{Code, FileId};
use venusc::emit::{emit_megatron, import_megatron, MegatronOptions};
use venusc::plan::Scenario;

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/megatron")
}

fn check_golden(name: &str, text: &str) {
    let path = golden_dir().join(name);
    if std::env::var("UPDATE_GOLDEN").is_ok_and(|v| v == "1") {
        std::fs::write(&path, text).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "missing golden {} ({e}); run with UPDATE_GOLDEN=1",
            path.display()
        )
    });
    assert_eq!(
        want,
        text,
        "{} differs; run with UPDATE_GOLDEN=1 and review the diff",
        path.display()
    );
}

fn options(name: &str, cluster: Option<&str>, gpus: Option<u64>) -> MegatronOptions {
    MegatronOptions {
        file: FileId(0),
        name: name.to_string(),
        source: format!("{name}.sh"),
        cluster: cluster.map(str::to_string),
        gpus,
    }
}

/// The diagnostics and scenarios of checking `text` (which `use`s nothing).
fn check(name: &str, text: &str) -> (Vec<venusc::diag::Diagnostic>, SourceFiles, Vec<Scenario>) {
    let mut session = venusc::Session::new();
    let root = session.load(Path::new(name), text.as_bytes(), &mut |p: &Path| {
        Err(format!("no such file `{}`", p.display()).into())
    });
    let checked = session.check(root);
    (
        checked.diagnostics.clone(),
        session.source_files(),
        checked.scenarios.clone(),
    )
}

/// The text after the first comment line (which names the source).
fn body(venus: &str) -> &str {
    venus.split_once("\n# megatron").map_or(venus, |(_, b)| b)
}

/// The flag lines (no comments) of an emitted text.
fn flag_lines(flags: &str) -> Vec<&str> {
    flags.lines().filter(|l| !l.starts_with('#')).collect()
}

struct Case {
    file: &'static str,
    cluster: Option<&'static str>,
    gpus: Option<u64>,
    /// The codes of the import, then of checking what it wrote.
    import_codes: &'static [Code],
    check_codes: &'static [Code],
}

const CASES: &[Case] = &[
    // Every flag maps (the `--account-for-*` flags split 126 + 2 over 8 × 8 virtual stages);
    // it checks without errors (its stage 1 fills 99 % of an H100) and simulates.
    Case {
        file: "llama31_405b_mlperf",
        cluster: Some("dgx_h100"),
        gpus: Some(1024),
        import_codes: &[],
        check_codes: &[],
    },
    // The layout `Et|(tt|)*30L` splits 61 layers over 8 × 4 virtual stages: it checks without
    // errors and simulates.
    Case {
        file: "deepseek_v3_gb200",
        cluster: Some("gb200_nvl72"),
        gpus: Some(256),
        import_codes: &[Code::W0012],
        check_codes: &[],
    },
    Case {
        file: "torchrun_llama3_8b",
        cluster: Some("dgx_h100"),
        gpus: None,
        import_codes: &[Code::W0012],
        check_codes: &[],
    },
    Case {
        file: "typo",
        cluster: None,
        gpus: None,
        import_codes: &[Code::E0608],
        check_codes: &[],
    },
    Case {
        file: "unmodelled",
        cluster: Some("dgx_h100"),
        gpus: Some(16),
        import_codes: &[Code::W0012],
        check_codes: &[],
    },
];

#[test]
fn golden_scripts_import_to_their_venus_files_diagnostics_and_flags() {
    for case in CASES {
        let script =
            std::fs::read_to_string(golden_dir().join(format!("{}.sh", case.file))).unwrap();
        let opts = options(case.file, case.cluster, case.gpus);
        let mut sources = SourceFiles::new();
        sources.add(FileId(0), format!("{}.sh", case.file), script.clone());
        let (diags, imported) = match import_megatron(&script, &opts) {
            Ok(i) => (i.warnings.clone(), Some(i)),
            Err(e) => (e, None),
        };
        let codes: Vec<Code> = diags.iter().map(|d| d.code).collect();
        assert_eq!(codes, case.import_codes, "{}", case.file);
        check_golden(
            &format!("{}.stderr", case.file),
            &render::human(&diags, &sources, false),
        );
        let Some(imported) = imported else { continue };
        check_golden(&format!("{}.venus", case.file), &imported.venus);
        let (check_diags, check_sources, scenarios) =
            check(&format!("{}.venus", case.file), &imported.venus);
        let codes: Vec<Code> = check_diags
            .iter()
            .filter(|d| d.is_error())
            .map(|d| d.code)
            .collect();
        assert_eq!(
            codes,
            case.check_codes,
            "{}:\n{}",
            case.file,
            render::human(&check_diags, &check_sources, false)
        );
        if !case.check_codes.is_empty() {
            continue;
        }
        let sc = &scenarios[0];
        venusc::simulate::simulate(sc, &Default::default())
            .expect("the imported scenario simulates");
        let flags = emit_megatron(sc);
        check_golden(&format!("{}.flags", case.file), &flags);
        // Every flag the import mapped comes back with its value (`--flag value` as a pair).
        let back = flag_lines(&flags).join(" ");
        for (flag, value) in [
            ("--tensor-model-parallel-size", ""),
            ("--micro-batch-size", "1"),
            ("--bf16", ""),
        ] {
            assert!(
                back.contains(&format!("{flag} {value}").trim().to_string()),
                "{}: {flag}",
                case.file
            );
        }
        // import ∘ emit is the identity on the emitted flags, and emit ∘ import on the file it
        // gives (which states every count the flags write, defaults included).
        let opts = options(case.file, case.cluster, Some(sc.world));
        let again = import_megatron(&flags, &opts).unwrap();
        let (_, _, rescenarios) = check("again.venus", &again.venus);
        let flags2 = emit_megatron(&rescenarios[0]);
        assert_eq!(flag_lines(&flags2), flag_lines(&flags), "{}", case.file);
        let third = import_megatron(&flags2, &opts).unwrap();
        assert_eq!(
            body(&third.venus),
            body(&again.venus),
            "{}: re-import differs",
            case.file
        );
    }
}

#[test]
fn the_published_rows_map_every_modelled_flag_and_list_the_rest() {
    let script = std::fs::read_to_string(golden_dir().join("deepseek_v3_gb200.sh")).unwrap();
    let i = import_megatron(&script, &options("dsv3", Some("gb200_nvl72"), Some(256))).unwrap();
    for line in [
        "  experts 256\n",
        "  topk 8\n",
        "  moe_ffn 2048\n",
        "  shared_expert_ffn 2048\n",
        "  first_k_dense 3\n",
        "  q_lora_rank 1536\n",
        "  kv_lora_rank 512\n",
        "  qk_nope_head_dim 128\n",
        "  qk_rope_head_dim 64\n",
        "  v_head_dim 128\n",
        "  ep 32\n",
        "  recompute selective\n",
        "  precision fp8\n",
        "  overlap_grad_reduce\n",
        "  overlap_param_gather\n",
        "  pipeline_layout \"Et|(tt|)*30L\"\n",
        "  exp_avg_dtype bf16\n",
        "  exp_avg_sq_dtype bf16\n",
        "  recompute_modules mlp moe_act\n",
        "  fp8_param_gather\n",
        "  moe_dispatcher flex hybridep\n",
        "  cuda_graphs transformer_engine attn moe_router moe_preprocess\n",
        "  routed_groups 8\n",
        "  topk_groups 4\n",
        "  moe_permute_fusion\n",
        "  moe_router_fusion\n",
        "  fp8_recipe mxfp8\n",
    ] {
        assert!(i.venus.contains(line), "{line:?} missing:\n{}", i.venus);
    }
    let notes = &i.warnings[0].notes;
    for flag in ["--kv-channels 128", "--enable-experimental"] {
        assert!(
            notes.iter().any(|n| n.starts_with(&format!("`{flag}`"))),
            "{flag} not listed: {notes:?}"
        );
    }
    // The dispatcher and router flags now map.
    for flag in [
        "--moe-token-dispatcher-type",
        "--moe-flex-dispatcher-backend",
        "--cuda-graph-impl",
        "--cuda-graph-scope",
        "--moe-router-num-groups",
        "--moe-router-group-topk",
        "--moe-permute-fusion",
        "--moe-router-fusion",
    ] {
        assert!(
            !notes.iter().any(|n| n.starts_with(&format!("`{flag}"))),
            "{flag} still listed: {notes:?}"
        );
    }
}

/// `--expert-tensor-parallel-size`, the dispatcher and the CP exchange: each imports to its
/// key, checks clean, simulates, and emits the same flags back (import ∘ emit ∘ import is the
/// identity on the scenario).
#[test]
fn etp_dispatcher_and_cp_comm_flags_round_trip() {
    let base = "--num-layers 4 --hidden-size 4096 --ffn-hidden-size 14336 \
        --num-attention-heads 32 --group-query-attention --num-query-groups 8 --seq-length 8192 \
        --vocab-size 32000 --swiglu --num-experts 8 --moe-router-topk 2 \
        --moe-ffn-hidden-size 14336 --tensor-model-parallel-size 2 --sequence-parallel \
        --context-parallel-size 4 --expert-model-parallel-size 4 --micro-batch-size 1 \
        --global-batch-size 16 --use-distributed-optimizer --bf16";
    let cases = [
        (
            "--expert-tensor-parallel-size 1 --moe-token-dispatcher-type flex --moe-flex-dispatcher-backend deepep --cp-comm-type a2a+p2p --hierarchical-context-parallel-sizes 2 2",
            &["  etp 1\n", "  moe_dispatcher flex deepep\n", "  cp_comm a2a_p2p 2\n"][..],
        ),
        (
            "--moe-token-dispatcher-type alltoall --cp-comm-type a2a",
            &["  moe_dispatcher alltoall\n", "  cp_comm a2a\n"][..],
        ),
        (
            "--expert-tensor-parallel-size 2 --cp-comm-type all_gather",
            // Megatron's default dispatcher.
            &["  etp 2\n", "  moe_dispatcher allgather\n", "  cp_comm allgather\n"][..],
        ),
        (
            "--moe-token-dispatcher-type flex --moe-enable-deepep --cp-comm-type p2p",
            &["  moe_dispatcher flex deepep\n", "  cp_comm p2p\n"][..],
        ),
    ];
    for (extra, lines) in cases {
        let text = format!("{base} {extra}");
        let opts = options("fold", Some("dgx_h100"), Some(32));
        let i = import_megatron(&text, &opts).unwrap_or_else(|e| panic!("{extra}: {e:?}"));
        assert!(i.warnings.is_empty(), "{extra}: {:?}", i.warnings);
        for line in lines {
            assert!(
                i.venus.contains(line),
                "{extra}: {line:?} missing:\n{}",
                i.venus
            );
        }
        let (diags, sources, scenarios) = check("fold.venus", &i.venus);
        assert!(
            !diags.iter().any(|d| d.is_error()),
            "{extra}:\n{}",
            render::human(&diags, &sources, false)
        );
        let sc = &scenarios[0];
        venusc::simulate::simulate(sc, &Default::default()).expect("simulates");
        let flags = emit_megatron(sc);
        let emitted = flag_lines(&flags).join(" ");
        for word in extra.split(" --").map(|f| f.trim_start_matches("--")) {
            // `--moe-enable-deepep` is emitted as its current spelling, the backend flag.
            if word == "moe-enable-deepep" {
                assert!(
                    emitted.contains("--moe-flex-dispatcher-backend deepep"),
                    "{emitted}"
                );
                continue;
            }
            assert!(
                emitted.contains(&format!("--{word}")),
                "{extra}: --{word} not in {emitted}"
            );
        }
        let again = import_megatron(&flags, &opts).unwrap();
        let (_, _, rescenarios) = check("again.venus", &again.venus);
        let flags2 = emit_megatron(&rescenarios[0]);
        assert_eq!(flag_lines(&flags2), flag_lines(&flags), "{extra}");
        let third = import_megatron(&flags2, &opts).unwrap();
        assert_eq!(
            body(&third.venus),
            body(&again.venus),
            "{extra}: re-import differs"
        );
        assert_eq!(
            venusc::simulate::simulate(&rescenarios[0], &Default::default())
                .unwrap()
                .report
                .iteration_time,
            venusc::simulate::simulate(sc, &Default::default())
                .unwrap()
                .report
                .iteration_time,
            "{extra}"
        );
    }
}

/// A flag venusc cannot map to one `cp_comm` (a per-layer list of types) is listed in W0012;
/// an unknown dispatcher is E0609 at its value.
#[test]
fn per_layer_cp_comm_types_are_listed_and_unknown_dispatchers_rejected() {
    let base = "--num-layers 2 --hidden-size 1024 --num-attention-heads 8 --seq-length 4096 \
        --vocab-size 32000 --context-parallel-size 2 --micro-batch-size 1 \
        --global-batch-size 8 --bf16";
    let opts = options("fold", Some("dgx_h100"), Some(8));
    let i = import_megatron(&format!("{base} --cp-comm-type p2p a2a"), &opts).unwrap();
    assert_eq!(i.warnings.len(), 1);
    assert_eq!(i.warnings[0].code, Code::W0012);
    assert!(
        i.warnings[0]
            .notes
            .iter()
            .any(|n| n.starts_with("`--cp-comm-type p2p a2a`")),
        "{:?}",
        i.warnings[0].notes
    );
    assert!(!i.venus.contains("\n  cp_comm"), "{}", i.venus);
    let moe = format!("{base} --num-experts 4 --moe-token-dispatcher-type ring");
    let e = import_megatron(&moe, &opts).unwrap_err();
    assert_eq!(e[0].code, Code::E0609);
    assert!(e[0].message.contains("not `ring`"), "{}", e[0].message);
}

/// Examples with no Megatron-LM equivalent, and why.
/// Examples with a feature no Megatron-LM flag states: (file, the emitted note's feature, why).
const NO_MEGATRON_EQUIVALENT: &[(&str, &str, &str)] = &[
    (
        "venussim_demo.venus",
        "`mfu 100%`",
        "`mfu 100%` (VenusSim-compatible compute) has no Megatron-LM flag, and its cluster is unnamed",
    ),
    (
        "deepseek_v3_dualpipe.venus",
        "`schedule dualpipe`",
        "DeepSeek's DualPipe runs outside Megatron-LM's schedules",
    ),
];

/// Every example: its flags, imported with its GPU count and its own cluster, give a scenario
/// that simulates to exactly the same iteration time, and emit the same flags again.
#[test]
fn every_example_round_trips_through_megatron_flags_to_the_same_iteration_time() {
    let mut entries: Vec<PathBuf> = std::fs::read_dir("examples")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "venus"))
        .collect();
    entries.sort();
    assert!(entries.len() >= 15, "{entries:?}");
    let mut tried = 0;
    for path in &entries {
        let file = path.file_name().unwrap().to_str().unwrap();
        let text = std::fs::read_to_string(path).unwrap();
        let (diags, _, scenarios) = check(file, &text);
        assert!(!diags.iter().any(|d| d.is_error()), "{file}: {diags:?}");
        let sc = &scenarios[0];
        let flags = emit_megatron(sc);
        if let Some((_, note, why)) = NO_MEGATRON_EQUIVALENT.iter().find(|(f, _, _)| *f == file) {
            assert!(
                flags.contains(&format!("# no Megatron-LM flag: {note}")),
                "{file}: {why}\n{flags}"
            );
            continue;
        }
        let cluster = sc.cluster.name.clone().expect("a named cluster");
        let imported = import_megatron(
            &flags,
            &options("roundtrip", Some(&cluster), Some(sc.world)),
        )
        .unwrap_or_else(|e| panic!("{file}: {e:?}\n{flags}"));
        assert!(
            imported.warnings.is_empty(),
            "{file}: {:?}",
            imported.warnings
        );
        // The example's own cluster, as it sizes it: drop the `gpus` the import wrote, and put
        // the example's definitions (without its scenario) beside the imported ones.
        let own = imported
            .venus
            .replace(&format!(" < gpus {} >", sc.world), " < >");
        let defs: String = text
            .lines()
            .filter(|l| !l.starts_with("scenario "))
            .map(|l| format!("{l}\n"))
            .collect();
        let (diags, sources, scenarios) = check("roundtrip.venus", &format!("{defs}\n{own}"));
        assert!(
            !diags.iter().any(|d| d.is_error()),
            "{file}:\n{}",
            render::human(&diags, &sources, false)
        );
        let back = scenarios
            .iter()
            .find(|s| s.name == "roundtrip")
            .expect("the imported scenario");
        let opts = Default::default();
        let t0 = venusc::simulate::simulate(sc, &opts)
            .unwrap()
            .report
            .iteration_time;
        let t1 = venusc::simulate::simulate(back, &opts)
            .unwrap()
            .report
            .iteration_time;
        assert_eq!(
            t0, t1,
            "{file}: iteration time {t0:?} became {t1:?}\n{flags}"
        );
        assert_eq!(
            flag_lines(&emit_megatron(back)),
            flag_lines(&flags),
            "{file}"
        );
        tried += 1;
    }
    assert_eq!(tried, entries.len() - NO_MEGATRON_EQUIVALENT.len());
}

fn venusc(args: &[&str], stdin: Option<&[u8]>) -> (i32, String, String) {
    use std::io::Write;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_venusc"));
    cmd.args(args).arg("--color").arg("never");
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut pipe = child.stdin.take().unwrap();
    if let Some(bytes) = stdin {
        let _ = pipe.write_all(bytes);
    }
    drop(pipe);
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn cli_imports_a_launch_script_that_checks_simulates_and_emits_its_flags_back() {
    let dir = std::env::temp_dir().join(format!("venusc-megatron-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("llama.venus");
    let script = golden_dir().join("torchrun_llama3_8b.sh");
    let (code, _, err) = venusc(
        &[
            "import",
            "megatron",
            script.to_str().unwrap(),
            "--cluster",
            "dgx_h100",
            "-o",
            out.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("warning[W0012]") && err.contains("wrote `"),
        "{err}"
    );
    let (code, _, err) = venusc(&["check", out.to_str().unwrap()], None);
    assert_eq!(code, 0, "{err}");
    let (code, report, err) = venusc(&["sim", out.to_str().unwrap()], None);
    assert_eq!(code, 0, "{err}");
    assert!(report.contains("on 16 GPUs"), "{report}");
    let (code, flags, err) = venusc(
        &["compile", out.to_str().unwrap(), "--emit", "megatron"],
        None,
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        flags.contains("--tensor-model-parallel-size 2 \\\n--pipeline-model-parallel-size 2 \\\n"),
        "{flags}"
    );
    // The flags read back from stdin, with the GPU count the script's comment states.
    let (code, venus, err) = venusc(
        &[
            "import",
            "megatron",
            "-",
            "--cluster",
            "dgx_h100",
            "--gpus",
            "16",
            "--allow",
            "W0012",
        ],
        Some(flags.as_bytes()),
    );
    assert_eq!(code, 0, "{err}");
    assert!(err.is_empty(), "{err}");
    assert!(
        venus.contains("cluster megatron_cluster : dgx_h100 < gpus 16 >"),
        "{venus}"
    );
    // Without `--cluster` the default is stated (W0013).
    let (code, venus, err) = venusc(
        &["import", "megatron", "-", "--gpus", "16"],
        Some(flags.as_bytes()),
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("warning[W0013]") && venus.contains(": dgx_h100 < gpus 16 >"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cli_bad_scripts_get_coded_errors_never_a_panic() {
    let base = b"--num-layers 2 --hidden-size 64 --num-attention-heads 2 --seq-length 128 --vocab-size 256 --micro-batch-size 1 ";
    let cases: Vec<(Vec<u8>, &str, &str)> = vec![
        (
            b"\x7fELF\x02\x01\x00\x00binary".to_vec(),
            "error[E0609]",
            "not a text file",
        ),
        (
            [&base[..], b"--tensor-model-parallel-size \"4"].concat(),
            "error[E0609]",
            "unterminated",
        ),
        (
            [&base[..], b"--tensor-model-parallel-size 0"].concat(),
            "error[E0609]",
            "positive count",
        ),
        (
            [
                &base[..],
                b"--tensor-model-parallel-size 184467440737095516160",
            ]
            .concat(),
            "error[E0609]",
            "larger than",
        ),
        (
            [&base[..], b"--tensor-model-parallel-size $TP"].concat(),
            "error[E0609]",
            "`$TP` is not set",
        ),
        (
            [&base[..], b"--tp 8"].concat(),
            "error[E0608]",
            "not a flag of Megatron-LM",
        ),
        (
            [&base[..], b"--tensor-model-parallel-size 3"].concat(),
            "error[E0610]",
            "not a multiple",
        ),
        (
            b"echo hello".to_vec(),
            "error[E0609]",
            "no Megatron-LM flags",
        ),
    ];
    for (input, code, text) in cases {
        let (status, _, err) = venusc(&["import", "megatron", "-", "--gpus", "8"], Some(&input));
        assert_eq!(status, 1, "{}: {err}", String::from_utf8_lossy(&input));
        assert!(
            err.contains(code) && err.contains(text) && err.contains("help:"),
            "{}: {err}",
            String::from_utf8_lossy(&input)
        );
        assert!(!err.contains("panicked"), "{err}");
    }
    let huge = vec![b' '; 17 << 20];
    let (status, _, err) = venusc(&["import", "megatron", "-"], Some(&huge));
    assert_eq!(status, 2, "{err}");
    assert!(err.contains("E0702"), "{err}");
}

/// An import either succeeds or gives coded errors, each with a help and a span inside the
/// text: never a panic.
fn total(text: &str) {
    match import_megatron(text, &options("p", Some("dgx_h100"), None)) {
        Ok(i) => assert!(i.venus.contains("scenario p <"), "{}", i.venus),
        Err(errors) => {
            assert!(!errors.is_empty());
            for e in &errors {
                assert!(e.help.is_some(), "{e:?}");
                assert!(e.primary.loc.span.end as usize <= text.len(), "{e:?}");
                assert!(
                    text.is_char_boundary(e.primary.loc.span.start as usize),
                    "{e:?}"
                );
            }
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 256, ..Default::default() })]

    #[test]
    fn any_text_imports_or_fails_with_coded_errors(text in "\\PC{0,300}") {
        total(&text);
    }

    #[test]
    fn a_mutated_launch_script_imports_or_fails_with_coded_errors(
        at in 0usize..2000,
        cut in 0usize..30,
        insert in "[-$\"'\\\\(){}=|;# \na-z0-9]{0,8}",
    ) {
        let script = include_str!("../golden/megatron/torchrun_llama3_8b.sh");
        let chars: Vec<char> = script.chars().collect();
        let at = at.min(chars.len());
        let end = (at + cut).min(chars.len());
        let mutated: String = chars[..at].iter().chain(insert.chars().collect::<Vec<_>>().iter()).chain(chars[end..].iter()).collect();
        total(&mutated);
    }
}

/// `--recompute-modules`, `--recompute-method block`, `--recompute-num-layers` and
/// `--fp8-param-gather` become plan keys, check clean, simulate, and come back as the same
/// flags (no W0012 note for any of them).
#[test]
fn recompute_modules_block_recompute_and_fp8_param_gather_round_trip_as_flags() {
    const BASE: &str = "--num-layers 32 --hidden-size 4096 --num-attention-heads 32 --seq-length 4096 --vocab-size 32000 --micro-batch-size 1 --global-batch-size 64 --bf16 --tensor-model-parallel-size 8 --sequence-parallel --use-distributed-optimizer";
    let cases = [
        (
            "--recompute-granularity selective --recompute-modules core_attn mlp layernorm",
            vec![
                "  recompute selective\n",
                "  recompute_modules core_attn mlp layernorm\n",
            ],
            "--recompute-modules core_attn mlp layernorm",
        ),
        (
            "--recompute-granularity full --recompute-method block --recompute-num-layers 4",
            vec![
                "  recompute full\n",
                "  recompute_method block\n",
                "  recompute_num_layers 4\n",
            ],
            "--recompute-method block --recompute-num-layers 4",
        ),
        (
            "--fp8-format hybrid --fp8-param-gather",
            vec!["  precision fp8\n", "  fp8_param_gather\n"],
            "--fp8-param-gather",
        ),
        (
            "--use-precision-aware-optimizer --optimizer-cpu-offload --optimizer-offload-fraction 0.5",
            vec!["  optimizer_offload 50%\n"],
            "--use-precision-aware-optimizer --optimizer-cpu-offload --optimizer-offload-fraction 0.5",
        ),
        (
            // Megatron's default fraction is 1.0 (arguments.py:2922).
            "--use-precision-aware-optimizer --optimizer-cpu-offload",
            vec!["  optimizer_offload 100%\n"],
            "--optimizer-cpu-offload --optimizer-offload-fraction 1",
        ),
    ];
    for (flags, lines, back) in cases {
        let text = format!("{BASE} {flags}");
        let opts = options("rc", Some("dgx_h100"), Some(8));
        let i = import_megatron(&text, &opts).unwrap();
        for line in &lines {
            assert!(i.venus.contains(line), "{flags}: {line}\n{}", i.venus);
        }
        assert!(i.warnings.is_empty(), "{flags}: {:?}", i.warnings);
        let (diags, sources, scenarios) = check("rc.venus", &i.venus);
        assert!(
            diags.is_empty(),
            "{flags}:\n{}",
            render::human(&diags, &sources, false)
        );
        venusc::simulate::simulate(&scenarios[0], &Default::default())
            .expect("the imported scenario simulates");
        let emitted = emit_megatron(&scenarios[0]);
        let words: Vec<&str> = flag_lines(&emitted)
            .iter()
            .map(|l| l.trim_end_matches('\\').trim())
            .collect();
        assert!(words.join(" ").contains(back), "{flags}:\n{emitted}");
        let again = import_megatron(&emitted, &opts).unwrap();
        let (_, _, back) = check("again.venus", &again.venus);
        assert_eq!(
            flag_lines(&emit_megatron(&back[0])),
            flag_lines(&emitted),
            "{flags}"
        );
    }
}

/// CUDA graphs and activation offloading: `--cuda-graph-impl` with `--cuda-graph-modules`, the
/// deprecated `--external-cuda-graph` and `--cuda-graph-scope full_iteration`, fine-grained
/// offloading with a fraction, and layer-level `--cpu-offloading-num-layers` each import to
/// their keys, check clean, simulate, and emit flags that import to the same plan and time.
#[test]
fn cuda_graph_and_activation_offload_flags_round_trip() {
    let base = "--num-layers 8 --hidden-size 4096 --ffn-hidden-size 14336 \
        --num-attention-heads 32 --group-query-attention --num-query-groups 8 --seq-length 4096 \
        --vocab-size 32000 --swiglu --tensor-model-parallel-size 8 --micro-batch-size 1 \
        --global-batch-size 16 --use-distributed-optimizer --bf16";
    let cases = [
        (
            "--cuda-graph-impl transformer_engine --cuda-graph-modules attn mlp --fine-grained-activation-offloading --offload-modules core_attn attn_proj --activation-offload-fraction 0.5",
            &[
                "  cuda_graphs transformer_engine attn mlp\n",
                "  offload_modules core_attn attn_proj\n",
                "  offload_fraction 50%\n",
            ][..],
            "--cuda-graph-impl transformer_engine --cuda-graph-modules attn mlp --fine-grained-activation-offloading --offload-modules core_attn attn_proj --activation-offload-fraction 0.5",
        ),
        (
            "--external-cuda-graph",
            &["  cuda_graphs transformer_engine\n"][..],
            "--cuda-graph-impl transformer_engine",
        ),
        (
            "--enable-cuda-graph --cuda-graph-scope full_iteration",
            &["  cuda_graphs full_iteration\n"][..],
            "--cuda-graph-impl full_iteration",
        ),
        (
            "--cpu-offloading-num-layers 3",
            &["  offload_layers 3\n"][..],
            "--cpu-offloading-num-layers 3",
        ),
    ];
    for (extra, lines, emitted_flags) in cases {
        let text = format!("{base} {extra}");
        let opts = options("graphs", Some("dgx_h100"), Some(8));
        let i = import_megatron(&text, &opts).unwrap_or_else(|e| panic!("{extra}: {e:?}"));
        assert!(i.warnings.is_empty(), "{extra}: {:?}", i.warnings);
        for line in lines {
            assert!(
                i.venus.contains(line),
                "{extra}: {line:?} missing:\n{}",
                i.venus
            );
        }
        let (diags, sources, scenarios) = check("graphs.venus", &i.venus);
        assert!(
            diags.is_empty(),
            "{extra}:\n{}",
            render::human(&diags, &sources, false)
        );
        let sc = &scenarios[0];
        let flags = emit_megatron(sc);
        let emitted = flag_lines(&flags).join(" ").replace(" \\", "");
        assert!(emitted.contains(emitted_flags), "{extra}: {emitted}");
        let again = import_megatron(&flags, &opts).unwrap();
        for line in lines {
            assert!(again.venus.contains(line), "{extra}: {line:?} lost");
        }
        let (_, _, rescenarios) = check("again.venus", &again.venus);
        let flags2 = emit_megatron(&rescenarios[0]);
        assert_eq!(flag_lines(&flags2), flag_lines(&flags), "{extra}");
        let third = import_megatron(&flags2, &opts).unwrap();
        assert_eq!(
            body(&third.venus),
            body(&again.venus),
            "{extra}: re-import differs"
        );
        let time = |s: &Scenario| {
            venusc::simulate::simulate(s, &Default::default())
                .unwrap()
                .report
                .iteration_time
        };
        assert_eq!(time(&rescenarios[0]), time(sc), "{extra}");
    }
    // The legacy switch and the new flag together are one scenario too many.
    let both = format!("{base} --external-cuda-graph --cuda-graph-impl local");
    let e = import_megatron(&both, &options("graphs", Some("dgx_h100"), Some(8))).unwrap_err();
    assert!(e.iter().any(|d| d.code == Code::E0610), "{e:?}");
}

/// Every FP8 recipe flag comes back as written: `--fp8-recipe` (Megatron's default `delayed`
/// unwritten), `--fp8-format e4m3`; the recipe moves the iteration time through its casts.
/// `--fp8-dot-product-attention` (a TransformerConfig field NeMo and Megatron-Bridge set, not
/// a flag of arguments.py) imports as `fp8_attention` and is emitted as a comment, since
/// Megatron-LM's own parser would reject it.
#[test]
fn fp8_recipe_and_format_flags_round_trip_and_fp8_attention_imports() {
    const BASE: &str = "--num-layers 8 --hidden-size 4096 --num-attention-heads 32 --seq-length 4096 --vocab-size 32000 --micro-batch-size 1 --global-batch-size 64 --bf16 --tensor-model-parallel-size 8 --sequence-parallel --use-distributed-optimizer";
    let cases = [
        ("--fp8-format hybrid", "dgx_h100", vec!["  precision fp8\n"]),
        (
            "--fp8-format hybrid --fp8-recipe tensorwise",
            "dgx_h100",
            vec!["  precision fp8\n", "  fp8_recipe tensorwise\n"],
        ),
        (
            "--fp8-format e4m3 --fp8-recipe blockwise",
            "dgx_h100",
            vec!["  fp8_recipe blockwise\n", "  fp8_format e4m3\n"],
        ),
        (
            "--fp8-format e4m3 --fp8-recipe mxfp8",
            "dgx_b200",
            vec!["  fp8_recipe mxfp8\n", "  fp8_format e4m3\n"],
        ),
        (
            "--fp4-format e2m1 --fp4-recipe nvfp4",
            "dgx_b200",
            vec!["  precision fp4\n"],
        ),
    ];
    let mut times = Vec::new();
    for (flags, cluster, lines) in cases {
        let text = format!("{BASE} {flags}");
        let opts = options("fp8", Some(cluster), Some(8));
        let i = import_megatron(&text, &opts).unwrap();
        for line in &lines {
            assert!(i.venus.contains(line), "{flags}: {line}\n{}", i.venus);
        }
        assert!(i.warnings.is_empty(), "{flags}: {:?}", i.warnings);
        let (diags, sources, scenarios) = check("fp8.venus", &i.venus);
        assert!(
            diags.is_empty(),
            "{flags}:\n{}",
            render::human(&diags, &sources, false)
        );
        let t = venusc::simulate::simulate(&scenarios[0], &Default::default())
            .unwrap()
            .report
            .iteration_time;
        times.push(t);
        let emitted = emit_megatron(&scenarios[0]);
        let words = flag_lines(&emitted)
            .iter()
            .map(|l| l.trim_end_matches('\\').trim())
            .collect::<Vec<_>>()
            .join(" ");
        for flag in flags.split(" --") {
            let flag = flag.trim_start_matches("--");
            // `--fp4-recipe nvfp4` is Megatron's default: not written back.
            if flag != "fp4-recipe nvfp4" {
                assert!(
                    words.contains(&format!("--{flag}")),
                    "{flags}: --{flag}\n{emitted}"
                );
            }
        }
        let again = import_megatron(&emitted, &opts).unwrap();
        for line in &lines {
            assert!(
                again.venus.contains(line),
                "{flags}: {line}\n{}",
                again.venus
            );
        }
        let (_, _, back) = check("again.venus", &again.venus);
        assert_eq!(
            flag_lines(&emit_megatron(&back[0])),
            flag_lines(&emitted),
            "{flags}"
        );
    }
    // On the same H100s: tensorwise reads each cast source twice (amax, then cast) and casts
    // after the norms, blockwise writes its scales: both cost more than delayed.
    assert!(times[1] > times[0], "{times:?}");
    assert!(times[2] > times[0], "{times:?}");

    let text = format!("{BASE} --fp8-format hybrid --fp8-dot-product-attention");
    let opts = options("dpa", Some("dgx_h100"), Some(8));
    let i = import_megatron(&text, &opts).unwrap();
    assert!(i.venus.contains("  fp8_attention\n"), "{}", i.venus);
    assert!(i.warnings.is_empty(), "{:?}", i.warnings);
    let (diags, _, scenarios) = check("dpa.venus", &i.venus);
    assert!(diags.is_empty(), "{diags:?}");
    let dpa = venusc::simulate::simulate(&scenarios[0], &Default::default())
        .unwrap()
        .report
        .iteration_time;
    // The attention core at the FP8 peak (and its casts) is faster than at BF16's.
    assert!(dpa < times[0], "{dpa:?} {times:?}");
    let emitted = emit_megatron(&scenarios[0]);
    assert!(
        emitted.contains("# no Megatron-LM flag: `fp8_attention`"),
        "{emitted}"
    );
    assert!(!flag_lines(&emitted)
        .join(" ")
        .contains("--fp8-dot-product-attention"));
}

#[test]
fn optimizer_offload_moves_the_optimizer_line_to_the_host_and_its_transfer_into_the_step() {
    let text = |extra: &str| {
        format!(
            "model m : llama2_7b < >\ncluster c : dgx_h100 < >\nplan < tp 8 sp micro_batch 1 global_batch 8 distributed_optimizer {extra} >\n"
        )
    };
    let (diags, _, base) = check("base.venus", &text(""));
    assert!(diags.is_empty(), "{diags:?}");
    let (diags, _, half) = check("half.venus", &text("optimizer_offload 50%"));
    assert!(diags.is_empty(), "{diags:?}");
    let (b, h) = (&base[0].memory[0], &half[0].memory[0]);
    // Half of the GPU's optimizer shard moves to the host; nothing else changes.
    assert_eq!(h.optimizer_host.0, b.optimizer.0 / 2);
    assert_eq!(h.optimizer.0 + h.optimizer_host.0, b.optimizer.0);
    assert_eq!(b.peak.0 - h.peak.0, h.optimizer_host.0);
    assert_eq!((h.weights, h.gradients), (b.weights, b.gradients));
    // Each step moves those parameters' fp32 gradients down and fp32 master weights back up
    // (8 of their 12 optimizer bytes) at PCIe Gen5's 64 GB/s, serially after the backward.
    let moved = h.optimizer_host.0 / 12 * 8;
    let transfer = moved as f64 / 64e9;
    let time = |sc| {
        venusc::simulate::simulate(sc, &Default::default())
            .expect("simulates")
            .report
            .iteration_time
            .0
    };
    let extra = time(&half[0]) - time(&base[0]);
    assert!(
        (extra - transfer).abs() < 1e-9,
        "{extra} s more per iteration, expected the {transfer} s transfer"
    );
}
