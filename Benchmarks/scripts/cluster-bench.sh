#!/usr/bin/env bash
# Durable write throughput of a cluster's leader (`eddyd serve --cluster`: an etcd lease kept
# alive, the write fence checked for every write and group) against a plain leader, side by side
# in one run (issue 16's figure). Both alone, no followers: what the cluster mode itself costs.
# 64 native writers (ReplicationProfile load) for SECONDS per run, alternating which goes first,
# ROUNDS rounds; medians and the cluster/plain ratio. etcd comes from Debian's etcd-server
# (installed when missing and we are root) and runs privately on free ports.
#
# Usage: Benchmarks/scripts/cluster-bench.sh [ROUNDS] [SECONDS]   (defaults 3, 10)
#   EDDY_SKIP_BUILD=1 uses the binaries as they are; EDDY_BENCH_CONFIG=debug runs debug builds.
set -euo pipefail
export SWIFT_BACKTRACE=enable=no

rounds=${1:-3}
seconds=${2:-10}
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
source Benchmarks/scripts/lib/binaries.sh
eddyd=$eddy_bin/eddyd
driver=$eddy_bin/ReplicationProfile
source Benchmarks/scripts/lib/daemons.sh
bench_work_dir cluster-bench
require_tool etcd etcd-server
echo "== build ($bench_config)"
build_eddy eddyd ReplicationProfile

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
client="http://127.0.0.1:$(free_port)"
peer="http://127.0.0.1:$(free_port)"
etcd --name bench --data-dir "$work/etcd" --listen-client-urls "$client" --advertise-client-urls "$client" \
    --listen-peer-urls "$peer" --initial-advertise-peer-urls "$peer" --initial-cluster "bench=$peer" \
    --logger zap --log-outputs stderr > /dev/null 2> "$work/etcd.log" &
pids+=("$!")
for _ in $(seq 1 300); do curl -sf "$client/health" > /dev/null 2>&1 && break; sleep 0.1; done

start_command plain "$eddyd" serve --data "$work/plain"
start_command cluster "$eddyd" serve --data "$work/cluster" --cluster bench --etcd "$client" --node-id a \
    --advertise-http http://127.0.0.1:1
cluster_url=$started_url
for _ in $(seq 1 300); do
    [ "$(curl -s "$cluster_url/.settings/followers.json" | python3 -c 'import json, sys; print(json.load(sys.stdin).get("role"))' 2> /dev/null)" = leader ] && break
    sleep 0.1
done

echo "== durable writes, 64 native writers, $seconds s per run, $rounds rounds alternating"
plain=()
cluster=()
for round in $(seq 1 "$rounds"); do
    order="plain cluster"
    [ $((round % 2)) = 0 ] && order="cluster plain"
    for side in $order; do
        line=$("$driver" load "$work/$side/eddyd.sock" "$seconds" 64)
        echo "round $round $side: $line"
        rate=$(echo "$line" | grep -o '[0-9]* writes/s' | grep -o '[0-9]*')
        if [ "$side" = plain ]; then plain+=("$rate"); else cluster+=("$rate"); fi
    done
done
python3 - "${plain[*]}" "${cluster[*]}" << 'PY'
import statistics, sys
plain = [float(x) for x in sys.argv[1].split()]
cluster = [float(x) for x in sys.argv[2].split()]
p, c = statistics.median(plain), statistics.median(cluster)
print(f"medians: plain leader {p:,.0f} writes/s, cluster leader {c:,.0f} writes/s")
print(f"cluster/plain: writes/s {c / p:.2f}x")
PY
