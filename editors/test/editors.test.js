// Consistency tests for the editor integrations, run with `node --test editors/test/`.
//
// The key table lives in `crates/venus-syntax/src/syntax/schema.rs`; the TextMate grammar,
// the Vim syntax and the tree-sitter grammar each carry their own copy of its keys and enum
// words (editors cannot read Rust). These tests read the schema and fail when a copy drifts from it, and check the
// VS Code and Helix manifests that editors load without running anything.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const editors = path.join(__dirname, '..');
const root = path.join(editors, '..');
const read = (...p) => fs.readFileSync(path.join(...p), 'utf8');

/** Keys per block (`MODEL` → ['hidden', ...]) and their first argument type, from schema.rs. */
function schemaKeys() {
  const src = read(root, 'crates', 'venus-syntax', 'src', 'syntax', 'schema.rs');
  const blocks = {};
  // `plan_key_list!([key_table_with_plan] ({ MODEL => { Hidden = req("hidden", &[Count],
  // ...)..., } ... } { SCENARIO => { ... } ... }))`: one arm per block kind
  // (`BlockKind::Measured` for the nested blocks); the plan block is the master list of the
  // plan keys in venus-base's plan_keys.rs, spliced in between.
  const table = /\nvenus_base::plan_key_list!\(\[key_table_with_plan\] \(\{\n([\s\S]*?)\n\}\)\);\n/.exec(src);
  assert.ok(table, 'schema.rs has no key_table invocation');
  const planSrc = read(root, 'crates', 'venus-base', 'src', 'base', 'plan_keys.rs');
  const plan = /\$\(\$cb\)\*! \{ \$args\n([\s\S]*?)\n {8}\}\n {4}\};\n\}\n/.exec(planSrc);
  assert.ok(plan, 'plan_keys.rs has no plan_key_list! body');
  blocks.PLAN = [];
  const blockRe = /^ {4}(?:BlockKind::)?(\w+) => \{\n([\s\S]*?)\n {4}\}$/gm;
  for (const [, kind, body] of table[1].matchAll(blockRe)) {
    const block = kind.toUpperCase();
    const keys = [];
    const callRe = /\b(?:req|key|flag)\(\s*"([a-z0-9_]+)",\s*(?:&\[\s*(\w+))?/g;
    for (const [, name, firstArg] of body.matchAll(callRe)) keys.push({ name, firstArg });
    const litRe = /KeySig \{\s*key: "([a-z0-9_]+)",\s*args: &\[\s*(\w+)/g;
    for (const [, name, firstArg] of body.matchAll(litRe)) keys.push({ name, firstArg });
    // `AllowModel = allow_key(),`: the one `allow` entry shared by every definition block.
    if (/\ballow_key\(\)/.test(body)) keys.push({ name: 'allow', firstArg: 'Enum' });
    blocks[block] = keys;
  }
  const callRe = /\b(?:req|key|flag)\(\s*"([a-z0-9_]+)",\s*(?:&\[\s*(\w+))?/g;
  for (const [, name, firstArg] of plan[1].matchAll(callRe)) blocks.PLAN.push({ name, firstArg });
  if (/\ballow_key\(\)/.test(plan[1])) blocks.PLAN.push({ name: 'allow', firstArg: 'Enum' });
  return blocks;
}

/**
 * Every enum word of schema.rs (TOPOLOGIES, ALGORITHMS, SCHEDULES, RECOMPUTE, PRECISIONS,
 * ARCHS, ATTENTIONS, FLAG_WORDS).
 */
function schemaEnumWords() {
  const src = read(root, 'crates', 'venus-syntax', 'src', 'syntax', 'schema.rs');
  const words = [];
  for (const [, list] of src.matchAll(/pub const [A-Z_]+: &\[&str\] = &\[([^\]]*)\];/g)) {
    for (const [, w] of list.matchAll(/"([^"]+)"/g)) words.push(w);
  }
  // A list the schema takes from a base type (`&venus_base::base::RecomputeModules::WORDS`):
  // the words of that type's `WORDS` constant in venus-base's kinds.rs.
  const kinds = read(root, 'crates', 'venus-base', 'src', 'base', 'kinds.rs');
  for (const [, ty] of src.matchAll(/pub const [A-Z_]+: &\[&str\] = &venus_base::base::(\w+)::WORDS;/g)) {
    const m = new RegExp(`impl ${ty} \\{[\\s\\S]*?pub const WORDS: \\[&'static str; \\d+\\] = \\[([^\\]]*)\\];`).exec(kinds);
    assert.ok(m, `kinds.rs has no ${ty}::WORDS`);
    for (const [, w] of m[1].matchAll(/"([^"]+)"/g)) words.push(w);
  }
  // A word set of venus-base's graphs.rs (`venus_base::base::OffloadModules::WORDS`): the
  // words its `word_set!` invocation lists.
  const graphs = read(root, 'crates', 'venus-base', 'src', 'base', 'graphs.rs');
  for (const [, ty] of src.matchAll(/pub const [A-Z_]+: &\[&str\] = venus_base::base::(\w+)::WORDS;/g)) {
    const m = new RegExp(`word_set!\\([\\s\\S]*?\\b${ty},\\s*\\[([^\\]]*)\\]`).exec(graphs);
    assert.ok(m, `graphs.rs has no word_set! ${ty}`);
    for (const [, w] of m[1].matchAll(/"([^"]+)"/g)) words.push(w);
  }
  return words;
}

const sorted = (xs) => [...new Set(xs)].sort();
const allKeys = () => sorted(Object.values(schemaKeys()).flat().map((k) => k.name));

/** The words of the alternation in a TextMate `match` like `(?<!..)(a|b|c)(?!..)`. */
function alternation(match) {
  const m = /\)\(([A-Za-z0-9_|]+)\)\(/.exec(match);
  assert.ok(m, `no word alternation in ${match}`);
  return m[1].split('|');
}

/** The words of every `syn keyword GROUP ...` line of the Vim syntax. */
function vimKeywords(group) {
  const src = read(editors, 'vim', 'syntax', 'venus.vim');
  const words = [];
  for (const line of src.split('\n')) {
    const m = new RegExp(`^syn keyword ${group}\\b(.*)$`).exec(line);
    if (m) words.push(...m[1].trim().split(/\s+/).filter((w) => w !== 'contained'));
  }
  return words;
}

/** A `const NAME = [ 'a', 'b' ];` list of grammar.js. */
function grammarList(name) {
  const src = read(editors, 'tree-sitter-venus', 'grammar.js');
  const m = new RegExp(`const ${name} = \\[([^\\]]*)\\];`).exec(src);
  assert.ok(m, `grammar.js has no ${name}`);
  return [...m[1].matchAll(/'([^']+)'/g)].map((x) => x[1]);
}

const tmGrammar = () => JSON.parse(read(editors, 'vscode', 'syntaxes', 'venus.tmLanguage.json'));

test('schema parsing finds every block kind and the keys the spec names', () => {
  const blocks = schemaKeys();
  assert.deepEqual(Object.keys(blocks).sort(), [
    'CLUSTER', 'EXPECT', 'GPU', 'MEASURED', 'MODEL', 'PLAN', 'SCENARIO', 'TRAIN',
  ]);
  const names = (b) => blocks[b].map((k) => k.name);
  assert.deepEqual(names('MEASURED'), ['first', 'middle', 'last', 'unused']);
  assert.deepEqual(sorted(names('CLUSTER')), [
    'algo', 'allow', 'dim', 'fat_tree', 'gpu', 'gpu_mtbf', 'gpus', 'link', 'link_mtbf', 'node_mtbf', 'nodes',
    'per_domain', 'rail', 'reserve', 'restart', 'sharp', 'slow_gpus', 'slow_link', 'slow_node', 'slow_rank',
    'storage_read_bw', 'storage_write_bw', 'tray',
  ]);
  assert.ok(names('MODEL').includes('kv_groups'));
  assert.ok(names('PLAN').includes('overlap_param_gather'));
  assert.ok(names('PLAN').includes('overlap_tp_comm'));
  assert.ok(names('PLAN').includes('attention'));
  assert.deepEqual(sorted(schemaEnumWords()), sorted([
    'fc', 'ring', 'switch', 'direct', 'halving_doubling', 'tree', 'gpipe', '1f1b',
    'interleaved', 'none', 'selective', 'full', 'bf16', 'fp8', 'fp4', 'flash', 'unfused', 'flash2', 'on',
    'off', 'ampere', 'hopper', 'blackwell', 'blackwell_ultra', 'ada', 'cdna3', 'cdna4',
    'nvswitch', 'infiniband',
    'pretrain', 'sft', 'lora', 'linear_qkv', 'linear_proj', 'linear_fc1', 'linear_fc2',
    'no_shard', 'optim', 'optim_grads', 'optim_grads_params', 'megatron', 'torch', 'fp32',
    'fp16',
    'W0001', 'W0002', 'W0003', 'W0004', 'W0005', 'W0006', 'W0007', 'W0008', 'W0009', 'W0012',
    'W0013', 'W0014', 'W0015', 'W0017', 'W0018', 'W0019', 'W0020', 'W0022',
    'zb_h1', 'zb_h2', 'dualpipe', 'dualpipev', 'zbv',
    'alltoall', 'allgather', 'flex', 'deepep', 'hybridep', 'p2p', 'a2a', 'a2a_p2p',
    'core_attn', 'mlp', 'moe_act', 'layernorm', 'mla_up_proj', 'moe', 'shared_experts',
    'uniform', 'block',
    'W0024', 'W0025',
    'local', 'transformer_engine', 'full_iteration', 'attn', 'moe_router', 'moe_preprocess',
    'mamba', 'attn_norm', 'qkv_linear', 'attn_proj', 'mlp_norm', 'expert_fc1', 'fused_group_mlp',
    'aux_loss', 'seq_aux_loss',
    'delayed', 'tensorwise', 'blockwise', 'mxfp8', 'e4m3', 'hybrid', 'W0023',
    'op', 'vocab_parallel',
  ]));
});

test('textmate grammar lists exactly the keys of the key table', () => {
  assert.deepEqual(sorted(alternation(tmGrammar().repository.key.match)), allKeys());
});

test('textmate grammar lists exactly the enum words of the key table', () => {
  assert.deepEqual(sorted(alternation(tmGrammar().repository.constant.match)), sorted(schemaEnumWords()));
});

test('vim syntax lists exactly the keys and enum words of the key table', () => {
  assert.deepEqual(sorted(vimKeywords('venusKey')), allKeys());
  // `1f1b` is a `syn match` (a keyword cannot start with a digit in 'iskeyword' terms).
  const vimConstants = [...vimKeywords('venusConstant'), '1f1b'];
  assert.match(read(editors, 'vim', 'syntax', 'venus.vim'), /syn match venusConstant contained \/\\<1f1b\\>\//);
  assert.deepEqual(sorted(vimConstants), sorted(schemaEnumWords()));
});

test('tree-sitter grammar enum words and name-taking keys follow the key table', () => {
  assert.deepEqual(sorted(grammarList('ENUM_WORDS')), sorted(schemaEnumWords()));
  // Keys whose first argument is a name: a reference (Ref) or a name (NewName: `dim NAME`,
  // and `algo DIM`, whose dim name the schema also types as NewName).
  const nameKeys = Object.values(schemaKeys()).flat()
    .filter((k) => k.firstArg === 'Ref' || k.firstArg === 'NewName')
    .map((k) => k.name);
  assert.deepEqual(sorted(nameKeys), [
    'algo', 'cluster', 'dim', 'fat_tree', 'gpu', 'link', 'model', 'plan', 'rail', 'sharp',
  ]);
  assert.deepEqual(sorted(grammarList('NAME_KEYS')), sorted(nameKeys));
  assert.deepEqual(sorted(grammarList('DEF_KINDS')), ['cluster', 'gpu', 'model', 'plan', 'scenario']);
});

test('vscode manifest contributes the venus language, its grammar and configuration', () => {
  const pkg = JSON.parse(read(editors, 'vscode', 'package.json'));
  const [lang] = pkg.contributes.languages;
  assert.equal(lang.id, 'venus');
  assert.deepEqual(lang.extensions, ['.venus']);
  const [grammar] = pkg.contributes.grammars;
  assert.equal(grammar.language, 'venus');
  assert.equal(grammar.scopeName, tmGrammar().scopeName);
  assert.ok(fs.existsSync(path.join(editors, 'vscode', grammar.path)));
  assert.ok(fs.existsSync(path.join(editors, 'vscode', lang.configuration)));
  assert.ok(fs.existsSync(path.join(editors, 'vscode', pkg.main)));
  assert.ok(pkg.dependencies['vscode-languageclient']);
  assert.deepEqual(Object.keys(pkg.contributes.configuration.properties).sort(), [
    'venus.server.enable', 'venus.server.extraArgs', 'venus.server.path',
  ]);
});

test('language configuration: hash comments, angle and square brackets, quotes auto-close', () => {
  const conf = JSON.parse(read(editors, 'vscode', 'language-configuration.json'));
  assert.equal(conf.comments.lineComment, '#');
  assert.deepEqual(conf.brackets, [['<', '>'], ['[', ']']]);
  const pairs = conf.autoClosingPairs.map((p) => p.open + p.close);
  assert.deepEqual(pairs, ['<>', '[]', '""']);
});

test('the client starts `venusc lsp`, honouring the path and extra-argument settings', () => {
  const { serverCommand } = require('../vscode/server');
  const settings = (values) => (key, fallback) => (key in values ? values[key] : fallback);
  assert.deepEqual(serverCommand(settings({})), { command: 'venusc', args: ['lsp'] });
  assert.deepEqual(
    serverCommand(settings({ 'server.path': ' /opt/venusc ', 'server.extraArgs': ['--log', 3] })),
    { command: '/opt/venusc', args: ['lsp', '--log'] },
  );
  assert.deepEqual(serverCommand(settings({ 'server.path': '  ' })), { command: 'venusc', args: ['lsp'] });
});

test('helix config runs `venusc lsp` for venus files and names the grammar', () => {
  const toml = read(editors, 'helix', 'languages.toml');
  assert.match(toml, /^\[\[language\]\]\nname = "venus"$/m);
  assert.match(toml, /^file-types = \["venus"\]$/m);
  assert.match(toml, /^language-servers = \["venusc"\]$/m);
  assert.match(toml, /^\[language-server\.venusc\]\ncommand = "venusc"\nargs = \["lsp"\]$/m);
  assert.match(toml, /^\[\[grammar\]\]\nname = "venus"$/m);
});

test('helix highlight queries have the same patterns as the tree-sitter ones', () => {
  // Only the capture names differ (Helix's scopes vs the tree-sitter CLI's / Neovim's).
  const shape = (text) => text
    .split('\n').filter((l) => !l.trim().startsWith(';')).join('\n')
    .replace(/@[\w.]+/g, '@_')
    .replace(/\s+/g, ' ')
    .trim();
  const main = read(editors, 'tree-sitter-venus', 'queries', 'highlights.scm');
  const helix = read(editors, 'helix', 'queries', 'venus', 'highlights.scm');
  assert.equal(shape(helix), shape(main));
  assert.match(helix, /\(number\) @constant\.numeric/);
  assert.match(helix, /key: \(key\) @variable\.other\.member/);
});
