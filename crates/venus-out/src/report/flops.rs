//! Megatron-LM's FLOPs count for one training iteration.
//!
//! Input: a validated [`Scenario`]. Output: the [`Flops`] Megatron's
//! `num_floating_point_operations(args, batch_size)` returns for the global batch, the number
//! its `throughput per GPU (TFLOP/s/GPU)` log line divides by the iteration time.
//! Invariant: the same formula as Megatron-LM `main` (`transformer_flops`, the non-hybrid
//! branch), evaluated in exact integer arithmetic (saturating on absurd sizes) and rounded to
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
//! What this model language cannot express is taken at Megatron's defaults: no multi-latent
//! attention, no attention output gate, no linear-attention variant, no MTP layers, no MoE
//! latent size, `moe_layer_freq = 1` (every layer MoE when the model has experts), BSHD
//! batches (`seq_length` for every sequence). Megatron v0.11.0 and earlier counted core
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
    padded_vocab: u128,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct MoeArgs {
    topk: u128,
    /// `moe_ffn_hidden_size or ffn_hidden_size`.
    ffn: u128,
    /// `moe_shared_expert_intermediate_size or 0`.
    shared: u128,
}

impl FlopsArgs {
    fn of(sc: &Scenario) -> FlopsArgs {
        let m = &sc.model;
        let moe = m.is_moe().then(|| MoeArgs {
            topk: m.topk().into(),
            ffn: m.moe_ffn().into(),
            shared: m.shared_expert_ffn().into(),
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
            padded_vocab: sc.padded_vocab.into(),
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

/// megatron/training/training.py `transformer_flops`, term by term.
fn flops_exact(a: &FlopsArgs) -> u128 {
    // forward_backward_expansion_factor (3) × fma_expansion_factor (2).
    const GEMM: u128 = 3 * 2;
    // ffn_expansion_factor: h→2·ffn and ffn→h GEMMs with SwiGLU, h→ffn and ffn→h without.
    let ffn_exp: u128 = if a.swiglu { 3 } else { 2 };
    let (dense_layers, moe_layers, topk, moe_ffn, shared) = match a.moe {
        None => (a.layers, 0, 0, 0, 0),
        // moe_layer_freq = 1: every layer's MLP is an MoE layer.
        Some(m) => (0, a.layers, m.topk, m.ffn, m.shared),
    };
    let mlp = mul(&[
        GEMM,
        a.hidden,
        sum(&[
            mul(&[a.ffn, ffn_exp, dense_layers]),
            mul(&[moe_ffn, topk, ffn_exp, moe_layers]),
            mul(&[shared, ffn_exp, moe_layers]),
        ]),
    ]);
    let q = mul(&[a.kv_channels, a.heads]);
    let kv = mul(&[a.kv_channels, a.groups]);
    // `query_projection_size * seq_length / 2 * 2`: the causal ½ on each of the two core
    // attention GEMMs. Exact in integers: (q·s/2)·2 = q·s.
    let attention = mul(&[
        GEMM,
        sum(&[
            mul(&[a.hidden, sum(&[q, kv, kv])]),
            mul(&[q, a.seq]),
            mul(&[q, a.hidden]),
        ]),
    ]);
    let logits = mul(&[GEMM, a.hidden, a.padded_vocab]);
    let per_token = sum(&[mlp, mul(&[attention, a.layers]), logits]);
    mul(&[a.batch, a.seq, per_token])
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
            padded_vocab: u64::MAX.into(),
        };
        assert_eq!(flops_exact(&a), u128::MAX);
    }
}
