#!/usr/bin/env bash
# The index benchmarks of issue 3, in one run (see Benchmarks/README.md, "Index benchmarks"):
#   1. query: Eddy (IndexQueryProfile query, in-process readQuery) and SQLite
#      (sqlite_query_bench.py, WAL, expression index) on the same N children and the same
#      bounds, alternating Eddy, SQLite, Eddy, ... for ROUNDS rounds; medians of p50/p99 per
#      query, the SQLite/Eddy p50 ratio (target: Eddy >= 3x faster), and a check that both
#      returned the same rows (digests).
#   2. http: eddyd on the same Eddy data: PUT the rules, poll /.settings/indexes.json until the
#      index is ready (build rate over HTTP), then wrk range queries, 1 and 16 connections.
#   3. build: IndexQueryProfile build on the same data (target >= 200,000 children/s).
#   4. push: IndexQueryProfile push, 0/1/4 indexes interleaved (targets: 4-index <= 1.5x 0-index,
#      issue 3; <= 1.3x at 64 writers, issue 15).
#
# Usage (from anywhere):  Benchmarks/scripts/index-bench.sh [N] [ROUNDS] [HTTP_SECONDS]
#   N children (default 1000000), ROUNDS (default 3), wrk duration per run (default 10).
#   PHASES="query http build push" (the default) selects phases, e.g. PHASES=query.
#   PUSH_ROUNDS: rounds of the push phase (default ROUNDS, at least 5).
#   INDEX_BENCH_DIR=DIR keeps the loaded Eddy and SQLite copies in DIR (created if missing) and
#   reuses them in the next run with the same N (both drivers check what a directory holds);
#   without it they go to a temporary directory removed at exit.
# A missed target is reported, not failed: time figures depend on the machine and its load.
set -euo pipefail

n=${1:-1000000}
rounds=${2:-3}
http_seconds=${3:-10}
phases=${PHASES:-query http build push}
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
scripts=Benchmarks/scripts
source Benchmarks/scripts/lib/binaries.sh
driver=$eddy_bin/IndexQueryProfile

if [ -n "${INDEX_BENCH_DIR:-}" ]; then
    mkdir -p "$INDEX_BENCH_DIR"
    work=$(cd "$INDEX_BENCH_DIR" && pwd)
else
    work=$(mktemp -d "${TMPDIR:-/tmp}/eddy-index-bench.XXXXXX")
fi
echo "== build ($bench_config)"
if [[ " $phases " == *" http "* ]]; then build_eddy eddyd; fi
build_eddy IndexQueryProfile
eddyd_pid=""
cleanup() {
    if [ -n "$eddyd_pid" ]; then kill -TERM "$eddyd_pid" 2>/dev/null || true; wait "$eddyd_pid" 2>/dev/null || true; fi
    if [ -z "${INDEX_BENCH_DIR:-}" ]; then rm -rf "$work"; fi
}
trap cleanup EXIT
# The Eddy data lives in an eddyd data directory (namespace "default"), so phase 2 serves it as is.
eddy_data="$work/eddy/default"
sqlite_db="$work/items.db"
start_time=$(date +%s)

# The line of a driver's output that is its JSON report.
json_line() { grep '^{' "$1" | tail -1; }

if [[ " $phases " == *" query "* ]]; then
    echo "== prepare: $n children for Eddy and for SQLite (same formula, same seed)"
    eddy_digest=$("$driver" digest "$n")
    sqlite_digest=$(python3 "$scripts/sqlite_query_bench.py" --n "$n" --digest-only)
    echo "$eddy_digest"; echo "$sqlite_digest"
    [ "${eddy_digest#eddy }" = "${sqlite_digest#sqlite }" ] || { echo "data digests differ: fix DataSet.swift or the script" >&2; exit 1; }
    "$driver" load "$n" --data "$eddy_data"
    python3 "$scripts/sqlite_query_bench.py" --n "$n" --db "$sqlite_db" --load-only

    echo "== query: Eddy and SQLite alternating, $rounds rounds"
    for round in $(seq "$rounds"); do
        "$driver" query "$n" --data "$eddy_data" | tee "$work/eddy-query-$round.out" | grep -v '^{'
        json_line "$work/eddy-query-$round.out" > "$work/eddy-query-$round.json"
        python3 "$scripts/sqlite_query_bench.py" --n "$n" --db "$sqlite_db" | tee "$work/sqlite-query-$round.out" | grep -v '^{'
        json_line "$work/sqlite-query-$round.out" > "$work/sqlite-query-$round.json"
    done
    python3 - "$work" "$rounds" <<'EOF'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
load = lambda side: [json.load(open(f"{work}/{side}-query-{r}.json")) for r in range(1, rounds + 1)]
eddy, sqlite = load("eddy"), load("sqlite")
title = f"query medians over {rounds} rounds, us"
print(f"\n{title:<40} {'Eddy p50':>9} {'Eddy p99':>10} {'SQLite p50':>11} {'SQLite p99':>11} {'SQLite/Eddy p50':>16}")
same = True
# Each Eddy query runs as readQueryJSON (".json": the answer as JSON text, like SQLite's rows
# of JSON text) and as readQuery (the answer decoded into Values); both face SQLite's figure.
for base in ("range.first100", "range.last100", "equal", "key.first100"):
  for name in (base + ".json", base):
    med = lambda runs, field, key: statistics.median(run["queries"][key][field] for run in runs)
    e50, e99 = med(eddy, "p50_us", name), med(eddy, "p99_us", name)
    s50, s99 = med(sqlite, "p50_us", base), med(sqlite, "p99_us", base)
    # The target is for the indexed queries; orderByKey needs no index and is for reference.
    target = "" if name.startswith("key") else "  (target >= 3x: %s)" % ("met" if s50 / e50 >= 3 else "MISSED")
    print(f"  {name:<38} {e50:9.1f} {e99:10.1f} {s50:11.1f} {s99:11.1f} {s50 / e50:15.2f}x{target}")
    digest = lambda run, key: tuple(run["queries"][key][k] for k in ("rows", "score_sum", "group_sum"))
    if len({digest(run, name) for run in eddy} | {digest(run, base) for run in sqlite}) != 1:
        same = False
        print(f"  ! {name}: results differ (rows, score sum, group sum): eddy {digest(eddy[0], name)} sqlite {digest(sqlite[0], base)}")
print("same rows from Eddy and SQLite for every query: " + ("yes" if same else "NO"))
EOF
fi

if [[ " $phases " == *" http "* ]]; then
    require_tool wrk wrk
    [ -d "$eddy_data" ] || "$driver" load "$n" --data "$eddy_data"
    # Port 0: eddyd picks a free one and prints it (a random pick could be taken).
    "$eddy_bin/eddyd" serve --data "$work/eddy" --http 127.0.0.1:0 --durability sync --log-level warning \
        > "$work/eddyd.log" 2>&1 &
    eddyd_pid=$!
    for _ in $(seq 600); do grep -q listening "$work/eddyd.log" && break; sleep 0.1; done
    grep -q listening "$work/eddyd.log" || { cat "$work/eddyd.log" >&2; exit 1; }
    url=$(grep -o 'http://[0-9.:]*' "$work/eddyd.log" | head -1)
    indexes() { curl -sf "$url/.settings/indexes.json"; }
    wait_ready() {  # until at least one index is listed and none is building
        while true; do
            local body; body=$(indexes)
            if [[ "$body" == *'"ready"'* && "$body" != *'"building"'* ]]; then echo "$body"; return; fi
            sleep 0.05
        done
    }
    echo "== http: index build through eddyd ($n children)"
    # Open rules (a rules file without .read/.write would deny the queries), first without the
    # index, to drop what phase 1 built.
    curl -sf -X PUT "$url/.settings/rules.json" -d '{"rules":{".read":true,".write":true}}' >/dev/null
    t0=$(date +%s.%N)
    curl -sf -X PUT "$url/.settings/rules.json" -d '{"rules":{".read":true,".write":true,"items":{".indexOn":"score"}}}' >/dev/null
    status=$(wait_ready)
    t1=$(date +%s.%N)
    echo "$status"
    awk -v n="$n" -v a="$t0" -v b="$t1" 'BEGIN { printf "build over HTTP: %.2f s, %.0f children/s (PUT rules to ready, polled every 50 ms)\n", b - a, n / (b - a) }'
    query="$url/items.json?orderBy=%22score%22&startAt=500000&endAt=510000&limitToFirst=100"
    curl -sS --fail-with-body "$query" | python3 -c 'import json, sys; print("sample range query over HTTP: %d children" % len(json.load(sys.stdin)))'
    for connections in 1 16; do
        threads=$(( connections == 1 ? 1 : 2 ))
        echo "== http: range.first100 query, $connections connection(s), ${http_seconds}s"
        wrk -t"$threads" -c"$connections" -d"${http_seconds}s" --latency -s "$scripts/http-index-query.lua" "$url" -- 10000 limitToFirst \
            | grep -E "Requests/sec|non-2xx|p50"
    done
    kill -TERM "$eddyd_pid"; wait "$eddyd_pid" 2>/dev/null || true; eddyd_pid=""
fi

if [[ " $phases " == *" build "* ]]; then
    echo "== build: online index build, $rounds rounds"
    "$driver" build "$n" "$rounds" --data "$eddy_data"
fi

if [[ " $phases " == *" push "* ]]; then
    echo "== push: durable pushes with 0, 1 and 4 indexes, interleaved"
    "$driver" push "$n" "${PUSH_ROUNDS:-$((rounds > 5 ? rounds : 5))}" --preload $((n < 100000 ? n : 100000))
fi
echo "== done in $(( $(date +%s) - start_time )) s"
