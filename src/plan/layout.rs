//! Parallel state: rank ↔ (tp, cp, ep, dp, pp) coordinates and process groups, as Megatron-LM's
//! `parallel_state.py` builds them.
