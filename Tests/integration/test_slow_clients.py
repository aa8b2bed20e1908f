"""Slow clients at scale (issue 11, the reliability suite): 200 native subscribers that stop
reading while a writer floods what they listen to, and 2,000 slowloris HTTP connections that
trickle their request heads. In both, a fresh client is still served, the daemon's RSS stays
under its configured budget (the baseline plus `--stream-buffers-bytes-total` plus a per-
connection allowance), and falls back near the baseline once the clients are gone.

Counts come from `EDDY_STALLED_SUBSCRIBERS` (200) and `EDDY_SLOWLORIS_CONNECTIONS` (2,000); the
figures (peak and settled RSS, fresh-GET p50 and p99 under the load) are printed for the
closing note. The latency bound asserted is a failure bound (every GET answered within 5 s),
not a timing figure."""

import os
import resource
import socket
import statistics
import threading
import time

import pytest
import requests

from test_native import BEHIND, SUBSCRIBE, SUBSCRIBED, WRITE, WRITTEN, Native

STALLED = int(os.environ.get("EDDY_STALLED_SUBSCRIBERS", "200"))
SLOWLORIS = int(os.environ.get("EDDY_SLOWLORIS_CONNECTIONS", "2000"))
MIB = 1 << 20
STREAM_BUFFER_BYTES = 1 * MIB
STREAM_BUFFERS_TOTAL = 64 * MIB
# What one open connection may cost the daemon beyond its stream buffer: NIO channel, parser,
# a 64 KiB read buffer at most.
CONNECTION_ALLOWANCE = 96 * 1024
# The heap takes more than the bytes it holds (chunk headers, arenas per thread): measured
# about 1.12x for the stream buffers (peak RSS with a 16 MiB and a 64 MiB total).
ALLOCATOR_OVERHEAD = 1.25


@pytest.fixture(autouse=True, scope="module")
def enough_file_descriptors():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = SLOWLORIS + STALLED + 512
    if hard != resource.RLIM_INFINITY and hard < needed:
        pytest.skip(f"needs {needed} file descriptors; the hard limit is {hard} (raise it with ulimit -Hn)")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, needed), hard))  # eddyd inherits it
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def rss_bytes(daemon):
    with open(f"/proc/{daemon.process.pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


class RSSSampler(threading.Thread):
    def __init__(self, daemon):
        super().__init__(daemon=True)
        self.d, self.peak, self.done = daemon, 0, threading.Event()

    def run(self):
        while not self.done.is_set():
            self.peak = max(self.peak, rss_bytes(self.d))
            time.sleep(0.05)

    def stop(self):
        self.done.set()
        self.join()
        return self.peak


def fresh_gets(daemon, count=200):
    """`count` GETs, each on a new connection; returns their latencies in ms."""
    latencies = []
    for _ in range(count):
        started = time.perf_counter()
        r = requests.get(daemon.url("/fresh"), timeout=5, headers={"Connection": "close"})
        latencies.append((time.perf_counter() - started) * 1000)
        assert r.status_code == 200 and r.json() == {"ok": True}, r.text
    return latencies


def percentiles(latencies):
    ordered = sorted(latencies)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def settled_rss(daemon, baseline, limit, timeout=30):
    """Waits until RSS is within `limit` of `baseline`; returns the last sample either way."""
    deadline = time.monotonic() + timeout
    while True:
        rss = rss_bytes(daemon)
        if rss <= baseline + limit or time.monotonic() > deadline:
            return rss
        time.sleep(0.2)


def start_daemon(daemon_factory):
    d = daemon_factory(
        "--stream-buffer-bytes", str(STREAM_BUFFER_BYTES), "--stream-buffers-bytes-total", str(STREAM_BUFFERS_TOTAL),
        "--http-connections-max", str(SLOWLORIS + 500))
    assert requests.put(d.url("/fresh"), json={"ok": True}).status_code == 200
    fresh_gets(d, 50)  # warm the paths measured below
    return d


def test_stalled_native_subscribers_stay_within_the_stream_budget(daemon_factory):
    d = start_daemon(daemon_factory)
    baseline = rss_bytes(d)
    sampler = RSSSampler(d)
    sampler.start()
    subscribers = []
    for i in range(STALLED):
        s = Native(d)
        s.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.send(SUBSCRIBE, 1, {"path": "/flood", "events": "value" if i % 2 else "all"})
        assert s.recv()[0] == SUBSCRIBED
        subscribers.append(s)  # and never read again
    writer = Native(d)
    blob = "x" * 16384
    # 6.4 MiB of values: every subscriber hears every write, six times its own bound, and all
    # of them together twenty times the total; so the total is what binds.
    total = 400
    latencies = []
    for start in range(0, total, 20):
        for i in range(start, start + 20):
            writer.send(WRITE, i, {"op": "set", "path": f"/flood/k{i % 8}", "value": {"i": i, "blob": blob}})
        for i in range(start, start + 20):
            assert writer.recv()[0] == WRITTEN, "writes are acknowledged whatever the subscribers do"
        latencies += fresh_gets(d, 10)
    peak = sampler.stop()
    cut_off = 0
    for s in subscribers:  # each was cut off: what it was sent ends with `behind`, then the end
        s.sock.settimeout(5)
        frames = []
        try:
            while (frame := s.recv()) is not None:
                frames.append(frame[0])
        except TimeoutError:
            continue
        cut_off += frames[-1:] == [BEHIND]
    # Beyond the stream buffers: RocksDB holds what was written in its memtables (tree and log)
    # until they are flushed, and a child-event subscriber keeps a copy of its location (the 8
    # children of /flood) to tell added from changed.
    written = total * len(blob)
    windows = (STALLED // 2) * 8 * len(blob)
    budget = ALLOCATOR_OVERHEAD * STREAM_BUFFERS_TOTAL + (STALLED + 2) * CONNECTION_ALLOWANCE + 2 * written + windows
    p50, p99 = percentiles(latencies)
    for s in subscribers:
        s.close()
    writer.close()
    settled = settled_rss(d, baseline, 2 * written + 16 * MIB)
    print(
        f"\n{STALLED} stalled subscribers ({cut_off} cut off), {total} writes of 16 KiB: baseline RSS {baseline / MIB:.0f} MiB, peak"
        f" {peak / MIB:.0f} MiB (budget above baseline {budget / MIB:.0f} MiB: streams {ALLOCATOR_OVERHEAD} x {STREAM_BUFFERS_TOTAL / MIB:.0f},"
        f" connections {(STALLED + 2) * CONNECTION_ALLOWANCE / MIB:.0f}, memtables {2 * written / MIB:.0f}, windows {windows / MIB:.0f}),"
        f" settled {settled / MIB:.0f} MiB; fresh GET p50 {p50:.2f} ms, p99 {p99:.2f} ms ({len(latencies)} GETs)"
    )
    assert peak - baseline <= budget, f"peak RSS {peak} is over baseline {baseline} + budget {budget}"
    assert settled - baseline <= 2 * written + 16 * MIB, f"RSS did not fall back: baseline {baseline}, settled {settled}"
    assert cut_off == STALLED
    assert d.running


def test_slowloris_connections_do_not_starve_a_fresh_client(daemon_factory):
    d = start_daemon(daemon_factory)
    baseline = rss_bytes(d)
    sampler = RSSSampler(d)
    sampler.start()
    connections = []
    for i in range(SLOWLORIS):
        c = socket.create_connection(("127.0.0.1", d.port), timeout=10)
        c.sendall(b"GET /fresh.json HTTP/1.1\r\nHost: x\r\n")
        connections.append(c)
    stop = threading.Event()

    def trickle():  # one more header byte on every connection, round after round
        while not stop.is_set():
            for c in connections:
                try:
                    c.sendall(b"X")
                except OSError:
                    pass
            stop.wait(0.5)

    trickler = threading.Thread(target=trickle, daemon=True)
    trickler.start()
    time.sleep(1)
    latencies = fresh_gets(d, 200)
    stop.set()
    trickler.join()
    peak = sampler.stop()
    budget = SLOWLORIS * CONNECTION_ALLOWANCE
    p50, p99 = percentiles(latencies)
    for c in connections:
        c.close()
    settled = settled_rss(d, baseline, 32 * MIB)
    print(
        f"\n{SLOWLORIS} slowloris connections: baseline RSS {baseline / MIB:.0f} MiB, peak {peak / MIB:.0f} MiB"
        f" (budget above baseline {budget / MIB:.0f} MiB), settled {settled / MIB:.0f} MiB;"
        f" fresh GET p50 {p50:.2f} ms, p99 {p99:.2f} ms ({len(latencies)} GETs)"
    )
    assert peak - baseline <= budget, f"peak RSS {peak} is over baseline {baseline} + budget {budget}"
    assert settled - baseline <= 32 * MIB, f"RSS did not fall back: baseline {baseline}, settled {settled}"
    assert d.running
