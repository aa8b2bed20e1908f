#!/usr/bin/env bash
# How long a write takes to reach a follower when its namespace is parked, next to a namespace
# with a session, side by side in one run. A follower replicates at most 48 namespaces over
# sessions of their own at once (FollowerSupervisor.sessionsMax); with more, idle ones are
# parked and the leader wakes them when they are written (README, "Followers"). One leader and
# one follower (`eddyd follow`), NAMESPACES namespaces with one write each; then ROUNDS rounds,
# alternating which side goes first, of WRITES writes per side: a PUT to the leader, timed until
# a GET on the follower returns the value (both over HTTP, polled without pause). Parked writes
# go to a different parked namespace each, 1.1 s apart (the follower keeps 4 sessions free and
# re-parks idle ones within about a second, so each write meets the steady state); the session
# side writes to the default namespace, which always has its session. Prints each round's
# medians, the medians of those and their ratio (parked / with a session).
#
# Usage: Benchmarks/scripts/parked-wake-bench.sh [ROUNDS] [NAMESPACES] [WRITES]   (defaults 3, 70, 8)
#   EDDY_SKIP_BUILD=1 uses the binaries as they are; EDDY_BENCH_CONFIG=debug runs debug builds.
set -euo pipefail
export SWIFT_BACKTRACE=enable=no

rounds=${1:-3}
namespaces=${2:-70}
writes=${3:-8}
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
source Benchmarks/scripts/lib/binaries.sh
source Benchmarks/scripts/lib/daemons.sh
bench_work_dir parked-wake-bench

echo "== build ($bench_config)"
build_eddy eddyd
start_command leader "$eddy_bin/eddyd" serve --data "$work/leader"
leader_url=$started_url
start_command follower "$eddy_bin/eddyd" follow --leader "$work/leader/replication.sock" --data "$work/follower"
follower_url=$started_url

python3 - "$leader_url" "$follower_url" "$rounds" "$namespaces" "$writes" << 'EOF'
import http.client
import json
import statistics
import sys
import time
import urllib.parse

leader_url, follower_url = sys.argv[1], sys.argv[2]
rounds, count, writes = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])


def connect(url):
    parts = urllib.parse.urlparse(url)
    return http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)


leader, follower = connect(leader_url), connect(follower_url)


def request(connection, method, path, body=None):
    connection.request(method, path, body=body)
    response = connection.getresponse()
    return response.status, response.read()


names = [f"wake{i:03d}" for i in range(count)]
print(f"== {count} namespaces, one write each, until every one is on the follower")
started = time.monotonic()
for ns in names:
    status, body = request(leader, "PUT", f"/r/v.json?ns={ns}", "0")
    assert status == 200, (ns, status, body)
for ns in names:
    while request(follower, "GET", f"/r/v.json?ns={ns}") != (200, b"0"):
        if time.monotonic() - started > 300:
            sys.exit(f"namespace {ns} did not reach the follower within 300 s")
        time.sleep(0.01)
print(f"   replicated in {time.monotonic() - started:.1f} s")


def parked():
    found = []
    for ns in names:
        status, body = request(follower, "GET", f"/.settings/followers.json?ns={ns}")
        if status == 200 and json.loads(body).get("parked"):
            found.append(ns)
    return found


value = 0


def timed_write(ns):
    """Milliseconds from the PUT on the leader until the follower answers the value."""
    global value
    value += 1
    expected = str(value).encode()
    begun = time.perf_counter()
    status, body = request(leader, "PUT", f"/r/w.json?ns={ns}", expected)
    assert status == 200, (ns, status, body)
    while request(follower, "GET", f"/r/w.json?ns={ns}") != (200, expected):
        if time.perf_counter() - begun > 30:
            sys.exit(f"a write to {ns} did not reach the follower within 30 s")
    return (time.perf_counter() - begun) * 1000


print(f"== {rounds} rounds of {writes} writes per side, alternating")
medians = {"session": [], "parked": []}
for round_number in range(1, rounds + 1):
    deadline = time.monotonic() + 60
    candidates = parked()
    while len(candidates) < writes:
        if time.monotonic() > deadline:
            sys.exit(f"only {len(candidates)} namespaces parked; {writes} needed (more namespaces than 48 + {writes}?)")
        time.sleep(0.5)
        candidates = parked()
    order = ["session", "parked"] if round_number % 2 else ["parked", "session"]
    this_round = {}
    for side in order:
        figures = []
        for i in range(writes):
            if side == "session":
                figures.append(timed_write("default"))
            else:
                time.sleep(1.1)
                figures.append(timed_write(candidates[i]))
        this_round[side] = statistics.median(figures)
        medians[side].append(this_round[side])
    print(f"round {round_number}: p50 write to follower {this_round['session']:.1f} ms with a session, {this_round['parked']:.1f} ms parked")
session, parked_ms = statistics.median(medians["session"]), statistics.median(medians["parked"])
print(f"median of rounds: {session:.1f} ms with a session, {parked_ms:.1f} ms parked: {parked_ms / session:.1f}x")
EOF
