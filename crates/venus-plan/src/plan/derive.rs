//! Derived values of a plan: padded vocabulary, the layer split over pipeline stages and
//! model chunks, parameter counts, the bubble fraction and the pipeline shape the schedule IR
//! is built from.
//!
//! Input: plain numbers taken from the typed model and plan. Output: the values Megatron-LM
//! computes from its arguments, or a [`SplitError`] naming the Megatron rule a layer split breaks.
//! Invariant: pure arithmetic on user numbers, never panicking (checked or saturating ops,
//! `u128` for products of user numbers).

use crate::plan::spec::ModelSpec as Model;
use crate::plan::spec::{HybridCounts, HybridLayer};
use crate::schedule::{Kind, PipelineShape};
use venus_base::base::Ratio;

/// Megatron's `--make-vocab-size-divisible-by` default.
pub const VOCAB_DIVISOR: u64 = 128;

/// The vocabulary padded so each tp rank holds an equal, 128-aligned slice.
// megatron/training/tokenizer/tokenizer.py `_vocab_size_with_padding`:
// multiple = make_vocab_size_divisible_by * tensor_model_parallel_size; after = ceil(v / multiple) * multiple
pub fn padded_vocab(vocab: u64, tp: u64) -> u64 {
    let multiple = VOCAB_DIVISOR.saturating_mul(tp.max(1));
    vocab.div_ceil(multiple).saturating_mul(multiple)
}

/// How the decoder layers are spread over the pipeline stages and their model chunks: the one
/// source of truth for layers per `(stage, chunk)` ([`StageSplit::chunk_layers`]); every other
/// count (per stage, offsets, totals) is derived from it.
///
/// Three ways to build one, as Megatron's `get_num_layers_to_build`
/// (megatron/core/transformer/transformer_block.py:76-203@d98e8a64): the even split, the
/// uneven first/last stages (all chunks of one stage hold `layers(stage) / vpp`), the even split
/// with the embedding and/or the loss counted as a layer (the first chunk of stage 0 and the
/// last chunk of the last stage build one layer fewer), or an explicit per-chunk table
/// (`pipeline_layout`, megatron/core/transformer/pipeline_parallel_layer_layout.py).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StageSplit {
    pub pp: u64,
    pub vpp: u64,
    /// Layer slots on stage 0 (the rule splits; with `embedding` one of them is the embedding).
    first: u64,
    /// Layer slots on each stage strictly between the first and the last.
    middle: u64,
    /// Layer slots on stage pp − 1 (equal to `first` when pp = 1).
    last: u64,
    /// The embedding takes one slot of chunk 0 on stage 0 (`account_for_embedding`).
    embedding: bool,
    /// The loss takes one slot of the last chunk on the last stage (`account_for_loss`).
    loss: bool,
    /// An explicit layout: decoder layers of each virtual stage, in Megatron's virtual-stage
    /// order (`chunk · pp + stage`), and the pipeline stage whose last chunk holds the MTP
    /// depths.
    table: Option<std::sync::Arc<LayoutTable>>,
}

/// Decoder layers per virtual stage of an explicit layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayoutTable {
    /// Layers of virtual stage `chunk · pp + stage`.
    pub layers: Vec<u64>,
    /// The pipeline stage whose last chunk holds the MTP depths (pp − 1 without MTP).
    pub mtp_stage: u64,
}

impl StageSplit {
    /// A rule split: layer slots per stage, no accounting, no table.
    fn rule(pp: u64, vpp: u64, first: u64, middle: u64, last: u64) -> StageSplit {
        StageSplit {
            pp,
            vpp,
            first,
            middle,
            last,
            embedding: false,
            loss: false,
            table: None,
        }
    }

    /// The split an explicit layout gives: `layers[chunk · pp + stage]` decoder layers.
    /// `None` when the table does not have pp × vpp entries.
    pub fn from_layout(pp: u64, vpp: u64, table: LayoutTable) -> Option<StageSplit> {
        let pp = pp.max(1);
        let vpp = vpp.max(1);
        if table.layers.len() as u128 != u128::from(pp) * u128::from(vpp) || table.mtp_stage >= pp {
            return None;
        }
        Some(StageSplit {
            pp,
            vpp,
            first: 0,
            middle: 0,
            last: 0,
            embedding: false,
            loss: false,
            table: Some(std::sync::Arc::new(table)),
        })
    }

    /// Slots of one chunk of a stage under the rule (before accounting).
    fn slots(&self, stage: u64) -> u64 {
        let total = if stage == 0 {
            self.first
        } else if stage + 1 == self.pp {
            self.last
        } else {
            self.middle
        };
        total / self.vpp.max(1)
    }

    /// Decoder layers in one model chunk of a stage: the one function every layer count is
    /// derived from.
    pub fn chunk_layers(&self, stage: u64, chunk: u64) -> u64 {
        let v = self.vpp.max(1);
        if let Some(t) = &self.table {
            let i = chunk.saturating_mul(self.pp).saturating_add(stage);
            return usize::try_from(i)
                .ok()
                .and_then(|i| t.layers.get(i))
                .copied()
                .unwrap_or(0);
        }
        // transformer_block.py:190-201: the embedding (loss) slot is not a transformer layer.
        let mut n = self.slots(stage);
        if self.embedding && stage == 0 && chunk == 0 {
            n = n.saturating_sub(1);
        }
        if self.loss && stage + 1 == self.pp && chunk + 1 == v {
            n = n.saturating_sub(1);
        }
        n
    }

    /// Layers on a pipeline stage (all its chunks together): the sum of its chunks, in closed
    /// form for a rule split (whose vpp may be any count).
    pub fn layers(&self, stage: u64) -> u64 {
        let v = self.vpp.max(1);
        if self.table.is_some() {
            return (0..v).fold(0u64, |acc, c| {
                acc.saturating_add(self.chunk_layers(stage, c))
            });
        }
        let mut n = self.slots(stage).saturating_mul(v);
        if self.embedding && stage == 0 {
            n = n.saturating_sub(1);
        }
        if self.loss && stage + 1 == self.pp {
            n = n.saturating_sub(1);
        }
        n
    }

    /// The largest chunk of a stage (what the memory model sizes a chunk's activations by).
    pub fn max_chunk_layers(&self, stage: u64) -> u64 {
        if self.table.is_none() {
            return self.slots(stage);
        }
        (0..self.vpp.max(1))
            .map(|c| self.chunk_layers(stage, c))
            .max()
            .unwrap_or(0)
    }

    /// Decoder layers of the whole model.
    pub fn total(&self) -> u64 {
        (0..self.pp).fold(0u64, |acc, s| acc.saturating_add(self.layers(s)))
    }

    /// Whether every chunk of every stage holds the same number of layers.
    pub fn is_even(&self) -> bool {
        let n = self.chunk_layers(0, 0);
        match &self.table {
            Some(t) => t.layers.iter().all(|&l| l == n),
            None => {
                // Every chunk but (0, 0) and the last holds its stage's slots.
                let v = self.vpp.max(1);
                let last = self.chunk_layers(self.pp - 1, v - 1);
                last == n
                    && (0..self.pp).all(|st| {
                        let ends = u64::from(st == 0) + u64::from(st + 1 == self.pp);
                        v.saturating_sub(ends) == 0 || self.slots(st) == n
                    })
            }
        }
    }

    /// The pipeline stage that holds the multi-token prediction depths: the last one, unless a
    /// layout puts them on another stage's last chunk (Megatron's standalone MTP,
    /// pipeline_parallel_layer_layout.py `validate_layer_layout`).
    pub fn mtp_stage(&self) -> u64 {
        self.table
            .as_ref()
            .map_or(self.pp.saturating_sub(1), |t| t.mtp_stage)
    }

    /// Whether the split comes from an explicit layout.
    pub fn is_layout(&self) -> bool {
        self.table.is_some()
    }

    /// Whether the embedding or the loss takes a layer's slot.
    pub fn accounts(&self) -> (bool, bool) {
        (self.embedding, self.loss)
    }

    /// Index of the first decoder layer of `(stage, chunk)`: the layers of every earlier
    /// virtual stage, in Megatron's order (chunk c of every stage, then chunk c + 1).
    // megatron/core/transformer/transformer_layer.py:65-190@d98e8a64
    // `get_transformer_layer_offset`, and pipeline_parallel_layer_layout.py `get_layer_offset`.
    pub fn first_layer(&self, stage: u64, chunk: u64) -> u64 {
        let v = self.vpp.max(1);
        if self.table.is_some() {
            let rounds = (0..chunk.min(v)).fold(0u64, |acc, c| {
                (0..self.pp).fold(acc, |a, s| a.saturating_add(self.chunk_layers(s, c)))
            });
            return (0..stage.min(self.pp))
                .fold(rounds, |a, s| a.saturating_add(self.chunk_layers(s, chunk)));
        }
        // Closed form of the same sum (a rule split can have pp × vpp beyond any table).
        let middle = self.middle / v;
        let round = if self.pp == 1 {
            self.slots(0)
        } else {
            self.slots(0)
                .saturating_add(self.slots(self.pp - 1))
                .saturating_add(middle.saturating_mul(self.pp - 2))
        };
        let mut rounds = chunk.saturating_mul(round);
        if self.embedding && chunk > 0 {
            rounds = rounds.saturating_sub(1);
        }
        let before = if stage == 0 {
            0
        } else {
            self.chunk_layers(0, chunk)
                .saturating_add((stage - 1).saturating_mul(middle))
        };
        rounds.saturating_add(before)
    }

    /// A short description: `8 per stage`, `first 6, 5 on each of 6 middle stages, last 6`, or
    /// for a split with uneven chunks the chunk counts of each stage (`stage 0: 1+2, …`).
    pub fn describe(&self) -> String {
        if self.table.is_some() {
            return self.describe_chunks();
        }
        if self.embedding || self.loss {
            let mut s = format!("{} per model chunk", self.slots(0));
            if self.embedding {
                s.push_str(&format!(
                    ", the first {} with the embedding",
                    self.chunk_layers(0, 0)
                ));
            }
            if self.loss {
                let last = self.chunk_layers(self.pp - 1, self.vpp.max(1) - 1);
                s.push_str(&format!(", the last {last} with the loss"));
            }
            return s;
        }
        if self.pp == 1 {
            return format!("{} on the only stage", self.first);
        }
        if self.first == self.middle && self.last == self.middle {
            return format!("{} per stage", self.middle);
        }
        let middles = self.pp.saturating_sub(2);
        if middles == 0 {
            format!("first {}, last {}", self.first, self.last)
        } else {
            let stages = if middles == 1 { "stage" } else { "stages" };
            format!(
                "first {}, {} on each of {} middle {}, last {}",
                self.first, self.middle, middles, stages, self.last
            )
        }
    }

    /// The layers of each stage's chunks, runs of equal stages merged:
    /// `stage 0: 1+2, stages 1-6: 2+2, stage 7: 2+1`.
    fn describe_chunks(&self) -> String {
        let row = |s: u64| -> Vec<u64> {
            (0..self.vpp.max(1))
                .map(|c| self.chunk_layers(s, c))
                .collect()
        };
        let mut parts = Vec::new();
        let mut start = 0;
        while start < self.pp {
            if parts.len() == 8 {
                parts.push("…".to_string());
                break;
            }
            let r = row(start);
            let mut end = start;
            while end + 1 < self.pp && row(end + 1) == r {
                end += 1;
            }
            let counts: Vec<String> = r.iter().map(u64::to_string).collect();
            let name = if start == end {
                format!("stage {start}")
            } else {
                format!("stages {start}-{end}")
            };
            parts.push(format!("{name}: {}", counts.join("+")));
            start = end + 1;
        }
        parts.join(", ")
    }
}

/// Why a layer split is invalid; each variant is one Megatron rule (ids from the validity table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitError {
    /// L06/L20: even split needs layers % pp == 0 and (layers / pp) % vpp == 0.
    Even { layers: u64, pp: u64, vpp: u64 },
    /// pp = 1 cannot have both a distinct first and last stage.
    EndsNeedTwoStages,
    /// first + last stage layers exceed the model's layers.
    EndsExceed { ends: u64, layers: u64 },
    /// L14: first (or last) stage layers not divisible by vpp.
    EndNotDivisible { first: bool, n: u64, vpp: u64 },
    /// L15: middle layers remain without middle stages, or the reverse.
    MiddleMismatch { layers: u64, stages: u64 },
    /// L16: middle layers not divisible by the middle stages.
    MiddleNotDivisible { layers: u64, stages: u64 },
    /// L17: layers per middle stage not divisible by vpp.
    MiddleChunks { per_stage: u64, vpp: u64 },
    /// L18/L19: with the embedding and/or loss counted, `slots` = layers + 1 or 2 does not
    /// split into pp × vpp equal chunks.
    Accounted {
        slots: u64,
        pp: u64,
        vpp: u64,
        embedding: bool,
        loss: bool,
    },
    /// L10: uneven first/last stages together with `account_for_*`.
    EndsWithAccounting,
}

/// Splits `layers` over `pp` stages with `vpp` chunks each, following Megatron's uneven rules
/// when `first` / `last` are given.
pub fn split_layers(
    layers: u64,
    pp: u64,
    vpp: u64,
    first: Option<u64>,
    last: Option<u64>,
) -> Result<StageSplit, SplitError> {
    let pp = pp.max(1);
    let vpp = vpp.max(1);
    if first.is_none() && last.is_none() {
        // megatron/training/arguments.py:998 (L06) and
        // megatron/core/transformer/transformer_block.py:158,178 (L20)
        let per = layers / pp;
        if !layers.is_multiple_of(pp) || !per.is_multiple_of(vpp) {
            return Err(SplitError::Even { layers, pp, vpp });
        }
        return Ok(StageSplit::rule(pp, vpp, per, per, per));
    }
    // megatron/core/transformer/transformer_config.py:2296-2370@d98e8a64 (L13-L17) and
    // transformer_block.py:100-152@d98e8a64 (`get_num_layers_to_build`): the middle stages
    // share layers − first − last equally; with vpp every chunk of a stage holds
    // layers(stage) / vpp, so the ends and each middle stage must divide by vpp.
    // Offsets: transformer_layer.py:96-160@d98e8a64 (see `StageSplit::first_layer`).
    if pp == 1 && first.is_some() && last.is_some() {
        return Err(SplitError::EndsNeedTwoStages);
    }
    for (is_first, n) in [(true, first), (false, last)] {
        if let Some(n) = n {
            // transformer_config.py:2313,2332 (L14)
            if n % vpp != 0 {
                return Err(SplitError::EndNotDivisible {
                    first: is_first,
                    n,
                    vpp,
                });
            }
        }
    }
    let ends = first.unwrap_or(0).saturating_add(last.unwrap_or(0));
    if ends > layers {
        return Err(SplitError::EndsExceed { ends, layers });
    }
    let rest = layers - ends;
    let stages = pp - u64::from(first.is_some()) - u64::from(last.is_some());
    // transformer_config.py:2343 (L15)
    if (rest > 0) != (stages > 0) {
        return Err(SplitError::MiddleMismatch {
            layers: rest,
            stages,
        });
    }
    let middle = if stages == 0 {
        0
    } else {
        // transformer_config.py:2351 (L16)
        if !rest.is_multiple_of(stages) {
            return Err(SplitError::MiddleNotDivisible {
                layers: rest,
                stages,
            });
        }
        let per = rest / stages;
        // transformer_config.py:2365 (L17)
        if !per.is_multiple_of(vpp) {
            return Err(SplitError::MiddleChunks {
                per_stage: per,
                vpp,
            });
        }
        per
    };
    let first_n = first.unwrap_or(middle);
    let last_n = if pp == 1 {
        first_n
    } else {
        last.unwrap_or(middle)
    };
    Ok(StageSplit::rule(pp, vpp, first_n, middle, last_n))
}

/// The even split with the embedding and/or the loss counted as one layer each: `layers` plus
/// the accounted ones over pp stages and vpp chunks; the first chunk of stage 0 then builds one
/// transformer layer fewer (embedding), the last chunk of the last stage one fewer (loss).
// megatron/core/transformer/transformer_config.py:2372-2418@d98e8a64 (L18, L19) and
// megatron/core/transformer/transformer_block.py:148-201@d98e8a64 (the slots, the −1s).
pub fn split_accounting(
    layers: u64,
    pp: u64,
    vpp: u64,
    embedding: bool,
    loss: bool,
) -> Result<StageSplit, SplitError> {
    let pp = pp.max(1);
    let vpp = vpp.max(1);
    let slots = layers
        .saturating_add(u64::from(embedding))
        .saturating_add(u64::from(loss));
    let per = slots / pp;
    if !slots.is_multiple_of(pp) || !per.is_multiple_of(vpp) {
        return Err(SplitError::Accounted {
            slots,
            pp,
            vpp,
            embedding,
            loss,
        });
    }
    // per ≥ vpp ≥ 1 here, so the first and last chunks keep ≥ 0 layers (the asserts of
    // transformer_block.py:194,200 hold).
    let mut split = StageSplit::rule(pp, vpp, per, per, per);
    split.embedding = embedding;
    split.loss = loss;
    Ok(split)
}

/// Parameters of one decoder layer (unsharded counts).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct LayerParams {
    /// Q, K, V and output projections (no biases, as theoretical_memory_usage.py); with MLA
    /// the up-projections and the output projection (split by tp).
    pub attention: u64,
    /// MLA's down-projections `W_DQ`, `W_DKV` (with the rotary key part) and their latent
    /// norms: replicated over tp (Megatron builds them `parallel_mode="duplicated"`,
    /// megatron/core/transformer/multi_latent_attention.py). Zero without MLA.
    pub latent: u64,
    /// The dense MLP (zero on a MoE layer) plus the shared experts.
    pub mlp: u64,
    /// All routed experts of the layer.
    pub experts: u64,
    /// The router (`hidden × experts`).
    pub router: u64,
    /// Two LayerNorms, weight and bias each (Megatron's default normalization).
    pub norms: u64,
}

impl LayerParams {
    pub fn total(&self) -> u64 {
        self.attention
            .saturating_add(self.latent)
            .saturating_add(self.mlp)
            .saturating_add(self.experts)
            .saturating_add(self.router)
            .saturating_add(self.norms)
    }

    /// Parameters one token uses: everything but the routed experts it is not sent to
    /// (`topk` of `experts`).
    pub fn active(&self, m: &Model) -> u64 {
        let routed = if m.experts() > 0 {
            (self.experts / m.experts()).saturating_mul(m.topk().min(m.experts()))
        } else {
            0
        };
        self.total()
            .saturating_sub(self.experts)
            .saturating_add(routed)
    }
}

/// MLP weights for an inner size: 2·h·ffn, or 3·h·ffn with SwiGLU (gate, up, down).
pub fn mlp_params(hidden: u64, ffn: u64, swiglu: bool) -> u64 {
    let mats = if swiglu { 3 } else { 2 };
    mul(&[mats, hidden, ffn])
}

/// Attention weights split by tp and the replicated MLA latent part: `(attention, latent)`.
// Standard: theoretical_memory_usage.py:12-120, 2h²(1 + g/n)(q/h). MLA:
// megatron/core/transformer/multi_latent_attention.py `MLASelfAttention`: linear_q_down_proj
// h × q_lora_rank, q_layernorm, linear_q_up_proj q_lora_rank × n·(d_nope + d_rope) (or
// linear_q_proj h × n·(d_nope + d_rope) without q_lora_rank), linear_kv_down_proj
// h × (kv_lora_rank + d_rope), kv_layernorm, linear_kv_up_proj kv_lora_rank × n·(d_nope + d_v),
// linear_proj n·d_v × h; norms weight only (DeepSeek's RMSNorm).
fn attention_params(m: &Model) -> (u64, u64) {
    let (attention, latent) = projection_params(m);
    (attention.saturating_add(sink_params(m)), latent)
}

/// Attention sinks: one learned logit per head, split by tp with the heads (GPT-OSS `sinks` of
/// shape `[num_attention_heads]`; Megatron's `softmax_offset` of `--softmax-type learnable`,
/// megatron/core/transformer/dot_product_attention.py, NVIDIA/Megatron-LM d98e8a64).
fn sink_params(m: &Model) -> u64 {
    if m.attention_sinks() {
        m.heads
    } else {
        0
    }
}

/// QK-norm: a query and a key norm over one head (`hidden_size_per_attention_head`, shared by
/// the heads), counted with weight and bias like the layers' other norms (`--normalization`
/// LayerNorm, Megatron's default); replicated over tp
/// (megatron/core/transformer/attention.py `q_layernorm`/`k_layernorm`, d98e8a64). With MLA
/// `--qk-layernorm` norms the query and key-value latents instead
/// (multi_latent_attention.py), which the MLA count holds already: nothing more.
pub fn qk_norm_params(m: &Model) -> u64 {
    if m.qk_norm() && !m.is_mla() {
        mul(&[2, 2, m.qk_head_dim()])
    } else {
        0
    }
}

fn projection_params(m: &Model) -> (u64, u64) {
    let h = m.hidden;
    if !m.is_mla() {
        let q = mul(&[m.heads, m.head_dim()]);
        let kv = mul(&[m.kv_groups(), m.head_dim()]);
        let attention = mul(&[h, q])
            .saturating_mul(2)
            .saturating_add(mul(&[2, h, kv]));
        return (attention, 0);
    }
    let n = m.heads;
    let (rank_q, rank_kv) = (m.q_lora_rank(), m.kv_lora_rank());
    let q_out = mul(&[n, m.qk_head_dim()]);
    let (q_up, q_down) = if rank_q > 0 {
        (
            mul(&[rank_q, q_out]),
            mul(&[h, rank_q]).saturating_add(rank_q),
        )
    } else {
        (mul(&[h, q_out]), 0)
    };
    let kv_down = mul(&[h, rank_kv.saturating_add(m.qk_rope_head_dim())]).saturating_add(rank_kv);
    let kv_up = mul(&[
        rank_kv,
        n,
        m.qk_nope_head_dim().saturating_add(m.v_head_dim()),
    ]);
    let proj = mul(&[n, m.v_head_dim(), h]);
    (
        q_up.saturating_add(kv_up).saturating_add(proj),
        q_down.saturating_add(kv_down),
    )
}

/// Per-layer parameter counts of a MoE layer (or of every layer of a dense model).
// megatron/training/theoretical_memory_usage.py:12-120 (attention 2h²(1 + g/n)(q/h), MLP
// 2·h·ffn·(3/2 with SwiGLU), shared expert, routed experts, router h·E, norms 2h·norm_size)
pub fn layer_params(m: &Model) -> LayerParams {
    let h = m.hidden;
    let (attention, latent) = attention_params(m);
    let shared = if m.is_moe() && m.shared_expert_ffn() > 0 {
        mlp_params(h, m.shared_expert_ffn(), m.swiglu())
    } else {
        0
    };
    let (mlp, experts, router) = if m.is_moe() {
        let e = m.experts();
        (
            shared,
            mlp_params(m.expert_width(), m.moe_ffn(), m.swiglu()).saturating_mul(e),
            h.saturating_mul(e),
        )
    } else {
        (mlp_params(h, m.ffn(), m.swiglu()), 0, 0)
    };
    let latent = if m.is_moe() {
        latent.saturating_add(moe_latent_projections(m))
    } else {
        latent
    };
    LayerParams {
        attention,
        latent,
        mlp,
        experts,
        router,
        norms: mul(&[2, 2, h]).saturating_add(qk_norm_params(m)),
    }
}

/// Latent MoE's `fc1_latent_proj` h → latent and `fc2_latent_proj` latent → h, replicated over
/// tp (`parallel_mode="duplicated"`, megatron/core/transformer/moe/moe_layer.py, NVIDIA/Megatron-LM
/// d98e8a64); 0 without `moe_latent_size`.
pub fn moe_latent_projections(m: &Model) -> u64 {
    m.moe_latent_size.map_or(0, |l| mul(&[2, m.hidden, l]))
}

/// A dense layer of the model: a MoE model's leading `first_k_dense` layers have the dense
/// MLP of `ffn` (DeepSeek's `intermediate_size`) instead of experts.
pub fn dense_layer_params(m: &Model) -> LayerParams {
    let (attention, latent) = attention_params(m);
    LayerParams {
        attention,
        latent,
        mlp: mlp_params(m.hidden, m.ffn(), m.swiglu()),
        experts: 0,
        router: 0,
        norms: mul(&[2, 2, m.hidden]).saturating_add(qk_norm_params(m)),
    }
}

/// Whole-model parameter counts (unsharded).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ParamCounts {
    /// A MoE layer (every layer of a dense model).
    pub per_layer: LayerParams,
    /// A leading dense layer of a MoE model (`first_k_dense`); equal to `per_layer` for a
    /// dense model.
    pub dense_layer: LayerParams,
    /// Leading dense layers of a MoE model (0 for a dense model).
    pub dense_layers: u64,
    /// Word embedding, padded vocabulary × hidden (first stage).
    pub embedding: u64,
    /// Output layer weights (last stage): a separate matrix when untied, or the tied copy Megatron
    /// keeps on the last stage when pp > 1; zero when tied and pp = 1 (shared with the embedding).
    pub output: u64,
    /// The final LayerNorm (last stage).
    pub final_norm: u64,
    /// Multi-token prediction modules (last stage): per depth two input norms, the `2h × h`
    /// projection, one transformer layer and its final norm; they share the embedding and the
    /// output layer (megatron/core/transformer/multi_token_prediction.py). Not in `total`.
    pub mtp: u64,
    /// The model's parameters: embedding, layers, final norm and the output layer if untied.
    /// Multi-token prediction modules are not included (DeepSeek-V3's 671B excludes its 14B
    /// MTP module); they are `mtp`.
    pub total: u64,
    /// Parameters one token uses (`total` less the routed experts it is not sent to).
    pub active: u64,
    /// A hybrid model's layers by kind (`None` for a transformer).
    pub hybrid: Option<HybridParams>,
}

/// One layer of each kind of a hybrid model (unsharded counts).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct HybridParams {
    pub mamba: LayerParams,
    pub attention: LayerParams,
    pub mlp: LayerParams,
    pub moe: LayerParams,
}

impl HybridParams {
    pub fn of(&self, kind: HybridLayer) -> &LayerParams {
        match kind {
            HybridLayer::Mamba => &self.mamba,
            HybridLayer::Attention => &self.attention,
            HybridLayer::Mlp => &self.mlp,
            HybridLayer::Moe => &self.moe,
        }
    }

    /// Σ over kinds of `count × f(layer)` for the layers counted in `c`.
    pub fn sum(&self, c: &HybridCounts, f: impl Fn(&LayerParams) -> u64) -> u64 {
        HybridLayer::ALL.iter().fold(0u64, |acc, &k| {
            acc.saturating_add(f(self.of(k)).saturating_mul(c.of(k)))
        })
    }
}

impl ParamCounts {
    /// Parameters of the layers `start..start + n`, dense and MoE ones apart.
    pub fn layers_params(&self, m: &Model, start: u64, n: u64) -> u64 {
        if let Some(hp) = &self.hybrid {
            return hp.sum(&m.hybrid_layers_in(start, n), LayerParams::total);
        }
        let moe = m.moe_layers_in(start, n);
        let dense = n.saturating_sub(moe);
        self.per_layer
            .total()
            .saturating_mul(moe)
            .saturating_add(self.dense_layer.total().saturating_mul(dense))
    }
}

/// One multi-token prediction depth (megatron/core/transformer/multi_token_prediction.py
/// `MultiTokenPredictionLayer`): enorm, hnorm, eh_proj (2h → h, no bias), a transformer layer
/// of the model's kind (MoE in DeepSeek-V3) and the final layernorm.
pub fn mtp_depth_params(m: &Model, layer: &LayerParams) -> u64 {
    let h = m.hidden;
    mul(&[3, 2, h])
        .saturating_add(mul(&[2, h, h]))
        .saturating_add(layer.total())
}

/// A Mamba-2 layer (megatron/core/ssm/mamba_layer.py `MambaLayer` with mamba_mixer.py
/// `MambaMixer`, NVIDIA/Megatron-LM d98e8a64): the pre-norm (weight h, fused into `in_proj`),
/// `in_proj` h → 2·d_inner + 2·ngroups·d_state + nheads (z, x, B, C, dt; no bias), the
/// depthwise `conv1d` over x, B, C (d_conv weights and a bias per channel), `dt_bias`, `A_log`
/// and `D` per head, the gated RMSNorm over d_inner and `out_proj` d_inner → h. All but the
/// pre-norm are split by tp (heads and groups are, mamba_mixer.py asserts both divisible).
fn mamba_layer_params(m: &Model) -> LayerParams {
    let h = m.hidden;
    let (d_inner, heads) = (m.mamba_d_inner(), m.mamba_num_heads());
    let bc = mul(&[2, m.n_groups(), m.ssm_state_size()]);
    let in_proj = mul(&[
        h,
        d_inner
            .saturating_mul(2)
            .saturating_add(bc)
            .saturating_add(heads),
    ]);
    let conv = mul(&[
        d_inner.saturating_add(bc),
        m.conv_kernel().saturating_add(1),
    ]);
    let mixer = in_proj
        .saturating_add(conv)
        .saturating_add(mul(&[3, heads]))
        .saturating_add(d_inner)
        .saturating_add(mul(&[d_inner, h]));
    LayerParams {
        attention: mixer,
        norms: h,
        ..LayerParams::default()
    }
}

/// The four layer kinds of a hybrid model. Each is one sublayer with its RMSNorm pre-norm
/// (weight h; Nemotron-H's `--normalization RMSNorm`): the attention layer is
/// `linear_qkv` and `linear_proj` with no MLP, the MLP layer `linear_fc1`/`linear_fc2` with no
/// attention, the MoE layer the router, routed and shared experts
/// (megatron/core/models/hybrid/hybrid_layer_specs.py).
fn hybrid_params(m: &Model) -> HybridParams {
    let h = m.hidden;
    let (attention, latent) = attention_params(m);
    let full = layer_params(m);
    HybridParams {
        mamba: mamba_layer_params(m),
        attention: LayerParams {
            attention,
            latent,
            norms: h.saturating_add(qk_norm_params(m)),
            ..LayerParams::default()
        },
        mlp: LayerParams {
            mlp: mlp_params(h, m.ffn(), m.swiglu()),
            norms: h,
            ..LayerParams::default()
        },
        moe: LayerParams {
            attention: 0,
            latent: moe_latent_projections(m),
            norms: h,
            ..full
        },
    }
}

/// The parameter counts of a hybrid model: each layer of the pattern counted by its kind.
fn hybrid_param_counts(m: &Model, padded_vocab: u64, pp: u64) -> ParamCounts {
    let hp = hybrid_params(m);
    let all = m.hybrid_layers_in(0, m.layers);
    let h = m.hidden;
    let embedding = mul(&[padded_vocab, h]);
    let untied = m.untied_embeddings();
    // language_module.py: the last stage's copy of tied embeddings (as `param_counts`).
    let output = if untied || pp > 1 { embedding } else { 0 };
    // The final norm is an RMSNorm like the layers' (weight h).
    let final_norm = h;
    let rest = embedding
        .saturating_add(final_norm)
        .saturating_add(if untied { embedding } else { 0 });
    let decoder = hp.sum(&all, LayerParams::total);
    let decoder_active = hp.sum(&all, |p| p.active(m));
    // The largest kind present stands for "a layer" where one is needed (the FSDP unit).
    let largest = HybridLayer::ALL
        .iter()
        .filter(|&&k| all.of(k) > 0)
        .map(|&k| *hp.of(k))
        .max_by_key(LayerParams::total)
        .unwrap_or_default();
    ParamCounts {
        per_layer: largest,
        dense_layer: largest,
        dense_layers: 0,
        embedding,
        output,
        final_norm,
        mtp: 0,
        total: rest.saturating_add(decoder),
        active: rest.saturating_add(decoder_active),
        hybrid: Some(hp),
    }
}

pub fn param_counts(m: &Model, padded_vocab: u64, pp: u64) -> ParamCounts {
    if m.is_hybrid() {
        return hybrid_param_counts(m, padded_vocab, pp);
    }
    let per_layer = layer_params(m);
    let dense_layer = if m.is_moe() {
        dense_layer_params(m)
    } else {
        per_layer
    };
    let dense_layers = if m.is_moe() { m.dense_layers() } else { 0 };
    let moe_layers = if m.is_moe() {
        m.layers - dense_layers
    } else {
        0
    };
    let h = m.hidden;
    let embedding = mul(&[padded_vocab, h]);
    let untied = m.untied_embeddings();
    // megatron/core/models/common/language_module/language_module.py
    // `setup_embeddings_and_output_layer`: with tied embeddings and pp > 1 the last stage
    // allocates its own copy of the word embeddings, kept equal by an all-reduce.
    let output = if untied || pp > 1 { embedding } else { 0 };
    let final_norm = mul(&[2, h]);
    let layers_of = |per: u64, n: u64| per.saturating_mul(n);
    let (decoder, decoder_active) = if m.is_moe() {
        (
            layers_of(per_layer.total(), moe_layers)
                .saturating_add(layers_of(dense_layer.total(), dense_layers)),
            layers_of(per_layer.active(m), moe_layers)
                .saturating_add(layers_of(dense_layer.total(), dense_layers)),
        )
    } else {
        let all = layers_of(per_layer.total(), m.layers);
        (all, all)
    };
    let rest = embedding
        .saturating_add(final_norm)
        .saturating_add(if untied { embedding } else { 0 });
    let mtp = mtp_depth_params(m, &per_layer).saturating_mul(m.mtp_layers());
    ParamCounts {
        per_layer,
        dense_layer,
        dense_layers,
        embedding,
        output,
        final_norm,
        mtp,
        total: rest.saturating_add(decoder),
        active: rest.saturating_add(decoder_active),
        hybrid: None,
    }
}

/// Pipeline bubble as a fraction of the iteration, (pp − 1) / (m·vpp + pp − 1), taken from the
/// schedule ([`crate::schedule::bubble`]) of the pipeline Megatron runs for these sizes
/// (interleaved when vpp > 1, else 1F1B; none for pp = 1).
// Narayanan et al. SC21 §2.2: bubble time (p − 1)·t_f / v against ideal m·t_f, for 1F1B,
// GPipe and (with v chunks) the interleaved schedule.
pub fn bubble_fraction(pp: u64, m: u64, vpp: u64) -> Ratio {
    let narrow = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
    let (pp, vpp) = (narrow(pp), narrow(vpp.max(1)));
    let shape = PipelineShape::new(Kind::select(pp, vpp, None), pp, vpp, narrow(m));
    crate::schedule::bubble(&shape).fraction()
}

/// The pipeline of a validated scenario: its schedule, sizes and overlap flags, as the
/// schedule IR takes them (the schedule knows nothing of plans, so the plan builds its shape).
/// Counts were bounded by validation (`plan::MAX_WORLD`), so they fit `u32`.
pub fn pipeline_shape(sc: &super::Scenario) -> PipelineShape {
    let narrow = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
    let (pp, vpp) = (narrow(sc.pp), narrow(sc.vpp));
    let mut shape = PipelineShape::new(
        Kind::select(pp, vpp, sc.schedule),
        pp,
        vpp,
        narrow(sc.microbatches),
    );
    shape.overlap_p2p = sc.flags.overlap_p2p;
    shape.overlap_grad_reduce = sc.flags.overlap_grad_reduce;
    shape.overlap_param_gather = sc.flags.overlap_param_gather;
    shape.delay_grad_reduce = sc.flags.delay_grad_reduce;
    shape.delay_param_gather = sc.flags.delay_param_gather;
    shape.tied_embeddings = !sc.model.untied_embeddings();
    shape.overlap_ep_comm = sc.flags.overlap_ep_comm;
    shape.v_memory = v_memory(&sc.model);
    shape
}

/// The memory figures ZBV's greedy scheduler weighs for this model: the reference runtime's
/// per-token approximations from the hidden size, attention heads and sequence length
/// (sail-sg/zero-bubble-pipeline-parallelism 39f2c186a275, runtime.py:1336-1338).
pub fn v_memory(model: &Model) -> crate::schedule::VMemory {
    crate::schedule::VMemory::of_model(model.hidden, model.heads, model.seq)
}

/// LoRA adapter parameters of one transformer layer: rank × (in + out) per targeted linear
/// layer (Megatron-Bridge peft/utils.py `ParallelLinearAdapter`: `linear_in` r × in and
/// `linear_out` out × r, each split by tp as its base layer, peft/lora.py `LoRAMerge.merge`).
/// Shapes are Megatron-Core's: `linear_qkv` h → (heads + 2·kv_groups)·head_dim, `linear_proj`
/// heads·head_dim → h, `linear_fc1` h → ffn (2·ffn with SwiGLU), `linear_fc2` ffn → h. On a MoE
/// layer every routed expert's fc1/fc2 gets its own adapter (peft/utils.py `is_expert_linear`)
/// and the shared experts one like a dense MLP of `shared_expert_ffn`. A model with multi-head
/// latent attention is counted with the same q/k/v and output sizes (its split projections
/// hold about as many in + out elements).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct AdapterParams {
    /// Attention adapters and those of the dense (or shared-expert) MLP: split by tp.
    pub dense: u64,
    /// Routed-expert adapters of the layer: split by ep × etp with the experts.
    pub experts: u64,
}

/// The adapters of one layer; `moe`: the layer has routed experts.
pub fn adapter_params(
    m: &Model,
    rank: u64,
    t: venus_base::base::LoraTargets,
    moe: bool,
) -> AdapterParams {
    let h = m.hidden;
    let q = mul(&[m.heads, m.head_dim()]);
    let kv = mul(&[2, m.kv_groups(), m.head_dim()]);
    let up = |ffn: u64| {
        if m.swiglu() {
            ffn.saturating_mul(2)
        } else {
            ffn
        }
    };
    let linear = |on: bool, inp: u64, out: u64| {
        if on {
            rank.saturating_mul(inp.saturating_add(out))
        } else {
            0
        }
    };
    let mlp = |ffn: u64| linear(t.fc1, h, up(ffn)).saturating_add(linear(t.fc2, ffn, h));
    let attention = linear(t.qkv, h, q.saturating_add(kv)).saturating_add(linear(t.proj, q, h));
    if !moe {
        return AdapterParams {
            dense: attention.saturating_add(mlp(m.ffn())),
            experts: 0,
        };
    }
    let shared = if m.shared_expert_ffn() > 0 {
        mlp(m.shared_expert_ffn())
    } else {
        0
    };
    AdapterParams {
        dense: attention.saturating_add(shared),
        experts: mlp(m.moe_ffn()).saturating_mul(m.experts()),
    }
}

/// Saturating product of counts.
pub fn mul(xs: &[u64]) -> u64 {
    xs.iter().fold(1u64, |acc, &x| acc.saturating_mul(x))
}

/// The divisors of `n`, ascending. Trial division stops at 10⁶, so for an absurd `n` the list
/// holds only the divisors found up to there and their cofactors (enough for suggestions).
pub fn divisors(n: u64) -> Vec<u64> {
    venus_base::base::math::divisors(n, 1_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Llama 2 70B (h 8192, 64 heads, 8 KV groups, ffn 28672, SwiGLU), rank 16 on all four
    /// modules: qkv 16·(8192 + 10240), proj 16·(8192 + 8192), fc1 16·(8192 + 57344),
    /// fc2 16·(28672 + 8192) = 2 195 456 per layer, 175.6M over 80 layers.
    #[test]
    fn lora_adapters_of_a_llama_layer_are_rank_times_in_plus_out() {
        let m = Model {
            name: "llama2_70b".into(),
            hidden: 8192,
            layers: 80,
            heads: 64,
            vocab: 32000,
            seq: 4096,
            ffn: Some(28672),
            kv_groups: Some(8),
            head_dim: None,
            swiglu: Some(true),
            untied_embeddings: Some(true),
            experts: None,
            topk: None,
            moe_ffn: None,
            shared_expert_ffn: None,
            shared_experts: None,
            first_k_dense: None,
            q_lora_rank: None,
            kv_lora_rank: None,
            qk_nope_head_dim: None,
            qk_rope_head_dim: None,
            v_head_dim: None,
            mtp_layers: None,
            hybrid_pattern: None,
            mamba_num_heads: None,
            mamba_head_dim: None,
            ssm_state_size: None,
            n_groups: None,
            conv_kernel: None,
            moe_latent_size: None,
            sliding_window: None,
            sliding_window_pattern: None,
            attention_sinks: None,
            qk_norm: None,
            routed_groups: None,
            topk_groups: None,
            moe_layer_freq: None,
            expert_bias: None,
            load_balancing: None,
        };
        let all = adapter_params(&m, 16, venus_base::base::LoraTargets::ALL, false);
        assert_eq!(all.dense, 16 * (18432 + 16384 + 65536 + 36864));
        assert_eq!(all.dense, 2_195_456);
        assert_eq!(all.experts, 0);
        let qkv = venus_base::base::LoraTargets::from_words(["linear_qkv"]);
        assert_eq!(adapter_params(&m, 32, qkv, false).dense, 32 * 18432);
    }

    /// A small hybrid model: h 1024, 8 layers `MMMM*-E-`, 16 heads (MHA), ffn 4096, 8 experts
    /// of 512, top-2, Mamba-2 defaults (32 heads of 64, state 128, 8 groups, conv 4).
    fn hybrid_model() -> Model {
        Model {
            name: "hybrid".into(),
            hidden: 1024,
            layers: 8,
            heads: 16,
            vocab: 32768,
            seq: 2048,
            ffn: Some(4096),
            kv_groups: None,
            head_dim: None,
            swiglu: None,
            untied_embeddings: Some(true),
            experts: Some(8),
            topk: Some(2),
            moe_ffn: Some(512),
            shared_expert_ffn: None,
            shared_experts: None,
            first_k_dense: None,
            q_lora_rank: None,
            kv_lora_rank: None,
            qk_nope_head_dim: None,
            qk_rope_head_dim: None,
            v_head_dim: None,
            mtp_layers: None,
            hybrid_pattern: Some(
                "MMMM*-E-"
                    .chars()
                    .filter_map(HybridLayer::from_symbol)
                    .collect(),
            ),
            mamba_num_heads: None,
            mamba_head_dim: None,
            ssm_state_size: None,
            n_groups: None,
            conv_kernel: None,
            moe_latent_size: None,
            sliding_window: None,
            sliding_window_pattern: None,
            attention_sinks: None,
            qk_norm: None,
            routed_groups: None,
            topk_groups: None,
            moe_layer_freq: None,
            expert_bias: None,
            load_balancing: None,
        }
    }

    /// Each pipeline stage holds the pattern's layers at its positions: with pp 2 the first
    /// four layers (all Mamba-2) are stage 0's, the attention, MLP and MoE layers stage 1's.
    #[test]
    fn a_hybrid_pipeline_splits_the_pattern_by_position() {
        let m = hybrid_model();
        let first = m.hybrid_layers_in(0, 4);
        let second = m.hybrid_layers_in(4, 4);
        assert_eq!(first.0, [4, 0, 0, 0]);
        assert_eq!(second.0, [0, 1, 2, 1]);
        assert_eq!(m.moe_layers_in(0, 4), 0);
        assert_eq!(m.moe_layers_in(4, 4), 1);
        assert!(m.is_moe_layer(6) && !m.is_moe_layer(5));
        // Past the end counts nothing (a range is clamped, never indexed out of bounds).
        assert_eq!(m.hybrid_layers_in(6, 100).0, [0, 0, 1, 1]);
        assert_eq!(m.hybrid_layers_in(u64::MAX, u64::MAX).0, [0, 0, 0, 0]);
    }

    /// By hand: Mamba-2 d_inner 2048, in_proj 1024 × (4096 + 2048 + 32) = 6,324,224, conv
    /// 4096 × 5 = 20,480, 3 × 32 per-head, gated norm 2048, out_proj 2048 × 1024, pre-norm
    /// 1024: 8,445,024. Attention 4 × 1024² + 1024 = 4,195,328; MLP 2 × 1024 × 4096 + 1024 =
    /// 8,389,632; MoE 8 × 2 × 1024 × 512 + router 8192 + 1024 = 8,397,824, of which a token
    /// uses 2 experts' 2,097,152.
    #[test]
    fn hybrid_parameters_count_each_layer_kind() {
        let m = hybrid_model();
        let p = param_counts(&m, 32768, 1);
        let hp = p.hybrid.unwrap();
        assert_eq!(hp.mamba.total(), 8_445_024);
        assert_eq!(hp.attention.total(), 4_195_328);
        assert_eq!(hp.mlp.total(), 8_389_632);
        assert_eq!(hp.moe.total(), 8_397_824);
        let decoder = 4 * 8_445_024 + 4_195_328 + 2 * 8_389_632 + 8_397_824;
        let rest = 2 * 32768 * 1024 + 1024;
        assert_eq!(p.total, decoder + rest);
        assert_eq!(p.active, p.total - 6 * 1024 * 1024);
        // The layers of a stage: pp 2 puts the four Mamba-2 layers on stage 0.
        assert_eq!(p.layers_params(&m, 0, 4), 4 * 8_445_024);
    }

    /// Activation bytes of each kind for one 2048-token microbatch (tp 1, flash attention, no
    /// recompute). Mamba-2: 5h replicated (10,485,760) and the in_proj output, scan output and
    /// gated-norm output, 2 bytes each: 2048 × 2 × (6176 + 4096) = 42,074,112. Attention: 5h
    /// and Q, K, V, projection input 2048 × 8192, log-sum-exp 4 × 16 × 2048. MLP: 5h and the
    /// GeLU's 2 × 2 × 4096 per token. An attention and an MLP layer together are exactly a
    /// transformer layer of the same dims.
    #[test]
    fn hybrid_layers_keep_their_own_activations() {
        use crate::plan::memory::{
            hybrid_layer_activation_bytes as bytes, layer_activation_bytes_of, ActivationShape,
        };
        let m = hybrid_model();
        let a = ActivationShape {
            seq: 2048,
            micro_batch: 1,
            tp: 1,
            etp: 1,
            sp: false,
            recompute: venus_base::base::Recompute::None,
            attention: venus_base::base::Attention::Flash,
            moe_load: Ratio::ONE,
            modules: venus_base::base::RecomputeModules::CORE_ATTN,
            quantized_inputs: false,
            frozen_base: None,
        };
        assert_eq!(bytes(&m, &a, HybridLayer::Mamba), 52_559_872);
        assert_eq!(bytes(&m, &a, HybridLayer::Attention), 27_394_048);
        assert_eq!(bytes(&m, &a, HybridLayer::Mlp), 44_040_192);
        // MoE: 5h and 2 of 8 experts per token: 2048 × 2 × (2h dispatched + 2 × 2 × 512).
        assert_eq!(bytes(&m, &a, HybridLayer::Moe), 10_485_760 + 16_777_216);
        assert_eq!(
            bytes(&m, &a, HybridLayer::Attention) + bytes(&m, &a, HybridLayer::Mlp),
            layer_activation_bytes_of(&m, &a, false)
        );
        // Full recompute keeps each layer's input alone.
        let full = ActivationShape {
            recompute: venus_base::base::Recompute::Full,
            ..a
        };
        assert_eq!(bytes(&m, &full, HybridLayer::Mamba), 2 * 1024 * 2048);
    }

    #[test]
    fn padded_vocab_is_a_multiple_of_128_times_tp() {
        assert_eq!(padded_vocab(50000, 1), 50048);
        // Megatron's rule gives 49 × 1024 = 50176 for 50000 at tp 8; GPT-2's 50257 gives 51200.
        assert_eq!(padded_vocab(50000, 8), 50176);
        assert_eq!(padded_vocab(50257, 8), 51200);
        assert_eq!(padded_vocab(32000, 1), 32000);
        assert_eq!(padded_vocab(128256, 8), 129024);
    }

    #[test]
    fn even_split_puts_layers_over_pp_on_each_stage() {
        let s = split_layers(32, 4, 2, None, None).unwrap();
        assert_eq!((s.layers(0), s.layers(1), s.layers(3)), (8, 8, 8));
        assert_eq!(s.chunk_layers(2, 1), 4);
        assert_eq!(
            split_layers(32, 3, 1, None, None),
            Err(SplitError::Even {
                layers: 32,
                pp: 3,
                vpp: 1
            })
        );
        assert_eq!(
            split_layers(32, 8, 8, None, None),
            Err(SplitError::Even {
                layers: 32,
                pp: 8,
                vpp: 8
            })
        );
    }

    #[test]
    fn uneven_split_gives_the_rest_to_middle_stages() {
        // 30 layers, pp 4: first 6, last 6, middle 18 over 2 stages = 9.
        let s = split_layers(30, 4, 1, Some(6), Some(6)).unwrap();
        assert_eq!(
            (s.layers(0), s.layers(1), s.layers(2), s.layers(3)),
            (6, 9, 9, 6)
        );
        assert_eq!(
            s.describe(),
            "first 6, 9 on each of 2 middle stages, last 6"
        );
        // Only the last stage written: 31 layers, pp 4, last 1 -> 10 on each of stages 0..2.
        let s = split_layers(31, 4, 1, None, Some(1)).unwrap();
        assert_eq!((s.layers(0), s.layers(2), s.layers(3)), (10, 10, 1));
    }

    #[test]
    fn uneven_split_reports_the_megatron_rule_it_breaks() {
        assert_eq!(
            split_layers(32, 4, 2, Some(3), None),
            Err(SplitError::EndNotDivisible {
                first: true,
                n: 3,
                vpp: 2
            })
        );
        assert_eq!(
            split_layers(32, 4, 1, Some(5), Some(6)),
            Err(SplitError::MiddleNotDivisible {
                layers: 21,
                stages: 2
            })
        );
        assert_eq!(
            split_layers(32, 2, 1, Some(10), Some(10)),
            Err(SplitError::MiddleMismatch {
                layers: 12,
                stages: 0
            })
        );
        assert_eq!(
            split_layers(30, 4, 2, Some(4), Some(4)),
            Err(SplitError::MiddleChunks {
                per_stage: 11,
                vpp: 2
            })
        );
        assert_eq!(
            split_layers(32, 4, 3, Some(3), Some(3)),
            Err(SplitError::MiddleChunks {
                per_stage: 13,
                vpp: 3
            })
        );
        let s = split_layers(30, 4, 3, Some(3), Some(3)).unwrap();
        assert_eq!(
            (s.layers(0), s.layers(1), s.layers(2), s.layers(3)),
            (3, 12, 12, 3)
        );
        assert_eq!((s.chunk_layers(0, 2), s.chunk_layers(1, 0)), (1, 4));
        assert_eq!(
            split_layers(8, 4, 1, Some(5), Some(5)),
            Err(SplitError::EndsExceed {
                ends: 10,
                layers: 8
            })
        );
        assert_eq!(
            split_layers(8, 1, 1, Some(4), Some(4)),
            Err(SplitError::EndsNeedTwoStages)
        );
    }

    #[test]
    fn first_layer_offsets_follow_megatron_chunk_order() {
        // pp 2, vpp 2, 8 layers: rank0·c0 = 0-1, rank1·c0 = 2-3, rank0·c1 = 4-5, rank1·c1 = 6-7.
        let s = split_layers(8, 2, 2, None, None).unwrap();
        assert_eq!(
            [
                s.first_layer(0, 0),
                s.first_layer(1, 0),
                s.first_layer(0, 1),
                s.first_layer(1, 1)
            ],
            [0, 2, 4, 6]
        );
        // Uneven, pp 3, vpp 2: first 2, middle 8, last 2 -> chunk 0: 0, 1, 5; chunk 1: 6, 7, 11.
        let s = split_layers(12, 3, 2, Some(2), Some(2)).unwrap();
        assert_eq!(
            [
                s.first_layer(0, 0),
                s.first_layer(1, 0),
                s.first_layer(2, 0)
            ],
            [0, 1, 5]
        );
        assert_eq!(
            [
                s.first_layer(0, 1),
                s.first_layer(1, 1),
                s.first_layer(2, 1)
            ],
            [6, 7, 11]
        );
    }

    #[test]
    fn accounting_embedding_and_loss_makes_126_layers_two_per_chunk_over_pp8_vpp8() {
        // 126 + 2 = 128 slots = 64 chunks × 2; chunk 0 of stage 0 holds 1 layer + E, the last
        // chunk of stage 7 holds 1 layer + L, every other chunk 2.
        let s = split_accounting(126, 8, 8, true, true).unwrap();
        assert_eq!(s.chunk_layers(0, 0), 1);
        assert_eq!(s.chunk_layers(0, 1), 2);
        assert_eq!(s.chunk_layers(3, 4), 2);
        assert_eq!(s.chunk_layers(7, 7), 1);
        assert_eq!(s.chunk_layers(7, 6), 2);
        assert_eq!((s.layers(0), s.layers(3), s.layers(7)), (15, 16, 15));
        assert_eq!(s.total(), 126);
        assert!(!s.is_even());
        // Offsets in Megatron's order: chunk 0 of ranks 0..7 (1, 2, …), then chunk 1.
        assert_eq!(
            (
                s.first_layer(0, 0),
                s.first_layer(1, 0),
                s.first_layer(2, 0)
            ),
            (0, 1, 3)
        );
        assert_eq!((s.first_layer(0, 1), s.first_layer(7, 7)), (15, 125));
        // Every chunk's offset is the sum of the chunks before it in virtual-stage order.
        let mut next = 0;
        for c in 0..8 {
            for st in 0..8 {
                assert_eq!(s.first_layer(st, c), next, "stage {st} chunk {c}");
                next += s.chunk_layers(st, c);
            }
        }
        assert_eq!(next, 126);
        assert_eq!(
            s.describe(),
            "2 per model chunk, the first 1 with the embedding, the last 1 with the loss"
        );
        // pp 2, no vpp, both accounted: 30 + 2 = 32, each stage 16 slots = 15 layers: even.
        let even = split_accounting(30, 2, 1, true, true).unwrap();
        assert!(even.is_even());
        assert_eq!((even.layers(0), even.layers(1)), (15, 15));
        // Only the embedding: 61 + 1 = 62 does not split over pp 4 (L18/L19).
        assert_eq!(
            split_accounting(61, 4, 1, true, false),
            Err(SplitError::Accounted {
                slots: 62,
                pp: 4,
                vpp: 1,
                embedding: true,
                loss: false
            })
        );
        // 94 + 2 = 96 over pp 8 × vpp 3: 4 per chunk.
        let s = split_accounting(94, 8, 3, true, true).unwrap();
        assert_eq!(
            (
                s.chunk_layers(0, 0),
                s.chunk_layers(7, 2),
                s.chunk_layers(4, 1)
            ),
            (3, 3, 4)
        );
    }

    #[test]
    fn a_layout_table_gives_per_chunk_counts_and_offsets() {
        // 61 layers, pp 8, vpp 4, `Et|(tt|)*30L`: virtual stage 0 (rank 0 chunk 0) 1 layer,
        // the last one (rank 7 chunk 3) none.
        let mut layers = vec![2; 32];
        layers[0] = 1;
        layers[31] = 0;
        let s = StageSplit::from_layout(
            8,
            4,
            LayoutTable {
                layers,
                mtp_stage: 7,
            },
        )
        .unwrap();
        assert_eq!(
            (
                s.chunk_layers(0, 0),
                s.chunk_layers(7, 3),
                s.chunk_layers(7, 2)
            ),
            (1, 0, 2)
        );
        assert_eq!((s.layers(0), s.layers(7)), (7, 6));
        assert_eq!(s.total(), 61);
        assert_eq!((s.first_layer(1, 0), s.first_layer(0, 1)), (1, 15));
        assert!(StageSplit::from_layout(
            8,
            3,
            LayoutTable {
                layers: vec![1; 32],
                mtp_stage: 7
            }
        )
        .is_none());
    }

    #[test]
    fn bubble_fraction_matches_sc21() {
        assert_eq!(bubble_fraction(1, 8, 1), Ratio(0.0));
        assert!((bubble_fraction(4, 8, 1).0 - 3.0 / 11.0).abs() < 1e-12);
        assert!((bubble_fraction(4, 8, 2).0 - 3.0 / 19.0).abs() < 1e-12);
    }

    #[test]
    fn divisors_are_sorted_and_complete() {
        assert_eq!(divisors(12), vec![1, 2, 3, 4, 6, 12]);
        assert_eq!(divisors(1), vec![1]);
        assert_eq!(divisors(49), vec![1, 7, 49]);
    }
}
