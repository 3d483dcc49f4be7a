#!/usr/bin/env bash
# Generates the table of docs/scale.md: simulated events per second and peak memory versus
# world size, symmetric and `--all-ranks`, for one dense plan scaled from 1k to 128k GPUs.
#
# Usage: benches/scale.sh [VENUSC] > table.md
#   VENUSC: the binary to measure (default target/release/venusc; build it first with
#   `cargo build --release --bin venusc`). Needs GNU time at /usr/bin/time.
#
# The plan: GPT 1.7B on DGX H100 nodes, tp 8 × pp 4 × dp (GPUs / 32), 4 microbatches of one
# sequence per dp rank: the same per-rank trace at every size, so the figures show how the
# engine scales with the ranks it simulates, not with the model. Each cell runs once; wall
# time depends on the machine's load, so the table gives user + sys CPU time too. A world
# over the `--all-ranks` budget (lower::MAX_ALL_RANKS, 131,072) is refused with E0601 and the
# cell says so. This is a benchmark, not a test: run it by hand, never in CI.
set -euo pipefail

venusc=${1:-target/release/venusc}
[ -x "$venusc" ] || { echo "no binary at $venusc: cargo build --release --bin venusc" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# One run: prints "events wall_s cpu_s max_rss_kib simulated_ranks" or "refused".
measure() {
    local file=$1 mode=$2 args=(sim --format json "$1")
    [ "$mode" = all ] && args+=(--all-ranks)
    if ! /usr/bin/time -v -o "$dir/time" "$venusc" "${args[@]}" > "$dir/out.json" 2> "$dir/err"; then
        echo refused
        return
    fi
    local wall user sys rss
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$dir/time" |
        awk -F: '{ if (NF == 3) print $1*3600 + $2*60 + $3; else print $1*60 + $2 }')
    user=$(awk -F': ' '/User time/ {print $2}' "$dir/time")
    sys=$(awk -F': ' '/System time/ {print $2}' "$dir/time")
    rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$dir/time")
    python3 - "$dir/out.json" "$wall" "$user" "$sys" "$rss" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
wall, user, sys_, rss = float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
print(r["engine"]["events"], wall, user + sys_, rss, r["engine"]["simulated_ranks"])
PY
}

cell() {
    # "ranks | events | wall s | cpu s | events/s (cpu) | peak RSS MiB"
    if [ "$1" = refused ]; then
        echo "| refused (E0601) | | | | | |"
        return
    fi
    read -r events wall cpu rss ranks <<< "$1"
    # GNU time counts CPU in 10 ms ticks: below 20 ms a rate would be noise.
    python3 -c "
e, w, c, r, n = $events, $wall, $cpu, $rss, $ranks
cpu, rate = (f'{c:.2f}', f'{e / c:,.0f}') if c >= 0.02 else ('< 0.02', '-')
print(f'| {n:,} | {e:,} | {w:.2f} | {cpu} | {rate} | {r / 1024:,.0f} |')"
}

echo "| GPUs | mode | simulated ranks | events | wall s | user+sys s | events/s (CPU) | peak RSS MiB |"
echo "|---:|---|---:|---:|---:|---:|---:|---:|"
for gpus in 1024 2048 4096 8192 16384 32768 65536 131072; do
    nodes=$((gpus / 8))
    dp=$((gpus / 32))
    file="$dir/scale_$gpus.venus"
    cat > "$file" <<VENUS
model m : gpt_1_7b < >
cluster c : dgx_h100 < nodes $nodes >
plan < tp 8 pp 4 dp $dp micro_batch 1 global_batch $((dp * 4)) >
VENUS
    for mode in symmetric all; do
        result=$(measure "$file" "$mode")
        echo "| $gpus | $mode $(cell "$result")"
    done
done
