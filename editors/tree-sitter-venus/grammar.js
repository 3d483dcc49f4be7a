/**
 * @file Tree-sitter grammar for `.venus` scenario files (venusc).
 * @license MIT
 *
 * The language is specified in LANGUAGE.md of the spec; the key table is
 * `crates/venus-syntax/src/syntax/schema.rs`.
 *
 * How this grammar relates to venusc's own parser: venusc groups items with the key table
 * (a key takes as many arguments as its signature has). A tree-sitter grammar cannot look keys
 * up, so items are flat: a key followed by values. To still tell `heads 16 kv_groups 4` apart
 * as two items, a bare name is a value only where the language puts one:
 *   - right after the keys that take a name first (`gpu`, `model`, `cluster`, `plan`: a
 *     reference; `dim`: the new dim's name; `algo`: the name of the dim it applies to);
 *   - the enum words of the key table (`fc ring switch`, `direct halving_doubling tree`,
 *     `gpipe 1f1b interleaved zb_h1 zb_h2 dualpipe dualpipev zbv`, `none selective full`, `bf16 fp8`, `flash unfused`, flag
 *     words `on off`) are `constant` tokens, which tree-sitter only recognises where a value
 *     may stand, so they never end an item;
 *   - inside lists, where no key can appear.
 * Every other name starts the next item, as in venusc.
 *
 * Quantities: the unit must follow the number directly (`450GB/s`), so it is an immediate
 * token. Like venusc's lexer, any run of `[A-Za-z0-9_/%]` is accepted as a unit here; whether
 * it is a known unit is a type error for venusc, not a syntax error.
 */

/// <reference types="tree-sitter-cli/dsl" />
// @ts-check

const DEF_KINDS = ['model', 'gpu', 'cluster', 'plan', 'scenario'];

// Keys whose first argument is a name: references to a definition, `dim NAME` and
// `algo DIM` (and `link`, `rail`, `fat_tree`, `sharp`, which name a dim too).
const NAME_KEYS = [
  'model', 'gpu', 'cluster', 'plan', 'dim', 'algo', 'link', 'rail', 'fat_tree', 'sharp',
];

// Enum words of `crates/venus-syntax/src/syntax/schema.rs`: TOPOLOGIES, ALGORITHMS,
// LINKS, SCHEDULES, RECOMPUTE, PRECISIONS, ARCHS, ATTENTIONS, FLAG_WORDS, TASKS, LORA_MODULES,
// FSDP_STRATEGIES, FSDP_IMPLS, GRAD_DTYPES, MAIN_PARAMS_DTYPES, MOMENT_DTYPES,
// MOE_DISPATCHERS, FLEX_BACKENDS, CP_COMMS, LOAD_BALANCING.
const ENUM_WORDS = [
  'fc', 'ring', 'switch',
  'nvswitch', 'infiniband',
  'direct', 'halving_doubling', 'tree',
  'gpipe', '1f1b', 'interleaved', 'zb_h1', 'zb_h2', 'dualpipe', 'dualpipev', 'zbv',
  'none', 'selective', 'full', 'op',
  'vocab_parallel',
  'bf16', 'fp8', 'fp4',
  'ampere', 'hopper', 'blackwell', 'blackwell_ultra', 'ada', 'cdna3', 'cdna4',
  'flash', 'unfused', 'flash2',
  'on', 'off',
  'pretrain', 'sft', 'lora',
  'linear_qkv', 'linear_proj', 'linear_fc1', 'linear_fc2',
  'no_shard', 'optim', 'optim_grads', 'optim_grads_params',
  'megatron', 'torch',
  'fp32', 'fp16',
  'alltoall', 'allgather', 'flex', 'deepep', 'hybridep',
  'p2p', 'a2a', 'a2a_p2p',
  'delayed', 'tensorwise', 'blockwise', 'mxfp8', 'e4m3', 'hybrid', 'W0023',
  'W0001', 'W0002', 'W0003', 'W0004', 'W0005', 'W0006', 'W0007', 'W0008', 'W0009',
  'W0012', 'W0013', 'W0014', 'W0015', 'W0017', 'W0018', 'W0019', 'W0020', 'W0022',
  'core_attn', 'mlp', 'moe_act', 'layernorm', 'mla_up_proj', 'moe', 'shared_experts',
  'uniform', 'block',
  'W0024',
  'W0025',
  'local', 'transformer_engine', 'full_iteration', 'attn', 'moe_router', 'moe_preprocess',
  'mamba', 'attn_norm', 'qkv_linear', 'attn_proj', 'mlp_norm', 'expert_fc1', 'fused_group_mlp',
  'aux_loss', 'seq_aux_loss',
];

module.exports = grammar({
  name: 'venus',

  extras: $ => [/\s|\uFEFF/, $.comment],

  word: $ => $.name,

  rules: {
    source_file: $ => repeat(choice($.use_declaration, $.definition, ';')),

    // use "relative/path.venus"
    use_declaration: $ => seq('use', field('path', $.string)),

    // model NAME [: BASE] < items >    (cluster and plan may be unnamed)
    definition: $ => seq(
      field('kind', choice(...DEF_KINDS)),
      optional(field('name', $.name)),
      optional(seq(':', field('base', $.name))),
      field('body', $.block),
    ),

    block: $ => seq('<', repeat(choice($.item, ';')), '>'),

    item: $ => choice(
      // `gpu h100_sxm`, `plan < pp 4 >`, `dim nvlink fc 8 450GB/s 1us 80%`, `algo ib tree`.
      // Shift the name rather than end the item: after these keys a name is their argument.
      prec.right(seq(
        field('key', choice(...NAME_KEYS.map(k => alias(k, $.key)))),
        optional(field('value', $.name)),
        repeat(field('value', $._value)),
      )),
      // `hidden 4096`, `swiglu`, `sp on`, `recompute full`, `attention flash`,
      // `expect < ... >`
      seq(
        field('key', alias($.name, $.key)),
        repeat(field('value', $._value)),
      ),
    ),

    _value: $ => choice(
      $.number,
      $.quantity,
      $.constant,
      $.string,
      $.list,
      $.block,
    ),

    // [1 2 4 8], [on off], [h100_sxm b200]
    list: $ => seq('[', repeat(choice($._value, $.name)), ']'),

    constant: _ => choice(...ENUM_WORDS),

    // 450GB/s, 80GiB, 1us, 989.4TFLOP/s, 55%
    quantity: $ => seq(field('number', $.number), field('unit', $.unit)),

    unit: _ => token.immediate(prec(1, /[A-Za-z%][A-Za-z0-9_\/%]*/)),

    // 4096, 4_096, 0.55, 1e-3
    number: _ => token(/[0-9][0-9_]*(\.[0-9][0-9_]*)?([eE][+-]?[0-9][0-9_]*)?/),

    name: _ => /[A-Za-z_][A-Za-z0-9_]*/,

    // One line; `\"` and `\\` are the escapes.
    string: _ => token(seq('"', repeat(choice(/[^"\\\r\n]/, /\\[^\r\n]/)), '"')),

    comment: _ => token(seq('#', /[^\r\n]*/)),
  },
});
