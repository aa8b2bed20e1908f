#!/usr/bin/env bash
# HTTP figures for the README/issue: durable pushes with 64 keep-alive clients, and GET of a
# 1 KiB child (p50/p99). Starts a release eddyd on a free port with a temp data directory,
# runs wrk (Debian package) against it, stops it. Client and server share the machine's cores.
#
#   Benchmarks/scripts/http-bench.sh [SECONDS] [CONNECTIONS] [RUNS]
#   EDDY_SKIP_BUILD=1 uses the binaries as they are; EDDY_BENCH_CONFIG=debug runs debug builds.
set -euo pipefail
cd "$(dirname "$0")/../.."
source Benchmarks/scripts/lib/binaries.sh
seconds=${1:-10}
connections=${2:-64}
runs=${3:-3}
require_tool wrk wrk
build_eddy eddyd
data=$(mktemp -d)
# Port 0: eddyd picks a free one and prints it (a random pick could be taken).
"$eddy_bin/eddyd" serve --data "$data" --http 127.0.0.1:0 --durability sync --log-level warning > "$data/out.log" 2>&1 &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 600); do grep -q listening "$data/out.log" && break; sleep 0.1; done
url=$(grep -o 'http://[0-9.:]*' "$data/out.log" | head -1)
[ -n "$url" ] || { echo "eddyd did not start: $(tail -5 "$data/out.log")" >&2; exit 1; }
# A 1 KiB child to read back.
payload=$(python3 -c 'import json; print(json.dumps({"text": "x" * 1000, "n": 1}))')
curl -sf -X PUT "$url/doc/item.json" -d "$payload" >/dev/null
echo "== POST (push), durability sync, $connections connections, ${seconds}s x $runs runs"
for i in $(seq "$runs"); do
  wrk -t2 -c"$connections" -d"${seconds}s" --latency -s Benchmarks/scripts/http-post.lua "$url" | grep -E "Requests/sec|non-200|p50"
done
echo "== GET 1 KiB child, $connections connections, ${seconds}s x $runs runs"
for i in $(seq "$runs"); do
  wrk -t2 -c"$connections" -d"${seconds}s" --latency -s Benchmarks/scripts/http-get.lua "$url" | grep -E "Requests/sec|non-2xx|p50"
done
echo "== GET 1 KiB child, 1 connection (unloaded latency), ${seconds}s"
wrk -t1 -c1 -d"${seconds}s" --latency -s Benchmarks/scripts/http-get.lua "$url" | grep -E "Requests/sec|non-2xx|p50"
