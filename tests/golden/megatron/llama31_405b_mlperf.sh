# Published run `mb2509_llama31_405b_h100_fp8` (../../shared/data/published-runs.tsv): its
# `megatron_args` and its layers/hidden/ffn/heads/kv_groups/vocab/seq/batch/tp/pp/vpp/cp/ep
# columns rendered as flags. MLPerf's recipe also sets the two `--account-for-*` flags (126
# layers + embedding + loss = 8 stages x 8 virtual stages x 2). The row leaves sequence
# parallelism and the optimizer unstated; the last line sets them as `validate` assumes for
# its source (Megatron-Bridge's recipe), and torchrun gives the row's 1,024 GPUs.
torchrun --nnodes 128 --nproc-per-node 8 pretrain_gpt.py \
--num-layers 126 --hidden-size 16384 --ffn-hidden-size 53248 \
--num-attention-heads 128 --group-query-attention --num-query-groups 8 \
--vocab-size 128256 --seq-length 8192 \
--swiglu --untie-embeddings-and-output-weights \
--tensor-model-parallel-size 8 --pipeline-model-parallel-size 8 \
--num-virtual-stages-per-pipeline-rank 8 --context-parallel-size 2 \
--expert-model-parallel-size 1 \
--account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split \
--micro-batch-size 1 --global-batch-size 512 \
--bf16 --fp8-format hybrid \
--sequence-parallel --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather
