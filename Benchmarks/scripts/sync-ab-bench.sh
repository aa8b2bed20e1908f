#!/usr/bin/env bash
# The write cost of `--sync-followers 1` for two eddyd binaries side by side, in alternating
# rounds on fresh daemons (the way a change to the replication path is measured on a machine
# that drifts). Per round and binary: a leader with no follower, then a leader with
# `--sync-followers 1` and one stand-in follower (`ReplicationProfile consume`: every entry
# streamed and acknowledged, nothing applied, as in replication-bench.sh), each loaded by 64
# durable writers (`ReplicationProfile load`). Prints each round, then per binary the medians,
# the time per write with the follower over without (the issue 15 figure, goal <= 1.15x), and
# AFTER/BEFORE of the synchronous writes/s. Build each side with `swift build -c release
# --product eddyd` (a worktree of the older commit, or a copy of the binary, for BEFORE).
#
#   Benchmarks/scripts/sync-ab-bench.sh BEFORE_EDDYD AFTER_EDDYD [ROUNDS=5] [SECONDS=5]
#   EDDY_SKIP_BUILD=1 uses ReplicationProfile as it is (lib/binaries.sh).
set -euo pipefail
if [ $# -lt 2 ]; then
    echo "usage: $0 BEFORE_EDDYD AFTER_EDDYD [ROUNDS] [SECONDS]" >&2
    exit 2
fi
before=$1
after=$2
rounds=${3:-5}
seconds=${4:-5}
for binary in "$before" "$after"; do
    [ -x "$binary" ] || { echo "$binary is not an executable" >&2; exit 2; }
done
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
source Benchmarks/scripts/lib/binaries.sh
driver=$eddy_bin/ReplicationProfile
work=$(mktemp -d "${TMPDIR:-/tmp}/eddy-sync-ab.XXXXXX")
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done; wait 2> /dev/null || true; rm -rf "$work"' EXIT
source Benchmarks/scripts/lib/daemons.sh
echo "== build ($bench_config)"
build_eddy ReplicationProfile

# round SIDE BINARY MODE (none|sync): a fresh leader, 1 s of warm-up writes, then the measured
# load; appends "SIDE MODE writes/s" to the rounds file.
round() {
    local side=$1 binary=$2 mode=$3 consumer=""
    rm -rf "$work/data"
    local args=(serve --data "$work/data" --durability sync)
    [ "$mode" = sync ] && args+=(--sync-followers 1)
    start_command "$side-$mode" "$binary" "${args[@]}"
    local leader=$started_pid
    if [ "$mode" = sync ]; then
        "$driver" consume "$work/data/replication.sock" "$work/data/eddyd.sock" "stand-in" &
        consumer=$!
        pids+=("$consumer")
    fi
    sleep 0.3
    "$driver" load "$work/data/eddyd.sock" 1 64 > /dev/null
    local line rate
    line=$("$driver" load "$work/data/eddyd.sock" "$seconds" 64)
    rate=$(grep -o '[0-9]* writes/s' <<< "$line" | grep -o '[0-9]*')
    [ -n "$consumer" ] && stop "$consumer"
    stop "$leader"
    echo "$side $mode $rate" >> "$work/rounds"
    printf '  %-6s %-4s %8d writes/s\n' "$side" "$mode" "$rate"
}

echo "== --sync-followers 1 A/B: $rounds rounds of ${seconds}s, 64 writers; before $before, after $after"
for r in $(seq "$rounds"); do
    echo "round $r"
    for side in before after; do
        binary=$before
        [ "$side" = after ] && binary=$after
        round "$side" "$binary" none
        round "$side" "$binary" sync
    done
done
python3 - "$work/rounds" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
def rates(side, mode):
    return [float(r[2]) for r in rows if r[0] == side and r[1] == mode]
medians = {}
for side in ("before", "after"):
    none, sync = rates(side, "none"), rates(side, "sync")
    medians[side] = statistics.median(sync)
    per_round = statistics.median(n / s for n, s in zip(none, sync))
    ratio = statistics.median(none) / statistics.median(sync)
    print(f"{side:6} medians: no follower {statistics.median(none):,.0f}, --sync-followers 1 {statistics.median(sync):,.0f} writes/s: "
          f"{ratio:.2f}x the time per write (per-round median {per_round:.2f}x), goal <= 1.15x: " + ("met" if ratio <= 1.15 else "missed"))
print(f"--sync-followers 1 writes/s, after/before: {medians['after'] / medians['before']:.2f}x")
PY
