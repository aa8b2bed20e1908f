#!/usr/bin/env python3
"""Bytes per event and server CPU per write for live events, two eddyd binaries side by side
in alternating rounds (before, after, before, after, ...), medians and after/before ratios.

Scenarios (each round starts every daemon on a fresh data directory):
  sse-root-list   an SSE stream at "/" of a database whose /list has N children; W sequential
                  POSTs into /list, each waiting for its event. Before issue 10 each event was a
                  put of the whole list; after, a put of the pushed child.
  native-value    a native subscription on /big (about 1 MiB: 1,000 children of 1 KiB); W
                  sequential small sets at /big/c<i>/x, each waiting for its events frame.
                  "value": `"events": "value"` (after: value changes only); "all": the default
                  subscription (child events and value events).
Figures: bytes of event frames per write (the initial value excluded), server CPU per write
(the run time of every eddyd thread over the write loop, from /proc/<pid>/task/*/schedstat,
divided by W),
and the median write-to-event latency. Loopback only; every loop is bounded.

Usage: delta_bench.py BEFORE_EDDYD AFTER_EDDYD [--rounds 3] [--writes 200] [--children 100000]
       [--short]   (tiny sizes, one round: a smoke run for `make test`, no figures to read)
"""

import argparse
import json
import os
import re
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

TICKS = os.sysconf("SC_CLK_TCK")
LISTENING = re.compile(rb"eddyd: listening on http://127\.0\.0\.1:(\d+)")


class Daemon:
    def __init__(self, binary):
        self.dir = tempfile.mkdtemp(prefix="delta-bench-")
        self.process = subprocess.Popen(
            [binary, "serve", "--data", os.path.join(self.dir, "data"), "--http", "127.0.0.1:0"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        self.port = None
        while self.port is None:
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise SystemExit(f"{binary} did not start")
            line = self.process.stdout.readline()
            match = LISTENING.search(line)
            if match:
                self.port = int(match.group(1))
        self.socket_path = os.path.join(self.dir, "data", "eddyd.sock")

    def url(self, path):
        return f"http://127.0.0.1:{self.port}/{path.strip('/')}.json"

    def request(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url(path), data=data, method=method)
        with urllib.request.urlopen(request, timeout=120) as response:
            return json.loads(response.read() or b"null")

    def cpu_seconds(self):
        """CPU time of every thread, in ns resolution (`schedstat`), else utime + stime ticks."""
        total = 0
        try:
            for task in os.listdir(f"/proc/{self.process.pid}/task"):
                with open(f"/proc/{self.process.pid}/task/{task}/schedstat") as f:
                    total += int(f.read().split()[0])
            return total / 1e9
        except (OSError, ValueError, IndexError):
            with open(f"/proc/{self.process.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / TICKS

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


class SSEStream:
    """A raw streaming GET; `next_event()` returns (bytes of the event frame, parsed data).
    HTTP chunked framing is decoded first: it costs the same for every server."""

    def __init__(self, daemon, path):
        self.sock = socket.create_connection(("127.0.0.1", daemon.port), timeout=120)
        self.sock.sendall(f"GET /{path.strip('/')}.json HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n".encode())
        self.raw = b""
        while b"\r\n\r\n" not in self.raw:
            self._read()
        head, self.raw = self.raw.split(b"\r\n\r\n", 1)
        assert b" 200 " in head.split(b"\r\n")[0], head
        self.chunked = b"transfer-encoding: chunked" in head.lower()
        self.buf = b""  # decoded body

    def _read(self):
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise EOFError("stream closed")
        self.raw += chunk

    def _decode(self):
        if not self.chunked:
            self.buf += self.raw
            self.raw = b""
            return
        while b"\r\n" in self.raw:
            size_line, rest = self.raw.split(b"\r\n", 1)
            size = int(size_line.split(b";")[0], 16)
            if len(rest) < size + 2:
                return
            self.buf += rest[:size]
            self.raw = rest[size + 2 :]

    def next_event(self):
        """The next put/patch frame (keep-alives skipped)."""
        while True:
            self._decode()
            while b"\n\n" not in self.buf:
                self._read()
                self._decode()
            frame, self.buf = self.buf.split(b"\n\n", 1)
            lines = frame.split(b"\n")
            event = next((l[7:] for l in lines if l.startswith(b"event: ")), b"")
            if event == b"keep-alive":
                continue
            data = next(l[6:] for l in lines if l.startswith(b"data: "))
            return len(frame) + 2, json.loads(data)

    def close(self):
        self.sock.close()


class Native:
    """The native protocol (u32be length, u8 version, u8 kind, u64be id, JSON). Speaks the
    newest version the server accepts (2, else 1)."""

    def __init__(self, daemon, version):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(120)
        self.sock.connect(daemon.socket_path)
        self.version = version
        self.buf = b""

    def send(self, kind, request_id, payload):
        body = json.dumps(payload).encode()
        self.sock.sendall(struct.pack(">IBBQ", 10 + len(body), self.version, kind, request_id) + body)

    def recv(self):
        """(kind, payload, frame bytes) or None at end of stream."""
        while True:
            if len(self.buf) >= 4:
                (n,) = struct.unpack(">I", self.buf[:4])
                if len(self.buf) >= 4 + n:
                    kind = self.buf[5]
                    payload = json.loads(self.buf[14 : 4 + n])
                    self.buf = self.buf[4 + n :]
                    return kind, payload, 4 + n
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                return None
            self.buf += chunk

    @staticmethod
    def connect(daemon):
        for version in (2, 1):
            client = Native(daemon, version)
            client.send(1, 0, {"path": "/"})  # get
            answer = client.recv()
            if answer and answer[0] == 20:
                return client
            client.sock.close()
        raise SystemExit("the native socket answered neither version 2 nor 1")


def cpu_loop(daemon, writes, one_write):
    latencies = []
    start = daemon.cpu_seconds()
    total_bytes = 0
    for i in range(writes):
        sent = time.monotonic()
        total_bytes += one_write(i)
        latencies.append(time.monotonic() - sent)
    cpu = daemon.cpu_seconds() - start
    return {
        "bytes_per_event": total_bytes / writes,
        "cpu_us_per_write": cpu / writes * 1e6,
        "latency_p50_ms": statistics.median(latencies) * 1e3,
    }


def sse_root_list(binary, children, writes):
    daemon = Daemon(binary)
    try:
        batch = 10_000
        for start in range(0, children, batch):
            daemon.request("PATCH", "/list", {f"k{i:07d}": {"n": i, "s": "xxxxxxxxxx"} for i in range(start, min(children, start + batch))})
        stream = SSEStream(daemon, "/")
        initial_bytes, first = stream.next_event()
        assert first["path"] == "/" and len(first["data"]["list"]) == children

        def one(i):
            name = daemon.request("POST", "/list", {"n": -i, "s": "y"})["name"]
            size, data = stream.next_event()
            assert name in data["path"] or name in json.dumps(data["data"]), data["path"]
            return size

        result = cpu_loop(daemon, writes, one)
        result["initial_bytes"] = initial_bytes
        stream.close()
        return result
    finally:
        daemon.stop()


def native_value(binary, writes, events):
    daemon = Daemon(binary)
    try:
        daemon.request("PUT", "/big", {f"c{i:04d}": {"x": i, "pad": "p" * 1000} for i in range(1000)})
        subscriber = Native.connect(daemon)
        request = {"path": "/big"}
        if events == "value":
            request["events"] = "value"
        subscriber.send(4, 7, request)
        kind, _, _ = subscriber.recv()
        assert kind == 22, kind  # subscribed
        kind, first, initial_bytes = subscriber.recv()
        assert kind == 23, kind
        writer = Native.connect(daemon)

        def one(i):
            writer.send(3, 100 + i, {"op": "set", "path": f"/big/c{i % 1000:04d}/x", "value": 100_000 + i})
            assert writer.recv()[0] == 21  # written
            kind, payload, size = subscriber.recv()
            assert kind == 23, (kind, payload)
            return size

        result = cpu_loop(daemon, writes, one)
        result["initial_bytes"] = initial_bytes
        result["protocol"] = subscriber.version
        return result
    finally:
        daemon.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--children", type=int, default=100_000)
    parser.add_argument("--short", action="store_true")
    args = parser.parse_args()
    if args.short:
        args.rounds, args.writes, args.children = 1, 10, 200
    scenarios = [
        ("sse-root-list", lambda binary: sse_root_list(binary, args.children, args.writes)),
        ("native-value (events: value)", lambda binary: native_value(binary, args.writes, "value")),
        ("native-value (events: all)", lambda binary: native_value(binary, args.writes, "all")),
    ]
    results = {(name, side): [] for name, _ in scenarios for side in ("before", "after")}
    for round_number in range(args.rounds):
        for name, run in scenarios:
            # Alternate which side goes first, so a drifting machine favours neither.
            sides = [("before", args.before), ("after", args.after)]
            if round_number % 2:
                sides.reverse()
            for side, binary in sides:
                figures = run(binary)
                results[(name, side)].append(figures)
                print(f"round {round_number + 1} {name} {side}: " + ", ".join(f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}" for k, v in figures.items()), flush=True)
    print()
    print(f"delta_bench.py {' '.join(sys.argv[1:])}: medians of {args.rounds} alternating rounds, {args.writes} writes each")
    print(f"{'scenario':32} {'figure':18} {'before':>12} {'after':>12} {'after/before':>13}")
    for name, _ in scenarios:
        for figure in ("bytes_per_event", "cpu_us_per_write", "latency_p50_ms"):
            before = statistics.median(r[figure] for r in results[(name, "before")])
            after = statistics.median(r[figure] for r in results[(name, "after")])
            ratio = after / before if before else float("nan")
            print(f"{name:32} {figure:18} {before:12.1f} {after:12.1f} {ratio:12.3g}x")


if __name__ == "__main__":
    main()
