#!/usr/bin/env bash
# A real batch-scheduler test of `venusc sweep --shard` / `--merge`: starts a one-node Slurm
# cluster on this machine (munged, slurmctld and slurmd with their own key, socket, ports,
# config and state in a temporary directory; nothing under /etc is read or changed), submits
# a 4-task job array in which task i runs `venusc sweep FILE --auto --shard i+1/4 --format
# json`, waits for it, merges the shards and checks the merge equals the unsharded sweep byte
# for byte. Needs root (the daemons run as root) and Debian's `slurm-wlm` and `munge`
# (`.ci/run` installs them when missing).
#
# Usage: .ci/slurm.sh [VENUSC]   (default: target/release/venusc)
# Where the daemons cannot run (no root, no packages, a sandbox without sockets), the script
# says why and exits 0, unless CI is set: in CI the test must run, so it fails instead.
set -euo pipefail
cd "$(dirname "$0")/.."
VENUSC=$(realpath "${1:-target/release/venusc}")
DEADLINE_S=${SLURM_TEST_TIMEOUT:-100}
CTLD_PORT=${SLURM_TEST_CTLD_PORT:-6817}
SLURMD_PORT=${SLURM_TEST_SLURMD_PORT:-6818}

started=$(date +%s)
work=$(mktemp -d)
pids=()

cleanup() {
    for pid in "${pids[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${pids[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$work"
}
trap cleanup EXIT

# Cannot run here: a clear message; a failure under CI, a skip elsewhere.
cannot_run() {
    echo "slurm test: cannot run the Slurm daemons on this machine: $1" >&2
    for log in "$work"/*.log; do
        [ -s "$log" ] && { echo "--- $log" >&2; tail -n 20 "$log" >&2; }
    done
    if [ -n "${CI:-}" ]; then
        echo "slurm test: FAILED (CI is set, so the test may not be skipped)" >&2
        exit 1
    fi
    echo "slurm test: skipped (set CI to make this a failure)" >&2
    exit 0
}

fail() {
    echo "slurm test: FAILED: $1" >&2
    exit 1
}

[ "$(id -u)" = 0 ] || cannot_run "the daemons need root (run as root, as CI does)"
for tool in munged mungekey slurmctld slurmd sbatch squeue scontrol; do
    command -v "$tool" >/dev/null || cannot_run "\`$tool\` is missing (apt-get install -y slurm-wlm munge)"
done
[ -x "$VENUSC" ] || fail "no venusc binary at $VENUSC (cargo build --release --bin venusc)"

# ---- munge: a key and a socket of our own ----------------------------------------------------
chmod 0755 "$work"
mungekey --create --keyfile="$work/munge.key" --force >/dev/null 2>&1 ||
    cannot_run "mungekey could not create a key"
munged --force --foreground --socket="$work/munge.socket" --key-file="$work/munge.key" \
    --log-file="$work/munged.log" --pid-file="$work/munged.pid" \
    --seed-file="$work/munged.seed" >/dev/null 2>&1 &
pids+=($!)
for _ in $(seq 50); do
    [ -S "$work/munge.socket" ] && break
    sleep 0.1
done
[ -S "$work/munge.socket" ] || cannot_run "munged did not start"

# ---- slurm.conf: one node, this machine ------------------------------------------------------
node=$(hostname -s)
cpus=$(nproc)
mkdir -p "$work/state" "$work/spool" "$work/out"
cat >"$work/slurm.conf" <<EOF
ClusterName=venusc-ci
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$work/munge.socket
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
SlurmdTimeout=30
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=ci Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
EOF
export SLURM_CONF="$work/slurm.conf"

slurmctld -D -i -f "$SLURM_CONF" >"$work/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" -N "$node" >"$work/slurmd.out" 2>&1 &
pids+=($!)

# The node is up once slurmctld answers and lists it idle.
up=
for _ in $(seq 150); do
    state=$(sinfo -h -n "$node" -o '%T' 2>/dev/null || true)
    case "$state" in
        idle*|mix*|alloc*) up=1; break ;;
    esac
    for pid in "${pids[@]}"; do
        kill -0 "$pid" 2>/dev/null || cannot_run "a daemon exited (see its log)"
    done
    sleep 0.2
done
[ -n "$up" ] || cannot_run "the node did not come up (state: ${state:-none})"
echo "slurm test: one-node cluster up on $node ($cpus CPUs) in $(($(date +%s) - started)) s"

# ---- the sweep: a small --auto space, 4 shards as a job array ---------------------------------
cat >"$work/sweep.venus" <<'EOF'
# A small --auto sweep for the Slurm test: a 1B-class model on 2 DGX A100 nodes (16 GPUs).
model tiny < hidden 1024 layers 8 heads 16 vocab 32000 seq 1024 >
cluster pod : dgx_a100 < nodes 2 >
plan p < global_batch 32 >
EOF
cat >"$work/shard.sh" <<EOF
#!/usr/bin/env bash
set -euo pipefail
"$VENUSC" sweep "$work/sweep.venus" --auto --shard \$((SLURM_ARRAY_TASK_ID + 1))/4 \\
    --format json >"$work/out/shard-\$SLURM_ARRAY_TASK_ID.json"
EOF
chmod +x "$work/shard.sh"
job=$(sbatch --parsable --array=0-3 --ntasks=1 --cpus-per-task=1 --job-name=venusc-sweep \
    --output="$work/out/task-%a.log" --chdir="$work" "$work/shard.sh") ||
    fail "sbatch refused the job array"
job=${job%%;*}
echo "slurm test: submitted job array $job"

while [ -n "$(squeue -h -j "$job" -o '%i' 2>/dev/null)" ]; do
    if [ $(($(date +%s) - started)) -gt "$DEADLINE_S" ]; then
        squeue -j "$job" >&2 || true
        scancel "$job" || true
        fail "the job array did not finish in $DEADLINE_S s"
    fi
    sleep 0.5
done

for i in 0 1 2 3; do
    shard="$work/out/shard-$i.json"
    if [ ! -s "$shard" ]; then
        cat "$work/out/task-$i.log" >&2 2>/dev/null || true
        scontrol show job "${job}_$i" >&2 2>/dev/null || true
        fail "array task $i wrote no shard"
    fi
done

"$VENUSC" sweep "$work/sweep.venus" --auto --format json --merge "$work"/out/shard-{0,1,2,3}.json \
    >"$work/merged.json" || fail "venusc sweep --merge refused the shards"
"$VENUSC" sweep "$work/sweep.venus" --auto --format json >"$work/whole.json" 2>/dev/null ||
    fail "the unsharded sweep failed"
cmp -s "$work/merged.json" "$work/whole.json" ||
    fail "the merged shards differ from the unsharded sweep: $(diff "$work/merged.json" "$work/whole.json" | head -5)"
candidates=$(grep -m1 '"candidates"' "$work/whole.json" | tr -dc '0-9')
echo "slurm test: passed: 4 array tasks merged into the unsharded result ($candidates candidates) in $(($(date +%s) - started)) s"
