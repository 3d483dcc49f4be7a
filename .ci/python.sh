#!/usr/bin/env bash
# The Python package's CI: a fresh virtual environment, `pip install ./python` (the extension
# built by maturin from the committed python/Cargo.lock), then pytest on python/tests (the
# figures compared with the CLI at target/release/venusc, which .ci/run builds first), `mypy
# --strict` on the typed usage file, and the notebook-style example. Prints how long each
# step took.
#
# The extension builds into python/target (the binding's own workspace): sharing the root
# target/ would not reuse its artifacts (another lock file and workspace) and would race the
# root's cargo lock.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
step() { echo "python.sh: $1 after $((SECONDS - started)) s"; }
venv="$(mktemp -d)/venv"
trap 'rm -rf "$(dirname "$venv")"' EXIT
python3 -m venv "$venv"
py="$venv/bin/python"
"$py" -m pip install -q --upgrade pip
"$py" -m pip install -q pytest mypy pandas
step "tools installed"
"$py" -m pip install -q ./python
step "venusc installed"
export VENUSC_BIN="${VENUSC_BIN:-$PWD/target/release/venusc}"
"$py" -m pytest -q python/tests
step "pytest passed"
"$py" -m mypy --strict python/tests/usage.py
step "mypy --strict passed"
"$py" examples/python/plan.py
step "examples/python/plan.py ran"
