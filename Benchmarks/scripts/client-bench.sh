#!/usr/bin/env bash
# EddyClient figures (issue 12) against REST with async-http-client, in one run:
#   rtt     set round trip from one client, sequential (p50/p99)
#   push    durable pushes/s from one client (pipelined native; REST with 64 requests in flight)
#   event   another client's write to this client's observer callback (p50/p99)
#   memory  client bytes per active observer (10,000 observers, each its own subscription)
#   observed  pushes made at once under a childAdded and a value observer of their list, to the
#           last completion and childAdded (EddyClient on unix, tcp and its HTTP fallback)
#   idle    the client's CPU while 10 observers wait with nothing arriving (cores busy; native
#           tcp and the HTTP fallback)
# over the native Unix socket (unix), native TCP loopback (tcp) and REST/SSE (rest). One eddyd
# (release, durability sync) serves the whole script; each round runs every figure on every
# transport, alternating the order of the transports. At the end: medians over the rounds and
# the ratios of each native transport to REST.
#
# Usage (from anywhere):  Benchmarks/scripts/client-bench.sh [ROUNDS]   (default 3)
#   EDDY_SKIP_BUILD=1 uses the binaries as they are; EDDY_BENCH_CONFIG=debug runs debug builds.
#   PUSH_COUNT=N pushes N per transport in the push figure instead of the driver's defaults
#   (50,000 native, 10,000 REST); the smoke run in `make test` uses a small one.
#   OBSERVED_COUNT=N pushes N in the observed figure (default 10,000 native, 2,000 over HTTP).
set -euo pipefail

rounds=${1:-3}
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
source Benchmarks/scripts/lib/binaries.sh
driver=$profile_bin/ClientProfile
eddyd=$eddy_bin/eddyd

work=$(mktemp -d "${TMPDIR:-/tmp}/eddy-client-bench.XXXXXX")
eddyd_pid=""
cleanup() {
    if [ -n "$eddyd_pid" ]; then kill -TERM "$eddyd_pid" 2>/dev/null || true; wait "$eddyd_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

echo "== build ($bench_config)"
build_eddy eddyd
build_profile ClientProfile

"$eddyd" serve --data "$work/data" --http 127.0.0.1:0 --native-listen 127.0.0.1:0 > "$work/eddyd.out" 2> "$work/eddyd.err" &
eddyd_pid=$!
for _ in $(seq 1 300); do grep -q "listening on" "$work/eddyd.out" 2>/dev/null && break; sleep 0.1; done
http=$(sed -n 's/^eddyd: listening on \(http:[^ ]*\).*/\1/p' "$work/eddyd.out")
tcp=$(sed -n 's|^eddyd: native protocol on tcp://\([^ ]*\).*|\1|p' "$work/eddyd.out")
socket="$work/data/eddyd.sock"
echo "== eddyd: $http, native tcp $tcp, socket $socket; $(nproc) cores; rounds $rounds"

results="$work/results.jsonl"
for round in $(seq 1 "$rounds"); do
    if [ $((round % 2)) = 1 ]; then order="unix tcp rest"; else order="rest tcp unix"; fi
    for figure in rtt push event; do
        for transport in $order; do
            count=()
            if [ "$figure" = push ] && [ -n "${PUSH_COUNT:-}" ]; then count=(--count "$PUSH_COUNT"); fi
            line=$("$driver" "$figure" "$transport" --socket "$socket" --tcp "$tcp" --http "$http" ${count[@]+"${count[@]}"})
            echo "round $round: $line"
            echo "$line" >> "$results"
        done
    done
    line=$("$driver" memory unix --socket "$socket" --tcp "$tcp" --http "$http")
    echo "round $round: $line"
    echo "$line" >> "$results"
    for transport in unix tcp http; do
        count=()
        if [ -n "${OBSERVED_COUNT:-}" ]; then count=(--count "$OBSERVED_COUNT"); fi
        line=$("$driver" observed "$transport" --socket "$socket" --tcp "$tcp" --http "$http" ${count[@]+"${count[@]}"})
        echo "round $round: $line"
        echo "$line" >> "$results"
    done
    for transport in tcp http; do
        line=$("$driver" idle "$transport" --socket "$socket" --tcp "$tcp" --http "$http")
        echo "round $round: $line"
        echo "$line" >> "$results"
    done
done

python3 - "$results" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def med(fig, transport, key):
    values = [r[key] for r in rows if r["figure"] == fig and r["transport"] == transport]
    return statistics.median(values) if values else None
print("\n== medians over rounds (ratios: native / REST; for latencies REST / native, so > 1 is faster)")
for fig, keys in (("rtt", ("p50_us", "p99_us")), ("push", ("pushes_per_s",)), ("event", ("p50_us", "p99_us"))):
    for key in keys:
        rest = med(fig, "rest", key)
        cells = []
        for t in ("unix", "tcp", "rest"):
            v = med(fig, t, key)
            cells.append(f"{t} {v:,.0f}")
        ratios = []
        for t in ("unix", "tcp"):
            v = med(fig, t, key)
            ratio = (v / rest) if key == "pushes_per_s" else (rest / v)
            ratios.append(f"{t} {ratio:.2f}x")
        print(f"{fig:6} {key:13} " + " | ".join(cells) + "   ratio " + ", ".join(ratios))
print(f"memory bytes per observer (unix): {med('memory', 'unix', 'bytes_per_observer'):,.0f}")
print("observed pushes/s (under childAdded and value observers): " + " | ".join(f"{t} {med('observed', t, 'pushes_per_s'):,.0f}" for t in ("unix", "tcp", "http")))
print("idle client, 10 observers, nothing arriving (cores busy): " + " | ".join(f"{t} {med('idle', t, 'cores_busy'):.4f}" for t in ("tcp", "http")))
PY
