#!/usr/bin/env bash
# Replication catch-up over TLS versus plain TCP (issue 13), side by side in one run: one leader
# log is written once, copied into two leaders (one plain, one with --tls-cert-file on its
# --replication-listen), and in each round a fresh follower of each (alternating which goes
# first) catches up on the whole log; the script times from the follower's start to caught up.
# At the end: medians of the rounds, entries/s, and the TLS/plain ratio.
#
# Usage: Benchmarks/scripts/tls-catchup-bench.sh [ROUNDS] [SECONDS_OF_WRITES]   (defaults 3, 10)
#        EDDY_SKIP_BUILD=1 uses the binaries already built; EDDY_BENCH_CONFIG=debug runs debug builds.
set -euo pipefail
rounds=${1:-3}
seconds=${2:-10}
cd "$(dirname "$0")/../.."
source Benchmarks/scripts/lib/binaries.sh
require_tool wrk wrk
build_eddy eddyd eddy
work=$(mktemp -d "${TMPDIR:-/tmp}/eddy-tls-bench.XXXXXX")
pids=()
cleanup() { for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
eddyd=$eddy_bin/eddyd
# A throwaway CA and a certificate for 127.0.0.1.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$work/ca.key" -out "$work/ca.pem" -days 2 -subj "/CN=bench CA" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$work/key.pem" -out "$work/cert.csr" -subj "/CN=eddyd" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > "$work/ext"
openssl x509 -req -in "$work/cert.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" -CAcreateserial -out "$work/cert.pem" -days 2 -extfile "$work/ext" 2>/dev/null
head -c 32 /dev/urandom | base64 > "$work/secret"
wait_line() { for _ in $(seq 300); do grep -q "$2" "$1" && return; sleep 0.1; done; echo "timed out waiting for $2 in $1" >&2; cat "$1" >&2; exit 1; }
# Write the log once.
port=$((20000 + RANDOM % 10000))
$eddyd serve --data "$work/seed" --http 127.0.0.1:$port --durability batched --log-level warning > "$work/seed.log" 2>&1 &
seed=$!
wait_line "$work/seed.log" listening
wrk -t2 -c64 -d"${seconds}s" -s Benchmarks/scripts/http-post.lua "http://127.0.0.1:$port" | grep Requests/sec
kill -TERM $seed; wait $seed || true
cp -r "$work/seed" "$work/plain"; cp -r "$work/seed" "$work/tls"
plain_rep=$((port + 1)); tls_rep=$((port + 2))
$eddyd serve --data "$work/plain" --http 127.0.0.1:0 --replication-listen 127.0.0.1:$plain_rep --log-level warning > "$work/plain.log" 2>&1 &
pids+=($!)
$eddyd serve --data "$work/tls" --http 127.0.0.1:0 --replication-listen 127.0.0.1:$tls_rep --tls-cert-file "$work/cert.pem" --tls-key-file "$work/key.pem" --log-level warning > "$work/tls.log" 2>&1 &
pids+=($!)
wait_line "$work/plain.log" listening; wait_line "$work/tls.log" listening
entries=$("$eddy_bin/eddy" log --data "$work/seed" 2>/dev/null | wc -l || echo 0)
follow() {  # name rep-port extra... -> seconds until the follower has the leader's last entry
  local name=$1 rep=$2; shift 2
  rm -rf "$work/f-$name"
  local start; start=$(date +%s.%N)
  $eddyd follow --leader 127.0.0.1:$rep --data "$work/f-$name" --http 127.0.0.1:0 --log-level warning "$@" > "$work/f-$name.log" 2>&1 &
  local pid=$!
  wait_line "$work/f-$name.log" listening
  local url; url=$(grep -o 'https\?://[0-9.:]*' "$work/f-$name.log" | head -1)
  while true; do
    local st; st=$(curl -s "$url/.settings/followers.json")
    if echo "$st" | python3 -c 'import json,sys; s=json.load(sys.stdin); sys.exit(0 if s.get("applied") and s.get("applied") == s.get("leaderLast") else 1)' 2>/dev/null; then break; fi
    sleep 0.05
  done
  local end; end=$(date +%s.%N)
  kill -TERM $pid; wait $pid 2>/dev/null || true
  echo "$end - $start" | bc -l
}
declare -A times
for r in $(seq "$rounds"); do
  order="plain tls"; [ $((r % 2)) = 0 ] && order="tls plain"
  for which in $order; do
    if [ $which = plain ]; then t=$(follow plain $plain_rep); else t=$(follow tls $tls_rep --tls-ca-file "$work/ca.pem"); fi
    times[$which]+="$t "
    printf 'round %d %s: %.2f s\n' "$r" "$which" "$t"
  done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
plain=$(echo "${times[plain]}" | median); tls=$(echo "${times[tls]}" | median)
echo "== medians of $rounds rounds ($entries log entries)"
printf 'catch-up: plain %.2f s, TLS %.2f s; TLS/plain throughput ratio %.2fx\n' "$plain" "$tls" "$(echo "$plain / $tls" | bc -l)"
