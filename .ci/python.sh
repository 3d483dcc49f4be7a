#!/usr/bin/env bash
# The Python package's CI: a fresh virtual environment, `pip install ./python` (the extension
# built by maturin from the committed python/Cargo.lock), then pytest on python/tests (the
# figures compared with the CLI at target/release/venusc, which .ci/run builds first), `mypy
# --strict` on the typed usage file, and the notebook-style example. Prints how long each
# step took.
#
# The extension builds into the root target/: python/Cargo.lock starts from the root's lock,
# so the registry crates .ci/run's `cargo build --release` compiled are reused and only the
# workspace crates, pyo3 and the binding compile again. Safe: cargo locks the directory for
# each build, and CI runs one build at a time.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
step() { echo "python.sh: $1 after $((SECONDS - started)) s"; }
venv="$(mktemp -d)/venv"
trap 'rm -rf "$(dirname "$venv")"' EXIT
if ! command -v python3 >/dev/null || ! python3 -m venv "$venv" >/dev/null 2>&1; then
    # A Debian machine without Python's venv module: install it (CI runs as root).
    rm -rf "$venv"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends python3 python3-venv python3-pip >/dev/null
    python3 -m venv "$venv"
fi
py="$venv/bin/python"
"$py" -m pip install -q --upgrade pip
"$py" -m pip install -q pytest mypy pandas
step "tools installed"
CARGO_TARGET_DIR="$PWD/target" "$py" -m pip install -q ./python
step "venusc installed"
export VENUSC_BIN="${VENUSC_BIN:-$PWD/target/release/venusc}"
"$py" -m pytest -q python/tests
step "pytest passed"
"$py" -m mypy --strict python/tests/usage.py
step "mypy --strict passed"
"$py" examples/python/plan.py
step "examples/python/plan.py ran"
