#!/usr/bin/env bash
# Socket fan-out, Eddy against Redis Streams, with the same harness in one run (issue 4):
#   eddy   EventProfile socket: eddyd (release, durability sync) on its native Unix socket, one
#          writer connection pipelining sets of /feed/latest, SUBSCRIBERS connections subscribed.
#   redis  EventProfile redis: a private redis-server on a Unix socket, durable like Eddy's sync
#          writes (appendonly, appendfsync always, no RDB snapshots), one writer pipelining XADD,
#          SUBSCRIBERS connections each in an XREAD BLOCK loop.
# Both servers run for the whole script; each round runs both drivers, alternating which goes
# first. At the end: medians over the rounds of events/s and of ack-to-receipt p50/p99 per side,
# and the eddy/redis ratios of events/s and p99.
#
# Usage (from anywhere):  Benchmarks/scripts/event-bench.sh [RATE] [SECONDS] [SUBSCRIBERS] [ROUNDS]
#   writes/s (default 2000), seconds per run (default 10), subscriber connections (default
#   100), rounds (default 3). Installs redis-server with apt-get when it is missing and we are root.
#   EDDY_SKIP_BUILD=1 uses the binaries as they are; EDDY_BENCH_CONFIG=debug runs debug builds.
# Harness and servers share the machine's cores, so the figures include their competition.
set -euo pipefail
# A harness that fails must end at once, not spend minutes backtracing 100 threads.
export SWIFT_BACKTRACE=enable=no

rate=${1:-2000}
run_seconds=${2:-10}
subscribers=${3:-100}
rounds=${4:-3}
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
source Benchmarks/scripts/lib/binaries.sh
driver=$eddy_bin/EventProfile
eddyd=$eddy_bin/eddyd
require_tool redis-server redis-server

work=$(mktemp -d "${TMPDIR:-/tmp}/eddy-event-bench.XXXXXX")
redis_pid=""
eddyd_pid=""
cleanup() {
    for pid in "$eddyd_pid" "$redis_pid"; do
        if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
    done
    rm -rf "$work"
}
trap cleanup EXIT

echo "== build ($bench_config)"
build_eddy eddyd
build_eddy EventProfile

# Waits up to 10 s for a socket file; on timeout shows the server's log and stops.
wait_socket() {
    for _ in $(seq 100); do [ -S "$1" ] && return; sleep 0.1; done
    echo "no socket at $1 after 10 s:" >&2
    cat "$2" >&2
    exit 1
}
redis_socket="$work/redis.sock"
redis-server --port 0 --unixsocket "$redis_socket" --unixsocketperm 700 \
    --appendonly yes --appendfsync always --save '' --dir "$work" > "$work/redis.log" 2>&1 &
redis_pid=$!
wait_socket "$redis_socket" "$work/redis.log"
eddy_socket="$work/eddy/eddyd.sock"
"$eddyd" serve --data "$work/eddy" --http 127.0.0.1:0 --durability sync --log-level warning > "$work/eddyd.log" 2>&1 &
eddyd_pid=$!
wait_socket "$eddy_socket" "$work/eddyd.log"
echo "== servers: $(redis-server --version | cut -d' ' -f1-3) on $redis_socket; eddyd on $eddy_socket"

run() {  # side round
    if [ "$1" = eddy ]; then
        "$driver" socket "$eddy_socket" "$rate" "$run_seconds" "$subscribers" | tee "$work/eddy-$2.out"
    else
        "$driver" redis "$redis_socket" "$rate" "$run_seconds" "$subscribers" | tee "$work/redis-$2.out"
    fi
}
start_time=$(date +%s)
echo "== fan-out: $rate writes/s for $run_seconds s, $subscribers subscribers, $rounds rounds alternating"
for round in $(seq "$rounds"); do
    echo "-- round $round"
    if [ $((round % 2)) = 1 ]; then run eddy "$round"; run redis "$round"; else run redis "$round"; run eddy "$round"; fi
done

python3 - "$work" "$rounds" <<'EOF'
import re, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
def figures(side, r):
    text = open(f"{work}/{side}-{r}.out").read()
    events = re.search(r"events received (\d+) of (\d+) \(lost (-?\d+)\), (\d+) events/s", text)
    latency = re.search(r"acknowledgement to receipt: p50 (-?[\d.]+) us, p99 (-?[\d.]+) us", text)
    if not events or not latency:
        sys.exit(f"{side} round {r}: no figures in its output")
    return {"lost": int(events[3]), "events/s": int(events[4]), "p50": float(latency[1]), "p99": float(latency[2])}
runs = {side: [figures(side, r) for r in range(1, rounds + 1)] for side in ("eddy", "redis")}
med = {side: {k: statistics.median(run[k] for run in runs[side]) for k in ("events/s", "p50", "p99")} for side in runs}
print(f"\nmedians over {rounds} rounds   {'events/s':>10} {'ack->receipt p50 us':>20} {'p99 us':>10} {'lost (all rounds)':>18}")
for side in ("eddy", "redis"):
    m = med[side]
    print(f"  {side:<26} {m['events/s']:10.0f} {m['p50']:20.1f} {m['p99']:10.1f} {sum(run['lost'] for run in runs[side]):18d}")
e, r = med["eddy"], med["redis"]
print(f"eddy/redis: events/s {e['events/s'] / r['events/s']:.2f}x, p99 {e['p99'] / r['p99']:.2f}x" if r["p99"] > 0
      else f"eddy/redis: events/s {e['events/s'] / r['events/s']:.2f}x, p99 n/a (redis p99 {r['p99']:.1f} us)")
EOF
echo "== done in $(( $(date +%s) - start_time )) s"
