python pretrain_gpt.py \
    --num-layers 32 --hidden-size 4096 --num-attention-heads 32 \
    --seq-length 4096 --vocab-size 32000 \
    --micro-batch-size 1 --global-batch-size 256 \
    --tensor-model-paralel-size 4 \
    --bf16
