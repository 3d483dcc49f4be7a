" Vim syntax file
" Language: Venus (.venus scenario files for venusc)
" The key lists follow src/syntax/schema.rs (checked by editors/test/editors.test.js).

if exists('b:current_syntax')
  finish
endif

let s:cpo_save = &cpo
set cpo&vim

syn case match
syn sync minlines=200

" Top-level declarations; `model gpu cluster plan` are keys inside a block (scenario, cluster).
syn keyword venusUse use
syn match venusDefinition /^\s*\zs\%(model\|gpu\|cluster\|plan\|scenario\)\>/ nextgroup=venusDefName,venusColon skipwhite skipnl
syn match venusDefName /\<[A-Za-z_][A-Za-z0-9_]*\>/ contained nextgroup=venusColon skipwhite skipnl
syn match venusColon /:/ contained nextgroup=venusBase skipwhite skipnl
syn match venusBase /\<[A-Za-z_][A-Za-z0-9_]*\>/ contained

" Keys of every block kind.
syn keyword venusKey contained hidden layers heads vocab seq ffn kv_groups head_dim swiglu
syn keyword venusKey contained untied_embeddings experts topk moe_ffn shared_expert_ffn
syn keyword venusKey contained shared_experts first_k_dense q_lora_rank kv_lora_rank
syn keyword venusKey contained qk_nope_head_dim qk_rope_head_dim v_head_dim mtp_layers
syn keyword venusKey contained hybrid_override_pattern mamba_num_heads mamba_head_dim
syn keyword venusKey contained ssm_state_size n_groups conv_kernel moe_latent_size
syn keyword venusKey contained sliding_window sliding_window_pattern attention_sinks qk_norm
syn keyword venusKey contained routed_groups topk_groups moe_layer_freq expert_bias load_balancing
syn keyword venusKey contained moe_capacity_headroom moe_pad_to_capacity
syn keyword venusKey contained peak memory mem_bw fp8_peak arch fp4_peak gemm_efficiency gemm_half_dim sms
syn keyword venusKey contained gpu dim nodes algo gpus per_domain tray link rail fat_tree sharp
syn keyword venusKey contained slow_gpus slow_rank slow_node slow_link
syn keyword venusKey contained tp pp cp ep vpp first_stage_layers last_stage_layers dp
syn keyword venusKey contained micro_batch global_batch schedule sp recompute
syn keyword venusKey contained distributed_optimizer overlap_grad_reduce overlap_param_gather
syn keyword venusKey contained delay_grad_reduce delay_param_gather overlap_p2p overlap_tp_comm overlap_ep_comm bucket_size
syn keyword venusKey contained moe_imbalance
syn keyword venusKey contained task lora_rank lora_modules fsdp grad_dtype main_params_dtype
syn keyword venusKey contained exp_avg_dtype exp_avg_sq_dtype
syn keyword venusKey contained account_for_embedding account_for_loss pipeline_layout
syn keyword venusKey contained mfu attention
syn keyword venusKey contained measured precision iterations reserve
syn keyword venusKey contained model cluster plan expect
syn keyword venusKey contained first middle last unused
syn keyword venusKey contained allow
syn keyword venusKey contained iteration_time_max tflops_min memory_max mfu_min
syn keyword venusKey contained train tokens price
syn keyword venusKey contained gpu_mtbf node_mtbf link_mtbf storage_write_bw storage_read_bw restart
syn keyword venusKey contained checkpoint_interval
syn keyword venusKey contained venussim
syn keyword venusKey contained recompute_modules recompute_method recompute_num_layers fp8_param_gather fsdp_keep_unsharded
syn keyword venusKey contained etp moe_dispatcher cp_comm moe_permute_fusion moe_router_fusion
syn keyword venusKey contained cross_entropy pipeline_runtime
syn keyword venusKey contained cuda_graphs offload_modules offload_fraction offload_layers
syn keyword venusKey contained fp8_recipe fp8_format fp8_attention
syn keyword venusKey contained optimizer_offload

" Enum words: topologies, collective algorithms, schedules, recompute, precision, attention
" kernels, flag words.
syn keyword venusConstant contained fc ring switch direct halving_doubling tree nvswitch infiniband
syn keyword venusConstant contained gpipe interleaved zb_h1 zb_h2 dualpipe dualpipev zbv none selective full op bf16 fp8 fp4 flash unfused flash2 on off vocab_parallel
syn keyword venusConstant contained ampere hopper blackwell blackwell_ultra ada cdna3 cdna4
syn keyword venusConstant contained pretrain sft lora linear_qkv linear_proj linear_fc1 linear_fc2
syn keyword venusConstant contained no_shard optim optim_grads optim_grads_params megatron torch fp32 fp16
syn keyword venusConstant contained W0001 W0002 W0003 W0004 W0005 W0006 W0007 W0008 W0009 W0012 W0013 W0014 W0015 W0017 W0018 W0019 W0020 W0022
syn keyword venusConstant contained core_attn mlp moe_act layernorm mla_up_proj moe shared_experts uniform block
syn keyword venusConstant contained alltoall allgather flex deepep hybridep p2p a2a a2a_p2p
syn keyword venusConstant contained W0024 W0025 local transformer_engine full_iteration attn moe_router moe_preprocess
syn keyword venusConstant contained mamba attn_norm qkv_linear attn_proj mlp_norm expert_fc1 fused_group_mlp
syn keyword venusConstant contained aux_loss seq_aux_loss
syn keyword venusConstant contained delayed tensorwise blockwise mxfp8 e4m3 hybrid W0023

" Numbers and quantities (the unit follows the number directly: 450GB/s, 80GiB, 1us, 55%).
syn match venusNumber /\<\d[0-9_]*\%(\.\d[0-9_]*\)\=\%([eE][+-]\=\d[0-9_]*\)\=\>/ contained
syn match venusQuantity /\<\d[0-9_]*\%(\.\d[0-9_]*\)\=\%([eE][+-]\=\d[0-9_]*\)\=\%([eE][+-]\=\d\)\@!\ze[A-Za-z%]/ contained nextgroup=venusUnit,venusBadUnit
syn match venusBadUnit /[A-Za-z%][A-Za-z0-9_\/%]*/ contained
" After venusQuantity: the later match wins, so `1f1b` is a word, not 1 with unit `f1b`.
syn match venusConstant contained /\<1f1b\>/
syn match venusUnit /\%([KMGT]\%(iB\|B\/s\|b\/s\|B\)\|[GTP]\=FLOP\/s\|B\/s\|b\/s\|B\|[num]\=s\|min\|h\|%\)\ze\%([^A-Za-z0-9_\/%]\|$\)/ contained

syn region venusString start=/"/ skip=/\\\\\|\\"/ end=/"\|$/ contains=venusEscape oneline
syn match venusEscape /\\["\\]/ contained

syn match venusComment /#.*$/ contains=venusTodo,@Spell
syn keyword venusTodo contained TODO FIXME XXX NOTE

syn region venusBlock matchgroup=venusBracket start=/</ end=/>/ contains=venusBlock,venusList,venusKey,venusConstant,venusQuantity,venusNumber,venusString,venusComment,venusSemi fold
syn region venusList matchgroup=venusBracket start=/\[/ end=/\]/ contained contains=venusList,venusBlock,venusConstant,venusQuantity,venusNumber,venusString,venusComment
syn match venusSemi /;/

hi def link venusUse Include
hi def link venusDefinition Keyword
hi def link venusDefName Type
hi def link venusColon Delimiter
hi def link venusBase Type
hi def link venusKey Identifier
hi def link venusConstant Constant
hi def link venusNumber Number
hi def link venusQuantity Number
hi def link venusUnit Special
hi def link venusBadUnit Error
hi def link venusString String
hi def link venusEscape SpecialChar
hi def link venusComment Comment
hi def link venusTodo Todo
hi def link venusBracket Delimiter
hi def link venusSemi Delimiter

let b:current_syntax = 'venus'

let &cpo = s:cpo_save
unlet s:cpo_save
