//! Resolution and type checking on small programs (parsed by the real parser, which must
//! report nothing on them: every diagnostic asserted here comes from `resolve` or `ty`).

use std::sync::Arc;

use super::*;
use crate::ty::check::check_program;
use crate::ty::{ScenarioDef, Topology};
use venus_diag::diag::{Diagnostic, FileId};

/// A fixed stdlib, so these tests do not move when the real one grows.
const STD_GPUS: &str = "gpu h100_sxm < peak 989TFLOP/s memory 80GiB mem_bw 3350GB/s >\n";
const STD_MODELS: &str =
    "model llama2_7b < hidden 4096 ffn 11008 layers 32 heads 32 vocab 32000 seq 4096 swiglu >\n";
const STD_CLUSTERS: &str = "cluster dgx_h100 <\n  gpu h100_sxm\n  dim nvlink switch 8 450GB/s 1000ns\n  dim ib switch 1 50GB/s 5000ns\n>\n";

const STDLIB_IDS: [u32; 3] = [100, 101, 102];

fn parse(text: &str, id: u32) -> ast::File {
    let parsed = venus_syntax::syntax::parse(text, FileId(id));
    assert_eq!(
        parsed.diagnostics,
        vec![],
        "the test input must parse cleanly"
    );
    parsed.file
}

fn loaded(id: u32, name: &str, text: &str, uses: Vec<UseTarget>) -> LoadedFile {
    LoadedFile {
        id: FileId(id),
        name: name.into(),
        text: Arc::from(text),
        ast: Arc::new(parse(text, id)),
        uses,
    }
}

struct Out {
    scenarios: Vec<ScenarioDef>,
    diags: Vec<Diagnostic>,
    /// E0108 of a library root, kept for `sim` rather than reported.
    no_scenario: Option<Diagnostic>,
    /// Line (1-based) of each position, per file id.
    texts: Vec<(FileId, String)>,
}

impl Out {
    fn line_col(&self, loc: Loc) -> (usize, usize) {
        let text = &self
            .texts
            .iter()
            .find(|(f, _)| *f == loc.file)
            .expect("file")
            .1;
        let before = &text[..loc.span.start as usize];
        (
            before.matches('\n').count() + 1,
            before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1,
        )
    }
    /// `E0104 main.venus:3:9 unknown model `x``, one per diagnostic.
    fn lines(&self) -> Vec<String> {
        self.diags
            .iter()
            .map(|d| {
                let (l, c) = self.line_col(d.primary.loc);
                format!(
                    "{} {}:{}:{} {}",
                    d.code, d.primary.loc.file.0, l, c, d.message
                )
            })
            .collect()
    }
    fn only(&self, code: Code) -> &Diagnostic {
        let all: Vec<_> = self.diags.iter().filter(|d| d.code == code).collect();
        assert_eq!(all.len(), 1, "expected one {code}, got {:#?}", self.diags);
        all[0]
    }
    fn text_at(&self, loc: Loc) -> &str {
        &self.texts.iter().find(|(f, _)| *f == loc.file).unwrap().1[loc.span.range()]
    }
}

/// Checks a program: `files[0]` is the root (FileId 0); `uses` maps each `use` path to the
/// index of the file it names, or is absent (unreadable).
fn check_files(files: &[(&str, &str)]) -> Out {
    let names: Vec<&str> = files.iter().map(|f| f.0).collect();
    let user: Vec<LoadedFile> = files
        .iter()
        .enumerate()
        .map(|(i, (name, text))| {
            let ast = parse(text, i as u32);
            let uses = ast
                .items
                .iter()
                .filter_map(|t| match t {
                    ast::TopItem::Use(u) => Some(match names.iter().position(|n| *n == u.path) {
                        Some(j) => UseTarget::Loaded {
                            file: FileId(j as u32),
                            first_error: None,
                        },
                        None => UseTarget::Unreadable(String::from("no such file").into()),
                    }),
                    _ => None,
                })
                .collect();
            loaded(i as u32, name, text, uses)
        })
        .collect();
    let stdlib = vec![
        loaded(STDLIB_IDS[0], "<stdlib>/gpus.venus", STD_GPUS, vec![]),
        loaded(STDLIB_IDS[1], "<stdlib>/models.venus", STD_MODELS, vec![]),
        loaded(
            STDLIB_IDS[2],
            "<stdlib>/clusters.venus",
            STD_CLUSTERS,
            vec![],
        ),
    ];
    let indexes: Vec<FileIndex> = stdlib
        .iter()
        .map(|f| FileIndex::build(f.id, &f.ast))
        .collect();
    let prelude = Prelude::build(&indexes.iter().collect::<Vec<_>>());
    assert!(prelude.diagnostics.is_empty());
    let res = Resolver::new(FileId(0), &user, &stdlib, &prelude);
    let scenarios = check_program(&res);
    let diags = res.take_diagnostics();
    let no_scenario = res.take_no_scenario();
    let texts = user
        .iter()
        .chain(&stdlib)
        .map(|f| (f.id, f.text.to_string()))
        .collect();
    Out {
        scenarios,
        diags,
        no_scenario,
        texts,
    }
}

fn check(text: &str) -> Out {
    check_files(&[("main.venus", text)])
}

const PLAN: &str = "< tp 8 micro_batch 1 global_batch 16 >";

#[test]
fn implicit_scenario_is_named_after_the_root_file_stem() {
    let out = check_files(&[(
        "runs/llama_demo.venus",
        "model m < hidden 4096 layers 32 heads 32 vocab 32000 seq 2048 >\ncluster c < gpu h100_sxm dim nvlink fc 8 450GB/s >\nplan < tp 8 micro_batch 2 global_batch 64 >\n",
    )]);
    assert_eq!(out.lines(), Vec::<String>::new());
    let [s] = out.scenarios.as_slice() else {
        panic!("{:?}", out.scenarios)
    };
    assert_eq!(s.name, "llama_demo");
    assert_eq!((s.model.hidden.value, s.model.seq.value), (4096, 2048));
    assert_eq!(out.text_at(s.model.hidden.loc), "4096");
    assert_eq!(s.cluster.gpu.name, "h100_sxm");
    assert_eq!(s.cluster.gpu.memory.value.0, 80 << 30);
    assert_eq!(s.cluster.gpu.memory.loc.file, FileId(STDLIB_IDS[0]));
    assert_eq!(s.cluster.dims.len(), 1);
    assert_eq!(s.cluster.dims[0].bandwidth.value.0, 450e9);
    // No latency written: 0, located at the whole item.
    assert_eq!(s.cluster.dims[0].latency.value.0, 0.0);
    assert_eq!(
        out.text_at(s.cluster.dims[0].latency.loc),
        "dim nvlink fc 8 450GB/s"
    );
    assert_eq!(
        (
            s.plan.tp(),
            s.plan.pp(),
            s.plan.micro_batch.value,
            s.plan.global_batch.value
        ),
        (8, 1, 2, 64)
    );
    assert_eq!(s.plan.sp, None);
}

#[test]
fn explicit_scenarios_use_stdlib_names_and_inline_blocks() {
    let out = check(
        "scenario a < model llama2_7b cluster dgx_h100 plan < tp 8 sp micro_batch 1 global_batch 32 > >\n\
         scenario b < model llama2_7b cluster < gpu < peak 100TFLOP/s memory 16GiB mem_bw 1TB/s > dim pcie ring 4 16GB/s 2us > plan < micro_batch 1 global_batch 4 recompute full > expect < tflops_min 400 mfu_min 40% iteration_time_max 2s memory_max 60GiB > >\n",
    );
    assert_eq!(out.lines(), Vec::<String>::new());
    assert_eq!(
        out.scenarios
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>(),
        ["a", "b"]
    );
    let a = &out.scenarios[0];
    assert_eq!(a.model.ffn(), 11008);
    assert!(a.model.swiglu());
    assert_eq!(a.cluster.world_size(), 8);
    assert_eq!(a.plan.sp.as_ref().map(|s| s.value), Some(true));
    assert_eq!(out.text_at(a.plan.sp.as_ref().unwrap().loc), "sp");
    let b = &out.scenarios[1];
    assert_eq!(b.cluster.gpu.name, "gpu");
    assert_eq!(b.cluster.gpu.memory.value.0, 16 << 30);
    assert_eq!(b.cluster.gpu.mem_bw.value.0, 1e12);
    assert_eq!(b.cluster.dims[0].topology.value, Topology::Ring);
    assert!((b.cluster.dims[0].latency.value.0 - 2e-6).abs() < 1e-18);
    assert_eq!(b.plan.recompute(), crate::ty::Recompute::Full);
    assert_eq!(b.expect.tflops_min.as_ref().unwrap().value.0, 400e12);
    assert_eq!(b.expect.mfu_min.as_ref().unwrap().value.0, 0.4);
    assert_eq!(b.expect.iteration_time_max.as_ref().unwrap().value.0, 2.0);
    assert_eq!(b.expect.memory_max.as_ref().unwrap().value.0, 60 << 30);
}

#[test]
fn a_user_definition_shadows_the_stdlib_but_not_inside_the_stdlib() {
    let out = check(&format!(
        "gpu h100_sxm < peak 1PFLOP/s memory 96GiB mem_bw 4TB/s >\n\
         scenario mine < model llama2_7b cluster < gpu h100_sxm dim x fc 8 450GB/s > plan {PLAN} >\n\
         scenario std < model llama2_7b cluster dgx_h100 plan {PLAN} >\n"
    ));
    assert_eq!(out.lines(), Vec::<String>::new());
    assert_eq!(out.scenarios[0].cluster.gpu.memory.value.0, 96 << 30);
    assert_eq!(out.scenarios[0].cluster.gpu.peak.value.0, 1e15);
    assert_eq!(out.scenarios[0].cluster.gpu.loc.file, FileId(0));
    // dgx_h100 is defined in the stdlib, so it sees the stdlib's h100_sxm.
    assert_eq!(out.scenarios[1].cluster.gpu.memory.value.0, 80 << 30);
}

#[test]
fn a_base_with_the_definitions_own_name_means_the_shadowed_definition() {
    let out = check(&format!("model llama2_7b : llama2_7b < seq 8192 >\nscenario s < model llama2_7b cluster dgx_h100 plan {PLAN} >\n"));
    assert_eq!(out.lines(), Vec::<String>::new());
    let m = &out.scenarios[0].model;
    assert_eq!((m.seq.value, m.hidden.value), (8192, 4096));
    assert_eq!(m.seq.loc.file, FileId(0));
    assert_eq!(m.hidden.loc.file, FileId(STDLIB_IDS[1]));
}

#[test]
fn inheritance_replaces_an_inherited_dim_in_place_appends_a_new_one_and_applies_nodes() {
    let out = check(&format!(
        "cluster big : dgx_h100 < dim nvlink switch 8 900GB/s dim pod ring 2 25GB/s nodes 4 >\n\
         cluster bigger : big < nodes 16 >\n\
         scenario s < model llama2_7b cluster bigger plan {PLAN} >\n"
    ));
    assert_eq!(out.lines(), Vec::<String>::new());
    let c = &out.scenarios[0].cluster;
    let dims: Vec<(&str, u64, f64)> = c
        .dims
        .iter()
        .map(|d| (d.name.value.as_str(), d.size.value, d.bandwidth.value.0))
        .collect();
    assert_eq!(
        dims,
        [("nvlink", 8, 900e9), ("ib", 1, 50e9), ("pod", 16, 25e9)]
    );
    assert_eq!(c.world_size(), 128);
    // The replaced dim is located in the user file, the inherited one in the stdlib.
    assert_eq!(c.dims[0].loc.file, FileId(0));
    assert_eq!(c.dims[1].loc.file, FileId(STDLIB_IDS[2]));
    assert_eq!(out.line_col(c.dims[2].size.loc), (2, 30));
    assert_eq!(out.text_at(c.dims[2].size.loc), "16");
    assert_eq!(c.name.as_deref(), Some("bigger"));
}

#[test]
fn nodes_grows_the_outermost_stdlib_dim() {
    let out = check(&format!(
        "cluster c : dgx_h100 < nodes 4 >\nscenario s < model llama2_7b cluster c plan {PLAN} >\n"
    ));
    assert_eq!(out.lines(), Vec::<String>::new());
    let c = &out.scenarios[0].cluster;
    assert_eq!(
        (
            c.dims[1].name.value.as_str(),
            c.dims[1].size.value,
            c.world_size()
        ),
        ("ib", 4, 32)
    );
    assert_eq!(c.dims[1].size.loc.file, FileId(0));
}

#[test]
fn algo_pins_a_dims_collective_algorithm_and_an_unknown_dim_is_e0104() {
    let out = check(&format!(
        "cluster c : dgx_h100 < nodes 4 algo ib tree >\nscenario s < model llama2_7b cluster c plan {PLAN} >\n"
    ));
    assert_eq!(out.lines(), Vec::<String>::new());
    let c = &out.scenarios[0].cluster;
    let algos: Vec<_> = c
        .dims
        .iter()
        .map(|d| d.algorithm.as_ref().map(|a| a.value))
        .collect();
    assert_eq!(
        algos,
        vec![None, Some(crate::ty::CollectiveAlgorithm::Tree)]
    );
    let out = check(&format!(
        "cluster c : dgx_h100 < nodes 4 algo nvlnk ring >\nscenario s < model llama2_7b cluster c plan {PLAN} >\n"
    ));
    assert_eq!(out.lines().len(), 1, "{:?}", out.lines());
    assert!(out.lines()[0].starts_with("E0104"), "{:?}", out.lines());
    assert!(
        out.lines()[0].contains("unknown dim `nvlnk`"),
        "{:?}",
        out.lines()
    );
}

#[test]
fn a_child_key_replaces_the_base_key_and_keeps_the_rest() {
    let out = check(
        "plan base < tp 2 pp 4 micro_batch 1 global_batch 64 distributed_optimizer >\n\
         plan p : base < pp 2 sp >\n\
         scenario s < model llama2_7b cluster dgx_h100 plan p >\n",
    );
    assert_eq!(out.lines(), Vec::<String>::new());
    let p = &out.scenarios[0].plan;
    assert_eq!((p.tp(), p.pp(), p.sp()), (2, 2, true));
    assert!(crate::ty::Plan::flag(&p.distributed_optimizer));
    assert_eq!(out.line_col(p.pp.as_ref().unwrap().loc), (2, 20));
}

#[test]
fn inheritance_cycle_is_reported_once_with_a_label_on_every_link() {
    let out = check(&format!(
        "model a : b < hidden 1 >\nmodel b : c < layers 1 >\nmodel c : a < heads 1 >\nmodel d : a < >\nscenario s < model d cluster dgx_h100 plan {PLAN} >\n"
    ));
    let d = out.only(Code::E0105);
    assert_eq!(d.message, "inheritance cycle: model `a` → `b` → `c` → `a`");
    assert_eq!(out.line_col(d.primary.loc), (1, 11));
    assert_eq!(d.primary.message, "`a` inherits from `b`");
    let secondary: Vec<_> = d
        .secondary
        .iter()
        .map(|l| (out.line_col(l.loc), l.message.as_str()))
        .collect();
    assert_eq!(
        secondary,
        [
            ((2, 11), "`b` inherits from `c`"),
            ((3, 11), "`c` inherits from `a`")
        ]
    );
    assert!(out.scenarios.is_empty());
}

#[test]
fn unknown_reference_suggests_a_close_name_of_the_same_kind() {
    let out = check(&format!(
        "scenario s < model llama2_7 cluster dgx_h100 plan {PLAN} >\n"
    ));
    assert_eq!(out.lines(), ["E0104 0:1:20 unknown model `llama2_7`"]);
    let d = &out.diags[0];
    assert_eq!(d.primary.message, "no model named `llama2_7` in scope");
    assert_eq!(d.help.as_deref(), Some("did you mean `llama2_7b`?"));
    assert!(out.scenarios.is_empty());
}

#[test]
fn unknown_reference_to_a_name_of_another_kind_says_so() {
    let out = check(
        "plan p < micro_batch 1 global_batch 8 >\nscenario s < model p cluster dgx_h100 plan p >\n",
    );
    let d = out.only(Code::E0104);
    assert_eq!(d.message, "unknown model `p`");
    assert_eq!(d.help.as_deref(), Some("`p` is a plan, not a model"));
}

#[test]
fn unknown_names_in_unused_definitions_are_still_reported() {
    let out = check(&format!("cluster spare < gpu h100_sx dim a fc 8 1GB/s >\nscenario s < model llama2_7b cluster dgx_h100 plan {PLAN} >\n"));
    assert_eq!(
        out.lines(),
        [
            "W0004 0:1:9 cluster `spare` is never used",
            "E0104 0:1:21 unknown gpu `h100_sx`"
        ]
    );
}

#[test]
fn duplicate_definition_in_one_file_labels_both() {
    let out = check(&format!("model m : llama2_7b < >\nmodel m : llama2_7b < layers 2 >\nplan m {}\nscenario s < model llama2_7b cluster dgx_h100 plan m >\n", PLAN));
    let d = out.only(Code::E0106);
    assert_eq!(d.message, "model `m` is defined twice in this file");
    assert_eq!(out.line_col(d.primary.loc), (2, 7));
    assert_eq!(out.line_col(d.secondary[0].loc), (1, 7));
    assert_eq!(d.secondary[0].message, "first defined here");
    // The ignored second definition is not also "never used".
    assert_eq!(
        out.lines(),
        [
            "W0004 0:1:7 model `m` is never used",
            "E0106 0:2:7 model `m` is defined twice in this file"
        ]
    );
}

#[test]
fn two_used_files_defining_a_referenced_name_is_ambiguous() {
    let out = check_files(&[
        ("main.venus", &format!("use \"a.venus\"\nuse \"b.venus\"\nscenario s < model m cluster dgx_h100 plan {PLAN} >\n")),
        ("a.venus", "model m : llama2_7b < >\n"),
        ("b.venus", "model m : llama2_7b < seq 1 >\n"),
    ]);
    let d = out.only(Code::E0106);
    assert_eq!(
        d.message,
        "model `m` is defined by both `a.venus` and `b.venus`"
    );
    assert_eq!(out.line_col(d.primary.loc), (3, 20));
    assert_eq!(d.secondary.len(), 2);
}

#[test]
fn used_definitions_are_in_scope_and_a_root_definition_shadows_them() {
    let out = check_files(&[
        ("main.venus", &format!("use \"lib.venus\"\nplan p {}\nscenario s < model big cluster dgx_h100 plan p >\n", PLAN)),
        ("lib.venus", "use \"main.venus\"\nmodel big : llama2_7b < layers 80 >\nplan p < micro_batch 9 global_batch 9 >\nscenario lib_only < model big cluster dgx_h100 plan p >\n"),
    ]);
    assert_eq!(out.lines(), Vec::<String>::new());
    let [s] = out.scenarios.as_slice() else {
        panic!()
    };
    assert_eq!(s.model.layers.value, 80);
    assert_eq!(s.model.layers.loc.file, FileId(1));
    assert_eq!(s.plan.micro_batch.value, 1);
}

#[test]
fn use_that_cannot_be_read_is_e0107_on_the_path() {
    let out = check_files(&[(
        "main.venus",
        &format!(
            "use \"missing.venus\"\nscenario s < model llama2_7b cluster dgx_h100 plan {PLAN} >\n"
        ),
    )]);
    assert_eq!(
        out.lines(),
        ["E0107 0:1:5 cannot read `missing.venus`: no such file"]
    );
    assert_eq!(out.text_at(out.diags[0].primary.loc), "\"missing.venus\"");
    assert_eq!(out.scenarios.len(), 1);
}

#[test]
fn unused_user_definitions_warn_but_stdlib_and_bases_do_not() {
    let out = check(&format!(
        "model base < hidden 8 layers 2 heads 2 vocab 64 >\nmodel m : base < seq 16 >\nmodel lonely : base < seq 8 >\ngpu g < peak 1TFLOP/s memory 1GiB mem_bw 1GB/s >\nscenario s < model m cluster dgx_h100 plan {PLAN} >\n"
    ));
    assert_eq!(
        out.lines(),
        [
            "W0004 0:3:7 model `lonely` is never used",
            "W0004 0:4:5 gpu `g` is never used"
        ]
    );
    assert_eq!(
        out.diags[0].help.as_deref(),
        Some("reference it from a `scenario` (`model lonely`), or remove it")
    );
    assert_eq!(out.scenarios.len(), 1);
}

#[test]
fn no_scenario_explains_what_is_missing_and_shows_a_block_to_add() {
    let out = check(
        "model a : llama2_7b < hidden 1 >\nmodel b : llama2_7b < hidden 2 >\ncluster c < gpu h100_sxm dim x fc 8 1GB/s >\n",
    );
    // A file of definitions is a library: it checks clean, and E0108 waits for `sim`.
    assert!(out.diags.is_empty(), "{:#?}", out.diags);
    let d = out.no_scenario.as_ref().expect("E0108 kept for selection");
    assert_eq!(
        d.message,
        "no scenario to run: `main.venus` has 2 models, no plan and no `scenario` block"
    );
    assert_eq!(out.line_col(d.primary.loc), (2, 7));
    assert_eq!(d.primary.message, "model 2 of 2");
    assert_eq!(d.help.as_deref(), Some("add a scenario naming the run, e.g. `scenario main < model a cluster c plan < micro_batch 1 global_batch 64 > >`"));
    assert!(out.scenarios.is_empty());
}

#[test]
fn a_library_is_checked_whole_cycles_and_incomplete_leaves_included() {
    let out = check("model a : b < >\nmodel b : a < >\nmodel half < hidden 8 layers 2 >\nmodel base < hidden 8 layers 2 heads 2 >\nmodel full : base < vocab 64 seq 16 >\n");
    assert_eq!(
        out.lines(),
        [
            "E0105 0:1:11 inheritance cycle: model `a` → `b` → `a`",
            "E0103 0:3:7 model `half` is missing required keys `heads`, `vocab`, `seq`",
        ]
    );
    assert!(out.no_scenario.is_some());
}

#[test]
fn empty_root_file_has_no_scenario() {
    let out = check("");
    assert_eq!(out.lines(), ["E0108 0:1:1 no scenario to run: `main.venus` has no model, no cluster, no plan and no `scenario` block"]);
}

#[test]
fn unknown_key_suggests_the_closest_key() {
    let out = check(&format!("model m : llama2_7b < kv_gropus 8 >\nscenario s < model m cluster dgx_h100 plan {PLAN} >\n"));
    assert_eq!(
        out.lines(),
        ["E0101 0:1:23 unknown key `kv_gropus` in model `m`"]
    );
    assert_eq!(
        out.diags[0].help.as_deref(),
        Some("did you mean `kv_groups`?")
    );
    assert!(out.scenarios.is_empty());
}

#[test]
fn unknown_key_without_a_close_match_lists_the_valid_keys() {
    let out = check("scenario s < model llama2_7b cluster dgx_h100 plan < micro_batch 1 global_batch 8 > zzz 1 >\n");
    let d = out.only(Code::E0101);
    assert_eq!(d.message, "unknown key `zzz` in scenario `s`");
    assert_eq!(
        d.help.as_deref(),
        Some("valid keys: `model`, `cluster`, `plan`, `expect`, `allow`, `train`")
    );
}

#[test]
fn duplicate_key_labels_both_occurrences_but_dims_may_repeat() {
    let out = check("scenario s < model llama2_7b cluster dgx_h100 plan < tp 2 micro_batch 1 tp 4 global_batch 8 > >\n");
    assert_eq!(
        out.lines(),
        ["E0102 0:1:73 `tp` is written twice in inline plan"]
    );
    let d = &out.diags[0];
    assert_eq!(out.line_col(d.secondary[0].loc), (1, 54));
    assert_eq!(d.secondary[0].message, "first written here");
    let out = check(&format!("cluster c < gpu h100_sxm dim a fc 2 1GB/s dim a ring 2 1GB/s >\nscenario s < model llama2_7b cluster c plan {PLAN} >\n"));
    assert_eq!(
        out.lines(),
        ["E0102 0:1:47 dim `a` is written twice in cluster `c`"]
    );
}

#[test]
fn missing_required_key_labels_the_definition_and_shows_an_example() {
    let out = check(&format!("model m < hidden 4096 heads 32 vocab 32000 seq 2048 >\nscenario s < model m cluster dgx_h100 plan {PLAN} >\n"));
    assert_eq!(
        out.lines(),
        ["E0103 0:1:7 model `m` is missing required key `layers`"]
    );
    assert_eq!(out.diags[0].help.as_deref(), Some("add `layers 32`"));
    let out = check("scenario s < model llama2_7b cluster dgx_h100 plan < micro_batch 1 global_batch 2 measured < first 1ms last 2ms > > >\n");
    assert_eq!(
        out.lines(),
        ["E0103 0:1:83 `measured` is missing required key `middle`"]
    );
    assert_eq!(out.diags[0].help.as_deref(), Some("add `middle 12ms`"));
}

#[test]
fn wrong_number_of_arguments_shows_the_signature() {
    let out = check(&format!("cluster c < gpu h100_sxm dim a fc 8 >\nscenario s < model llama2_7b cluster c plan {PLAN} >\n"));
    assert_eq!(
        out.lines(),
        ["E0203 0:1:26 `dim` takes 4 to 6 arguments, found 3"]
    );
    assert_eq!(
        out.diags[0].help.as_deref(),
        Some("write it as `dim NAME fc|ring|switch COUNT BANDWIDTH [TIME] [RATIO]`, e.g. `dim nvlink fc 8 450GB/s 1000ns`")
    );
    let out = check(&format!(
        "model m : llama2_7b < hidden 1 2 >\nscenario s < model m cluster dgx_h100 plan {PLAN} >\n"
    ));
    assert_eq!(
        out.lines(),
        ["E0203 0:1:32 `hidden` takes 1 argument, found 2"]
    );
}

#[test]
fn wrong_dimension_names_both_dimensions() {
    let out = check(&format!("cluster c < gpu h100_sxm dim a fc 8 450GB >\nscenario s < model llama2_7b cluster c plan {PLAN} >\n"));
    assert_eq!(
        out.lines(),
        ["E0201 0:1:37 expected bandwidth (e.g. 450GB/s), found bytes 450GB"]
    );
    assert_eq!(
        out.diags[0].help.as_deref(),
        Some("a bandwidth is per second: `450GB/s`")
    );
}

#[test]
fn a_name_where_a_count_is_expected_and_a_number_where_a_name_is_expected() {
    // The parser does not let a count take a name, so `two` starts an item of its own; the
    // checker reports it as the count it stands in for.
    let out = check("scenario s < model llama2_7b cluster < gpu h100_sxm dim a 8 8 1GB/s > plan < tp two micro_batch 1 global_batch 8 > >\n");
    assert_eq!(
        out.lines(),
        [
            "E0201 0:1:59 expected one of `fc`, `ring`, `switch`, found number 8",
            "E0201 0:1:81 expected count (e.g. 8), found name `two`",
        ]
    );
    assert_eq!(out.diags[1].primary.message, "`tp` takes a count");
    // With nothing to stand in for the argument, it is missing.
    let out = check(
        "scenario s < model llama2_7b cluster dgx_h100 plan < micro_batch 1 global_batch > >\n",
    );
    assert_eq!(
        out.lines(),
        ["E0203 0:1:68 `global_batch` takes 1 argument, found 0"]
    );
    // A word after a flag that is not `on` / `off` but looks like a flag value.
    let out = check("scenario s < model llama2_7b cluster dgx_h100 plan < sp yes overlap_p2p On micro_batch 1 global_batch 8 > >\n");
    assert_eq!(
        out.lines(),
        [
            "E0204 0:1:57 unknown flag word `yes`",
            "E0204 0:1:73 unknown flag word `On`"
        ]
    );
    assert_eq!(
        out.diags[0].help.as_deref(),
        Some("write `sp` (or `sp on`) to turn it on, `sp off` to turn it off")
    );
    // A number after a flag is not a flag word.
    let out = check("scenario s < model llama2_7b cluster dgx_h100 plan < sp 1 micro_batch 1 global_batch 8 > >\n");
    assert_eq!(
        out.lines(),
        ["E0201 0:1:57 expected `on` or `off` after the flag `sp`, found number 1"]
    );
    assert_eq!(
        out.diags[0].help.as_deref(),
        Some("write `sp` (or `sp on`) to turn it on, `sp off` to turn it off")
    );
}

#[test]
fn a_list_outside_a_sweep_is_an_error() {
    let out = check("scenario s < model llama2_7b cluster dgx_h100 plan < tp [1 2] micro_batch 1 global_batch 8 > >\n");
    assert_eq!(
        out.lines(),
        ["E0201 0:1:57 lists are only allowed in `venusc sweep`"]
    );
}

#[test]
fn out_of_range_values_show_the_value_and_the_range() {
    let cases = [
        ("tp 0", "`tp` must be at least 1, found `0`"),
        (
            "tp 4.5",
            "`4.5` is not a whole number: `tp` takes a count of 1 or more",
        ),
        (
            "tp 99999999999999999999",
            "`99999999999999999999` is too large for a count (at most 18446744073709551615)",
        ),
        (
            "mfu 150%",
            "`150%` is out of range: a ratio is between 0% and 100%",
        ),
        ("mfu 55", "`55` is out of range: a ratio is between 0 and 1"),
        (
            "bucket_size 20000000TiB",
            "`20000000TiB` is too large: bytes must be below 16EiB",
        ),
    ];
    for (item, message) in cases {
        let out = check(&format!("scenario s < model llama2_7b cluster dgx_h100 plan < {item} micro_batch 1 global_batch 8 > >\n"));
        assert_eq!(
            out.lines(),
            [format!(
                "E0202 0:1:{} {message}",
                54 + item.find(' ').unwrap() + 1
            )],
            "{item}"
        );
    }
    let out = check("scenario s < model llama2_7b cluster dgx_h100 plan < mfu 55 micro_batch 1 global_batch 8 > >\n");
    assert_eq!(
        out.diags[0].help.as_deref(),
        Some("write `55%` for a percentage")
    );
    let out = check("scenario s < model llama2_7b cluster dgx_h100 plan < tp 4.5 micro_batch 1 global_batch 8 > >\n");
    assert_eq!(out.diags[0].help.as_deref(), Some("write `4` or `5`"));
}

#[test]
fn unknown_enum_words_suggest_the_closest_word() {
    let out = check("scenario s < model llama2_7b cluster < gpu h100_sxm dim a rng 8 1GB/s > plan < schedule interleave recompute ful precision fp88 micro_batch 1 global_batch 8 > >\n");
    assert_eq!(
        out.lines(),
        [
            "E0204 0:1:59 unknown topology `rng`",
            "E0204 0:1:89 unknown schedule `interleave`",
            "E0204 0:1:110 unknown recompute mode `ful`",
            "E0204 0:1:124 unknown precision `fp88`",
        ]
    );
    let helps: Vec<_> = out.diags.iter().map(|d| d.help.clone().unwrap()).collect();
    assert_eq!(
        helps[0],
        "did you mean `ring`? (one of `fc`, `ring`, `switch`)"
    );
    assert_eq!(
        helps[1],
        "did you mean `interleaved`? (one of `gpipe`, `1f1b`, `interleaved`, `zb_h1`, `zb_h2`, `dualpipe`, `dualpipev`, `zbv`)"
    );
    assert_eq!(
        helps[2],
        "did you mean `full`? (one of `none`, `selective`, `full`, `op`)"
    );
    assert_eq!(
        helps[3],
        "did you mean `fp8`? (one of `bf16`, `fp8`, `fp4`)"
    );
}

#[test]
fn flags_take_on_or_off() {
    let out = check("scenario s < model llama2_7b cluster dgx_h100 plan < sp off overlap_p2p on micro_batch 1 global_batch 8 > >\n");
    assert_eq!(out.lines(), Vec::<String>::new());
    let p = &out.scenarios[0].plan;
    assert_eq!(
        (
            p.sp.as_ref().unwrap().value,
            p.overlap_p2p.as_ref().unwrap().value
        ),
        (false, true)
    );
}

#[test]
fn bandwidth_in_bits_warns_with_the_bytes_value() {
    let out = check(&format!("cluster c < gpu h100_sxm dim a fc 8 400Gb/s >\nscenario s < model llama2_7b cluster c plan {PLAN} >\n"));
    assert_eq!(
        out.lines(),
        ["W0002 0:1:37 `400Gb/s` is 50GB/s (bits, not bytes)"]
    );
    assert_eq!(out.diags[0].help.as_deref(), Some("write `50GB/s` to state the bandwidth in bytes per second (or `400GB/s` if bytes were meant)"));
    assert_eq!(out.scenarios[0].cluster.dims[0].bandwidth.value.0, 50e9);
}

#[test]
fn units_scale_by_powers_of_1000_and_1024() {
    let out = check(
        "scenario s < model llama2_7b cluster < gpu < peak 1.5PFLOP/s fp8_peak 2000TFLOP/s memory 1.5KiB mem_bw 100Mb/s > dim a fc 1 2KB/s 1.5ms > plan < micro_batch 1 global_batch 1 bucket_size 40MB measured < first 10ms middle 250us last 1s > > >\n",
    );
    let s = &out.scenarios[0];
    let g = &s.cluster.gpu;
    assert_eq!(
        (
            g.peak.value.0,
            g.fp8_peak.as_ref().map_or(0.0, |p| p.value.0),
            g.memory.value.0,
            g.mem_bw.value.0
        ),
        (1.5e15, 2e15, 1536, 12.5e6)
    );
    assert_eq!(s.cluster.dims[0].bandwidth.value.0, 2000.0);
    assert_eq!(s.cluster.dims[0].latency.value.0, 1.5e-3);
    assert_eq!(s.plan.bucket_size.as_ref().unwrap().value.0, 40_000_000);
    let m = s.plan.measured.as_ref().unwrap();
    assert_eq!(
        (m.first.value.0, m.middle.value.0, m.last.value.0),
        (0.01, 0.00025, 1.0)
    );
    assert_eq!(
        out.lines(),
        ["W0002 0:1:104 `100Mb/s` is 12.5MB/s (bits, not bytes)"]
    );
}

#[test]
fn an_error_in_a_shared_definition_is_reported_once() {
    let out = check("gpu g < peak 1GB memory 1GiB mem_bw 1GB/s >\nscenario a < model llama2_7b cluster < gpu g dim x fc 1 1GB/s > plan < micro_batch 1 global_batch 1 > >\nscenario b < model llama2_7b cluster < gpu g dim x fc 1 1GB/s > plan < micro_batch 1 global_batch 1 > >\n");
    assert_eq!(
        out.lines(),
        ["E0201 0:1:14 expected compute rate (e.g. 989TFLOP/s), found bytes 1GB"]
    );
    assert!(out.scenarios.is_empty());
}

#[test]
fn a_number_where_a_reference_or_a_new_name_is_expected() {
    let out = check("scenario s < model llama2_7b cluster < gpu 8 dim 9 fc 8 1GB/s > plan < micro_batch 1 global_batch 8 > >\n");
    assert_eq!(
        out.lines(),
        [
            "E0201 0:1:44 expected gpu name or inline `gpu < ... >` block, found number 8",
            "E0201 0:1:50 expected name, found number 9",
        ]
    );
}

#[test]
fn zero_physical_quantities_are_out_of_range_but_zero_latency_is_not() {
    let out = check(
        "scenario s < model llama2_7b cluster < gpu < peak 0TFLOP/s memory 0GB mem_bw 0GB/s > dim a fc 8 1GB/s 0ns > plan < micro_batch 1 global_batch 8 > >\n",
    );
    assert_eq!(
        out.lines(),
        [
            "E0202 0:1:51 `0TFLOP/s` must be greater than zero",
            "E0202 0:1:67 `0GB` must be greater than zero",
            "E0202 0:1:78 `0GB/s` must be greater than zero",
        ]
    );
}

#[test]
fn long_blocks_and_long_inheritance_chains_resolve_in_linear_time() {
    let start = std::time::Instant::now();
    let mut text = String::from("cluster c0 : dgx_h100 <");
    for i in 0..5_000 {
        text += &format!(" dim d{i} fc 1 1GB/s");
    }
    text += " >\n";
    for i in 1..1_000 {
        text += &format!("cluster c{i} : c{} < nodes {} >\n", i - 1, i % 7 + 1);
    }
    text += "scenario s < model llama2_7b cluster c999 plan < micro_batch 1 global_batch 8 > >\n";
    let out = check(&text);
    assert_eq!(out.lines(), Vec::<String>::new());
    let c = &out.scenarios[0].cluster;
    assert_eq!(c.dims.len(), 5_002);
    assert_eq!(
        c.dims.last().map(|d| (d.name.value.as_str(), d.size.value)),
        Some(("d4999", 999 % 7 + 1))
    );
    assert!(start.elapsed().as_secs() < 10, "took {:?}", start.elapsed());
}

#[test]
fn a_name_followed_by_a_block_is_an_inline_definition_inheriting_the_name() {
    let out = check(&format!(
        "scenario s <\n  model llama2_7b < seq 2048 >\n  cluster dgx_h100 < nodes 4 >\n  plan {PLAN}\n>\n"
    ));
    assert_eq!(out.lines(), Vec::<String>::new());
    let [s] = out.scenarios.as_slice() else {
        panic!("{:?}", out.scenarios)
    };
    assert_eq!(s.cluster.world_size(), 32);
    assert_eq!(s.cluster.gpu.name, "h100_sxm");
    assert_eq!(s.cluster.dims[0].bandwidth.value.0, 450e9);
    // The model keeps every item of `llama2_7b` but `seq`.
    assert_eq!((s.model.hidden.value, s.model.seq.value), (4096, 2048));
}

#[test]
fn a_gpu_written_with_a_block_in_a_cluster_inherits_the_named_gpu() {
    let out = check(&format!(
        "cluster c < gpu h100_sxm < memory 96GiB > dim nvlink fc 8 450GB/s >\nscenario s < model llama2_7b cluster c plan {PLAN} >\n"
    ));
    assert_eq!(out.lines(), Vec::<String>::new());
    let gpu = &out.scenarios[0].cluster.gpu;
    assert_eq!(gpu.memory.value.0, 96 << 30);
    assert_eq!(gpu.mem_bw.value.0, 3350e9);
}

#[test]
fn an_unknown_base_of_an_inline_block_is_one_e0104() {
    let out = check(&format!(
        "scenario s < model llama2_7b cluster dgx_h10 < nodes 4 > plan {PLAN} >\n"
    ));
    assert_eq!(
        out.lines(),
        vec!["E0104 0:1:38 unknown cluster `dgx_h10`".to_string()]
    );
    assert_eq!(
        out.only(Code::E0104).help.as_deref(),
        Some("did you mean `dgx_h100`?")
    );
}

#[test]
fn plain_plan_keys_are_read_from_source_at_their_arguments() {
    let out = check(
        "scenario s < model llama2_7b cluster dgx_h100 plan < micro_batch 1 global_batch 8 schedule zbv grad_dtype bf16 bucket_size 40MiB mfu 50% sp lora_modules linear_qkv linear_fc2 > >\n",
    );
    assert_eq!(out.lines(), Vec::<String>::new());
    let p = &out.scenarios[0].plan;
    let schedule = p.schedule.as_ref().expect("schedule");
    assert_eq!(schedule.value, crate::ty::ScheduleKind::Zbv);
    assert_eq!(out.text_at(schedule.loc), "zbv");
    let dtype = p.grad_dtype.as_ref().expect("grad_dtype");
    assert_eq!(dtype.value, venus_base::base::Dtype::Bf16);
    assert_eq!(out.text_at(dtype.loc), "bf16");
    // A list of words is located at its whole item.
    let lora = p.lora_modules.as_ref().expect("lora_modules");
    assert!(lora.value.qkv && lora.value.fc2 && !lora.value.proj && !lora.value.fc1);
    assert_eq!(out.text_at(lora.loc), "lora_modules linear_qkv linear_fc2");
    let bucket = p.bucket_size.as_ref().expect("bucket_size");
    assert_eq!(bucket.value.0, 40 << 20);
    assert_eq!(out.text_at(bucket.loc), "40MiB");
    assert_eq!(p.mfu.as_ref().map(|r| r.value.0), Some(0.5));
    assert_eq!(p.sp.as_ref().map(|s| s.value), Some(true));
    assert!(p.tp.is_none() && p.recompute.is_none() && p.checkpoint_interval.is_none());
}

#[test]
fn a_count_suffix_where_a_unit_goes_is_one_e0003_from_the_type_checker() {
    // The lexer takes `T` (a count suffix, `15T` tokens), so only `ty` can say it is no unit
    // of bytes.
    let out = check("scenario s < model llama2_7b cluster < gpu < peak 989TFLOP/s memory 80T mem_bw 3350GB/s > dim a fc 8 450GB/s > plan < tp 8 micro_batch 1 global_batch 8 > >\n");
    assert_eq!(out.lines(), ["E0003 0:1:71 unknown unit `T`"]);
    let d = &out.diags[0];
    assert_eq!(d.primary.message, "not a unit");
    assert_eq!(
        d.help.as_deref(),
        Some("did you mean `80TB`? units are case-sensitive")
    );
}

/// Two copies of one typed problem (an item checked once per definition that inherits it).
fn copies_of(problem: crate::ty::problem::TyProblem) -> Vec<Diagnostic> {
    vec![problem.clone().diagnostic(), problem.diagnostic()]
}

#[test]
fn sorting_keeps_one_copy_of_a_problem_and_tells_problems_apart_by_identity_not_message() {
    use crate::ty::problem::{TyProblem, ValueProblem};
    let at = |start: usize| Loc::new(FileId(0), Span::new(start, start + 2));
    let mut d = copies_of(TyProblem::Value(ValueProblem::CountZero {
        key: "tp".into(),
        loc: at(10),
    }));
    sort_diagnostics(&mut d);
    assert_eq!(d.len(), 1);

    // One message, one place, one code, two problems: `tp` written again at 10 after writings
    // at 0 and at 4 (the secondary label differs). Both are kept.
    let twice = |first| TyProblem::WrittenTwice {
        key: "tp",
        what: "`plan`".into(),
        loc: at(10),
        first,
    };
    let mut d = vec![twice(at(0)).diagnostic(), twice(at(4)).diagnostic()];
    assert_eq!(d[0].message, d[1].message);
    sort_diagnostics(&mut d);
    assert_eq!(d.len(), 2);
    let firsts: Vec<Loc> = d.iter().map(|d| d.secondary[0].loc).collect();
    assert_eq!(firsts, [at(0), at(4)]);

    // A diagnostic built without a typed problem is a copy only when equal in every field.
    let untyped =
        |label: &str| Diagnostic::new(Code::E0001, "invalid UTF-8 in source", at(20), label);
    let mut d = vec![
        untyped("byte `ff`"),
        untyped("byte `ff`"),
        untyped("byte `fe`"),
    ];
    sort_diagnostics(&mut d);
    let labels: Vec<&str> = d.iter().map(|d| d.primary.message.as_str()).collect();
    assert_eq!(labels, ["byte `ff`", "byte `fe`"]);
}
