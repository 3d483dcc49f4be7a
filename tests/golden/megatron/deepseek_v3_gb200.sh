# Published run `mcore_dsv3_gb200_final` (published-runs.tsv): its `megatron_args` and its
# layers/hidden/ffn/heads/vocab/seq/batch/tp/pp/cp/ep/dist_optimizer columns rendered as flags (the row's vpp
# 4 is what its `--pipeline-model-parallel-layout` gives: 32 virtual stages over pp 8).
--num-layers 61 --hidden-size 7168 --ffn-hidden-size 18432 --num-attention-heads 128 \
--vocab-size 129280 --seq-length 4096 \
--tensor-model-parallel-size 1 --pipeline-model-parallel-size 8 \
--context-parallel-size 1 --expert-model-parallel-size 32 \
--micro-batch-size 1 --global-batch-size 2048 --use-distributed-optimizer --bf16 \
--multi-latent-attention --q-lora-rank 1536 --kv-lora-rank 512 --qk-head-dim 128 --qk-pos-emb-head-dim 64 --v-head-dim 128 --kv-channels 128 --qk-layernorm --num-experts 256 --moe-router-topk 8 --moe-ffn-hidden-size 2048 --moe-shared-expert-intermediate-size 2048 --moe-layer-freq ([0]*3+[1]*58) --moe-router-num-groups 8 --moe-router-group-topk 4 --moe-router-score-function sigmoid --swiglu --untie-embeddings-and-output-weights --attention-dropout 0.0 --hidden-dropout 0.0 --pipeline-model-parallel-layout Et|(tt|)*30L --moe-router-force-load-balancing --use-precision-aware-optimizer --main-grads-dtype fp32 --main-params-dtype fp32 --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16 --overlap-grad-reduce --overlap-param-gather --moe-token-dispatcher-type flex --moe-flex-dispatcher-backend hybridep --recompute-granularity selective --recompute-modules moe_act mlp --cuda-graph-impl transformer_engine --cuda-graph-scope attn moe_router moe_preprocess --moe-permute-fusion --moe-router-fusion --enable-experimental --fp8-recipe mxfp8 --fp8-format e4m3 --fp8-param-gather
