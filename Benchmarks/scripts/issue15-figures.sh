#!/usr/bin/env bash
# Issue 15's table in one command: runs every harness that produces one of its figures, each
# against its peer in the same run (alternating rounds, medians), and prints the table as
# Benchmarks/README.md keeps it ("Issue 15: the figures in one table"), with the date, the
# machine, the commit and the command of each row. Each harness's whole output is kept in the
# work directory named at the end (with TABLE_KEEP=1) and shown as it runs.
#
#   figures                                    harness (release builds)
#   range.first100 / range.last100 / equal     index-bench.sh N ROUNDS, PHASES="query build push"
#     vs SQLite; online index build; 4 indexes
#     vs none at 64 writers
#   --sync-followers 1 vs no follower          replication-bench.sh ROUNDS 5 10, PHASES=throughput
#   new follower catch-up (snapshot)           catchup-bench.sh ROUNDS 150
#   catch-up of a replica far behind           CATCHUP_MODE=behind catchup-bench.sh ROUNDS 60
#   catch-up by replay                         CATCHUP_MODE=replay catchup-bench.sh ROUNDS 60
#   native vs Redis, HTTP vs PostgreSQL        peer-bench.sh ROUNDS 10
#
# About 20 minutes on the 2-core reference VM with the defaults (18 on 2026-11-27). A missed goal is reported, not
# failed; a harness that fails stops the run. Peers (SQLite, Redis, PostgreSQL, wrk) are set up by
# the harnesses themselves (Debian packages, installed when run as root).
#
# Usage: Benchmarks/scripts/issue15-figures.sh [ROUNDS] [N]   (defaults 3 and 1000000 children)
#   SHORT=1: every harness in its short mode (a round of a second or two, small data: the smoke
#   run in `make test`; the figures then mean nothing). TABLE_OUT=FILE also writes the table to
#   FILE. EDDY_SKIP_BUILD=1 and EDDY_BENCH_CONFIG=debug as for every script (lib/binaries.sh).
set -euo pipefail

rounds=${1:-3}
n=${2:-1000000}
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
scripts=Benchmarks/scripts
source Benchmarks/scripts/lib/binaries.sh
work=$(mktemp -d "${TMPDIR:-/tmp}/eddy-issue15.XXXXXX")
cleanup() { [ -n "${TABLE_KEEP:-}" ] || rm -rf "$work"; }
trap cleanup EXIT

if [ -n "${SHORT:-}" ]; then
    rounds=1
    index_args=(500 1 1)
    replication_args=(1 1 1)
    snapshot_args=(1 1)
    behind_args=(1 2)
    replay_args=(1 1)
    peer_env=(SHORT=1)
    peer_args=()
else
    index_args=("$n" "$rounds")
    replication_args=("$rounds" 5 10)
    snapshot_args=("$rounds" 150)
    behind_args=("$rounds" 60)
    replay_args=("$rounds" 60)
    peer_env=()
    peer_args=("$rounds" 10)
fi

started=$(date -u '+%Y-%m-%d %H:%M')
# run NAME COMMAND...: one harness, its output shown indented and kept in $work/NAME.out.
run() {
    local name=$1
    shift
    echo "== $name: $*"
    # The command as one would type it: without `env`, VAR="a b" quoted.
    local word shown=()
    for word in "$@"; do
        if [[ "$word" == *" "* ]]; then word="${word%%=*}=\"${word#*=}\""; fi
        shown+=("$word")
    done
    [ "${shown[0]}" != env ] || shown=("${shown[@]:1}")
    echo "${shown[*]}" > "$work/$name.cmd"
    "$@" 2>&1 | sed 's/^/    /' | tee "$work/$name.out"
    # `set -o pipefail`: a failed harness stops the run here.
}
run index env PHASES="query build push" PUSH_ROUNDS="$rounds" "$scripts/index-bench.sh" "${index_args[@]}"
run replication env PHASES=throughput "$scripts/replication-bench.sh" "${replication_args[@]}"
run catchup-snapshot "$scripts/catchup-bench.sh" "${snapshot_args[@]}"
run catchup-behind env CATCHUP_MODE=behind "$scripts/catchup-bench.sh" "${behind_args[@]}"
run catchup-replay env CATCHUP_MODE=replay "$scripts/catchup-bench.sh" "${replay_args[@]}"
run peer env "${peer_env[@]}" "$scripts/peer-bench.sh" ${peer_args[@]+"${peer_args[@]}"}

commit=$(git rev-parse --short HEAD 2> /dev/null || echo unknown)
if [ -n "$(git status --porcelain --untracked-files=no 2> /dev/null)" ]; then commit="$commit (with uncommitted changes)"; fi
machine="$(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), $(. /etc/os-release && echo "$PRETTY_NAME"), $bench_config builds"
echo
python3 "$scripts/issue15_table.py" "$work" --started "$started" --finished "$(date -u '+%H:%M')" --commit "$commit" \
    --machine "$machine" --rounds "$rounds" --n "${index_args[0]}" ${SHORT:+--short} | tee "${TABLE_OUT:-/dev/null}"
[ -z "${TABLE_KEEP:-}" ] || echo "harness outputs kept in $work"
