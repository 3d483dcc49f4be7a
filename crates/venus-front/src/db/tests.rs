//! The database: inputs, `use` loading, incrementality.

use std::path::{Path, PathBuf};

use salsa::plumbing::AsId;

use super::*;
use venus_diag::diag::Code;

const MAIN: &str =
    "scenario s < model llama2_7b cluster dgx_h100 plan < tp 8 micro_batch 1 global_batch 16 > >\n";

fn codes(p: &Program) -> Vec<(Code, String, u32)> {
    p.diagnostics
        .iter()
        .map(|d| (d.code, d.message.clone(), d.primary.loc.file.0))
        .collect()
}

#[test]
fn editing_a_user_file_reruns_no_stdlib_query() {
    let mut db = Database::new();
    let root = db.set_file(Path::new("main.venus"), MAIN.as_bytes());
    let first = db.program(root);
    assert_eq!(first.scenarios.len(), 1, "{:#?}", first.diagnostics);
    let stdlib_ids: Vec<salsa::Id> = db.stdlib().files(&db).iter().map(|f| f.as_id()).collect();
    let before = db.take_executed();
    // The first run did parse the stdlib, so the check below can see such events.
    assert!(
        before
            .iter()
            .any(|(q, id)| q == "parse_file" && stdlib_ids.contains(id)),
        "{before:?}"
    );
    assert!(before.iter().any(|(q, _)| q == "prelude"));

    db.set_file(
        Path::new("main.venus"),
        MAIN.replace("tp 8", "tp 4").as_bytes(),
    );
    let second = db.program(root);
    assert_eq!(second.scenarios[0].plan.tp(), 4);
    let after = db.take_executed();
    assert!(
        after
            .iter()
            .any(|(q, id)| q == "parse_file" && *id == db.by_id[root.0 as usize].as_id()),
        "{after:?}"
    );
    let on_stdlib: Vec<_> = after
        .iter()
        .filter(|(q, id)| q == "prelude" || stdlib_ids.contains(id))
        .collect();
    assert_eq!(on_stdlib, Vec::<&(String, salsa::Id)>::new());
}

#[test]
fn the_embedded_stdlib_parses_and_defines_the_names_tests_rely_on() {
    let mut db = Database::new();
    let root = db.set_file(Path::new("main.venus"), MAIN.as_bytes());
    let p = db.program(root);
    assert_eq!(codes(&p), vec![]);
    for (kind, name) in [
        (DefKind::Gpu, "h100_sxm"),
        (DefKind::Model, "llama2_7b"),
        (DefKind::Cluster, "dgx_h100"),
    ] {
        assert!(
            p.definitions
                .iter()
                .any(|d| d.kind == kind && d.name.as_deref() == Some(name) && d.stdlib),
            "{name}"
        );
    }
    assert_eq!(db.file_name(FileId(0)), "<stdlib>/gpus.venus");
    assert!(db.is_stdlib(FileId(2)) && !db.is_stdlib(root));
}

#[test]
fn uses_are_relative_to_the_using_file_and_loaded_by_the_driver() {
    let mut db = Database::new();
    let root = db.set_file(
        Path::new("proj/runs/./main.venus"),
        b"use \"../lib/models.venus\"\nscenario s < model big cluster dgx_h100 plan < micro_batch 1 global_batch 8 > >\n",
    );
    assert_eq!(db.file_name(root), "proj/runs/main.venus");
    assert_eq!(
        db.unresolved_uses(root),
        [PathBuf::from("proj/lib/models.venus")]
    );
    let p = db.program(root);
    assert_eq!(
        codes(&p)[0],
        (
            Code::E0107,
            "cannot read `../lib/models.venus`: `proj/lib/models.venus` was not loaded".into(),
            root.0
        )
    );

    let lib = db.set_file(
        Path::new("proj/lib/models.venus"),
        b"use \"common/gpus.venus\"\nmodel big : llama2_7b < layers 80 >\n",
    );
    assert_eq!(
        db.unresolved_uses(root),
        [PathBuf::from("proj/lib/common/gpus.venus")]
    );
    db.set_file(
        Path::new("proj/lib/common/gpus.venus"),
        b"gpu spare < peak 1TFLOP/s memory 1GB mem_bw 1GB/s >\n",
    );
    assert_eq!(db.unresolved_uses(root), Vec::<PathBuf>::new());
    let p = db.program(root);
    // `spare` is part of a used library: only the root's own definitions warn W0004.
    assert_eq!(codes(&p), []);
    assert_eq!(p.scenarios[0].model.layers.value, 80);
    assert_eq!(p.files, [root, lib, FileId(lib.0 + 1)]);
    // Go-to-definition: `big` in the root points at its definition in the used file.
    let at = db.file_text(root).find("big").unwrap() as u32;
    let r = p.reference_at(root, at + 1).unwrap();
    assert_eq!((r.target.file, r.kind), (lib, DefKind::Model));
    assert_eq!(
        p.definition_named_at(r.target)
            .and_then(|d| d.name.clone())
            .as_deref(),
        Some("big")
    );
}

#[test]
fn an_unreadable_use_is_e0107_with_the_drivers_reason() {
    let mut db = Database::new();
    let root = db.set_file(
        Path::new("main.venus"),
        format!("use \"gone.venus\"\n{MAIN}").as_bytes(),
    );
    db.set_unreadable(
        Path::new("gone.venus"),
        String::from("No such file or directory (os error 2)"),
    );
    assert_eq!(db.unresolved_uses(root), Vec::<PathBuf>::new());
    let p = db.program(root);
    assert_eq!(
        codes(&p),
        [(
            Code::E0107,
            "cannot read `gone.venus`: No such file or directory (os error 2)".into(),
            root.0
        )]
    );
    assert_eq!(
        p.diagnostics[0].primary.loc.span,
        venus_diag::diag::Span::new(4, 16)
    );
    // Loading it later clears the error.
    db.set_file(Path::new("gone.venus"), b"# empty\n");
    assert_eq!(codes(&db.program(root)), vec![]);
}

#[test]
fn a_use_cycle_loads_each_file_once() {
    let mut db = Database::new();
    let a = db.set_file(
        Path::new("a.venus"),
        format!("use \"b.venus\"\nmodel ma : mb < >\n{MAIN}")
            .replace("llama2_7b", "ma")
            .as_bytes(),
    );
    let b = db.set_file(
        Path::new("b.venus"),
        b"use \"a.venus\"\nmodel mb : llama2_7b < seq 1024 >\n",
    );
    assert_eq!(db.unresolved_uses(a), Vec::<PathBuf>::new());
    let p = db.program(a);
    assert_eq!(codes(&p), vec![]);
    assert_eq!(p.files, [a, b]);
    assert_eq!(p.scenarios[0].model.seq.value, 1024);
}

#[test]
fn a_used_file_with_syntax_errors_is_one_e0107_with_an_escaped_line_of_it() {
    let mut db = Database::new();
    let root = db.set_file(
        Path::new("main.venus"),
        format!("use \"bad.venus\"\n{MAIN}").as_bytes(),
    );
    let secret = format!("root:x:0:0:\u{1b}[31m{}\n", "y".repeat(200));
    let bad = db.set_file(
        Path::new("bad.venus"),
        format!("{secret}second:secret:line\nthird:secret:line\n").as_bytes(),
    );
    let p = db.program(root);
    // Only the E0107 at the `use`: none of the used file's own diagnostics.
    assert!(p.diagnostics.iter().all(|d| d.primary.loc.file != bad));
    let e0107: Vec<_> = p
        .diagnostics
        .iter()
        .filter(|d| d.code == Code::E0107)
        .collect();
    assert_eq!(e0107.len(), 1, "{:#?}", p.diagnostics);
    assert_eq!(e0107[0].message, "`bad.venus` has syntax errors");
    assert_eq!(e0107[0].primary.loc.file, root);
    assert!(e0107[0].notes[0].starts_with("first error, at bad.venus:1:"));
    let snippet = &e0107[0].notes[1];
    assert!(
        snippet.starts_with("1 | root:x:0:0:\\u{1b}[31m"),
        "{snippet}"
    );
    // At most 80 characters of the line are shown (the escape counts its width), then `…`.
    assert_eq!(snippet.chars().count(), "1 | ".len() + 80 + 1);
    let all = format!("{:?}", p.diagnostics);
    assert!(!all.contains("second:secret") && !all.contains('\u{1b}'));
    assert_eq!(
        e0107[0].help.as_deref(),
        Some("fix `bad.venus`: `venusc check bad.venus` shows all of its errors")
    );
}

#[test]
fn diagnostics_are_sorted_by_file_and_position() {
    let mut db = Database::new();
    let root = db.set_file(
        Path::new("main.venus"),
        b"model b < hidden 1 >\nmodel a < hidden 1 >\nplan p < >\nmodel c < hiden 1 >\n",
    );
    let p = db.program(root);
    let positions: Vec<_> = p
        .diagnostics
        .iter()
        .map(|d| (d.primary.loc.file, d.primary.loc.span.start))
        .collect();
    let mut sorted = positions.clone();
    sorted.sort();
    assert_eq!(positions, sorted);
    // Incomplete leaves (E0103) and the misspelt key (E0101), in file order; E0108 is kept
    // for selection, since a file of definitions is a library.
    assert_eq!(
        p.diagnostics.iter().map(|d| d.code).collect::<Vec<_>>(),
        [
            Code::E0103,
            Code::E0103,
            Code::E0103,
            Code::E0103,
            Code::E0101
        ]
    );
    assert_eq!(p.no_scenario.as_ref().map(|d| d.code), Some(Code::E0108));
}

#[test]
fn updating_a_path_keeps_its_id_and_bad_bytes_are_reported() {
    let mut db = Database::new();
    let root = db.set_file(Path::new("main.venus"), MAIN.as_bytes());
    let again = db.set_file(Path::new("./main.venus"), b"model m < \xff >\n");
    assert_eq!(root, again);
    let p = db.program(root);
    assert!(
        p.diagnostics.iter().any(|d| d.code == Code::E0001),
        "{:#?}",
        p.diagnostics
    );
    assert!(p.scenarios.is_empty());
}

#[test]
fn normalize_folds_dots_lexically() {
    assert_eq!(
        normalize(Path::new("a/./b/../c.venus")),
        PathBuf::from("a/c.venus")
    );
    assert_eq!(
        normalize(Path::new("../x/../../y.venus")),
        PathBuf::from("../../y.venus")
    );
    assert_eq!(normalize(Path::new("/a/../../b")), PathBuf::from("/b"));
}

#[test]
fn selecting_a_scenario_by_name_or_the_only_one() {
    let mut db = Database::new();
    let two = MAIN.to_string()
        + &MAIN
            .replace("scenario s", "scenario t")
            .replace("tp 8", "tp 2");
    let root = db.set_file(Path::new("main.venus"), two.as_bytes());
    let p = db.program(root);
    assert_eq!(p.select_scenario(Some("t")).map(|s| s.plan.tp()), Ok(2));
    let none = p.select_scenario(None).unwrap_err().unwrap();
    assert_eq!(
        (none.code, none.message.as_str()),
        (Code::E0108, "2 scenarios and none chosen")
    );
    assert_eq!(
        none.help.as_deref(),
        Some("pass `--scenario s` (one of `s`, `t`)")
    );
    let typo = p.select_scenario(Some("u")).unwrap_err().unwrap();
    assert_eq!(
        (typo.message.as_str(), typo.help.as_deref()),
        ("no scenario named `u`", Some("did you mean `s`?"))
    );
    db.set_file(Path::new("main.venus"), MAIN.as_bytes());
    assert_eq!(
        db.program(root)
            .select_scenario(None)
            .map(|s| s.name.clone()),
        Ok("s".to_string())
    );
}

#[test]
fn an_unknown_unit_is_reported_once_by_the_parser_not_again_by_ty() {
    let mut db = Database::new();
    let root = db.set_file(
        Path::new("main.venus"),
        b"scenario s < model llama2_7b cluster < gpu < peak 1PFLOP/s memory 80gib mem_bw 1TB/s > dim a fc 1 1GB/s > plan < micro_batch 1 global_batch 1 > >\n",
    );
    let p = db.program(root);
    assert_eq!(
        codes(&p),
        [(Code::E0003, "unknown unit `gib`".into(), root.0)]
    );
    assert_eq!(
        p.diagnostics[0].primary.loc.span,
        venus_diag::diag::Span::new(68, 71)
    );
    // The parser's version (with its help) is the one kept.
    assert_eq!(p.diagnostics[0].primary.message, "unknown unit");
    assert!(p.scenarios.is_empty());
}

#[test]
fn every_stdlib_definition_type_checks() {
    let mut db = Database::new();
    let root = db.set_file(Path::new("probe.venus"), MAIN.as_bytes());
    let defs = db.program(root).definitions.clone();
    let mut text = String::new();
    let plan = "plan < micro_batch 1 global_batch 8 >";
    for (i, d) in defs.iter().filter(|d| d.stdlib).enumerate() {
        let name = d.name.as_deref().unwrap_or_default();
        let (model, cluster) = match d.kind {
            DefKind::Model => (name.to_string(), "dgx_h100".to_string()),
            DefKind::Cluster => ("llama2_7b".to_string(), name.to_string()),
            DefKind::Gpu => (
                "llama2_7b".to_string(),
                format!("< gpu {name} dim x fc 1 1GB/s >"),
            ),
            _ => continue,
        };
        text += &format!("scenario s{i} < model {model} cluster {cluster} {plan} >\n");
    }
    db.set_file(Path::new("probe.venus"), text.as_bytes());
    let p = db.program(root);
    assert_eq!(codes(&p), vec![]);
    let kinds = |k: DefKind| defs.iter().filter(|d| d.stdlib && d.kind == k).count();
    assert_eq!(
        p.scenarios.len(),
        kinds(DefKind::Model) + kinds(DefKind::Cluster) + kinds(DefKind::Gpu)
    );
}

/// The parameter count of a stdlib model (tp 1: the vocabulary padded to a multiple of 128).
fn stdlib_params(name: &str) -> venus_plan::plan::ParamCounts {
    let mut db = Database::new();
    let text = format!(
        "scenario s < model {name} cluster dgx_h100 plan < micro_batch 1 global_batch 8 > >\n"
    );
    let root = db.set_file(Path::new("probe.venus"), text.as_bytes());
    let p = db.program(root);
    assert_eq!(codes(&p), vec![], "{name}");
    let m = crate::validate::to_plan::model(&p.scenarios[0].model);
    let vocab = venus_plan::plan::derive::padded_vocab(m.vocab, 1);
    venus_plan::plan::derive::param_counts(&m, vocab, 1)
}

/// Each stdlib model's total parameters against its model card or paper, to 0.5%. Totals are
/// the model's own parameters: embedding, layers, final norm, output layer; not the MTP modules
/// (DeepSeek-V3's 671B excludes its 14B MTP module, as venusc's `total` does).
#[test]
fn stdlib_models_match_the_published_totals() {
    let cards: &[(&str, f64)] = &[
        // Meta's model cards (exact counts of the released checkpoints).
        ("llama3_8b", 8.03e9),
        ("llama3_70b", 70.55e9),
        ("llama3_405b", 405.85e9),
        ("llama31_8b", 8.03e9),
        ("llama31_70b", 70.55e9),
        ("llama31_405b", 405.85e9),
        ("llama2_7b", 6.74e9),
        ("llama2_13b", 13.02e9),
        ("llama2_70b", 68.98e9),
        // DeepSeek-V2-Lite model card 15.7B; DeepSeek-V3 paper 671B.
        ("deepseek_v2_lite", 15.7e9),
        ("deepseek_v3", 671e9),
        // Qwen3 model cards: 8.2B, 32.8B, 30.5B, 235B.
        ("qwen3_8b", 8.2e9),
        ("qwen3_32b", 32.8e9),
        ("qwen3_30b_a3b", 30.5e9),
        ("qwen3_235b_a22b", 235e9),
        // Mixtral paper: 46.7B (8x7B); Mistral's announcement: 141B (8x22B).
        ("mixtral_8x7b", 46.7e9),
        ("mixtral_8x22b", 141e9),
        // Nemotron-H 8B: the checkpoint's 8,100,852,736. (The 56B card states only the
        // rounded "56B"; its config counts 56.32B, checked exactly in
        // `nemotron_h_counts_each_layer_by_its_pattern_symbol`.)
        ("nemotron_h_8b", 8.10e9),
        // OpenAI's gpt-oss model card, Table 1: 116.83B and 20.91B.
        ("gpt_oss_120b", 116.83e9),
        ("gpt_oss_20b", 20.91e9),
    ];
    for &(name, card) in cards {
        let total = stdlib_params(name).total as f64;
        let off = (total / card - 1.0).abs();
        assert!(
            off < 0.005,
            "{name}: {total} vs {card} ({:.2}%)",
            off * 100.0
        );
    }
}

/// Active parameters per token: all but the routed experts a token is not sent to, the
/// embedding row and the output layer included (the convention of the Mixtral and Qwen3
/// cards). DeepSeek's cards leave the input embedding out: DeepSeek-V3's 37.55B less its
/// 0.93B embedding is the card's 37B (36.6B), DeepSeek-V2-Lite's 2.66B less 0.21B is 2.45B
/// (the card's 2.4B).
#[test]
fn active_parameters_match_the_model_cards() {
    let b = |n: u64| n as f64 / 1e9;
    let v3 = stdlib_params("deepseek_v3");
    // By hand: a MoE layer is 171,966,464 (MLA up and output projections) + 15,140,864 (MLA
    // down projections and latent norms) + 44,040,192 (shared expert) + 256 × 44,040,192
    // (routed) + 1,835,008 (router) + 28,672 (norms) = 11,507,300,352; a dense layer
    // 583,497,728 (its MLP 3 × 7168 × 18432); 58 + 3 of them, two 129,280 × 7168 embeddings
    // and the final norm: 671,027,286,016.
    assert_eq!(v3.total, 671_027_286_016);
    // 8 of the 256 experts per token: 585,332,736 per MoE layer.
    assert_eq!(v3.active, 37_553_164_288);
    assert_eq!((b(v3.active - v3.embedding)).round(), 37.0);
    // One MTP depth: a MoE layer (11.5B) and the 2h × h projection, sharing the embedding.
    assert_eq!(v3.mtp, 11_610_103_808);
    let lite = stdlib_params("deepseek_v2_lite");
    let lite_active = b(lite.active - lite.embedding);
    assert!((lite_active - 2.4).abs() / 2.4 < 0.025, "{lite_active}");
    for (name, card) in [
        ("mixtral_8x7b", 12.9),
        ("qwen3_30b_a3b", 3.3),
        ("qwen3_235b_a22b", 22.0),
        ("llama4_scout", 17.0),
        ("llama4_maverick", 17.0),
    ] {
        let active = b(stdlib_params(name).active);
        assert!(
            (active - card).abs() / card < 0.02,
            "{name}: {active}B vs {card}B"
        );
    }
    // Dense models use every parameter.
    let dense = stdlib_params("qwen3_8b");
    assert_eq!(dense.active, dense.total);
}

/// Nemotron-H 8B by hand (RMSNorm pre-norms of h, no biases): a Mamba-2 layer is the norm
/// 4096 + in_proj 4096 × (2·8192 + 2·8·128 + 128) = 76,021,760 + conv1d 10,240 × (4 + 1) +
/// dt_bias, A_log, D 3 × 128 + the gated norm 8192 + out_proj 8192 × 4096 = 109,640,064; an
/// attention layer 4096 + 2·4096·4096 + 2·4096·1024 = 41,947,136; an MLP layer 4096 +
/// 2·4096·21504 = 176,164,864; 24 + 4 + 24 of them, two 131,072 × 4096 embeddings and the final
/// norm: 8,100,852,736, the checkpoint's count.
#[test]
fn nemotron_h_counts_each_layer_by_its_pattern_symbol() {
    let p = stdlib_params("nemotron_h_8b");
    let hp = p.hybrid.expect("a hybrid model");
    assert_eq!(hp.mamba.total(), 109_640_064);
    assert_eq!(hp.attention.total(), 41_947_136);
    assert_eq!(hp.mlp.total(), 176_164_864);
    assert_eq!(p.total, 8_100_852_736);
    assert_eq!(p.active, p.total);
    let big = stdlib_params("nemotron_h_56b");
    assert_eq!(big.total, 56_324_350_464);
}

/// GPT-OSS by hand: attention 2·2880·4096 + 2·2880·512 = 26,542,080 plus 64 sinks; 128
/// experts of 3·2880·2880 = 24,883,200; the router 2880·128; norms 4·2880: 3,211,971,904 per
/// layer, 36 layers and two 201,088 × 2880 embeddings with the final norm: 116,789,261,184
/// (the card's 116.83B less the biases it counts). The card's active counts leave out the
/// input embedding: 4 experts per token make 5,131,522,944 without it (the card's 5.13B), and
/// 3,614,061,696 for the 20b (3.61B).
#[test]
fn gpt_oss_counts_its_sinks_and_matches_the_cards_active_parameters() {
    let big = stdlib_params("gpt_oss_120b");
    assert_eq!(big.per_layer.attention, 26_542_080 + 64);
    assert_eq!(big.per_layer.total(), 3_211_971_904);
    assert_eq!(big.total, 116_789_261_184);
    assert_eq!(big.active - big.embedding, 5_131_522_944);
    let b = |n: u64| n as f64 / 1e9;
    for (p, card) in [(big, 5.13), (stdlib_params("gpt_oss_20b"), 3.61)] {
        let active = b(p.active - p.embedding);
        assert!((active / card - 1.0).abs() < 0.005, "{active}B vs {card}B");
    }
}

/// QK-norm adds a query and a key norm over one head (weight and bias, 4 × head_dim) to each
/// layer; Qwen3-8B's 36 layers of head_dim 128 add 18,432 parameters.
#[test]
fn qk_norm_adds_two_head_sized_norms_per_layer() {
    let with = stdlib_params("qwen3_8b");
    let mut db = Database::new();
    let text = "model q : qwen3_8b < qk_norm off >
scenario s < model q cluster dgx_h100 plan < micro_batch 1 global_batch 8 > >
";
    let root = db.set_file(Path::new("probe.venus"), text.as_bytes());
    let p = db.program(root);
    assert_eq!(codes(&p), vec![]);
    let m = crate::validate::to_plan::model(&p.scenarios[0].model);
    let without = venus_plan::plan::derive::param_counts(
        &m,
        venus_plan::plan::derive::padded_vocab(m.vocab, 1),
        1,
    );
    assert_eq!(with.total - without.total, 36 * 4 * 128);
}

/// Kimi K2 and Llama 4 Scout are counted from their config.json; their headline totals count
/// more than the text model of the config: Kimi K2's paper gives 1.04T (the config's 61 layers
/// give 1.026T, 1.3% less), Llama 4 Scout's card 109B with its vision encoder (107.8B text).
#[test]
fn kimi_k2_and_llama4_scout_count_their_configs() {
    let kimi = stdlib_params("kimi_k2");
    assert!(
        (kimi.total as f64 / 1.026e12 - 1.0).abs() < 0.001,
        "{}",
        kimi.total
    );
    assert!(
        (kimi.active as f64 / 32.86e9 - 1.0).abs() < 0.001,
        "{}",
        kimi.active
    );
    let scout = stdlib_params("llama4_scout");
    assert!(
        (scout.total as f64 / 107.77e9 - 1.0).abs() < 0.001,
        "{}",
        scout.total
    );
}

/// Llama 4 Maverick by hand: attention 2·5120·5120 + 2·5120·1024 = 62,914,560 and norms
/// 4·5120 in every layer; 24 dense layers of the 3·5120·16384 = 251,658,240 MLP; 24 MoE layers
/// (`moe_layer_freq 2`) of 128 routed experts and one shared expert of 3·5120·8192 =
/// 125,829,120 each and the 5120 × 128 router; two embeddings of the vocabulary padded to a
/// multiple of 128 (202,112 × 5120) and the final norm: 400,713,000,960, within 0.5% of the
/// card's 400B. One routed expert per token: the active count is 17,185,843,200, the card's
/// 17B (rounded to a whole billion).
#[test]
fn llama4_maverick_counts_its_interleaved_moe_layers() {
    let p = stdlib_params("llama4_maverick");
    let dense_layer = 62_914_560 + 4 * 5120 + 251_658_240u64;
    let moe_layer = 62_914_560 + 4 * 5120 + 129 * 125_829_120 + 5120 * 128u64;
    let embeddings = 2 * 202_112 * 5120u64;
    // The final norm: weight and bias.
    let total = 24 * dense_layer + 24 * moe_layer + embeddings + 2 * 5120;
    assert_eq!(p.total, total);
    assert_eq!(p.total, 400_713_000_960);
    assert!((p.total as f64 / 400e9 - 1.0).abs() < 0.005, "{}", p.total);
    let active = total - 24 * 127 * 125_829_120;
    assert_eq!(p.active, active);
    assert_eq!(p.active, 17_185_843_200);
    assert_eq!((p.active as f64 / 1e9).round(), 17.0);
    // Scout's layers are all MoE; Maverick's every other one.
    assert_eq!(p.per_layer.experts, 128 * 125_829_120);
}
