#!/usr/bin/env bash
# HTTP throughput of two eddyd binaries side by side, in alternating rounds on fresh daemons
# (the way a change is measured on a machine that drifts): per round and binary, wrk GETs of a
# small object and wrk POSTs (durable pushes). Prints each round, then the medians and the
# AFTER/BEFORE ratio of the medians. Build each side with `swift build -c release --product
# eddyd` (a worktree of the older commit, or a copy of the binary, for BEFORE).
#
#   Benchmarks/scripts/http-ab-bench.sh BEFORE_EDDYD AFTER_EDDYD [ROUNDS=3] [SECONDS=6] [CONNECTIONS=16]
set -euo pipefail
if [ $# -lt 2 ]; then
    echo "usage: $0 BEFORE_EDDYD AFTER_EDDYD [ROUNDS] [SECONDS] [CONNECTIONS]" >&2
    exit 2
fi
before=$1
after=$2
rounds=${3:-3}
seconds=${4:-6}
connections=${5:-16}
for binary in "$before" "$after"; do
    [ -x "$binary" ] || { echo "$binary is not an executable" >&2; exit 2; }
done
command -v wrk > /dev/null || { echo "wrk is missing (apt-get install wrk)" >&2; exit 2; }
scripts="$(cd "$(dirname "$0")" && pwd)"
work=$(mktemp -d "${TMPDIR:-/tmp}/eddy-http-ab.XXXXXX")
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done; rm -rf "$work"' EXIT
# start_command (a free port picked by eddyd, a clear error when it does not start) and stop.
source "$scripts/lib/daemons.sh"
cat > "$work/get.lua" <<'EOF'
wrk.method = "GET"
wrk.path = "/doc/a.json"
function done(summary, latency, requests)
  io.write(string.format("non-2xx responses: %d\n", summary.errors.status))
end
EOF
object='{"a":{"name":"item","n":1,"tags":{"x":true,"y":false},"text":"'$(printf 'x%.0s' $(seq 600))'"}}'

# rate WRK-OUTPUT: the Requests/sec figure; fails on an error answer.
rate() {
    if grep -Eq 'non-2xx responses: [1-9]|non-200 responses: [1-9]' <<< "$1"; then
        echo "error answers in a round:" >&2
        echo "$1" >&2
        exit 1
    fi
    awk '/Requests\/sec/ {print $2}' <<< "$1"
}

# round SIDE BINARY: one fresh daemon (on a port it picks: a random one could be taken), the
# GET run, then the POST run.
round() {
    local side=$1 binary=$2
    rm -rf "$work/data"
    start_command "$side" "$binary" serve --data "$work/data" --durability sync
    curl -sSf -X PUT "$started_url/doc.json" -d "$object" > /dev/null
    local get post
    get=$(rate "$(wrk -t2 -c"$connections" -d"${seconds}s" -s "$work/get.lua" "$started_url")")
    post=$(rate "$(wrk -t2 -c"$connections" -d"${seconds}s" -s "$scripts/http-post.lua" "$started_url")")
    stop "$started_pid"
    echo "$side $get $post" >> "$work/rounds"
    printf '  %-6s GET %10.0f/s   POST %10.0f/s\n' "$side" "$get" "$post"
}

echo "== http A/B: $rounds rounds of ${seconds}s, $connections connections; before $before, after $after"
for r in $(seq "$rounds"); do
    echo "round $r"
    round before "$before"
    round after "$after"
done
python3 - "$work/rounds" <<'EOF'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
def median(side, column):
    return statistics.median(float(r[column]) for r in rows if r[0] == side)
for name, column in (("GET", 1), ("POST", 2)):
    b, a = median("before", column), median("after", column)
    print(f"{name:5} medians: before {b:,.0f}/s, after {a:,.0f}/s, after/before {a / b:.2f}x")
EOF
