# A Mixtral-style run with flags venusc does not model.
--num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32
--group-query-attention --num-query-groups 8 --seq-length 4096 --vocab-size 32000 --swiglu
--num-experts 8 --moe-router-topk 2 --moe-router-num-groups 2 --moe-token-dispatcher-type alltoall
--tensor-model-parallel-size 2 --expert-model-parallel-size 8 --sequence-parallel
--micro-batch-size 1 --global-batch-size 256 --bf16 --moe-router-group-topk 1
--recompute-granularity full --recompute-method block --recompute-num-layers 4
--lr 1e-4 --log-interval 10
