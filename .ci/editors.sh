#!/usr/bin/env bash
# Editor integrations (editors/): installs the tools, then tests the tree-sitter grammar, the
# VS Code TextMate grammar, the Vim syntax and their agreement with the key table.
#
# Needs: cargo (for tree-sitter-cli, built from crates.io: prebuilt binaries cannot be fetched),
# a C compiler (tree-sitter compiles the generated parser), node + npm. Installs vim and neovim
# from Debian when they are missing. Idempotent: an installed tree-sitter-cli of the pinned version is kept.
#
# Timings on the 2-core machine: installing tree-sitter-cli 0.27.1 takes about 8.5 minutes of
# wall time under load (4.2 CPU-minutes; skipped when present), everything after it under 30 s.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

# 0.27.1 builds with rustc >= 1.90. `tree-sitter generate` evaluates grammar.js with node by
# default; the default `qjs-rt` feature also lets it use its built-in QuickJS
# (`--js-runtime native`) where node is missing.
TREE_SITTER_VERSION=0.27.1

export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
start=$SECONDS
section() {
  printf '\n==== %s (t=%ds) ====\n' "$*" $((SECONDS - start))
}

section "editors: install tree-sitter-cli $TREE_SITTER_VERSION"
if tree-sitter --version 2>/dev/null | grep -x "tree-sitter $TREE_SITTER_VERSION" >/dev/null; then
  echo "tree-sitter $TREE_SITTER_VERSION already installed"
else
  t0=$SECONDS
  cargo install tree-sitter-cli --version "$TREE_SITTER_VERSION" --locked
  echo "installed tree-sitter-cli in $((SECONDS - t0))s"
fi
tree-sitter --version

section "editors: install vim (for the syntax tests)"
if command -v vim >/dev/null && vim --version | grep '+syntax' >/dev/null; then
  echo "vim already installed"
else
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends vim >/dev/null
fi

# A private tree-sitter config: the grammar is found in editors/ (not in ~/.config), and the
# CLI does not warn about an unconfigured parser directory.
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
printf '{"parser-directories": ["%s"]}\n' "$root/editors" >"$tmp/tree-sitter.json"

cd "$root/editors/tree-sitter-venus"

section "tree-sitter: generate (the committed src/ must match grammar.js)"
tree-sitter generate
if git -C "$root" rev-parse --git-dir >/dev/null 2>&1; then
  stale="$(git -C "$root" status --porcelain -- editors/tree-sitter-venus/src)"
  if [ -n "$stale" ]; then
    echo "$stale"
    echo "error: editors/tree-sitter-venus/src is out of date: run \`tree-sitter generate\` there and commit src/" >&2
    exit 1
  fi
  echo "src/ is up to date"
fi

section "tree-sitter: corpus and highlight tests"
tree-sitter test --config-path "$tmp/tree-sitter.json"

section "tree-sitter: examples, stdlib and editor test files parse without ERROR or MISSING nodes"
shopt -s nullglob
venus_files=("$root"/examples/*.venus "$root"/stdlib/*.venus "$root"/editors/vscode/test/*.venus
  "$root"/editors/vscode/test/snap/*.venus "$root"/editors/vim/test/*.venus)
shopt -u nullglob
# Exits non-zero when any tree has an ERROR or MISSING node; -q prints only those.
tree-sitter parse --config-path "$tmp/tree-sitter.json" -q -s "${venus_files[@]}"
echo "${#venus_files[@]} files parsed cleanly"

section "tree-sitter: Helix queries compile against the grammar"
tree-sitter query --config-path "$tmp/tree-sitter.json" -q \
  "$root/editors/helix/queries/venus/highlights.scm" "$root/examples/venussim_demo.venus"
echo "editors/helix/queries/venus/highlights.scm compiles"

cd "$root/editors/vscode"

section "vscode: npm ci"
npm ci --ignore-scripts --no-audit --no-fund

section "vscode: TextMate grammar assertion tests"
npx --no-install vscode-tmgrammar-test -g syntaxes/venus.tmLanguage.json "test/*.venus"

section "vscode: TextMate grammar snapshot tests"
npx --no-install vscode-tmgrammar-snap -g syntaxes/venus.tmLanguage.json "test/snap/*.venus"

cd "$root"

section "vim: syntax tests"
VENUS_VIM_OUT="$tmp/vim.out" vim -Nu NONE -i NONE -es -S editors/vim/test/run.vim || vim_rc=$?
cat "$tmp/vim.out"
if [ "${vim_rc:-0}" -ne 0 ]; then
  echo "error: vim syntax tests failed" >&2
  exit 1
fi

section "editors: consistency with the key table (node --test)"
node --test editors/test/

section "neovim: a real LSP client of venusc lsp (headless, the README's recipe)"
if ! command -v nvim >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends neovim >/dev/null
fi
nvim --version | head -1
cargo build --locked --release --bin venusc
VENUSC_STDLIB_DIR="$tmp/stdlib" timeout 120 nvim --headless -u NONE \
  -c "luafile editors/test/nvim/lsp_test.lua" \
  "$root/target/release/venusc" "$root/editors/test/nvim/broken_plan.venus" "$tmp/nvim.out" || true
cat "$tmp/nvim.out" 2>/dev/null || echo "neovim wrote no result"
if [ "$(cat "$tmp/nvim.out" 2>/dev/null)" != "ok" ]; then
  echo "error: the neovim LSP test failed" >&2
  exit 1
fi

section "editors: all passed"
