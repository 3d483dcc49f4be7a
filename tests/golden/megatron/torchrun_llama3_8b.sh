#!/bin/bash
# Llama 3 8B on 2 nodes
export CUDA_DEVICE_MAX_CONNECTIONS=1
TP=${TP:-2}
PP=2
GPUS_PER_NODE=8
MODEL_ARGS=(
    --num-layers 32
    --hidden-size 4096
    --ffn-hidden-size 14336
    --num-attention-heads 32
    --group-query-attention --num-query-groups 8
    --seq-length 8192 --max-position-embeddings 8192
    --swiglu --untie-embeddings-and-output-weights
)
torchrun --nproc_per_node $GPUS_PER_NODE --nnodes 2 --master_addr $MASTER_ADDR \
    pretrain_gpt.py \
    ${MODEL_ARGS[@]} \
    --tensor-model-parallel-size $TP \
    --pipeline-model-parallel-size "$PP" \
    --micro-batch-size 1 --global-batch-size 128 \
    --vocab-size 128256 --tokenizer-type HuggingFaceTokenizer \
    --bf16 --sequence-parallel --use-distributed-optimizer \
    --lr 3e-4 --data-path /data/pile_text_document 2>&1 | tee log.txt
