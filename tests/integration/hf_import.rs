//! `venusc import config.json` on HuggingFace configs of each family (written from the model
//! cards, `tests/golden/hf/`): the imported `model` block checks clean, and its parameter count
//! equals the card's total (to 0.5%); the CLI writes the file and lists what it did not map.

use std::path::Path;
use std::process::Command;

/// Total parameters of the model `name` defined in `venus`, as venusc counts them.
fn total_parameters(venus: &str, name: &str) -> u64 {
    let text = format!(
        "{venus}scenario s < model {name} cluster dgx_h100 plan < micro_batch 1 global_batch 8 > >\n"
    );
    let mut session = venusc::Session::new();
    let root = session.load(
        Path::new("imported.venus"),
        text.as_bytes(),
        &mut |p: &Path| Err(format!("no such file `{}`", p.display()).into()),
    );
    let program = session.db().program(root);
    let front_errors: Vec<String> = program
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(|d| format!("{}: {}", d.code, d.message))
        .collect();
    assert!(front_errors.is_empty(), "{front_errors:?}\n{venus}");
    let model = venusc::plan::model_spec(&program.scenarios[0].model);
    let vocab = venusc::plan::derive::padded_vocab(model.vocab, 1);
    venusc::plan::derive::param_counts(&model, vocab, 1).total
}

#[test]
fn each_family_imports_to_its_model_cards_parameter_count() {
    // Meta: 8.03B; Mistral: 46.7B; Qwen: 235B; DeepSeek-V3: 671B (without its MTP module).
    let cards = [
        ("llama31_8b", 8.03e9),
        ("mixtral_8x7b", 46.7e9),
        ("qwen3_235b_a22b", 235e9),
        ("deepseek_v3", 671e9),
        // Nemotron-H 8B: the checkpoint's 8,100,852,736.
        ("nemotron_h_8b", 8.10e9),
        // OpenAI's gpt-oss model card, Table 1: 116.83B and 20.91B (with the biases venusc
        // does not count, 0.04%).
        ("gpt_oss_120b", 116.83e9),
        ("gpt_oss_20b", 20.91e9),
        // Llama 4 Maverick's card: 400B (its text model; the vision encoder is not imported).
        ("llama4_maverick", 400e9),
    ];
    for (file, card) in cards {
        let path = format!("tests/golden/hf/{file}.json");
        let bytes = std::fs::read(&path).unwrap();
        let imported = venusc::emit::import_hf_config(&path, file, &bytes).unwrap();
        let total = total_parameters(&imported.venus, file) as f64;
        let off = (total / card - 1.0).abs();
        assert!(
            off < 0.005,
            "{file}: {total} vs {card} ({:.2}%)\n{}",
            off * 100.0,
            imported.venus
        );
        assert!(
            imported
                .warnings
                .iter()
                .any(|w| w.contains("not mapped, as they do not change")),
            "{file}: {:?}",
            imported.warnings
        );
    }
}

/// GPT-OSS's `layer_types` (sliding, full, sliding, …) is every second layer full, its 128-key
/// window and per-head sinks are written, the pre-training context `initial_context_length`
/// is the sequence, and the MXFP4 and YaRN numerics are listed as having no effect; Qwen3's
/// per-head q/k norms come with its `model_type`.
#[test]
fn gpt_oss_imports_its_window_pattern_sinks_and_training_context() {
    let path = "tests/golden/hf/gpt_oss_120b.json";
    let bytes = std::fs::read(path).unwrap();
    let i = venusc::emit::import_hf_config(path, "gpt_oss_120b", &bytes).unwrap();
    for line in [
        "  hidden 2880  layers 36  heads 64
",
        "  vocab 201088  seq 4096
",
        "  kv_groups 8
",
        "  head_dim 64
",
        "  sliding_window 128  sliding_window_pattern 2
",
        "  attention_sinks
",
        "  experts 128  topk 4
",
        "  moe_ffn 2880
",
    ] {
        assert!(i.venus.contains(line), "{line:?} in\n{}", i.venus);
    }
    assert!(
        i.warnings.iter().any(|w| w.contains("`swiglu_limit`")),
        "{:?}",
        i.warnings
    );
    assert!(
        !i.warnings.iter().any(|w| w.contains("not understood")),
        "{:?}",
        i.warnings
    );
    let qwen = std::fs::read("tests/golden/hf/qwen3_235b_a22b.json").unwrap();
    let q = venusc::emit::import_hf_config("q.json", "q", &qwen).unwrap();
    assert!(
        q.venus.contains(
            "  qk_norm
"
        ),
        "{}",
        q.venus
    );
    assert!(!q.venus.contains("sliding_window"), "{}", q.venus);
}

#[test]
fn the_cli_imports_a_config_json_and_the_written_file_checks_clean() {
    let dir = std::env::temp_dir().join(format!("venusc-hf-{}", std::process::id()));
    let model_dir = dir.join("Qwen3-235B-A22B");
    std::fs::create_dir_all(&model_dir).unwrap();
    std::fs::copy(
        "tests/golden/hf/qwen3_235b_a22b.json",
        model_dir.join("config.json"),
    )
    .unwrap();
    let out = dir.join("qwen.venus");
    let run = Command::new(env!("CARGO_BIN_EXE_venusc"))
        .arg("import")
        .arg(model_dir.join("config.json"))
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert!(stderr.contains("`seq 8192` written"), "{stderr}");
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("model qwen3_235b_a22b <\n"), "{text}");
    assert!(
        text.contains("  experts 128  topk 8\n  moe_ffn 1536\n"),
        "{text}"
    );
    // A library: `check` is clean.
    let check = Command::new(env!("CARGO_BIN_EXE_venusc"))
        .arg("check")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
    // A malformed config names the JSON path of the bad value.
    let bad = dir.join("config.json");
    std::fs::write(&bad, r#"{"model_type": "llama", "hidden_size": -4}"#).unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_venusc"))
        .arg("import")
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&run.stderr).contains("error[E0607]: ")
            && String::from_utf8_lossy(&run.stderr)
                .contains("`$.hidden_size`: expected a positive integer, found -4"),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Llama 4 Maverick's multimodal config: the language model of `text_config` with MoE on every
/// other layer (`interleave_moe_layer_step` 2), one shared expert beside the 128 routed ones,
/// the dense layers' `intermediate_size_mlp`, and the vision encoder named, not mapped; it
/// imports to the stdlib `llama4_maverick`'s keys. DeepSeek-V3's node-limited routing (8
/// groups, 4 per token), its aux-loss-free bias and its sequence-wise balance loss are read.
#[test]
fn llama4_maverick_and_deepseek_v3_import_their_layer_pattern_and_router() {
    let path = "tests/golden/hf/llama4_maverick.json";
    let bytes = std::fs::read(path).unwrap();
    assert!(venusc::emit::is_hf_config(&bytes));
    let i = venusc::emit::import_hf_config(path, "maverick", &bytes).unwrap();
    assert!(
        i.venus.ends_with(
            "model maverick <
  hidden 5120  layers 48  heads 40
  vocab 202048  seq 8192
  kv_groups 8
  swiglu
  experts 128  topk 1
  moe_ffn 8192
  shared_experts 1
  moe_layer_freq 2
  ffn 16384
  untied_embeddings
>
"
        ),
        "{}",
        i.venus
    );
    assert!(
        i.warnings
            .iter()
            .any(|w| w.contains("not part of it: `boi_token_index`, `eoi_token_index`, `image_token_index`, `vision_config`")),
        "{:?}",
        i.warnings
    );
    assert!(
        i.warnings.iter().any(|w| w
            .contains("not modelled by venusc (they may change time or memory): `no_rope_layers`")),
        "{:?}",
        i.warnings
    );
    assert!(
        !i.warnings.iter().any(|w| w.contains("not understood")),
        "{:?}",
        i.warnings
    );
    assert_eq!(total_parameters(&i.venus, "maverick"), 400_713_000_960);
    let v3 = std::fs::read("tests/golden/hf/deepseek_v3.json").unwrap();
    let d = venusc::emit::import_hf_config("v3.json", "v3", &v3).unwrap();
    for line in [
        "  routed_groups 8  topk_groups 4\n",
        "  expert_bias\n",
        "  load_balancing seq_aux_loss\n",
    ] {
        assert!(d.venus.contains(line), "{line:?} in\n{}", d.venus);
    }
    assert!(
        !d.warnings
            .iter()
            .any(|w| w.contains("`n_group`") || w.contains("`moe_layer_freq`")),
        "{:?}",
        d.warnings
    );
}
