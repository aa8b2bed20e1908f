# Shared by the scripts that start eddyd (replication-bench.sh, catchup-bench.sh,
# peer-bench.sh, http-ab-bench.sh): sourced, not run.
# The caller sources lib/binaries.sh and either sets `work` (a temporary directory) and `pids=()`
# before sourcing this, or calls `bench_work_dir` right after; every process started here is
# added to `pids`, which the cleanup kills.

# bench_work_dir NAME: a temporary directory as `work`, an empty `pids`, and an EXIT trap that
# kills every process in `pids`, waits for them and removes `work` (for a script with no other
# cleanup of its own).
bench_work_dir() {
    work=$(mktemp -d "${TMPDIR:-/tmp}/eddy-$1.XXXXXX")
    pids=()
    trap 'for pid in "${pids[@]}"; do kill "$pid" 2> /dev/null || true; done; wait 2> /dev/null || true; rm -rf "$work"' EXIT
}

# build_replication_tools: eddyd, eddy and ReplicationProfile (lib/binaries.sh, which the caller
# sources first, says which configuration and when nothing is built).
build_replication_tools() {
    echo "== build ($bench_config)"
    build_eddy eddyd eddy
    build_eddy ReplicationProfile
}

# start_command NAME COMMAND...: runs COMMAND (an eddyd invocation, possibly wrapped, e.g. in
# perf) with a free HTTP port, output in $work/NAME.out and .log; waits up to 60 s for its
# "listening on" line (less if it exits). Sets $started_pid and $started_url.
start_command() {
    local name=$1
    shift
    "$@" --http 127.0.0.1:0 --log-level warning > "$work/$name.out" 2> "$work/$name.log" &
    started_pid=$!
    pids+=("$started_pid")
    for _ in $(seq 1 1200); do
        if grep -q "listening on" "$work/$name.out" 2> /dev/null; then break; fi
        kill -0 "$started_pid" 2> /dev/null || break
        sleep 0.05
    done
    started_url=$(grep -o 'http://[0-9.:]*' "$work/$name.out" | head -1)
    [ -n "$started_url" ] || { echo "$name did not start: $(tail -5 "$work/$name.log")" >&2; exit 1; }
}

# stop PID: ends a process started here, waits for it and forgets it (so a cleanup never
# signals a reused pid).
stop() {
    local kept=() pid
    kill "$1" 2> /dev/null || true
    wait "$1" 2> /dev/null || true
    for pid in "${pids[@]}"; do [ "$pid" = "$1" ] || kept+=("$pid"); done
    pids=("${kept[@]}")
}
