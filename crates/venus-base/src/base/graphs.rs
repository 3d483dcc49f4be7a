//! CUDA graph capture and activation offloading: the plain kinds the plan, the memory model
//! and the compute model share (Megatron-LM's `--cuda-graph-impl`, `--cuda-graph-modules` and
//! `--offload-modules`, NVIDIA/Megatron-LM d98e8a64).
//!
//! Input: the words of the `cuda_graphs` and `offload_modules` keys. Output: [`CudaGraphImpl`],
//! [`CudaGraphModules`], [`OffloadModules`]. Invariant: unknown words are ignored (the type
//! checker admits only the words listed here).

/// How CUDA graphs capture the training step (megatron/core/transformer/transformer_config.py:1075-1088).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum CudaGraphImpl {
    /// Eager launches: every kernel is launched from the host.
    #[default]
    None,
    /// Megatron-Core's `CudaGraphManager`: per-layer graphs (`--cuda-graph-impl local`).
    Local,
    /// Transformer Engine's `make_graphed_callables`: per-layer graphs.
    TransformerEngine,
    /// One graph for the whole forward-backward path, the optimizer excluded.
    FullIteration,
}

impl CudaGraphImpl {
    pub const ALL: [CudaGraphImpl; 4] = [
        CudaGraphImpl::None,
        CudaGraphImpl::Local,
        CudaGraphImpl::TransformerEngine,
        CudaGraphImpl::FullIteration,
    ];
    /// The key's word, which is also Megatron's `--cuda-graph-impl` value.
    pub fn word(self) -> &'static str {
        match self {
            CudaGraphImpl::None => "none",
            CudaGraphImpl::Local => "local",
            CudaGraphImpl::TransformerEngine => "transformer_engine",
            CudaGraphImpl::FullIteration => "full_iteration",
        }
    }
    pub fn from_word(w: &str) -> Option<CudaGraphImpl> {
        CudaGraphImpl::ALL.into_iter().find(|c| c.word() == w)
    }
    /// Per-layer graphs (`local` or `transformer_engine`), the ones `--cuda-graph-modules`
    /// narrows.
    pub fn per_layer(self) -> bool {
        matches!(
            self,
            CudaGraphImpl::Local | CudaGraphImpl::TransformerEngine
        )
    }
}

/// A set of words of a fixed list, kept as a bit per word.
macro_rules! word_set {
    ($(#[$doc:meta])* $name:ident, [$($word:literal),* $(,)?]) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
        pub struct $name(u16);

        impl $name {
            /// Every word, in Megatron's order.
            pub const WORDS: &'static [&'static str] = &[$($word),*];

            /// The words of `words` that are in [`Self::WORDS`].
            pub fn from_words<'a>(words: impl IntoIterator<Item = &'a str>) -> $name {
                words.into_iter().fold($name(0), |s, w| {
                    match Self::WORDS.iter().position(|x| *x == w) {
                        Some(i) => $name(s.0 | 1 << i),
                        None => s,
                    }
                })
            }
            /// Whether `word` is in the set.
            pub fn has(self, word: &str) -> bool {
                Self::WORDS
                    .iter()
                    .position(|x| *x == word)
                    .is_some_and(|i| self.0 & 1 << i != 0)
            }
            pub fn is_empty(self) -> bool {
                self.0 == 0
            }
            /// The words in the set, in Megatron's order.
            pub fn words(self) -> Vec<&'static str> {
                Self::WORDS.iter().copied().filter(|w| self.has(w)).collect()
            }
        }
    };
}

word_set!(
    /// The parts of each layer per-layer graphs capture (`--cuda-graph-modules`,
    /// transformer_config.py:1090-1106); empty: the whole layer.
    CudaGraphModules,
    ["attn", "mlp", "moe", "moe_router", "moe_preprocess", "mamba"]
);

word_set!(
    /// The submodules whose saved inputs fine-grained activation offloading moves to host
    /// memory (`--offload-modules`, transformer_config.py:1328-1342; `gdp_qkv` belongs to a
    /// mixer venusc does not model and is not listed).
    OffloadModules,
    [
        "attn_norm",
        "qkv_linear",
        "core_attn",
        "attn_proj",
        "mlp_norm",
        "expert_fc1",
        "moe_act",
        "fused_group_mlp",
    ]
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_sets_keep_the_written_words_in_megatrons_order() {
        let m = OffloadModules::from_words(["expert_fc1", "core_attn", "bogus"]);
        assert_eq!(m.words(), vec!["core_attn", "expert_fc1"]);
        assert!(m.has("core_attn") && !m.has("attn_proj") && !m.is_empty());
        assert!(CudaGraphModules::default().is_empty());
        assert_eq!(
            CudaGraphImpl::from_word("transformer_engine"),
            Some(CudaGraphImpl::TransformerEngine)
        );
        assert!(CudaGraphImpl::Local.per_layer() && !CudaGraphImpl::FullIteration.per_layer());
    }
}
