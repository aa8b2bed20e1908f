#!/usr/bin/env bash
# The replication benchmarks of issue 5 (see Benchmarks/README.md, "Replication benchmarks"),
# against release eddyd processes on this machine:
#   1. throughput: the leader's durable write throughput with 64 writer connections
#      (ReplicationProfile load) with 0, 1 and 2 stand-in followers attached (ReplicationProfile
#      consume: streamed and acknowledged like real ones, nothing applied), and on a leader with
#      --sync-followers 1 and one, interleaved for ROUNDS rounds; medians and ratios (target: the
#      log server costs at most 15%). Then one round with real follower processes, for reference.
#   2. catch-up: a new follower copies the leader's whole log (the small entries of phase 1; by
#      snapshot once the log holds --snapshot-bootstrap-entries, default 50,000, else by replay):
#      entries/s from its start until it applied the leader's newest entry (target >= 100,000).
#   3. fan-out: 2,000 durable writes/s for SECONDS to the leader, 2 followers with 100 native
#      subscribers each: events/s, losses, leader-ack to subscriber receipt p50/p99.
#
# Usage: Benchmarks/scripts/replication-bench.sh [ROUNDS] [LOAD_SECONDS] [FANOUT_SECONDS]
#   defaults 3, 5, 10. A missed target is reported, not failed.
#   PHASES="throughput catchup fanout" (the default) selects phases, e.g. PHASES=fanout;
#   catchup replays the log that throughput wrote, so it needs throughput. FANOUT_RATE (writes/s,
#   default 2000) and FANOUT_SUBSCRIBERS (per follower, default 100) set the fan-out's load.
#   EDDY_SKIP_BUILD=1 uses the binaries as they are; EDDY_BENCH_CONFIG=debug runs debug builds
#   (lib/binaries.sh).
set -euo pipefail

rounds=${1:-3}
load_seconds=${2:-5}
fanout_seconds=${3:-10}
fanout_rate=${FANOUT_RATE:-2000}
fanout_subscribers=${FANOUT_SUBSCRIBERS:-100}
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
source Benchmarks/scripts/lib/binaries.sh
eddyd=$eddy_bin/eddyd
driver=$eddy_bin/ReplicationProfile
source Benchmarks/scripts/lib/daemons.sh
bench_work_dir replication-bench

phases=${PHASES:-throughput catchup fanout}
has_phase() { [[ " $phases " == *" $1 "* ]]; }
build_replication_tools

# start NAME ARGS...: `eddyd ARGS` through start_command.
start() {
    local name=$1
    shift
    start_command "$name" "$eddyd" "$@"
}
# caught_up LEADER_URL FOLLOWER_URL...: waits until every follower applied the leader's newest entry.
caught_up() {
    local leader=$1
    shift
    python3 - "$leader" "$@" << 'PY'
import json, sys, time, urllib.request
def get(url):
    return json.load(urllib.request.urlopen(url + "/.settings/followers.json", timeout=10))
leader, followers = sys.argv[1], sys.argv[2:]
deadline = time.monotonic() + 600
while time.monotonic() < deadline:
    last = get(leader)["last"]
    if all(get(f)["applied"] == last for f in followers):
        sys.exit(0)
    time.sleep(0.01)
sys.exit("followers did not catch up within 600 s")
PY
}
median() { python3 -c 'import statistics, sys; print(int(statistics.median(float(x) for x in sys.argv[1:])))' "$@"; }

if has_phase throughput; then
echo "== throughput: 64 writers, $load_seconds s per run, $rounds rounds"
# Stand-in followers (ReplicationProfile consume) cost the leader what real ones do (hello,
# every entry streamed, an ack per frame) without applying anything, so the leader's log-server
# cost is measured apart from a co-located follower's own CPU on this small machine.
start leader serve --data "$work/leader"
leader_pid=$started_pid
leader_url=$started_url
start syncleader serve --data "$work/syncleader" --sync-followers 1 --socket "$work/syncleader.sock" --replication-socket "$work/syncleader-repl.sock"
"$driver" consume "$work/syncleader-repl.sock" "$work/syncleader.sock" sync-consumer &
pids+=("$!")
declare -A results
for round in $(seq 1 "$rounds"); do
    for followers in 0 1 2; do
        cpids=()
        for f in $(seq 1 "$followers"); do
            "$driver" consume "$work/leader/replication.sock" "$work/leader/eddyd.sock" "c$round-$f" &
            cpids+=("$!")
            pids+=("$!")
        done
        sleep 0.3
        line=$("$driver" load "$work/leader/eddyd.sock" "$load_seconds" 64)
        echo "round $round, $followers followers: $line"
        results[$followers]+=" $(echo "$line" | grep -o '[0-9]* writes/s' | grep -o '[0-9]*')"
        for pid in "${cpids[@]}"; do stop "$pid"; done
    done
    line=$("$driver" load "$work/syncleader.sock" "$load_seconds" 64)
    echo "round $round, --sync-followers 1 (1 follower): $line"
    results[sync]+=" $(echo "$line" | grep -o '[0-9]* writes/s' | grep -o '[0-9]*')"
done
m0=$(median ${results[0]})
m1=$(median ${results[1]})
m2=$(median ${results[2]})
ms=$(median ${results[sync]})
echo "medians (writes/s): 0 followers $m0, 1 follower $m1, 2 followers $m2, --sync-followers 1: $ms"
python3 -c "
m0, m1, m2, ms = $m0, $m1, $m2, $ms
for name, m in [('1 follower', m1), ('2 followers', m2), ('--sync-followers 1', ms)]:
    cost = m0 / m - 1
    print(f'  {name}: {m0 / m:.2f}x the time per write ({cost * 100:+.1f}%), target <= 15% cost: ' + ('met' if cost <= 0.15 else 'missed'))
"
echo "-- for reference, real followers on the same two cores (one round; their applying competes for the CPU):"
for followers in 1 2; do
    fpids=()
    furls=()
    for f in $(seq 1 "$followers"); do
        start "real-$followers-$f" follow --leader "$work/leader/replication.sock" --data "$work/real-$followers-$f"
        fpids+=("$started_pid")
        furls+=("$started_url")
    done
    caught_up "$leader_url" "${furls[@]}"
    echo "$followers real followers: $("$driver" load "$work/leader/eddyd.sock" "$load_seconds" 64)"
    for pid in "${fpids[@]}"; do stop "$pid"; done
done

fi

if has_phase catchup; then
echo "== catch-up: a new follower of the leader's log (a snapshot from 50,000 entries on, else replay)"
start_time=$(date +%s.%N)
start catchup follow --leader "$work/leader/replication.sock" --data "$work/catchup"
caught_up "$leader_url" "$started_url"
end_time=$(date +%s.%N)
stop "$started_pid"
stop "$leader_pid"
count=$("$root/$eddy_bin/eddy" digest --data "$work/catchup" | python3 -c 'import json, sys; print(json.load(sys.stdin)["log"]["count"])')
python3 -c "
n, t = $count, $end_time - $start_time
print(f'catch-up: {n} entries in {t:.2f} s (from process start): {n / t:,.0f} entries/s, target >= 100,000: ' + ('met' if n / t >= 100000 else 'missed'))
"

fi

if has_phase fanout; then
echo "== fan-out: $fanout_rate writes/s, 2 followers x $fanout_subscribers subscribers, $fanout_seconds s"
start fanleader serve --data "$work/fanleader"
fan_url=$started_url
fan_pids=("$started_pid")
start fan1 follow --leader "$work/fanleader/replication.sock" --data "$work/fan1"
f1=$started_url
fan_pids+=("$started_pid")
start fan2 follow --leader "$work/fanleader/replication.sock" --data "$work/fan2"
f2=$started_url
fan_pids+=("$started_pid")
caught_up "$fan_url" "$f1" "$f2"
# cpu_ticks PID: user + system clock ticks the process has used (/proc/PID/stat fields 14, 15).
cpu_ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }
before=(); for pid in "${fan_pids[@]}"; do before+=("$(cpu_ticks "$pid")"); done
"$driver" fanout "$work/fanleader/eddyd.sock" "$fanout_rate" "$fanout_seconds" "$fanout_subscribers" "$work/fan1/eddyd.sock" "$work/fan2/eddyd.sock"
# Where the two cores went: the daemons' CPU over the run (the harness takes most of the rest).
ticks=$(getconf CLK_TCK)
cpu=(); for i in "${!fan_pids[@]}"; do cpu+=("$(( ($(cpu_ticks "${fan_pids[$i]}") - ${before[$i]}) * 1000 / ticks ))"); done
echo "  CPU used during the run: leader ${cpu[0]} ms, followers ${cpu[1]} ms and ${cpu[2]} ms"
fi
