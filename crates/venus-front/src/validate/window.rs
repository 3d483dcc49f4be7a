//! Sliding-window attention rules: E0349 (a layer pattern that windows no layer, or without a
//! window) and W0022 (a window that covers the whole sequence).
//!
//! Input: the [`Validator`]'s typed model. Output: [`PlanProblem`]s.
//! Invariants: only written keys are checked; the proposed values pass the rule they fix.
//!
//! Source: megatron/core/transformer/utils.py `is_layer_window_attention` (an int
//! `--window-attn-skip-freq N` keeps full attention in the layers whose number, from 1, is a
//! multiple of N; `--window-size` left −1 is an infinite window), NVIDIA/Megatron-LM d98e8a64.

use super::problem::{ModelKey, PlanProblem, WindowProblem};
use super::Validator;
use crate::ty::Opt;

fn written(key: &'static str, o: &Opt<u64>) -> Option<ModelKey> {
    o.as_ref().map(|s| ModelKey {
        key,
        value: s.value,
        loc: s.loc,
    })
}

impl Validator<'_> {
    pub(super) fn check_window(&mut self) {
        let m = &self.def.model;
        let window = written("sliding_window", &m.sliding_window);
        let pattern = written("sliding_window_pattern", &m.sliding_window_pattern);
        match (window, pattern) {
            (None, Some(pattern)) => {
                self.report(PlanProblem::Window(WindowProblem::PatternWithoutWindow {
                    model: m.name.clone(),
                    pattern,
                    seq: m.seq.value,
                }))
            }
            (Some(window), Some(pattern)) if pattern.value == 1 => {
                self.report(PlanProblem::Window(WindowProblem::NoWindowedLayer {
                    window,
                    pattern,
                }))
            }
            (Some(window), _) if window.value >= m.seq.value => {
                self.report(PlanProblem::Window(WindowProblem::CoversSequence {
                    window,
                    seq: m.seq.value,
                    seq_loc: m.seq.loc,
                }))
            }
            _ => {}
        }
    }
}
