#!/usr/bin/env bash
# Runs every benchmark script here once in a short mode, so none of them can rot: `make test`
# calls it (`make test-bench`). It checks that each script builds what it needs, starts its
# daemons and peers, drives them and prints its summary; it asserts no figure (debug builds,
# a second or two per run and the CI machine's load make them meaningless), only that the
# script succeeded and reported no failed request and no lost event.
#
# Debug builds: make test has built eddyd, eddy and the profiling drivers (targets of the main
# package) already; this makes sure of them once, builds the Benchmarks package's two products
# in one invocation into the main package's .build (EngineBenchmarks and ClientProfile: about
# 80 s on 2 cores, compiling only async-http-client and package-benchmark; see
# lib/binaries.sh) and runs each
# script with EDDY_BENCH_CONFIG=debug EDDY_SKIP_BUILD=1. engine-bench.sh then runs the benchmark
# executable directly: package-benchmark's plugin builds release only.
# A peer (redis-server, PostgreSQL, wrk, etcd) that is missing and cannot be installed skips the scripts
# that need it with a message; it does not fail the run.
#
# Usage: Benchmarks/scripts/smoke.sh [SCRIPT...]   (default: all of them)
set -euo pipefail
export SWIFT_BACKTRACE=enable=no
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
export EDDY_BENCH_CONFIG=debug
source Benchmarks/scripts/lib/binaries.sh
scripts=Benchmarks/scripts
selected=("$@")

wants() {
    [ ${#selected[@]} = 0 ] && return 0
    local s
    for s in "${selected[@]}"; do [ "$s" = "$1" ] && return 0; done
    return 1
}

# have TOOL PACKAGE: true when TOOL is there, installing PACKAGE first when we are root.
have() {
    command -v "$1" > /dev/null && return 0
    if [ "$(id -u)" = 0 ]; then
        apt-get install -y -qq "$2" > /dev/null 2>&1 ||
            { apt-get update > /dev/null 2>&1 && apt-get install -y -qq "$2" > /dev/null 2>&1; } || true
    fi
    command -v "$1" > /dev/null
}

echo "== smoke: build (debug)"
build_eddy eddyd eddy
build_eddy ReplicationProfile EventProfile IndexQueryProfile
# The Benchmarks package's products, only for the scripts that need them (`smoke.sh NAME.sh`).
if wants engine-bench.sh && wants client-bench.sh; then
    build_profile EngineBenchmarks ClientProfile
elif wants engine-bench.sh; then
    build_profile EngineBenchmarks
elif wants client-bench.sh; then
    build_profile ClientProfile
fi
export EDDY_SKIP_BUILD=1

failed=()
skipped=()
ran=0
# Lines that say a script's requests failed or its events were lost: a rotten harness, not a
# slow machine, so they fail the run although no figure is checked.
errors='non-2xx responses: [1-9]|non-200 responses: [1-9]|non-200 [1-9]|\(lost [1-9]|failed [1-9]'
output=$(mktemp "${TMPDIR:-/tmp}/eddy-smoke.XXXXXX")
trap 'rm -f "$output"' EXIT
# run NAME COMMAND...: runs one script, its output indented; a failure is recorded, not fatal.
run() {
    local name=$1 start status=0
    shift
    wants "$name" || return 0
    echo "== smoke: $name"
    start=$(date +%s)
    # pipefail: the script's status, as sed and tee succeed.
    "$@" 2>&1 | sed 's/^/    /' | tee "$output" || status=$?
    if [ "$status" = 0 ] && grep -qE "$errors" "$output"; then
        echo "    (smoke: a line above reports failed requests or lost events)"
        status=1
    fi
    echo "-- $name: exit $status, $(($(date +%s) - start)) s"
    ran=$((ran + 1))
    [ "$status" = 0 ] || failed+=("$name")
}
skip() {
    wants "$1" || return 0
    echo "== smoke: $1 skipped: $2"
    skipped+=("$1")
}

# issue15-figures.sh (run below when wrk is there) runs index-bench.sh's query, build and push
# phases, catchup-bench.sh in all three modes and peer-bench.sh, each in the short mode used
# here. When it runs, the separate runs leave those out rather than run them twice (about 40 s
# of `make test`). replication-bench.sh runs whole: its later phases follow the leader its
# throughput phase started.
with_issue15=""
if wants issue15-figures.sh && have wrk wrk; then with_issue15=1; fi

run replication-bench.sh env FANOUT_RATE=100 FANOUT_SUBSCRIBERS=2 "$scripts/replication-bench.sh" 1 1 1
if [ -z "$with_issue15" ]; then
    run catchup-bench.sh "$scripts/catchup-bench.sh" 1 1
    run catchup-bench.sh:behind env CATCHUP_MODE=behind "$scripts/catchup-bench.sh" 1 2
fi
run sync-ab-bench.sh "$scripts/sync-ab-bench.sh" "$eddy_bin/eddyd" "$eddy_bin/eddyd" 1 1
if have redis-server redis-server; then
    run event-bench.sh "$scripts/event-bench.sh" 100 1 2 1
else
    skip event-bench.sh "redis-server is missing and could not be installed"
fi
if [ -n "$with_issue15" ]; then
    run index-bench.sh env PHASES=http "$scripts/index-bench.sh" 500 1 1
else
    run index-bench.sh env PUSH_ROUNDS=1 "$scripts/index-bench.sh" 500 1 1
fi
if have wrk wrk; then
    # peer-bench reports and skips a peer it cannot install or start by itself.
    [ -n "$with_issue15" ] || run peer-bench.sh env SHORT=1 "$scripts/peer-bench.sh"
    run http-bench.sh "$scripts/http-bench.sh" 1 4 1
    run ops-bench.sh env OPS_TEXT_CHUNK=50 OPS_SMALL_CHUNK=100 "$scripts/ops-bench.sh" 1 1
    run rules-bench.sh "$scripts/rules-bench.sh" 1 1
    run tls-catchup-bench.sh "$scripts/tls-catchup-bench.sh" 1 1
    run http-ab-bench.sh "$scripts/http-ab-bench.sh" "$eddy_bin/eddyd" "$eddy_bin/eddyd" 1 1 4
    # Every harness of issue 15's table again, short, and the table made from their outputs.
    run issue15-figures.sh env SHORT=1 "$scripts/issue15-figures.sh"
else
    for name in peer-bench.sh http-bench.sh ops-bench.sh rules-bench.sh tls-catchup-bench.sh http-ab-bench.sh issue15-figures.sh; do
        skip "$name" "wrk is missing and could not be installed"
    done
fi
run delta-bench.sh "$scripts/delta-bench.sh" "$eddy_bin/eddyd" "$eddy_bin/eddyd" 1 10 200
run attach-bench.sh "$scripts/attach-bench.sh" "$eddy_bin/eddyd" "$eddy_bin/eddyd" 1 5 200
run parked-wake-bench.sh "$scripts/parked-wake-bench.sh" 1 52 2
if have etcd etcd-server; then
    run cluster-bench.sh "$scripts/cluster-bench.sh" 1 1
else
    skip cluster-bench.sh "etcd is missing and could not be installed"
fi
run engine-bench.sh "$scripts/engine-bench.sh"
run client-bench.sh env PUSH_COUNT=5000 OBSERVED_COUNT=200 "$scripts/client-bench.sh" 1

echo "== smoke: $ran scripts ran, ${#skipped[@]} skipped, ${#failed[@]} failed${failed[*]:+: ${failed[*]}}"
[ ${#failed[@]} = 0 ]
