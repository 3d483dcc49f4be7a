//! Megatron-LM's FLOPs count for one training iteration.
//!
//! Input: a validated [`Scenario`]. Output: the [`Flops`] Megatron's
//! `num_floating_point_operations(args, batch_size)` returns for the global batch, the number
//! its `throughput per GPU (TFLOP/s/GPU)` log line divides by the iteration time.
//! Invariant: the same formula as Megatron-LM `main` (`transformer_flops`, and `hybrid_flops`
//! for a model with `hybrid_override_pattern`), evaluated in exact integer arithmetic (saturating on absurd sizes) and rounded to
//! `f64` once at the end, so it never panics and never accumulates rounding.
//!
//! Source: megatron/training/training.py, `num_floating_point_operations` → `transformer_flops`
//! (NVIDIA/Megatron-LM main, commit 001b00c2). The terms, per token of the global batch:
//! - every GEMM counts 3 times (forward, weight gradient, data gradient) × 2 (multiply-add);
//! - MLP: `6·h·ffn·e` per dense layer, `e = 3` with SwiGLU else 2; per MoE layer the routed
//!   experts `6·h·moe_ffn·topk·e` plus the shared expert `6·h·shared·e`;
//! - attention (MHA/GQA): `6·(h·(q + 2·kv) + q·s/2·2 + q·h)` per layer with
//!   `q = kv_channels·heads`, `kv = kv_channels·groups`: QKV projection, core attention with
//!   the causal ½ on both `QKᵀ` and `(QKᵀ)V`, output projection;
//! - logits: `6·h·V_pad`.
//!
//! - multi-latent attention (MLA, `kv_lora_rank` set): `6·(q_term + kv_lora·(h + n·(d_nope +
//!   d_v) + 1) + h·d_rope + n·d_v·h + s·n·(d_nope + d_rope)/2 + s·n·d_v/2)` per layer, with
//!   `q_term = q_lora·(h + n·(d_nope + d_rope) + 1)` (or `h·n·(d_nope + d_rope)` without
//!   `q_lora_rank`);
//! - `first_k_dense` dense layers before the MoE ones (`moe_layer_freq` as the list
//!   `[0]*k + [1]*(L-k)`), and `mtp_layers` depths: each one more layer of the last layer's kind,
//!   `6·(3h + 2h²)` for its norms and projection, and one more logits term.
//!
//! What this model language cannot express is taken at Megatron's defaults: no attention
//! output gate, no linear-attention variant, no MoE latent size, BSHD batches (`seq_length`
//! for every sequence). Megatron v0.11.0 and earlier counted core
//! attention without the causal ½ (`12·B·s·L·h²·(1 + g/n + s/h)…`); this is the current form.

use venus_base::base::Flops;
use venus_plan::plan::Scenario;

/// Megatron's `num_floating_point_operations(args, global_batch)` for the scenario.
pub fn megatron_flops(sc: &Scenario) -> Flops {
    Flops(flops_exact(&FlopsArgs::of(sc)) as f64)
}

/// The Megatron arguments the count reads, as integers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FlopsArgs {
    batch: u128,
    seq: u128,
    hidden: u128,
    layers: u128,
    heads: u128,
    /// `num_query_groups`; = heads without GQA (training.py: `if not args.group_query_attention`).
    groups: u128,
    kv_channels: u128,
    ffn: u128,
    swiglu: bool,
    /// `None` for a dense model (`args.num_experts is None`).
    moe: Option<MoeArgs>,
    /// `None` without multi-latent attention.
    mla: Option<MlaArgs>,
    /// `mtp_num_layers or 0`.
    mtp: u128,
    padded_vocab: u128,
    /// `None` for a transformer (`is_hybrid_model` false).
    hybrid: Option<HybridArgs>,
}

/// The hybrid branch's arguments (training.py `hybrid_flops`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct HybridArgs {
    /// `get_hybrid_layer_counts`: Mamba, attention, MLP and MoE layers.
    mamba_layers: u128,
    attention_layers: u128,
    mlp_layers: u128,
    moe_layers: u128,
    state: u128,
    head_dim: u128,
    groups: u128,
    /// `mamba_num_heads`, 0 for None (then `d_in // head_dim`).
    heads: u128,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct MlaArgs {
    /// `q_lora_rank`, 0 for None.
    q_lora: u128,
    kv_lora: u128,
    /// Megatron's `qk_head_dim` (the part without rotary embedding).
    nope: u128,
    /// `qk_pos_emb_head_dim`.
    rope: u128,
    v: u128,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct MoeArgs {
    topk: u128,
    /// `moe_ffn_hidden_size or ffn_hidden_size`.
    ffn: u128,
    /// `moe_shared_expert_intermediate_size or 0`.
    shared: u128,
    /// Leading dense layers (`moe_layer_freq` = `[0]*k + [1]*(L-k)`).
    first_k_dense: u128,
    /// `moe_latent_size`, 0 for None.
    latent: u128,
}

impl FlopsArgs {
    fn of(sc: &Scenario) -> FlopsArgs {
        let m = &sc.model;
        let moe = m.is_moe().then(|| MoeArgs {
            topk: m.topk().into(),
            ffn: m.moe_ffn().into(),
            shared: m.shared_expert_ffn().into(),
            // Megatron counts `sum(moe_layer_pattern)` MoE layers (training.py); the rest are
            // dense (`first_k_dense` and `moe_layer_freq` together).
            first_k_dense: m.dense_layers().into(),
            latent: m.moe_latent_size.unwrap_or(0).into(),
        });
        let mla = m.is_mla().then(|| MlaArgs {
            q_lora: m.q_lora_rank().into(),
            kv_lora: m.kv_lora_rank().into(),
            nope: m.qk_nope_head_dim().into(),
            rope: m.qk_rope_head_dim().into(),
            v: m.v_head_dim().into(),
        });
        FlopsArgs {
            // training.py: `num_floating_point_operations(args, batch_size)` is called with the
            // global batch (mbs × dp × num_microbatches).
            batch: sc.global_batch.into(),
            seq: m.seq.into(),
            hidden: m.hidden.into(),
            layers: m.layers.into(),
            heads: m.heads.into(),
            groups: m.kv_groups().into(),
            // arguments.py: `kv_channels` defaults to hidden_size // num_attention_heads.
            kv_channels: m.head_dim().into(),
            ffn: m.ffn().into(),
            swiglu: m.swiglu(),
            moe,
            mla,
            mtp: m.mtp_layers().into(),
            padded_vocab: sc.padded_vocab.into(),
            hybrid: m.is_hybrid().then(|| {
                use venus_plan::plan::HybridLayer as K;
                let c = m.hybrid_layers_in(0, m.layers);
                HybridArgs {
                    mamba_layers: c.of(K::Mamba).into(),
                    attention_layers: c.of(K::Attention).into(),
                    mlp_layers: c.of(K::Mlp).into(),
                    moe_layers: c.of(K::Moe).into(),
                    state: m.ssm_state_size().into(),
                    head_dim: m.mamba_head_dim().into(),
                    groups: m.n_groups().into(),
                    heads: m.mamba_num_heads.unwrap_or(0).into(),
                }
            }),
        }
    }
}

/// Saturating product of its factors.
fn mul(factors: &[u128]) -> u128 {
    factors.iter().fold(1u128, |acc, &f| acc.saturating_mul(f))
}

fn sum(terms: &[u128]) -> u128 {
    terms.iter().fold(0u128, |acc, &t| acc.saturating_add(t))
}

/// megatron/training/training.py `hybrid_flops` (NVIDIA/Megatron-LM d98e8a64), term by term,
/// per forward and times 3 at the end; BSHD batches (`total_tokens = B·s`,
/// `seqlen_squared_sum = B·s²`). Its float factors are exact in integers: the attention
/// `h·p` is `q = kv_channels·heads`, the MLP `expansion·h` is `ffn`.
fn hybrid_flops_exact(a: &FlopsArgs, y: &HybridArgs) -> u128 {
    let tokens = mul(&[a.batch, a.seq]);
    let h = a.hidden;
    let ffn_exp: u128 = if a.swiglu { 3 } else { 2 };
    // attn_layer_flops: 4·T·h·p·(h + h·g/n) + 2·Σs²·h·p.
    let q = mul(&[a.kv_channels, a.heads]);
    let kv = mul(&[a.kv_channels, a.groups]);
    let attention = sum(&[
        mul(&[4, tokens, sum(&[mul(&[q, h]), mul(&[h, kv])])]),
        mul(&[2, tokens, a.seq, q]),
    ]);
    // mlp_layer_flops: 4·expansion·(3/2 with SwiGLU)·T·h² = 2·T·h·ffn·(3 or 2).
    let mlp = mul(&[2, tokens, h, a.ffn, ffn_exp]);
    // mamba_layer_flops: in_proj, the scan (7·T·d_in·N) and out_proj, with d_in = 2h as the
    // formula writes it (expand 2), nheads = mamba_num_heads or d_in // head_dim.
    let d_in = mul(&[2, h]);
    let heads = if y.heads > 0 {
        y.heads
    } else {
        d_in / y.head_dim.max(1)
    };
    let mamba = sum(&[
        mul(&[
            2,
            tokens,
            h,
            sum(&[mul(&[2, d_in]), mul(&[2, y.groups, y.state]), heads]),
        ]),
        mul(&[7, tokens, d_in, y.state]),
        mul(&[2, tokens, d_in, h]),
    ]);
    // moe_layer_flops: routed 4·T·h·moe_ffn·topk·scale, shared 4·T·h·shared·scale.
    // With `moe_latent_size` the routed experts run on the latent and add the up and down
    // projections 4·T·h·latent.
    let moe = a.moe.map_or(0, |m| {
        let routed = if m.latent == 0 {
            mul(&[2, tokens, h, m.ffn, m.topk, ffn_exp])
        } else {
            sum(&[
                mul(&[2, tokens, m.latent, m.ffn, m.topk, ffn_exp]),
                mul(&[4, tokens, h, m.latent]),
            ])
        };
        sum(&[routed, mul(&[2, tokens, h, m.shared, ffn_exp])])
    });
    let logits = mul(&[2, tokens, h, a.padded_vocab, a.mtp.saturating_add(1)]);
    let forward = sum(&[
        mul(&[y.attention_layers, attention]),
        mul(&[y.mlp_layers, mlp]),
        mul(&[y.mamba_layers, mamba]),
        mul(&[y.moe_layers, moe]),
        logits,
    ]);
    mul(&[3, forward])
}

/// megatron/training/training.py `transformer_flops`, term by term.
fn flops_exact(a: &FlopsArgs) -> u128 {
    if let Some(y) = &a.hybrid {
        return hybrid_flops_exact(a, y);
    }
    // forward_backward_expansion_factor (3) × fma_expansion_factor (2).
    const GEMM: u128 = 3 * 2;
    // ffn_expansion_factor: h→2·ffn and ffn→h GEMMs with SwiGLU, h→ffn and ffn→h without.
    let ffn_exp: u128 = if a.swiglu { 3 } else { 2 };
    let (mut dense_layers, mut moe_layers, topk, moe_ffn, shared, latent) = match a.moe {
        None => (a.layers, 0, 0, 0, 0, 0),
        // moe_layer_freq: the first `first_k_dense` layers dense, the others MoE.
        Some(m) => {
            let k = m.first_k_dense.min(a.layers);
            (k, a.layers - k, m.topk, m.ffn, m.shared, m.latent)
        }
    };
    // MTP depths are layers of the last layer's kind (`last_layer_is_moe * mtp_num_layers`).
    if moe_layers > 0 {
        moe_layers = moe_layers.saturating_add(a.mtp);
    } else {
        dense_layers = dense_layers.saturating_add(a.mtp);
    }
    let layers = a.layers.saturating_add(a.mtp);
    // Routed experts: `moe_ffn·topk·e` per MoE layer, or on the latent
    // `moe_ffn·topk·e·latent/h + 2·latent` (the /h cancels the h factored out below).
    let routed = if latent == 0 {
        mul(&[GEMM, a.hidden, moe_ffn, topk, ffn_exp, moe_layers])
    } else {
        mul(&[
            GEMM,
            moe_layers,
            sum(&[
                mul(&[moe_ffn, topk, ffn_exp, latent]),
                mul(&[2, latent, a.hidden]),
            ]),
        ])
    };
    let mlp = sum(&[
        mul(&[
            GEMM,
            a.hidden,
            sum(&[
                mul(&[a.ffn, ffn_exp, dense_layers]),
                mul(&[shared, ffn_exp, moe_layers]),
            ]),
        ]),
        routed,
    ]);
    let attention = match &a.mla {
        Some(m) => mla_attention(a, m),
        None => {
            let q = mul(&[a.kv_channels, a.heads]);
            let kv = mul(&[a.kv_channels, a.groups]);
            // `query_projection_size * seq_length / 2 * 2`: the causal ½ on each of the two
            // core attention GEMMs. Exact in integers: (q·s/2)·2 = q·s.
            mul(&[
                GEMM,
                sum(&[
                    mul(&[a.hidden, sum(&[q, kv, kv])]),
                    mul(&[q, a.seq]),
                    mul(&[q, a.hidden]),
                ]),
            ])
        }
    };
    // MTP norms and eh projection: 6·mtp·(3h + 2h²).
    let mtp = mul(&[
        GEMM,
        a.mtp,
        sum(&[mul(&[3, a.hidden]), mul(&[2, a.hidden, a.hidden])]),
    ]);
    let logits = mul(&[GEMM, a.hidden, a.padded_vocab, a.mtp.saturating_add(1)]);
    let per_token = sum(&[mlp, mul(&[attention, layers]), mtp, logits]);
    mul(&[a.batch, a.seq, per_token])
}

/// MLA's `standard_self_attn_term` per layer and token (training.py). The two causal halves
/// are summed before halving, so the count stays integral for an even `s·n·(d_qk + d_v)`.
fn mla_attention(a: &FlopsArgs, m: &MlaArgs) -> u128 {
    const GEMM: u128 = 3 * 2;
    let n = a.heads;
    let qk = m.nope.saturating_add(m.rope);
    let q_term = if m.q_lora == 0 {
        mul(&[a.hidden, n, qk])
    } else {
        mul(&[m.q_lora, sum(&[a.hidden, mul(&[n, qk]), 1])])
    };
    let kv_term = mul(&[
        m.kv_lora,
        sum(&[a.hidden, mul(&[n, m.nope.saturating_add(m.v)]), 1]),
    ]);
    let core = mul(&[a.seq, n, qk.saturating_add(m.v)]) / 2;
    mul(&[
        GEMM,
        sum(&[
            q_term,
            kv_term,
            mul(&[a.hidden, m.rope]),
            mul(&[n, m.v, a.hidden]),
            core,
        ]),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use venus_front::testutil::*;
    use venus_front::ty::{Model, ScenarioDef};
    use venus_front::validate;

    fn scenario(def: ScenarioDef) -> Scenario {
        let (sc, diags) = validate(&def);
        sc.unwrap_or_else(|| panic!("invalid test scenario: {diags:#?}"))
    }

    fn on_one_gpu(model: Model, global_batch: u64) -> Scenario {
        scenario(def(
            model,
            cluster(&[("nvlink", 1)], 4096),
            plan(1, global_batch),
        ))
    }

    #[test]
    fn mha_gelu_model_matches_the_gpt3_closed_form_with_causal_attention() {
        // h 1024, 16 heads, 2 layers, vocab 32768 (already a multiple of 128), seq 512.
        let sc = on_one_gpu(model(1024, 16, 2, 32768, 512), 8);
        let (b, s, l, h, v) = (8u128, 512u128, 2u128, 1024u128, 32768u128);
        // 72·B·s·L·h²·(1 + s/(12h) + V/(12hL)), multiplied out so it stays integral; the
        // older Megatron form has s/(6h) (no causal ½).
        let closed = b * s * (72 * h * h * l + 6 * h * s * l + 6 * h * v);
        assert_eq!(closed, 1_468_878_815_232);
        assert_eq!(megatron_flops(&sc), Flops(1_468_878_815_232.0));
    }

    #[test]
    fn gqa_swiglu_llama_counts_grouped_kv_and_three_mlp_gemms() {
        // llama: h 4096, ffn 16384, 32 layers, 16 heads of 256, 4 kv groups, SwiGLU,
        // vocab 50000 padded to 50048, seq 2048; global batch 16.
        // Per layer: attention 6·(4096·(4096 + 2·1024) + 4096·2048 + 4096·4096),
        // MLP 6·4096·16384·3; logits 6·4096·50048; × 16·2048 tokens.
        let sc = on_one_gpu(llama(), 16);
        assert_eq!(sc.padded_vocab, 50048);
        assert_eq!(megatron_flops(&sc), Flops(1_623_600_717_103_104.0));
    }

    #[test]
    fn moe_counts_topk_routed_experts_and_the_shared_expert() {
        let mut m = model(1024, 8, 4, 32000, 1024);
        set(&mut m.ffn, 4096);
        set(&mut m.experts, 8);
        set(&mut m.topk, 2);
        set(&mut m.moe_ffn, 1536);
        set(&mut m.shared_expert_ffn, 2048);
        set(&mut m.swiglu, true);
        let sc = on_one_gpu(m, 8);
        // 8·1024·(6·1024·(1536·2·3·4 + 2048·3·4) + 4·6·(1024·3072 + 1024·1024 + 1024·1024)
        //        + 6·1024·32000); the dense ffn (4096) is not counted: every layer is MoE.
        assert_eq!(megatron_flops(&sc), Flops(5_733_781_340_160.0));
    }

    #[test]
    fn mla_dense_first_layers_and_mtp_follow_megatrons_count() {
        // MLA (q_lora 256, kv_lora 128, d_nope 64, d_rope 32, d_v 64, 8 heads), 4 layers of
        // which the first is dense (ffn 4096), 8 experts of 512 top-2, 2 shared experts, one
        // MTP depth. training.py: B·s·(6h·(ffn·3·1 + 512·2·3·(3 + 1) + 1024·3·(3 + 1))
        //   + 6·(256·(h + 8·96 + 1) + 128·(h + 8·128 + 1) + h·32 + 8·64·h + s·8·96/2
        //   + s·8·64/2)·(4 + 1) + 6·(3h + 2h²) + 6·h·V·2).
        let mut m = model(1024, 8, 4, 32000, 1024);
        set(&mut m.ffn, 4096);
        set(&mut m.experts, 8);
        set(&mut m.topk, 2);
        set(&mut m.moe_ffn, 512);
        set(&mut m.shared_experts, 2);
        set(&mut m.first_k_dense, 1);
        set(&mut m.mtp_layers, 1);
        set(&mut m.swiglu, true);
        set(&mut m.q_lora_rank, 256);
        set(&mut m.kv_lora_rank, 128);
        set(&mut m.qk_nope_head_dim, 64);
        set(&mut m.qk_rope_head_dim, 32);
        set(&mut m.v_head_dim, 64);
        let sc = on_one_gpu(m, 8);
        assert_eq!(megatron_flops(&sc), Flops(5_655_106_682_880.0));
    }

    /// Megatron's `hybrid_flops` for a small hybrid model, by hand: B 8, s 512, h 1024, 16
    /// heads (MHA, kv_channels 64), ffn 4096 (not gated), Mamba-2 32 heads of 64, state 128, 8
    /// groups, pattern `M*-M` (2 Mamba, 1 attention, 1 MLP), vocab 32768. Per forward, T = 4096:
    /// attention 4·T·(1024·1024 + 1024·1024) + 2·T·512·1024 = 38,654,705,664;
    /// MLP 2·T·1024·4096·2 = 68,719,476,736; Mamba 2·T·1024·(4·1024 + 2·8·128 + 32) plus
    /// 7·T·2048·128 and 2·T·2048·1024 = 76,504,104,960 each; logits 2·T·1024·32768 =
    /// 274,877,906,944; summed 535,260,299,264, times 3.
    #[test]
    fn hybrid_model_counts_megatrons_hybrid_branch() {
        let mut m = model(1024, 16, 4, 32768, 512);
        set(&mut m.ffn, 4096);
        m.hybrid_override_pattern = Some(sp(venus_front::ty::LayoutText {
            text: "M*-M".into(),
            raw: true,
        }));
        set(&mut m.mamba_num_heads, 32);
        let sc = on_one_gpu(m, 8);
        let t: u128 = 8 * 512;
        let attention = 4 * t * (1024 * 1024 + 1024 * 1024) + 2 * t * 512 * 1024;
        let mlp = 2 * t * 1024 * 4096 * 2;
        let mamba =
            2 * t * 1024 * (4 * 1024 + 2 * 8 * 128 + 32) + 7 * t * 2048 * 128 + 2 * t * 2048 * 1024;
        let logits = 2 * t * 1024 * 32768;
        let expected = 3 * (attention + mlp + 2 * mamba + logits);
        assert_eq!(expected, 3 * 535_260_299_264);
        assert_eq!(megatron_flops(&sc), Flops(expected as f64));
    }

    #[test]
    fn absurd_sizes_saturate_instead_of_overflowing() {
        let a = FlopsArgs {
            batch: u64::MAX.into(),
            seq: u64::MAX.into(),
            hidden: u64::MAX.into(),
            layers: u64::MAX.into(),
            heads: 1,
            groups: 1,
            kv_channels: u64::MAX.into(),
            ffn: u64::MAX.into(),
            swiglu: true,
            moe: None,
            mla: None,
            mtp: 0,
            padded_vocab: u64::MAX.into(),
            hybrid: None,
        };
        assert_eq!(flops_exact(&a), u128::MAX);
    }
}
