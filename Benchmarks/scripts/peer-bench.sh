#!/usr/bin/env bash
# Durable write throughput, Eddy side by side with two peers, in one run with alternating rounds:
#   1. eddy-native / redis-xadd: 64 concurrent clients, each waiting for every acknowledgement.
#      eddy-native  ReplicationProfile load: 64 connections to eddyd's native Unix socket, each
#                   pushing {"n":1,"s":"small"} one after the other (durability: eddyd's default,
#                   sync: fsync before the acknowledgement), all driven by one thread with
#                   poll(2), as redis-benchmark drives its clients with one epoll thread (until
#                   2026-11-26 a thread per connection, whose wake-ups cost the shared cores).
#      redis-xadd   redis-benchmark -c 64 -P 1: `XADD stream * n 1 s small` against a private
#                   redis-server with appendonly yes, appendfsync always, no RDB snapshots, over its
#                   Unix socket (like Eddy's; its free loopback port is not used). redis-benchmark
#                   runs a request count, not a time: the count is picked from a short
#                   calibration run, then from the previous run, so each run lasts about SECONDS;
#                   the figure is its requests/s.
#      Goal: eddy-native/redis-xadd >= 1.1x.
#   2. eddy-http / postgres: 64 concurrent clients over loopback TCP.
#      eddy-http    wrk -t2 -c64: POST {"n":1,"s":"small"} to /load.json (each a durable push),
#                   through http-post.lua with the path and body replaced; error answers
#                   (status >= 400, wrk's own count) are not counted as writes, and every push
#                   answered without one must be under /load afterwards (a shallow GET).
#      postgres     pgbench -n -c 64 -j 2 -T SECONDS: `INSERT INTO items(value) VALUES
#                   ('{"n":1,"s":"small"}')` into items(id bigserial primary key, value jsonb), one
#                   transaction each, against a private cluster (initdb, defaults: fsync on,
#                   synchronous_commit on, full_page_writes on) on 127.0.0.1; the figure is
#                   "tps ... (without initial connection time)".
#      Goal: eddy-http/postgres >= 1.5x.
# Every run starts from an empty store: a fresh eddyd (process and data directory) per Eddy run, a
# fresh redis-server (process and AOF directory) per Redis run, and one PostgreSQL cluster for the
# whole script (initdb and start take seconds) with the items table dropped, created and
# CHECKPOINTed before each Postgres run. Each round runs eddy-native, redis-xadd, eddy-http,
# postgres, Eddy first in odd rounds and the peer first in even ones. At the end: the per-round
# figures, the medians and the Eddy/peer ratios of the medians. A missed goal is reported, not
# failed. A peer that cannot be installed or started is reported and its pair skipped.
# Drivers and servers share the machine's cores, so the figures include their competition.
#
# Usage: Benchmarks/scripts/peer-bench.sh [ROUNDS] [SECONDS]   (defaults 3, 10)
# SHORT=1: 1 round of 2 s (checks that the script runs; the figures mean little).
# EDDY_SKIP_BUILD=1 uses the binaries as they are; EDDY_BENCH_CONFIG=debug runs debug builds. Installs redis-server, redis-tools,
# postgresql and wrk with apt-get when they are missing and we are root.
set -euo pipefail
# A harness that fails must end at once, not spend minutes backtracing 64 threads.
export SWIFT_BACKTRACE=enable=no

rounds=${1:-3}
seconds=${2:-10}
if [ "${SHORT:-}" = 1 ]; then
    rounds=1
    seconds=2
fi
clients=64
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
source Benchmarks/scripts/lib/binaries.sh
eddyd=$eddy_bin/eddyd
driver=$eddy_bin/ReplicationProfile
work=$(mktemp -d "${TMPDIR:-/tmp}/eddy-peer-bench.XXXXXX")
pids=()
pg_pid=""
pg_bin=""
cleanup() {
    # PostgreSQL: a fast shutdown (SIGINT) rather than a smart one that waits for clients.
    if [ -n "$pg_pid" ]; then kill -INT "$pg_pid" 2> /dev/null || true; fi
    for pid in "${pids[@]}"; do kill "$pid" 2> /dev/null || true; done
    wait 2> /dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "== build ($bench_config)"
build_eddy eddyd
build_eddy ReplicationProfile
require_tool wrk wrk

# apt_install PACKAGE...: installs with apt-get when we are root (updating the lists if the first
# try fails); fails otherwise.
apt_install() {
    [ "$(id -u)" = 0 ] || return 1
    echo "== install $*"
    apt-get install -y -qq "$@" > "$work/apt.log" 2>&1 || { apt-get update > /dev/null 2>&1 && apt-get install -y -qq "$@" > "$work/apt.log" 2>&1; }
}
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
source Benchmarks/scripts/lib/daemons.sh  # start_command, stop

# --- peers: find or install them
redis_skip=""
if ! command -v redis-server > /dev/null; then apt_install redis-server || true; fi
if ! command -v redis-benchmark > /dev/null; then apt_install redis-tools || true; fi
if ! command -v redis-server > /dev/null || ! command -v redis-benchmark > /dev/null; then
    redis_skip="redis-server or redis-benchmark is missing and could not be installed (sudo apt-get install -y redis-server redis-tools)"
fi

pg_skip=""
find_pg() { pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2> /dev/null | sort -V | tail -1); [ -n "$pg_bin" ] && [ -x "$pg_bin/initdb" ] && [ -x "$pg_bin/pgbench" ]; }
if ! find_pg; then
    if apt_install postgresql; then
        echo "   (Debian's package may have started its own 'main' cluster service; this script leaves it alone)"
    fi
    find_pg || pg_skip="PostgreSQL (initdb, pgbench under /usr/lib/postgresql/*/bin) is missing and could not be installed (sudo apt-get install -y postgresql)"
fi
# PostgreSQL refuses to run as root: as root, the cluster belongs to the postgres user.
pg_user=""
if [ -z "$pg_skip" ] && [ "$(id -u)" = 0 ]; then
    if ! id -u postgres > /dev/null 2>&1; then
        useradd --system --no-create-home --shell /usr/sbin/nologin postgres 2> /dev/null || true
    fi
    if id -u postgres > /dev/null 2>&1 && { command -v setpriv || command -v runuser; } > /dev/null; then
        pg_user=postgres
    else
        pg_skip="no non-root user to run PostgreSQL as (the postgres user is missing and could not be created)"
    fi
fi
# as_pg COMMAND...: runs COMMAND in $work/pg as $pg_user (exec'd in place, so `as_pg ... &`
# makes the server this script's own child: stopped and reaped by it).
as_pg() {
    cd "$work/pg"
    if [ -z "$pg_user" ]; then exec "$@"; fi
    if command -v setpriv > /dev/null; then exec setpriv --reuid="$pg_user" --regid="$pg_user" --init-groups -- "$@"; fi
    exec runuser -u "$pg_user" -- "$@"
}
pg_port=""
# psql_run STATEMENT...: each in its own transaction, stopping at the first error.
psql_run() {
    local args=() statement
    for statement in "$@"; do args+=(-c "$statement"); done
    "$pg_bin/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$pg_port" -U postgres -d postgres "${args[@]}"
}
pg_setting() { "$pg_bin/psql" -X -A -t -h 127.0.0.1 -p "$pg_port" -U postgres -d postgres -c "SHOW $1"; }
if [ -z "$pg_skip" ]; then
    chmod 711 "$work"
    mkdir "$work/pg"
    [ -z "$pg_user" ] || chown "$pg_user" "$work/pg"
    pg_data="$work/pg/data"
    pg_port=$(free_port)
    if ! (as_pg "$pg_bin/initdb" -D "$pg_data" -U postgres --auth=trust --no-locale -E UTF8) > "$work/pg-initdb.log" 2>&1; then
        pg_skip="initdb failed: $(tail -3 "$work/pg-initdb.log")"
    else
        (as_pg "$pg_bin/postgres" -D "$pg_data" -p "$pg_port" -k "$work/pg" -c listen_addresses=127.0.0.1 \
            -c max_connections=100 -c fsync=on -c synchronous_commit=on -c full_page_writes=on) > "$work/pg-server.log" 2>&1 &
        pg_pid=$!
        pids+=("$pg_pid")
        for _ in $(seq 1 600); do
            if "$pg_bin/pg_isready" -q -h 127.0.0.1 -p "$pg_port"; then break; fi
            if ! kill -0 "$pg_pid" 2> /dev/null; then break; fi
            sleep 0.1
        done
        if ! "$pg_bin/pg_isready" -q -h 127.0.0.1 -p "$pg_port"; then
            pg_skip="PostgreSQL did not start: $(tail -3 "$work/pg-server.log")"
            kill -INT "$pg_pid" 2> /dev/null || true
            stop "$pg_pid"
            pg_pid=""
        fi
    fi
fi

# --- Eddy
# start NAME: starts a fresh eddyd serve (data in $work/NAME, native socket $work/NAME/eddyd.sock,
# a free HTTP port, default durability) and waits for its HTTP line; sets $started_pid, $started_url.
start() {
    local name=$1
    rm -rf "${work:?}/$name"
    start_command "$name" "$eddyd" serve --data "$work/$name"
    for _ in $(seq 1 200); do
        [ -S "$work/$name/eddyd.sock" ] && return
        sleep 0.05
    done
    echo "$name has no native socket: $(tail -5 "$work/$name.log")" >&2
    exit 1
}

# wrk: http-post.lua (counts error answers) with this benchmark's path and body.
cat > "$work/post.lua" << EOF
dofile("$root/Benchmarks/scripts/http-post.lua")
wrk.path = "/load.json"
wrk.body = '{"n":1,"s":"small"}'
EOF
echo 'INSERT INTO items(value) VALUES ('"'"'{"n":1,"s":"small"}'"'"');' > "$work/insert.sql"

declare -A results
record() { results[$1]+=" $2"; }

run_eddy_native() {
    local round=$1 line
    start "native-$round"
    line=$("$driver" load "$work/native-$round/eddyd.sock" "$seconds" "$clients")
    stop "$started_pid"
    rm -rf "${work:?}/native-$round"
    echo "round $round eddy-native: ${line#load: }"
    record eddy-native "$(echo "$line" | grep -o '[0-9]* writes/s' | grep -o '[0-9]*')"
}

run_eddy_http() {
    local round=$1 out rps requests failed rate landed
    start "http-$round"
    out=$(wrk -t2 -c"$clients" -d"${seconds}s" -s "$work/post.lua" "$started_url")
    # Every push wrk saw answered without an error must be there (wrk checks statuses only).
    landed=$(curl -sSf "$started_url/load.json?shallow=true" | python3 -c 'import json, sys; print(len(json.load(sys.stdin) or {}))')
    stop "$started_pid"
    rm -rf "${work:?}/http-$round"
    rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
    requests=$(echo "$out" | awk '/requests in/ {print $1}')
    failed=$(echo "$out" | awk '/non-200 responses/ {print $3}')
    [ -n "$rps" ] && [ -n "$requests" ] && [ -n "$failed" ] || { echo "wrk gave no figures:" >&2; echo "$out" >&2; exit 1; }
    if [ "$landed" -lt $((requests - failed)) ]; then
        echo "eddy-http round $round: wrk counted $((requests - failed)) answered pushes, /load holds $landed" >&2
        exit 1
    fi
    rate=$(python3 -c "print(int($rps * ($requests - $failed) / $requests) if $requests else 0)")
    echo "round $round eddy-http: $clients connections, $requests POSTs in $(echo "$out" | grep -o 'requests in [0-9.]*[a-z]*' | cut -d' ' -f3 | sed 's/\([0-9]\)s$/\1 s/'), non-200 $failed: $rate writes/s$(echo "$out" | grep -q 'Socket errors' && echo " ($(echo "$out" | grep 'Socket errors' | sed 's/^ *//'))")"
    [ "$failed" = 0 ] || echo "   warning: $failed non-200 answers (not counted as writes)"
    record eddy-http "$rate"
}

# run_redis_benchmark DIR N: starts a fresh redis-server in DIR, runs N XADDs from 64 clients,
# stops it; sets $redis_rps and $redis_elapsed. Returns 1 with $redis_error set if the server did
# not start.
run_redis_benchmark() {
    local dir=$1 n=$2 port pid start_time end_time out
    rm -rf "$dir"
    mkdir -p "$dir"
    port=$(free_port)
    redis-server --bind 127.0.0.1 --port "$port" --unixsocket "$dir/redis.sock" --unixsocketperm 700 \
        --appendonly yes --appendfsync always --save '' --dir "$dir" > "$dir/redis.log" 2>&1 &
    pid=$!
    pids+=("$pid")
    for _ in $(seq 1 200); do
        if grep -q "Ready to accept connections" "$dir/redis.log" 2> /dev/null && [ -S "$dir/redis.sock" ]; then break; fi
        kill -0 "$pid" 2> /dev/null || break
        sleep 0.05
    done
    if ! [ -S "$dir/redis.sock" ]; then
        redis_error="redis-server did not start: $(tail -3 "$dir/redis.log")"
        stop "$pid"
        return 1
    fi
    start_time=$(date +%s.%N)
    out=$(redis-benchmark -s "$dir/redis.sock" -c "$clients" -n "$n" -P 1 --csv XADD stream '*' n 1 s small 2> "$dir/benchmark.err") \
        || { echo "redis-benchmark failed: $(cat "$dir/benchmark.err")" >&2; exit 1; }
    end_time=$(date +%s.%N)
    if command -v redis-cli > /dev/null; then
        local stored
        stored=$(redis-cli -s "$dir/redis.sock" XLEN stream)
        [ "$stored" = "$n" ] || echo "   warning: redis stream holds $stored entries after $n XADDs"
    fi
    stop "$pid"
    redis_rps=$(echo "$out" | awk -F'"' '/^"XADD/ {print int($4)}')
    [ -n "$redis_rps" ] || { echo "redis-benchmark gave no figures: $out $(cat "$dir/benchmark.err")" >&2; exit 1; }
    redis_elapsed=$(python3 -c "print(f'{$end_time - $start_time:.2f}')")
    rm -rf "$dir"
}

redis_n=0
run_redis() {
    local round=$1
    run_redis_benchmark "$work/redis-$round" "$redis_n" || { echo "$redis_error" >&2; exit 1; }
    echo "round $round redis-xadd: $clients clients, $redis_n durable XADDs in $redis_elapsed s: $redis_rps writes/s"
    record redis-xadd "$redis_rps"
    # The next run's count, from this run's rate, so it lasts about $seconds.
    redis_n=$((redis_rps * seconds > 1000 ? redis_rps * seconds : 1000))
}

run_postgres() {
    local round=$1 out tps processed failed
    psql_run "SET client_min_messages = warning; DROP TABLE IF EXISTS items" \
        "CREATE TABLE items(id bigserial primary key, value jsonb)" "CHECKPOINT"
    out=$("$pg_bin/pgbench" -n -c "$clients" -j 2 -T "$seconds" -f "$work/insert.sql" -h 127.0.0.1 -p "$pg_port" -U postgres postgres 2> "$work/pgbench.err") \
        || { echo "pgbench failed: $(tail -5 "$work/pgbench.err")" >&2; exit 1; }
    tps=$(echo "$out" | awk '/without initial connection time/ {print int($3)}')
    processed=$(echo "$out" | awk -F': ' '/number of transactions actually processed/ {print $2}')
    failed=$(echo "$out" | awk '/number of failed transactions/ {print $5}')
    [ -n "$tps" ] || { echo "pgbench gave no tps line:" >&2; echo "$out" >&2; exit 1; }
    echo "round $round postgres: $clients clients, $processed INSERT transactions in ${seconds} s, failed ${failed:-?}: $tps writes/s"
    record postgres "$tps"
}

echo "== durable writes, $clients clients, $seconds s per run, $rounds rounds alternating"
if [ -z "$redis_skip" ]; then
    # Calibrate the XADD count: double it until a run lasts half a second, then scale to $seconds.
    n=2000
    while :; do
        if ! run_redis_benchmark "$work/redis-calibration" "$n"; then redis_skip=$redis_error; break; fi
        if python3 -c "import sys; sys.exit(0 if $redis_elapsed >= 0.5 or $n >= 10000000 else 1)"; then break; fi
        n=$((n * 2))
    done
fi
if [ -z "$redis_skip" ]; then
    redis_n=$((redis_rps * seconds > 1000 ? redis_rps * seconds : 1000))
    echo "   redis: $(redis-server --version | cut -d' ' -f1-3), appendonly yes, appendfsync always, save '', Unix socket"
    echo "   redis calibration: $n XADDs in $redis_elapsed s ($redis_rps/s): $redis_n XADDs per run"
else
    echo "   skipping eddy-native/redis-xadd: $redis_skip"
fi
if [ -z "$pg_skip" ]; then
    echo "   postgres: PostgreSQL $("$pg_bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$pg_port, fsync=$(pg_setting fsync), synchronous_commit=$(pg_setting synchronous_commit), full_page_writes=$(pg_setting full_page_writes), wal_sync_method=$(pg_setting wal_sync_method)"
else
    echo "   skipping eddy-http/postgres: $pg_skip"
fi

start_time=$(date +%s)
for round in $(seq 1 "$rounds"); do
    echo "-- round $round ($([ $((round % 2)) = 1 ] && echo "Eddy first" || echo "peer first"))"
    if [ -z "$redis_skip" ]; then
        if [ $((round % 2)) = 1 ]; then run_eddy_native "$round"; run_redis "$round"; else run_redis "$round"; run_eddy_native "$round"; fi
    fi
    if [ -z "$pg_skip" ]; then
        if [ $((round % 2)) = 1 ]; then run_eddy_http "$round"; run_postgres "$round"; else run_postgres "$round"; run_eddy_http "$round"; fi
    fi
done

if [ -n "$pg_pid" ]; then
    kill -INT "$pg_pid" 2> /dev/null || true
    stop "$pg_pid"
    pg_pid=""
fi

python3 - "$rounds" "${results[eddy-native]:-}" "${results[redis-xadd]:-}" "${results[eddy-http]:-}" "${results[postgres]:-}" "$redis_skip" "$pg_skip" << 'PY'
import statistics, sys
rounds = int(sys.argv[1])
names = ["eddy-native", "redis-xadd", "eddy-http", "postgres"]
runs = {name: [int(x) for x in arg.split()] for name, arg in zip(names, sys.argv[2:6])}
skipped = {"redis": sys.argv[6], "postgres": sys.argv[7]}
shown = [n for n in names if runs[n]]
if not shown:
    sys.exit("\nnothing measured: both peers were skipped")
print(f"\n== writes/s per round")
print("round   " + "".join(f"{n:>13}" for n in shown))
for r in range(rounds):
    print(f"{r + 1:<8}" + "".join(f"{runs[n][r]:13,}" for n in shown))
med = {n: statistics.median(runs[n]) for n in shown}
print("median  " + "".join(f"{med[n]:13,.0f}" for n in shown))
verdicts = []
for eddy, peer, goal, skip in [("eddy-native", "redis-xadd", 1.1, skipped["redis"]), ("eddy-http", "postgres", 1.5, skipped["postgres"])]:
    if skip:
        print(f"{eddy}/{peer}: skipped ({skip})")
        continue
    ratio = med[eddy] / med[peer]
    print(f"{eddy}/{peer}: writes/s {ratio:.2f}x (goal >= {goal}x)")
    verdicts.append(f"{eddy}/{peer} {'met' if ratio >= goal else 'missed'}")
if verdicts:
    print("goals: " + ", ".join(verdicts))
PY
echo "== done in $(( $(date +%s) - start_time )) s"
