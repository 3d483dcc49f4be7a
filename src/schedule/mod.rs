//! Schedule IR: Megatron-LM's per-pipeline-rank op order.
