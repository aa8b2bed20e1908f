#!/usr/bin/env bash
# What the operations tools cost a running release eddyd on this machine:
#   1. restore (once, before the rounds): a daemon loaded with 1,000,000 small children (PUTs of
#      20,000 children each; the load time is printed), backed up with `eddy backup`, stopped;
#      then the wall time of `eddy restore` into a new directory (copies the files, then opens
#      and verifies every namespace) and the MiB it printed.
#   2. backup: a daemon loaded with 200,000 children of ~100 bytes of text (PUTs of 10,000) and
#      given one full backup (time and MiB printed). Each round then runs, alternating which
#      goes first, durable POSTs of {"name":"x","n":1} to /bench.json from 16 keep-alive
#      connections (wrk) for SECONDS: alone, and while a loop runs `eddy backup` (incremental:
#      the backup folder is kept, unchanged SST files are hard-linked) back to back. Recorded:
#      p99 and requests/s of both, the wall time and MiB of every backup taken under load.
#   3. /metrics: 200 sequential curl GETs of /metrics and 200 of /.status.json (idle daemon,
#      alternating which goes first), the median time_total of each and the difference, and
#      the /metrics body size.
# At the end: medians over the rounds, the during/without ratios and the command.
#
# Usage: Benchmarks/scripts/ops-bench.sh [ROUNDS] [SECONDS]   (defaults 3, 8)
#        OPS_TEXT_CHUNK and OPS_SMALL_CHUNK (children per PUT, defaults 10000 and 20000) scale
#        the two loads (20 and 50 PUTs).
#        EDDY_SKIP_BUILD=1 uses the binaries already built; EDDY_BENCH_CONFIG=debug runs debug builds.
set -euo pipefail
rounds=${1:-3}
seconds=${2:-8}
# Children per PUT: 20 PUTs of text children for the backup daemon, 50 of small ones for restore.
text_chunk=${OPS_TEXT_CHUNK:-10000}
small_chunk=${OPS_SMALL_CHUNK:-20000}
text_total=$((20 * text_chunk))
small_total=$((50 * small_chunk))
command_line="${EDDY_SKIP_BUILD:+EDDY_SKIP_BUILD=$EDDY_SKIP_BUILD }$0 $rounds $seconds"
cd "$(dirname "$0")/../.."
source Benchmarks/scripts/lib/binaries.sh
require_tool wrk wrk
echo "== build ($bench_config)"
build_eddy eddyd eddy
eddy=$eddy_bin/eddy
work=$(mktemp -d "${TMPDIR:-/tmp}/eddy-ops-bench.XXXXXX")
pids=()
loop_pid=""
cleanup() {
  # The backup loop first (it ends after its current backup), then the daemons.
  if [ -n "$loop_pid" ]; then touch "$work/stop"; wait "$loop_pid" 2>/dev/null || true; fi
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
start() {  # name port
  local name=$1 port=$2
  "$eddy_bin/eddyd" serve --data "$work/$name" --http 127.0.0.1:$port --durability sync --log-level warning > "$work/$name.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do grep -q listening "$work/$name.log" && return; sleep 0.1; done
  echo "eddyd $name did not start" >&2; cat "$work/$name.log" >&2; exit 1
}
stop() {  # pid: SIGTERM (commits queued writes), wait, forget it
  kill -TERM "$1"; wait "$1" 2>/dev/null || true
  local kept=() p; for p in "${pids[@]}"; do [ "$p" != "$1" ] && kept+=("$p"); done; pids=("${kept[@]}")
}
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
# "backup DIR/NAME: 1 namespaces, 45.3 MiB (45.3 copied, 0.0 linked) in 0.52 s" -> "45.3 45.3"
backup_mib() { sed -nE 's/^backup .*namespaces, ([0-9.]+) MiB \(([0-9.]+) copied.*/\1 \2/p' | tail -1; }
load() {  # port prefix count: PUT $work/gen/PREFIX-N.json to /items/chunkN.json
  local n
  for n in $(seq 0 $(($3 - 1))); do
    curl -sf -X PUT "http://127.0.0.1:$1/items/chunk$n.json" --data-binary @"$work/gen/$2-$n.json" -o /dev/null \
      || { echo "PUT chunk $n to port $1 failed" >&2; exit 1; }
  done
}

echo "== generate the load (python3)"
mkdir -p "$work/gen"
python3 - "$work/gen" "$text_chunk" "$small_chunk" <<'PY'
import json, random, string, sys
out, text_chunk, small_chunk = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(42)
letters = string.ascii_lowercase + "      "
# 20 chunks of 10,000 (text_chunk) children with ~100 bytes of text each: 200,000 children.
for c in range(20):
    chunk = {}
    for i in range(c * text_chunk, (c + 1) * text_chunk):
        chunk["k%06d" % i] = {"n": i, "s": "".join(rng.choices(letters, k=100))}
    with open(f"{out}/text-{c}.json", "w") as f:
        json.dump(chunk, f)
# 50 chunks of 20,000 (small_chunk) small children: 1,000,000 children.
for c in range(50):
    with open(f"{out}/small-{c}.json", "w") as f:
        json.dump({"k%07d" % i: {"n": i} for i in range(c * small_chunk, (c + 1) * small_chunk)}, f)
PY

port=$((20000 + RANDOM % 10000)); big_port=$((port + 1))

echo "== restore: $small_total children"
start big $big_port
big_pid=${pids[-1]}
t0=$(now); load $big_port small 50; t1=$(now)
big_load=$(elapsed "$t0" "$t1")
echo "load $small_total children (50 PUTs of $small_chunk): $big_load s"
t0=$(now); big_backup_out=$($eddy backup --data "$work/big" --to "$work/big-backup"); t1=$(now)
big_backup=$(elapsed "$t0" "$t1")
read -r big_backup_mib _ <<<"$(echo "$big_backup_out" | backup_mib)"
echo "backup: $big_backup s wall, $big_backup_mib MiB"
stop "$big_pid"
t0=$(now); restore_out=$($eddy restore --from "$work/big-backup" --data "$work/restored"); t1=$(now)
restore_time=$(elapsed "$t0" "$t1")
restore_mib=$(echo "$restore_out" | sed -nE 's/^restored .*namespaces, ([0-9.]+) MiB in.*/\1/p' | tail -1)
echo "$restore_out" | grep -E '^(namespace|OK)' || true
echo "restore: $restore_time s wall, $restore_mib MiB"
rm -rf "$work/big" "$work/big-backup" "$work/restored"

echo "== backup: $text_total children"
start main $port
t0=$(now); load $port text 20; t1=$(now)
echo "load $text_total children (20 PUTs of $text_chunk): $(elapsed "$t0" "$t1") s"
t0=$(now); full_out=$($eddy backup --data "$work/main" --to "$work/backup"); t1=$(now)
full_time=$(elapsed "$t0" "$t1")
read -r full_mib _ <<<"$(echo "$full_out" | backup_mib)"
echo "first (full) backup: $full_time s wall, $full_mib MiB"
metrics_bytes=$(curl -sf -o /dev/null -w '%{size_download}' "http://127.0.0.1:$port/metrics")

write() {  # -> "requests/s p99us"
  local out rps p99 bad
  out=$(EDDY_METHOD=POST EDDY_PATH=/bench.json EDDY_BODY='{"name":"x","n":1}' \
    wrk -t2 -c16 -d"${seconds}s" --latency -s Benchmarks/scripts/http-auth.lua "http://127.0.0.1:$port")
  rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  p99=$(echo "$out" | awk '/latency p50/ {print $6}')
  bad=$(echo "$out" | awk '/non-200/ {print $3}')
  if [ "$bad" != "0" ]; then echo "$out" >&2; echo "non-200 answers: $bad" >&2; exit 1; fi
  echo "$rps $p99"
}
backup_loop() {  # backs up until $work/stop exists; one "seconds total copied" line per backup
  local a b out
  while [ ! -e "$work/stop" ]; do
    a=$(now)
    if out=$($eddy backup --data "$work/main" --to "$work/backup" 2>&1); then
      b=$(now)
      echo "$(elapsed "$a" "$b") $(echo "$out" | backup_mib)" >> "$work/backups"
    else
      echo "$out" >> "$work/backup-failures"
    fi
  done
}
scrape() {  # path -> median time_total of 200 sequential GETs, us
  local i times=""
  for i in $(seq 200); do
    times+="$(curl -sf -o /dev/null -w '%{time_total}' "http://127.0.0.1:$port$1") "
  done
  echo "$times" | median | awk '{printf "%.0f", $1 * 1e6}'
}

declare -A results
for r in $(seq "$rounds"); do
  order="plain backup"; [ $((r % 2)) = 0 ] && order="backup plain"
  for which in $order; do
    if [ "$which" = plain ]; then
      read -r plain_rps plain_p99 <<<"$(write)"
      results[plain.rps]+="$plain_rps "; results[plain.p99]+="$plain_p99 "
    else
      rm -f "$work/stop" "$work/backups"
      backup_loop & loop_pid=$!
      read -r during_rps during_p99 <<<"$(write)"
      touch "$work/stop"; wait "$loop_pid"; loop_pid=""
      [ -e "$work/backup-failures" ] && { cat "$work/backup-failures" >&2; echo "eddy backup failed" >&2; exit 1; }
      [ -s "$work/backups" ] || { echo "no backup finished during the run" >&2; exit 1; }
      n_backups=$(wc -l < "$work/backups")
      round_backup=$(awk '{print $1}' "$work/backups" | tr '\n' ' ' | median)
      round_mib=$(awk '{print $2}' "$work/backups" | tr '\n' ' ' | median)
      round_copied=$(awk '{print $3}' "$work/backups" | tr '\n' ' ' | median)
      results[during.rps]+="$during_rps "; results[during.p99]+="$during_p99 "
      results[backup.time]+="$(awk '{print $1}' "$work/backups" | tr '\n' ' ')"
      results[backup.mib]+="$(awk '{print $2}' "$work/backups" | tr '\n' ' ')"
      results[backup.copied]+="$(awk '{print $3}' "$work/backups" | tr '\n' ' ')"
      results[backup.count]+="$n_backups "
    fi
  done
  scrape_order="/metrics /.status.json"; [ $((r % 2)) = 0 ] && scrape_order="/.status.json /metrics"
  for path in $scrape_order; do
    if [ "$path" = /metrics ]; then metrics_us=$(scrape /metrics); else status_us=$(scrape /.status.json); fi
  done
  results[metrics]+="$metrics_us "; results[status]+="$status_us "
  echo "round $r ($order): writes ${plain_rps}/s p99 ${plain_p99} us alone, ${during_rps}/s p99 ${during_p99} us during backup" \
    "($n_backups backups, median ${round_backup} s, ${round_mib} MiB, ${round_copied} copied);" \
    "GET /metrics ${metrics_us} us, /.status.json ${status_us} us"
done

plain_rps=$(echo "${results[plain.rps]}" | median); during_rps=$(echo "${results[during.rps]}" | median)
plain_p99=$(echo "${results[plain.p99]}" | median); during_p99=$(echo "${results[during.p99]}" | median)
backup_time=$(echo "${results[backup.time]}" | median); backup_mib=$(echo "${results[backup.mib]}" | median)
backup_copied=$(echo "${results[backup.copied]}" | median)
backup_total=$(echo "${results[backup.count]}" | tr ' ' '\n' | awk '{s += $1} END {print s}')
metrics_us=$(echo "${results[metrics]}" | median); status_us=$(echo "${results[status]}" | median)
echo "== medians of $rounds rounds"
printf "backup, $text_total children:   first (full) %s s, %s MiB; under write load (incremental) median %s s of %s backups, %s MiB (%s copied)\n" \
  "$full_time" "$full_mib" "$backup_time" "$backup_total" "$backup_mib" "$backup_copied"
printf 'write p99 (16 conns):       %s us without, %s us during backup, ratio %.2fx (during / without)\n' \
  "$plain_p99" "$during_p99" "$(echo "$during_p99 / $plain_p99" | bc -l)"
printf 'writes/s (16 conns):        %s without, %s during backup, ratio %.2fx (during / without)\n' \
  "$plain_rps" "$during_rps" "$(echo "$during_rps / $plain_rps" | bc -l)"
printf "restore, $small_total children: %s s, %s MiB (load %s s over HTTP, backup %s s, %s MiB)\n" \
  "$restore_time" "$restore_mib" "$big_load" "$big_backup" "$big_backup_mib"
printf 'GET /metrics (200 seq.):    median %s us vs /.status.json %s us: %+d us per scrape; body %s bytes\n' \
  "$metrics_us" "$status_us" "$(echo "$metrics_us - $status_us" | bc)" "$metrics_bytes"
echo "command: $command_line"
