#!/usr/bin/env bash
# The `sweep --auto --prune` benchmark: candidates checked per CPU-second and the total time of
# the two example auto sweeps, Llama 3 70B on 1,024 H100s and Llama 3.1 405B on 2,048 (issue
# 19's done-when: at least 1,000 candidates per CPU-second on the 70B sweep).
#
# Usage: benches/sweep.sh [VENUSC] > table.md
#   VENUSC: the binary to measure (default target/release/venusc; build it first with
#   `cargo build --release --bin venusc`). Needs GNU time at /usr/bin/time.
#
# Each sweep runs once. The rate is candidates over user + sys CPU time, not wall time: on a
# shared machine the wall time depends on the others' load, the CPU time much less. The sweep's
# own line on stderr splits the wall time into checking and simulating. This is a benchmark,
# not a test: run it by hand, never in CI.
set -euo pipefail

venusc=${1:-target/release/venusc}
[ -x "$venusc" ] || { echo "no binary at $venusc: cargo build --release --bin venusc" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

echo "| sweep | candidates | simulated | wall s | user+sys s | candidates per CPU-second | peak RSS MiB |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for case in "examples/sweeps/llama3_70b.venus|" "examples/sweeps/llama31_405b_2048.venus|--headroom 10%"; do
    file=${case%%|*}
    extra=${case#*|}
    # shellcheck disable=SC2086 # `extra` is a list of flags
    /usr/bin/time -v -o "$dir/time" "$venusc" sweep "$file" --auto --prune $extra --format json \
        > "$dir/out.json" 2> "$dir/err"
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$dir/time" |
        awk -F: '{ if (NF == 3) print $1*3600 + $2*60 + $3; else print $1*60 + $2 }')
    user=$(awk -F': ' '/User time/ {print $2}' "$dir/time")
    sys=$(awk -F': ' '/System time/ {print $2}' "$dir/time")
    rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$dir/time")
    simulated=$(sed -n 's/.*simulated \([0-9,]*\) plans.*/\1/p' "$dir/err" | tr -d ,)
    python3 - "$dir/out.json" "$file" "$wall" "$user" "$sys" "$rss" "${simulated:-0}" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
name, wall, user, sys_, rss, sims = sys.argv[2], *map(float, sys.argv[3:6]), int(sys.argv[6]), int(sys.argv[7])
cpu = user + sys_
n = o["candidates"]
print(f"| `{name}` | {n:,} | {sims:,} | {wall:.1f} | {cpu:.1f} | {n / cpu:,.0f} | {rss / 1024:,.0f} |")
PY
done
