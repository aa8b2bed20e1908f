"""Many listeners opening at once on one large location, two eddyd binaries side by side in
alternating rounds (see attach-bench.sh). Each round starts a fresh daemon, writes CHILDREN
children (about 65 bytes each) at /big, then opens SUBSCRIBERS native value subscriptions
(`"events": "value"`, the Unix socket) and, separately, as many SSE streams, all at once, and
reports the time until every one has its first value, and how long a write to another location
of the namespace waited while they opened. Prints per-round figures, the medians and the
after/before ratios (lower is better)."""

import argparse
import json
import os
import shutil
import socket
import statistics
import struct
import subprocess
import tempfile
import threading
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request(method, url, body=None):
    req = urllib.request.Request(url, data=body, method=method)
    with urllib.request.urlopen(req, timeout=600) as r:
        return r.read()


def native_first_value(data_dir, results, i):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(600)
    s.connect(os.path.join(data_dir, "eddyd.sock"))
    body = json.dumps({"path": "/big", "events": "value"}).encode()
    s.sendall(struct.pack(">IBBQ", 10 + len(body), 2, 4, 1) + body)  # subscribe, request 1
    buf, frames = bytearray(), 0
    while frames < 2:  # `subscribed`, then the first events frame
        chunk = s.recv(1 << 20)
        if not chunk:
            raise RuntimeError("closed before the first value")
        buf += chunk
        while len(buf) >= 4 and len(buf) >= 4 + struct.unpack(">I", buf[:4])[0]:
            (n,) = struct.unpack(">I", buf[:4])
            frames += 1
            del buf[: 4 + n]
    results[i] = time.monotonic()
    s.close()


def sse_first_value(port, results, i):
    s = socket.create_connection(("127.0.0.1", port), timeout=600)
    s.sendall(b"GET /big.json HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n")
    buf = bytearray()
    body_at = -1  # where the body starts, once the head is in
    searched = 0  # the body is searched from here (linear in what arrives)
    while True:
        chunk = s.recv(1 << 20)
        if not chunk:
            raise RuntimeError("closed before the first put")
        buf += chunk
        if body_at < 0:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                continue
            body_at = searched = end + 4
        if buf.find(b"\n\n", max(body_at, searched - 1)) >= 0:  # the first event is whole
            break
        searched = len(buf)
    results[i] = time.monotonic()
    s.close()


def one_round(eddyd, subscribers, children):
    data_dir = tempfile.mkdtemp(prefix="attach-bench-")
    port = free_port()
    daemon = subprocess.Popen(
        [eddyd, "--data", data_dir, "--http", f"127.0.0.1:{port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                request("GET", base + "/.json")
                break
            except OSError:
                time.sleep(0.05)
        value = {f"k{i:07d}": {"name": "x" * 40, "n": i} for i in range(children)}
        request("PUT", base + "/big.json", json.dumps(value).encode())
        figures = {}
        for kind in ("native", "sse"):
            results = {}
            if kind == "native":
                threads = [threading.Thread(target=native_first_value, args=(data_dir, results, i)) for i in range(subscribers)]
            else:
                threads = [threading.Thread(target=sse_first_value, args=(port, results, i)) for i in range(subscribers)]
            started = time.monotonic()
            for t in threads:
                t.start()
            time.sleep(0.05)
            write_started = time.monotonic()
            request("PUT", base + f"/other/{kind}.json", b"1")
            write_wait = time.monotonic() - write_started
            for t in threads:
                t.join()
            if len(results) != subscribers:
                raise RuntimeError(f"{kind}: {subscribers - len(results)} listeners got no first value")
            figures[kind] = (max(results.values()) - started, write_wait)
        return figures
    finally:
        daemon.terminate()
        daemon.wait()
        shutil.rmtree(data_dir, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--subscribers", type=int, default=100)
    parser.add_argument("--children", type=int, default=100000)
    args = parser.parse_args()
    sides = {"before": args.before, "after": args.after}
    seen = {side: {"native": [], "sse": []} for side in sides}
    print(f"{args.subscribers} listeners at once on {args.children} children, {args.rounds} alternating rounds", flush=True)
    for round_number in range(args.rounds):
        order = ["before", "after"] if round_number % 2 == 0 else ["after", "before"]
        for side in order:
            figures = one_round(sides[side], args.subscribers, args.children)
            for kind, (all_first, write_wait) in figures.items():
                seen[side][kind].append((all_first, write_wait))
                print(
                    f"round {round_number + 1} {side:6} {kind:6}: every first value after {all_first:7.2f} s, "
                    f"a write beside them waited {write_wait:7.2f} s", flush=True)
    for kind in ("native", "sse"):
        medians = {side: [statistics.median(f[j] for f in seen[side][kind]) for j in (0, 1)] for side in sides}
        b, a = medians["before"], medians["after"]
        print(
            f"{kind}: median every first value {b[0]:.2f} -> {a[0]:.2f} s ({a[0] / b[0]:.3f}x); "
            f"write beside {b[1]:.2f} -> {a[1]:.2f} s ({a[1] / max(b[1], 1e-6):.3f}x)")


if __name__ == "__main__":
    main()
