#!/usr/bin/env bash
# Follower catch-up (issue 15's figure; goal >= 200,000 entries/s): a release leader's log is
# filled with small entries (64 writer connections pushing `{"n":1,"s":"small"}` for
# FILL_SECONDS, as replication-bench.sh's phase 1), then ROUNDS fresh followers replay it, one
# after the other, each into an empty directory: entries/s from the follower process's start
# until it applied the leader's newest entry. Prints each round and the median.
# By default the leader runs with `--snapshot-bootstrap-entries 1`, so each new follower starts
# from a snapshot whatever the log's length (with the default of 50,000 a log filled for more
# than a few seconds does too): the figure is the snapshot bootstrap. CATCHUP_MODE=replay starts
# the leader with `--snapshot-bootstrap-entries 0`, so the followers replay every entry instead.
# CATCHUP_MODE=behind measures a replica that was down: a follower copies FILL_SECONDS / 4 (at
# least 1) of writes and stops, the leader takes FILL_SECONDS more, and then
# each round restarts a copy of that replica twice, in alternating order, against the leader
# restarted with the default `--snapshot-bootstrap-entries` (50,000: the replica is far enough
# behind to be copied from a snapshot) and with 0 (it replays what it lacks): entries behind /
# seconds from the follower's start until it applied the leader's newest entry, each side's
# median and their ratio.
# With PERF=1 the last round's follower runs under `perf record -g` (report in $PERF_OUT,
# default /tmp/eddy-catchup.perf).
#
# Usage: Benchmarks/scripts/catchup-bench.sh [ROUNDS] [FILL_SECONDS]   (defaults 3, 20)
# EDDY_SKIP_BUILD=1 uses the binaries as they are; EDDY_BENCH_CONFIG=debug runs debug builds.
set -euo pipefail

rounds=${1:-3}
fill_seconds=${2:-20}
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
source Benchmarks/scripts/lib/binaries.sh
eddyd=$eddy_bin/eddyd
eddy=$eddy_bin/eddy
driver=$eddy_bin/ReplicationProfile
source Benchmarks/scripts/lib/daemons.sh
bench_work_dir catchup-bench
build_replication_tools

mode=${CATCHUP_MODE:-snapshot}
case "$mode" in
snapshot) leader_flags=(--snapshot-bootstrap-entries 1) ;;
replay) leader_flags=(--snapshot-bootstrap-entries 0) ;;
behind) leader_flags=() ;;
*) echo "CATCHUP_MODE must be snapshot, replay or behind, not $mode" >&2; exit 2 ;;
esac

# log_count DIR: the number of entries in a stopped replica's log.
log_count() {
    "$eddy" digest --data "$1" | python3 -c 'import json, sys; print(json.load(sys.stdin)["log"]["count"])'
}

# wait_applied URL LAST: until the daemon at URL applied LAST (at most 900 s).
wait_applied() {
    python3 - "$1" "$2" << 'PY'
import json, sys, time, urllib.request
url, last = sys.argv[1], sys.argv[2]
deadline = time.monotonic() + 900
while json.load(urllib.request.urlopen(url + "/.settings/followers.json", timeout=10))["applied"] != last:
    if time.monotonic() > deadline:
        sys.exit("the follower did not catch up within 900 s")
    time.sleep(0.01)
PY
}

if [ "$mode" = behind ]; then
    start_command leader "$eddyd" serve --data "$work/leader"
    leader_pid=$started_pid
    leader_url=$started_url
    first_fill=$((fill_seconds / 4 > 0 ? fill_seconds / 4 : 1))
    echo "== fill: 64 writers for $first_fill s, copied by a follower that then stops"
    "$driver" load "$work/leader/eddyd.sock" "$first_fill" 64
    start_command base "$eddyd" follow --leader "$work/leader/replication.sock" --data "$work/base"
    base_pid=$started_pid
    wait_applied "$started_url" "$(python3 -c "import json, urllib.request; print(json.load(urllib.request.urlopen('$leader_url/.settings/followers.json'))['last'])")"
    stop "$base_pid"
    echo "== fill: 64 writers for $fill_seconds s while the replica is down"
    "$driver" load "$work/leader/eddyd.sock" "$fill_seconds" 64
    leader_last=$(python3 -c "import json, urllib.request; print(json.load(urllib.request.urlopen('$leader_url/.settings/followers.json'))['last'])")
    stop "$leader_pid"
    base_count=$(log_count "$work/base")
    behind=$(($(log_count "$work/leader") - base_count))
    echo "== the replica holds $base_count entries and is $behind behind"
    snapshot_rates=()
    replay_rates=()
    for round in $(seq 1 "$rounds"); do
        order=(50000 0)
        [ $((round % 2)) = 0 ] && order=(0 50000)
        for threshold in "${order[@]}"; do
            start_command "leader-$round-$threshold" "$eddyd" serve --data "$work/leader" --snapshot-bootstrap-entries "$threshold"
            leader_pid=$started_pid
            rm -rf "$work/follower"
            cp -a "$work/base" "$work/follower"
            start_time=$(date +%s.%N)
            start_command "follower-$round-$threshold" "$eddyd" follow --leader "$work/leader/replication.sock" --data "$work/follower"
            wait_applied "$started_url" "$leader_last"
            end_time=$(date +%s.%N)
            stop "$started_pid"
            stop "$leader_pid"
            rate=$(python3 -c "print(int($behind / ($end_time - $start_time)))")
            if [ "$threshold" = 0 ]; then replay_rates+=("$rate"); how="replay (--snapshot-bootstrap-entries 0)"; else snapshot_rates+=("$rate"); how="default (--snapshot-bootstrap-entries 50000)"; fi
            echo "round $round, $how: $behind entries in $(python3 -c "print(f'{$end_time - $start_time:.2f}')") s: $rate entries/s"
        done
    done
    python3 - "${snapshot_rates[*]}" "${replay_rates[*]}" << 'PY'
import statistics, sys
default, replay = (statistics.median(int(x) for x in arg.split()) for arg in sys.argv[1:])
verdict = "met" if default >= 200_000 else "missed"
print(f"catch-up of a replica far behind, median: {int(default)} entries/s by default, {int(replay)} by replay: {default / replay:.2f}x (goal >= 200,000 entries/s: {verdict})")
PY
    exit 0
fi
start_command leader "$eddyd" serve --data "$work/leader" "${leader_flags[@]}"
leader_url=$started_url
echo "== fill: 64 writers for $fill_seconds s"
"$driver" load "$work/leader/eddyd.sock" "$fill_seconds" 64
leader_last=$(python3 -c "import json, urllib.request; print(json.load(urllib.request.urlopen('$leader_url/.settings/followers.json'))['last'])")

rates=()
for round in $(seq 1 "$rounds"); do
    rm -rf "$work/follower"
    command=("$eddyd" follow --leader "$work/leader/replication.sock" --data "$work/follower")
    if [ "${PERF:-}" = 1 ] && [ "$round" = "$rounds" ]; then
        command=(perf record -g -o "${PERF_OUT:-/tmp/eddy-catchup.perf}" -- "${command[@]}")
    fi
    start_time=$(date +%s.%N)
    start_command "follower-$round" "${command[@]}"
    wait_applied "$started_url" "$leader_last"
    end_time=$(date +%s.%N)
    if [ "${PERF:-}" = 1 ] && [ "$round" = "$rounds" ]; then
        kill -INT "$started_pid" 2> /dev/null || true
        pkill -INT -f "eddyd follow --leader $work/leader/replication.sock" 2> /dev/null || true
    fi
    stop "$started_pid"
    count=$(log_count "$work/follower")
    rate=$(python3 -c "print(int($count / ($end_time - $start_time)))")
    rates+=("$rate")
    echo "round $round: $count entries in $(python3 -c "print(f'{$end_time - $start_time:.2f}')") s: $rate entries/s"
done
median=$(python3 -c 'import statistics, sys; print(int(statistics.median(int(x) for x in sys.argv[1:])))' "${rates[@]}")
echo "catch-up ($mode) median: $median entries/s (goal >= 200,000): $([ "$median" -ge 200000 ] && echo met || echo missed)"
