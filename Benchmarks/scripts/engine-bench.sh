#!/usr/bin/env bash
# Runs the EngineBenchmarks target (release build, as package-benchmark always does) and prints
# the median (p50) writes/s of each benchmark with the issue's targets:
#   Engine.push.sync.1writer   >= 0.8 x RocksDB.put.synced.1thread
#   Engine.push.sync.64writers >= 100,000 acknowledged durable writes/s
#
# Usage (from anywhere):  Benchmarks/scripts/engine-bench.sh [extra package-benchmark options]
#   e.g. Benchmarks/scripts/engine-bench.sh --filter 'Engine.push.*'
# EDDY_BENCH_CONFIG=debug (scripts/smoke.sh, inside `make test`): builds the target in debug and
# runs its executable directly, without package-benchmark's plugin (which builds release only):
# it checks that the benchmarks still build and run, and prints each one's p50 without targets
# (a debug build's figures mean nothing). EDDY_SKIP_BUILD=1 uses the binary as it is.
# The full tables go to stdout first; the summary follows. Exit status is package-benchmark's:
# a missed target is reported, not failed (time metrics depend on the machine and its load).
#
# writes/s is computed from the p50 wall clock per write (the tables are per write because the
# benchmarks use scalingFactor .kilo), not from the `throughput` row, which package-benchmark
# counts in whole iterations per second and therefore rounds to the nearest 1,000 writes/s.

set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
output="$(mktemp)"
trap 'rm -f "$output"' EXIT

cd "$root"
source Benchmarks/scripts/lib/binaries.sh

if [ "$bench_config" = debug ]; then
    build_profile EngineBenchmarks
    status=0
    "$profile_bin/EngineBenchmarks" --quiet true "$@" > "$output" 2>&1 || status=$?
    # The runner prints, per benchmark, "Debug results for NAME:" and a wall-clock histogram
    # in nanoseconds per measured iteration of 1,000 writes (scalingFactor .kilo), rows of
    # "Value Percentile TotalCount ...": the first row at percentile 0.5 or more is the p50.
    awk '
        /^Debug results for / { name = $4; sub(/:$/, "", name); wall = 0; n++; next }
        /^Time \(wall clock\)/ { wall = 1; next }
        /^[A-Z]/ { wall = 0 }
        wall && name != "" && $2 + 0 >= 0.5 && !(name in p50) { p50[name] = $1; order[++m] = name }
        END {
            printf "%d benchmarks ran (debug build: no targets)\n", n
            for (i = 1; i <= m; i++) printf "  %-30s p50 %.1f us per write\n", order[i], p50[order[i]] / 1e6
        }
    ' "$output"
    if [ "$status" != 0 ] || ! grep -q "^Debug results for " "$output"; then
        tail -30 "$output" >&2
        echo "EngineBenchmarks failed (exit $status)" >&2
        exit 1
    fi
    exit 0
fi

status=0
swift package --package-path Benchmarks benchmark --target EngineBenchmarks --no-progress "$@" | tee "$output" \
    || status=$?

# Text tables look like:
#   Engine.push.sync.1writer
#   ╒═══ ...
#   │ Time (wall clock) (ns) *  │  p0 │ p25 │ p50 │ ...
# Field 5 of a `│`-split row is p50. The unit in the label is turned into nanoseconds.
awk -F'│' '
    /^[A-Za-z][A-Za-z0-9_.-]+$/ { name = $0; next }
    name != "" && $2 ~ /Time \(wall clock\)/ {
        unit = $2; sub(/.*\(wall clock\) *\(/, "", unit); sub(/\).*/, "", unit)
        factor = (unit == "ns") ? 1 : (unit == "μs" || unit == "us") ? 1e3 : (unit == "ms") ? 1e6 : (unit == "s") ? 1e9 : 0
        p50 = $5; gsub(/[^0-9.]/, "", p50)
        if (factor > 0 && p50 > 0) { nanos[name] = p50 * factor; order[++n] = name }
    }
    END {
        if (n == 0) { print "\nno wall clock results found (did the benchmarks run?)"; exit }
        printf "\n%-30s %16s %14s\n", "benchmark (p50)", "ns per write", "writes/s"
        for (i = 1; i <= n; i++) {
            b = order[i]
            printf "%-30s %16.0f %14.0f\n", b, nanos[b], 1e9 / nanos[b]
        }
        raw = "RocksDB.put.synced.1thread"; one = "Engine.push.sync.1writer"; many = "Engine.push.sync.64writers"
        print ""
        if ((raw in nanos) && (one in nanos)) {
            ratio = nanos[raw] / nanos[one]
            printf "1writer / raw RocksDB synced put: %.2fx  (target >= 0.80x: %s)\n", ratio, (ratio >= 0.8 ? "met" : "MISSED")
        }
        if (many in nanos) {
            rate = 1e9 / nanos[many]
            printf "64 writers: %.0f acknowledged durable writes/s  (target >= 100000: %s)\n", rate, (rate >= 100000 ? "met" : "MISSED")
            if (raw in nanos) printf "64 writers / raw RocksDB synced put: %.1fx (group commit gain)\n", nanos[raw] / nanos[many]
        }
    }
' "$output"

exit "$status"
