#!/usr/bin/env bash
# The cost of security rules (issue 13), side by side in one run: two release eddyd on the same
# machine, one open (emulator mode, no rules but .indexOn) and one secured (admin secret, HS256
# token keys, a realistic 30-rule file, every request with a token). Each round measures, on
# both, alternating which goes first:
#   push   durable POSTs from 64 keep-alive clients (wrk), requests/s
#   query  an indexed query (orderBy score, startAt, limitToFirst 10) from 64 clients, p50
#   token  a GET of a small public location from 1 client, p50, with and without a token on the
#          secured server: what verifying (cached) and carrying a token costs per request
# At the end: medians over the rounds and the secured/open ratios (goal >= 0.9x).
#
# Usage: Benchmarks/scripts/rules-bench.sh [ROUNDS] [SECONDS]   (defaults 3, 8)
#        EDDY_SKIP_BUILD=1 uses the binaries already built; EDDY_BENCH_CONFIG=debug runs debug builds.
set -euo pipefail
rounds=${1:-3}
seconds=${2:-8}
cd "$(dirname "$0")/../.."
source Benchmarks/scripts/lib/binaries.sh
require_tool wrk wrk
echo "== build ($bench_config)"
build_eddy eddyd eddy
work=$(mktemp -d "${TMPDIR:-/tmp}/eddy-rules-bench.XXXXXX")
pids=()
cleanup() { for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
head -c 48 /dev/urandom | base64 > "$work/admin"
head -c 48 /dev/urandom | base64 > "$work/jwt"
start() {  # name port extra-args...
  local name=$1 port=$2; shift 2
  "$eddy_bin/eddyd" serve --data "$work/$name" --http 127.0.0.1:$port --durability sync --log-level warning "$@" > "$work/$name.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do grep -q listening "$work/$name.log" && return; sleep 0.1; done
  echo "eddyd $name did not start" >&2; cat "$work/$name.log" >&2; exit 1
}
open_port=$((20000 + RANDOM % 10000)); secured_port=$((open_port + 1))
start open $open_port
start secured $secured_port --admin-token-file "$work/admin" --jwt-secret-file "$work/jwt"
admin="Authorization: Bearer $(cat "$work/admin")"
token=$("$eddy_bin/eddy" token --uid bench-user --secret-file "$work/jwt" --expires-in 86400)
# A realistic rules file: 30 .read/.write/.validate rules over users, posts, rooms and counters.
cat > "$work/rules.json" <<'JSON'
{"rules": {
  "users": {"$uid": {".read": "auth != null && auth.uid === $uid", ".write": "auth != null && auth.uid === $uid",
     "name": {".validate": "newData.isString() && newData.val().length > 0 && newData.val().length < 100"},
     "email": {".validate": "newData.isString() && newData.val().matches(/^[^@]+@[^@]+$/)"},
     "age": {".validate": "newData.isNumber() && newData.val() >= 0 && newData.val() < 150"},
     "role": {".write": false}}},
  "posts": {".read": "auth != null", ".indexOn": ["owner", "created"],
     "$post": {".write": "auth != null && (!data.exists() || data.child('owner').val() === auth.uid)",
       ".validate": "newData.hasChildren(['owner', 'title'])",
       "owner": {".validate": "newData.val() === auth.uid"},
       "title": {".validate": "newData.isString() && newData.val().length <= 200"},
       "body": {".validate": "newData.isString()"},
       "created": {".validate": "newData.isNumber() && newData.val() <= now"}}},
  "rooms": {"$room": {".read": "auth != null && root.child('members').child($room).child(auth.uid).exists()",
     "messages": {"$m": {".write": "auth != null && !data.exists()", ".validate": "newData.child('from').val() === auth.uid"}}}},
  "members": {"$room": {".read": "auth != null", "$uid": {".write": "auth.uid === $uid", ".validate": "newData.isBoolean()"}}},
  "counters": {"$c": {".read": true, ".write": "auth != null", ".validate": "newData.isNumber() && (!data.exists() || newData.val() === data.val() + 1)"}},
  "public": {".read": true, ".write": "auth.token.admin === true"},
  "items": {".read": "auth != null && query.orderByChild === 'score' && query.limitToFirst <= 100", ".indexOn": "score",
     "$i": {".write": "auth.token.admin === true"}},
  "bench": {"$id": {".write": "auth != null", ".validate": "newData.hasChildren(['name', 'n']) && newData.child('n').isNumber()",
     "name": {".validate": "newData.isString()"}, "ok": {".validate": "newData.isBoolean()"}}}
}}
JSON
curl -sf -X PUT -H "$admin" "http://127.0.0.1:$secured_port/.settings/rules.json" --data-binary @"$work/rules.json" >/dev/null
curl -sf -X PUT "http://127.0.0.1:$open_port/.settings/rules.json" -d '{"rules": {".read": true, ".write": true, "items": {".indexOn": "score"}}}' >/dev/null
python3 -c 'import json; print(json.dumps({"i%05d" % i: {"score": i, "name": "item %d" % i} for i in range(10000)}))' > "$work/items.json"
for port in $open_port $secured_port; do
  curl -sf -X PUT -H "$admin" "http://127.0.0.1:$port/items.json" --data-binary @"$work/items.json" >/dev/null
  curl -sf -X PUT -H "$admin" "http://127.0.0.1:$port/public/x.json" -d '{"v": 1}' >/dev/null
done
query='/items.json?orderBy=%22score%22&startAt=5000&limitToFirst=10'
run() {  # port bearer method path connections -> "requests/s p50us non200"
  local out
  out=$(EDDY_BEARER="$2" EDDY_METHOD="$3" EDDY_PATH="$4" EDDY_BODY='{"name":"bench","n":1,"ok":true}' \
    wrk -t"$(( $5 < 2 ? 1 : 2 ))" -c"$5" -d"${seconds}s" --latency -s Benchmarks/scripts/http-auth.lua "http://127.0.0.1:$1")
  local rps p50 bad
  rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  p50=$(echo "$out" | awk '/latency p50/ {print $3}')
  bad=$(echo "$out" | awk '/non-200/ {print $3}')
  if [ "$bad" != "0" ]; then echo "$out" >&2; echo "non-200 answers: $bad" >&2; exit 1; fi
  echo "$rps $p50"
}
declare -A results
for r in $(seq "$rounds"); do
  order="open secured"; [ $((r % 2)) = 0 ] && order="secured open"
  for which in $order; do
    if [ "$which" = open ]; then port=$open_port; bearer=""; else port=$secured_port; bearer=$token; fi
    read -r push_rps _ <<<"$(run $port "$bearer" POST /bench.json 64)"
    read -r _ query_p50 <<<"$(run $port "$bearer" GET "$query" 64)"
    results[$which.push]+="$push_rps "
    results[$which.query]+="$query_p50 "
    echo "round $r $which: push ${push_rps}/s, indexed query p50 ${query_p50} us"
  done
  read -r _ with_token <<<"$(run $secured_port "$token" GET /public/x.json 1)"
  read -r _ without_token <<<"$(run $secured_port "" GET /public/x.json 1)"
  results[token.with]+="$with_token "
  results[token.without]+="$without_token "
  echo "round $r token: GET p50 ${with_token} us with a token, ${without_token} us without"
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
open_push=$(echo "${results[open.push]}" | median); secured_push=$(echo "${results[secured.push]}" | median)
open_query=$(echo "${results[open.query]}" | median); secured_query=$(echo "${results[secured.query]}" | median)
with_token=$(echo "${results[token.with]}" | median); without_token=$(echo "${results[token.without]}" | median)
echo "== medians of $rounds rounds"
printf 'push (64 clients):          open %s/s, secured %s/s, ratio %.2fx (goal >= 0.9x)\n' "$open_push" "$secured_push" "$(echo "$secured_push / $open_push" | bc -l)"
printf 'indexed query p50:          open %s us, secured %s us, throughput-equivalent ratio %.2fx (open p50 / secured p50)\n' "$open_query" "$secured_query" "$(echo "$open_query / $secured_query" | bc -l)"
printf 'token per request (p50):    %s us with, %s us without: %s us\n' "$with_token" "$without_token" "$(echo "$with_token - $without_token" | bc -l)"
