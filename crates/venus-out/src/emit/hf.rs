//! `venusc import config.json`: a HuggingFace `config.json` → a `.venus` `model` block.
//!
//! Input: the config's name (for messages and the model's name) and its bytes. Output:
//! [`Imported`]: the `.venus` text (one `model` definition, a library to `use`) and warnings:
//! every key of the config is either mapped, or named in a warning as one that does not
//! change training time or memory, or named as not understood. Nothing is dropped silently.
//! Families: Llama, Mistral, Mixtral, Qwen2/3, Qwen2/3-MoE, DeepSeek-V2/V3, Nemotron-H, GPT-OSS,
//! Llama 4 (the `text_config` of `Llama4ForConditionalGeneration`)
//! (the keys of `transformers`' `LlamaConfig`, `MixtralConfig`, `Qwen3MoeConfig`,
//! `DeepseekV3Config`, `NemotronHConfig`, `GptOssConfig`).
//! Invariants: a malformed value is an [`ImportError`] naming its JSON path (`$.hidden_size`);
//! the training sequence length, which a config does not hold, is written with a warning.

use std::fmt::Write as _;

use serde_json::{Map, Value};

use super::import::{ImportError, ImportErrorKind, Imported};

/// The sequence length written when the config's context is longer: `config.json` holds the
/// longest context the model supports (`max_position_embeddings`, 131,072 for Llama 3.1), not
/// the length it is trained at; 8,192 is Llama 3's and Qwen3's pre-training length.
const DEFAULT_SEQ: u64 = 8192;

/// Keys that do not change a training iteration's time or memory in venusc's model (numerics,
/// tokenizer ids, inference settings, bookkeeping): listed in one warning, not mapped.
const NO_EFFECT: &[&str] = &[
    "architectures",
    "model_type",
    "_name_or_path",
    "transformers_version",
    "torch_dtype",
    "bos_token_id",
    "eos_token_id",
    "pad_token_id",
    "rms_norm_eps",
    "layer_norm_eps",
    "initializer_range",
    "rope_theta",
    "rope_scaling",
    "attention_dropout",
    "hidden_dropout",
    "use_cache",
    "pretraining_tp",
    "mlp_bias",
    "attention_bias",
    "hidden_act",
    "router_aux_loss_coef",
    "output_router_logits",
    "norm_topk_prob",
    "scoring_func",
    "routed_scaling_factor",
    "quantization_config",
    "qkv_bias",
    "use_qk_norm",
    "rope_interleave",
    "auto_map",
    // Nemotron-H numerics and kernel choices.
    "layer_norm_epsilon",
    "residual_in_fp32",
    "use_bias",
    "use_conv_bias",
    "mamba_hidden_act",
    "chunk_size",
    // GPT-OSS: the SwiGLU clamp (numerics).
    "swiglu_limit",
    // Llama 4: attention temperature tuning (numerics) and loader settings.
    "attn_temperature_tuning",
    "attn_scale",
    "floor_scale",
    "for_llm_compressor",
    "_attn_implementation_autoset",
];

/// Keys venusc does not model but that can change time or memory (group-limited routing,
/// sliding windows, layer patterns): listed in their own warning.
const NOT_MODELLED: &[&str] = &[
    "max_window_layers",
    "decoder_sparse_step",
    "mlp_only_layers",
    "moe_layer_freq",
    "ep_size",
    "router_jitter_noise",
    // Llama 4's NoPE layers: no rotary embedding on every fourth layer's q and k.
    "no_rope_layers",
];

/// Counts a config may set to 0 (none of the thing): dense first layers, shared experts, MTP
/// depths.
const ZERO_ALLOWED: &[&str] = &[
    "first_k_dense_replace",
    "n_shared_experts",
    "num_nextn_predict_layers",
];

/// Whether `bytes` look like a HuggingFace model config (a JSON object with `hidden_size` and
/// `model_type` or `architectures`), as opposed to VenusSim's `llm-sim-config.json`.
pub fn is_hf_config(bytes: &[u8]) -> bool {
    let Ok(Value::Object(root)) = serde_json::from_slice::<Value>(bytes) else {
        return false;
    };
    let text = root.get("text_config").and_then(Value::as_object);
    (root.contains_key("hidden_size") || text.is_some_and(|t| t.contains_key("hidden_size")))
        && (root.contains_key("model_type") || root.contains_key("architectures"))
}

/// Imports a `config.json`; `name` is the model's name in the `.venus` file.
pub fn import_hf_config(file: &str, name: &str, bytes: &[u8]) -> Result<Imported, ImportError> {
    let root: Value =
        serde_json::from_slice(bytes).map_err(|e| malformed(file, format!("invalid JSON: {e}")))?;
    let root = root
        .as_object()
        .ok_or_else(|| malformed(file, "the top level is not a JSON object".into()))?;
    let mut warnings = Vec::new();
    let text = text_config(file, root, &mut warnings)?;
    let root = text.as_ref().unwrap_or(root);
    let cfg = Config { file, root };
    let mut used: Vec<&str> = Vec::new();
    let mut items: Vec<String> = Vec::new();
    let get = |key: &'static str, used: &mut Vec<&str>| -> Result<Option<u64>, ImportError> {
        used.push(key);
        cfg.count(key)
    };

    let hidden = get("hidden_size", &mut used)?.ok_or_else(|| cfg.missing("hidden_size"))?;
    let layers =
        get("num_hidden_layers", &mut used)?.ok_or_else(|| cfg.missing("num_hidden_layers"))?;
    let heads =
        get("num_attention_heads", &mut used)?.ok_or_else(|| cfg.missing("num_attention_heads"))?;
    let vocab = get("vocab_size", &mut used)?.ok_or_else(|| cfg.missing("vocab_size"))?;
    items.push(format!("hidden {hidden}  layers {layers}  heads {heads}"));

    let context = get("max_position_embeddings", &mut used)?;
    // GPT-OSS states the context it was pre-trained at (`initial_context_length`, 4,096;
    // the longer one comes from YaRN `rope_scaling`): that is the training length.
    let initial = get("initial_context_length", &mut used)?;
    let seq = match context {
        _ if initial.is_some() => initial.unwrap_or(DEFAULT_SEQ),
        Some(c) if c <= DEFAULT_SEQ => c,
        Some(c) => {
            warnings.push(format!(
                "{file}: `seq {DEFAULT_SEQ}` written: the config gives the longest context \
                 ({c} tokens, `max_position_embeddings`), not the training length; set `seq` \
                 for your run"
            ));
            DEFAULT_SEQ
        }
        None => {
            warnings.push(format!(
                "{file}: `seq {DEFAULT_SEQ}` written: the config has no `max_position_embeddings`"
            ));
            DEFAULT_SEQ
        }
    };
    items.push(format!("vocab {vocab}  seq {seq}"));

    let kv = get("num_key_value_heads", &mut used)?;
    let mla = get("kv_lora_rank", &mut used)?;
    if let Some(kv) = kv.filter(|&kv| kv != heads && mla.is_none()) {
        items.push(format!("kv_groups {kv}"));
    }
    if let Some(d) = get("head_dim", &mut used)?.filter(|&d| heads == 0 || d != hidden / heads) {
        items.push(format!("head_dim {d}"));
    }

    attention_variants(&cfg, &mut used, &mut items, &mut warnings)?;

    // The MLP: gated SiLU (SwiGLU) for every family here but Nemotron-H, whose
    // `mlp_hidden_act` is squared ReLU (a plain MLP); `intermediate_size` is the dense FFN
    // (and, in Mixtral, each expert's).
    used.push("mlp_hidden_act");
    let act = cfg.string("mlp_hidden_act").or(cfg.string("hidden_act"));
    match act {
        Some("silu") | Some("swish") | None => items.push("swiglu".into()),
        Some(other) => warnings.push(format!(
            "{file}: `hidden_act` {other:?} is not a gated SiLU: written as a plain MLP"
        )),
    }
    let ffn = get("intermediate_size", &mut used)?;
    let experts = first_count(
        &cfg,
        &mut used,
        &["num_local_experts", "num_experts", "n_routed_experts"],
    )?;
    let topk = get("num_experts_per_tok", &mut used)?;
    // GPT-OSS repeats the top-k as `experts_per_token`.
    let repeated = get("experts_per_token", &mut used)?;
    if repeated.is_some() && topk.is_some() && repeated != topk {
        warnings.push(format!(
            "{file}: `experts_per_token` differs from `num_experts_per_tok`: the latter written"
        ));
    }
    let topk = topk.or(repeated);
    let moe_ffn = get("moe_intermediate_size", &mut used)?;
    match (experts, ffn) {
        (Some(e), f) if e > 1 => {
            items.push(format!("experts {e}  topk {}", topk.unwrap_or(2)));
            // Mixtral's experts are `intermediate_size` wide; the others say so apart.
            if let Some(m) = moe_ffn.or(f) {
                items.push(format!("moe_ffn {m}"));
            }
            if let (Some(f), Some(_)) = (f, moe_ffn) {
                items.push(format!("ffn {f}"));
            }
        }
        (_, Some(f)) => items.push(format!("ffn {f}")),
        (_, None) => {}
    }
    if let Some(n) = get("n_shared_experts", &mut used)?.filter(|&n| n > 0) {
        items.push(format!("shared_experts {n}"));
    }
    if let Some(f) = get("shared_expert_intermediate_size", &mut used)?.filter(|&f| f > 0) {
        items.push(format!("shared_expert_ffn {f}"));
    }
    if let Some(k) = get("first_k_dense_replace", &mut used)?.filter(|&k| k > 0) {
        items.push(format!("first_k_dense {k}"));
    }
    if cfg.string("model_type") == Some("llama4_text") && experts.is_some_and(|e| e > 1) {
        llama4_layers(&cfg, &mut used, &mut items, &mut warnings, layers, seq)?;
    }
    router(&cfg, &mut used, &mut items)?;

    // Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2).
    if let Some(r) = mla {
        let mut line = String::new();
        if let Some(q) = get("q_lora_rank", &mut used)? {
            let _ = write!(line, "q_lora_rank {q}  ");
        }
        let _ = write!(line, "kv_lora_rank {r}");
        items.push(line);
        let mut dims = Vec::new();
        for (key, venus) in [
            ("qk_nope_head_dim", "qk_nope_head_dim"),
            ("qk_rope_head_dim", "qk_rope_head_dim"),
            ("v_head_dim", "v_head_dim"),
        ] {
            if let Some(v) = get(key, &mut used)? {
                dims.push(format!("{venus} {v}"));
            }
        }
        if !dims.is_empty() {
            items.push(dims.join("  "));
        }
    } else {
        used.extend([
            "q_lora_rank",
            "qk_nope_head_dim",
            "qk_rope_head_dim",
            "v_head_dim",
        ]);
        for key in [
            "q_lora_rank",
            "qk_nope_head_dim",
            "qk_rope_head_dim",
            "v_head_dim",
        ] {
            if cfg.root.get(key).is_some_and(|v| !v.is_null()) {
                warnings.push(format!(
                    "{file}: `{key}` without `kv_lora_rank` (no MLA): not mapped"
                ));
            }
        }
    }
    // Hybrid Mamba-2 (Nemotron-H): the layer pattern and the Mamba-2 dims, same names.
    used.push("hybrid_override_pattern");
    match cfg.root.get("hybrid_override_pattern") {
        None | Some(Value::Null) => {}
        Some(Value::String(p)) => {
            items.push(format!(
                "hybrid_override_pattern \"{}\"",
                p.escape_default()
            ));
            let mut dims = Vec::new();
            for key in [
                "mamba_num_heads",
                "mamba_head_dim",
                "ssm_state_size",
                "n_groups",
                "conv_kernel",
            ] {
                if let Some(v) = get(key, &mut used)? {
                    dims.push(format!("{key} {v}"));
                }
            }
            if !dims.is_empty() {
                items.push(dims.join("  "));
            }
            // `expand` sizes d_inner only without `mamba_num_heads` (mamba_mixer.py).
            used.push("expand");
            if cfg.root.contains_key("expand") && !cfg.root.contains_key("mamba_num_heads") {
                warnings.push(format!(
                    "{file}: `expand` without `mamba_num_heads`: venusc takes Megatron's 2"
                ));
            }
        }
        Some(other) => return Err(cfg.wrong("hybrid_override_pattern", "a string", other)),
    }
    if let Some(m) = get("num_nextn_predict_layers", &mut used)?.filter(|&m| m > 0) {
        items.push(format!("mtp_layers {m}"));
    }
    used.push("tie_word_embeddings");
    match cfg.root.get("tie_word_embeddings") {
        Some(Value::Bool(true)) => {}
        Some(Value::Bool(false)) => items.push("untied_embeddings".into()),
        None => {
            warnings.push(format!(
                "{file}: no `tie_word_embeddings`: written as untied (the default of these families)"
            ));
            items.push("untied_embeddings".into());
        }
        Some(other) => {
            return Err(cfg.wrong("tie_word_embeddings", "true or false", other));
        }
    }

    let ignored: Vec<&str> = cfg
        .root
        .keys()
        .map(String::as_str)
        .filter(|k| NO_EFFECT.contains(k))
        .collect();
    if !ignored.is_empty() {
        warnings.push(format!(
            "{file}: not mapped, as they do not change training time or memory: {}",
            ignored
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let not_modelled: Vec<&str> = cfg
        .root
        .iter()
        .filter(|(k, v)| {
            NOT_MODELLED.contains(&k.as_str()) && !v.is_null() && !used.contains(&k.as_str())
        })
        .map(|(k, _)| k.as_str())
        .collect();
    if !not_modelled.is_empty() {
        warnings.push(format!(
            "{file}: not modelled by venusc (they may change time or memory): {}",
            not_modelled
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let unknown: Vec<&str> = cfg
        .root
        .keys()
        .map(String::as_str)
        .filter(|k| !used.contains(k) && !NO_EFFECT.contains(k) && !NOT_MODELLED.contains(k))
        .collect();
    if !unknown.is_empty() {
        warnings.push(format!(
            "{file}: not understood, so not mapped: {}",
            unknown
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }

    let mut venus = format!(
        "# Imported from `{file}` by `venusc import` (a HuggingFace config): the model only;\n\
         # `use` this file from a run that names a cluster and a plan.\n"
    );
    if let Some(kind) = cfg.string("model_type") {
        let _ = writeln!(venus, "# model_type: {kind}");
    }
    let _ = writeln!(venus, "model {name} <");
    for line in items {
        let _ = writeln!(venus, "  {line}");
    }
    venus.push_str(">\n");
    Ok(Imported { venus, warnings })
}

/// A multimodal config (`Llama4ForConditionalGeneration`: `model_type` `llama4`) holds the
/// language model in `text_config` (transformers' `Llama4Config`): that object is the model,
/// with the top level's `tie_word_embeddings` where it has none of its own; the vision
/// encoder and the image token ids are named in a warning. `None` for a text-only config.
fn text_config(
    file: &str,
    root: &Map<String, Value>,
    warnings: &mut Vec<String>,
) -> Result<Option<Map<String, Value>>, ImportError> {
    let text = match root.get("text_config") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(t)) => t,
        Some(other) => {
            return Err(Config { file, root }.wrong("text_config", "a JSON object", other))
        }
    };
    let mut merged = text.clone();
    for key in ["tie_word_embeddings", "architectures"] {
        if let (false, Some(v)) = (merged.contains_key(key), root.get(key)) {
            merged.insert(key.to_string(), v.clone());
        }
    }
    let left: Vec<String> = root
        .keys()
        .filter(|k| {
            !matches!(
                k.as_str(),
                "text_config"
                    | "tie_word_embeddings"
                    | "architectures"
                    | "model_type"
                    | "torch_dtype"
                    | "transformers_version"
            )
        })
        .map(|k| format!("`{k}`"))
        .collect();
    if !left.is_empty() {
        warnings.push(format!(
            "{file}: the language model of `text_config` imported; not mapped, as they are not part of it: {}",
            left.join(", ")
        ));
    }
    Ok(Some(merged))
}

/// Llama 4's layer kinds (transformers `Llama4TextConfig`, `modeling_llama4.py`): MoE on every
/// `interleave_moe_layer_step`-th layer (`moe_layers = range(step - 1, layers, step)`, unless
/// the config lists `moe_layers`), whose experts are `intermediate_size` wide beside one
/// shared expert of the same size (`Llama4TextMoe.shared_expert`), and the dense layers' MLP
/// of `intermediate_size_mlp`; chunked attention over `attention_chunk_size` keys, which at a
/// sequence no longer than the chunk is full causal attention.
fn llama4_layers(
    cfg: &Config<'_>,
    used: &mut Vec<&str>,
    items: &mut Vec<String>,
    warnings: &mut Vec<String>,
    layers: u64,
    seq: u64,
) -> Result<(), ImportError> {
    let file = cfg.file;
    used.extend([
        "interleave_moe_layer_step",
        "intermediate_size_mlp",
        "moe_layers",
        "attention_chunk_size",
    ]);
    let step = cfg.count("interleave_moe_layer_step")?.unwrap_or(1);
    let expected: Vec<u64> = (step.saturating_sub(1)..layers)
        .step_by(step.max(1) as usize)
        .collect();
    if let Some(list) = cfg.root.get("moe_layers").filter(|v| !v.is_null()) {
        let listed: Option<Vec<u64>> = list
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_u64).collect());
        if listed.as_ref() != Some(&expected) {
            warnings.push(format!(
                "{file}: `moe_layers` is not every {step}th layer: written as `interleave_moe_layer_step` gives it"
            ));
        }
    }
    items.push("shared_experts 1".into());
    if step > 1 {
        items.push(format!("moe_layer_freq {step}"));
        if let Some(f) = cfg.count("intermediate_size_mlp")? {
            items.push(format!("ffn {f}"));
        }
    }
    if let Some(c) = cfg.count("attention_chunk_size")? {
        if c < seq {
            warnings.push(format!(
                "{file}: `attention_chunk_size` {c} is shorter than `seq {seq}`: its chunked attention is not modelled (written as full causal attention)"
            ));
        }
    }
    Ok(())
}

/// DeepSeek's router (transformers `DeepseekV3Config`; DeepSeek-V3 report §2.1.2, §4.2):
/// group-limited routing over `n_group` groups, `topk_group` of them per token (one group
/// is no limit); `topk_method` `noaux_tc` is the aux-loss-free expert bias; `aux_loss_alpha`
/// above 0 is the balance loss, sequence-wise with `seq_aux`. `moe_layer_freq` 1 (every layer
/// after `first_k_dense_replace`) is the default and is read; another value is listed as not
/// modelled.
fn router(
    cfg: &Config<'_>,
    used: &mut Vec<&str>,
    items: &mut Vec<String>,
) -> Result<(), ImportError> {
    used.extend([
        "n_group",
        "topk_group",
        "topk_method",
        "aux_loss_alpha",
        "seq_aux",
    ]);
    let groups = cfg.count("n_group")?.filter(|&g| g > 1);
    if let Some(g) = groups {
        let k = cfg.count("topk_group")?.unwrap_or(g);
        items.push(format!("routed_groups {g}  topk_groups {k}"));
    }
    if cfg.string("topk_method") == Some("noaux_tc") {
        items.push("expert_bias".into());
    }
    let alpha = cfg
        .root
        .get("aux_loss_alpha")
        .and_then(Value::as_f64)
        .unwrap_or(0.0);
    if alpha > 0.0 {
        // DeepSeek's own `DeepseekV3Config` (configuration_deepseek.py) defaults `seq_aux`
        // to true.
        let deepseek = cfg
            .string("model_type")
            .is_some_and(|t| t.starts_with("deepseek"));
        let seq = cfg
            .root
            .get("seq_aux")
            .and_then(Value::as_bool)
            .unwrap_or(deepseek);
        items.push(format!(
            "load_balancing {}",
            if seq { "seq_aux_loss" } else { "aux_loss" }
        ));
    }
    if cfg.root.get("moe_layer_freq").and_then(Value::as_u64) == Some(1) {
        used.push("moe_layer_freq");
    }
    Ok(())
}

/// Sliding-window attention, attention sinks and QK-norm.
/// - `sliding_window` (keys per query, `transformers`' sliding-window mask) unless
///   `use_sliding_window` is false (Qwen2/3 keep the key but turn it off);
/// - `layer_types` (GPT-OSS: `sliding_attention`/`full_attention` per layer) or Gemma's
///   `sliding_window_pattern`: every Nth layer full is `sliding_window_pattern N`;
/// - GPT-OSS's attention has a learned sink per head (`GptOssAttention.sinks`, no config key);
/// - Qwen3's attention has per-head `q_norm` and `k_norm` (`Qwen3Attention`, no config key).
fn attention_variants(
    cfg: &Config<'_>,
    used: &mut Vec<&str>,
    items: &mut Vec<String>,
    warnings: &mut Vec<String>,
) -> Result<(), ImportError> {
    let file = cfg.file;
    used.extend([
        "sliding_window",
        "use_sliding_window",
        "layer_types",
        "sliding_window_pattern",
    ]);
    let enabled = match cfg.root.get("use_sliding_window") {
        None | Some(Value::Null) | Some(Value::Bool(true)) => true,
        Some(Value::Bool(false)) => false,
        Some(other) => return Err(cfg.wrong("use_sliding_window", "true or false", other)),
    };
    let window = cfg.count("sliding_window")?;
    match (window, enabled) {
        (Some(w), true) => {
            let period = match cfg.count("sliding_window_pattern")? {
                Some(p) => Some(p),
                None => full_attention_period(cfg, warnings)?,
            };
            match period {
                // Every layer a multiple of 1: all full attention.
                Some(1) => warnings.push(format!(
                    "{file}: `sliding_window` {w} not written: every layer is full attention"
                )),
                Some(p) => items.push(format!("sliding_window {w}  sliding_window_pattern {p}")),
                None => items.push(format!("sliding_window {w}")),
            }
        }
        (Some(w), false) => warnings.push(format!(
            "{file}: `sliding_window` {w} not written: `use_sliding_window` is false"
        )),
        (None, _) => {}
    }
    match cfg.string("model_type") {
        Some("gpt_oss") => items.push("attention_sinks".into()),
        Some("qwen3") | Some("qwen3_moe") => items.push("qk_norm".into()),
        _ => {}
    }
    Ok(())
}

/// The period N of `layer_types` when exactly the layers N, 2N, … (from 1) are
/// `full_attention`; `None` when every layer is windowed, or (with a warning) when the full
/// layers follow no such period.
fn full_attention_period(
    cfg: &Config<'_>,
    warnings: &mut Vec<String>,
) -> Result<Option<u64>, ImportError> {
    let kinds = match cfg.root.get("layer_types") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(a)) => a,
        Some(other) => return Err(cfg.wrong("layer_types", "a list of layer kinds", other)),
    };
    let mut full = Vec::new();
    for (i, k) in kinds.iter().enumerate() {
        match k.as_str() {
            Some("full_attention") => full.push(i as u64),
            Some("sliding_attention") => {}
            _ => {
                return Err(cfg.wrong(
                    &format!("layer_types[{i}]"),
                    "\"sliding_attention\" or \"full_attention\"",
                    k,
                ))
            }
        }
    }
    let Some(&first) = full.first() else {
        return Ok(None);
    };
    let period = first + 1;
    let periodic =
        (0..kinds.len() as u64).all(|i| full.binary_search(&i).is_ok() == ((i + 1) % period == 0));
    if periodic {
        return Ok(Some(period));
    }
    warnings.push(format!(
        "{}: `layer_types` has full-attention layers at no fixed period: every layer written as windowed",
        cfg.file
    ));
    Ok(None)
}

/// The first of `keys` the config has (the families name the expert count differently).
fn first_count(
    cfg: &Config<'_>,
    used: &mut Vec<&str>,
    keys: &[&'static str],
) -> Result<Option<u64>, ImportError> {
    let mut found = None;
    for &k in keys {
        used.push(k);
        if found.is_none() {
            found = cfg.count(k)?;
        }
    }
    Ok(found)
}

/// The config's top-level object and its file name, for JSON-path errors.
struct Config<'a> {
    file: &'a str,
    root: &'a Map<String, Value>,
}

impl Config<'_> {
    /// A positive integer at `$.key`, absent for a missing or `null` key.
    fn count(&self, key: &str) -> Result<Option<u64>, ImportError> {
        match self.root.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => match v.as_u64() {
                Some(n) if n > 0 || ZERO_ALLOWED.contains(&key) => Ok(Some(n)),
                _ => Err(self.wrong(key, "a positive integer", v)),
            },
        }
    }

    fn string(&self, key: &str) -> Option<&str> {
        self.root.get(key).and_then(Value::as_str)
    }

    fn missing(&self, key: &str) -> ImportError {
        malformed(
            self.file,
            format!("`$.{key}` is missing (every model config has it)"),
        )
    }

    fn wrong(&self, key: &str, expected: &str, found: &Value) -> ImportError {
        let mut shown = found.to_string();
        if shown.chars().count() > 40 {
            shown = shown.chars().take(40).collect::<String>() + "…";
        }
        malformed(
            self.file,
            format!("`$.{key}`: expected {expected}, found {shown}"),
        )
    }
}

fn malformed(file: &str, message: String) -> ImportError {
    ImportError {
        file: file.to_string(),
        message,
        kind: ImportErrorKind::Malformed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LLAMA31_8B: &str = include_str!("../../../../tests/golden/hf/llama31_8b.json");

    #[test]
    fn a_llama_config_becomes_a_model_block_and_names_every_key_it_does_not_map() {
        let i = import_hf_config("config.json", "llama31_8b_hf", LLAMA31_8B.as_bytes()).unwrap();
        assert!(
            i.venus.contains(
                "model llama31_8b_hf <\n  hidden 4096  layers 32  heads 32\n  vocab 128256  seq 8192\n  kv_groups 8\n  swiglu\n  ffn 14336\n  untied_embeddings\n>\n"
            ),
            "{}",
            i.venus
        );
        assert!(
            i.warnings.iter().any(|w| w.contains("`seq 8192` written")),
            "{:?}",
            i.warnings
        );
        assert!(
            i.warnings.iter().any(|w| w.contains("`rope_scaling`")),
            "{:?}",
            i.warnings
        );
    }

    #[test]
    fn a_malformed_value_names_its_json_path() {
        let e = import_hf_config(
            "c.json",
            "m",
            br#"{"model_type":"llama","hidden_size":"big"}"#,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "c.json: `$.hidden_size`: expected a positive integer, found \"big\""
        );
        let e = import_hf_config("c.json", "m", br#"{"model_type":"llama","hidden_size":8}"#)
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "c.json: `$.num_hidden_layers` is missing (every model config has it)"
        );
        assert!(import_hf_config("c.json", "m", b"[1]").is_err());
        assert!(!is_hf_config(br#"{"trace_generator_config":{}}"#));
        assert!(is_hf_config(LLAMA31_8B.as_bytes()));
    }

    #[test]
    fn an_unknown_key_is_listed_not_dropped() {
        let i = import_hf_config(
            "c.json",
            "m",
            br#"{"model_type":"llama","hidden_size":8,"num_hidden_layers":2,"num_attention_heads":2,"vocab_size":64,"max_position_embeddings":16,"tie_word_embeddings":true,"frobnicate":3}"#,
        )
        .unwrap();
        assert!(
            i.warnings
                .iter()
                .any(|w| w.contains("not understood, so not mapped: `frobnicate`")),
            "{:?}",
            i.warnings
        );
        assert!(i.venus.contains("seq 16\n"));
        assert!(!i.venus.contains("untied_embeddings"));
    }
}
