"""Black-box fuzzing of a live eddyd (issue 11): seeded mutations of valid HTTP requests (paths,
methods, headers, query parameters, bodies, chunked framing) on raw sockets, and of valid
native-protocol frames on its Unix socket and on its HTTP port (which takes both protocols, told
apart by the first byte). Whatever arrives, the daemon must stay up, answer
every complete HTTP request with a status below 500 (a 5xx means a server fault), and afterwards
serve a fresh client and pass `eddy verify`.

`EDDY_FUZZ_REQUESTS` sets the number of mutated requests (default 2,000 in `make test`;
`make test-reliability` runs 100,000); `EDDY_SEED` replays a run. The seed is printed."""

import concurrent.futures
import errno
import threading
import time
import json
import os
import random
import socket
import struct

import requests

from conftest import run_eddy

METHODS = [b"GET", b"PUT", b"POST", b"PATCH", b"DELETE", b"HEAD", b"OPTIONS", b"BREW", b"G\x00T", b""]
PATHS = [b"/a.json", b"/a/b.json", b"/.json", b"/.settings/rules.json", b"/.info/connected.json", b"/a", b"/%zz.json",
         b"/a%2Fb.json", b"/" + b"k" * 800 + b".json", b"/a/../b.json", b"/\xff\xfe.json", b"/a.json?" + b"x" * 5000,
         b"/.ondisconnect.json", b"/.ondisconnect/" + b"0" * 32 + b".json", b"/.ondisconnect/a/b.json"]
QUERIES = [b"", b"print=pretty", b"print=silent", b"shallow=true", b'orderBy="$key"&limitToFirst=2', b'orderBy="x"',
           b"limitToFirst=-1", b"limitToFirst=99999999999999999999", b'orderBy="$value"&equalTo=1e400', b"ns=../x",
           b"ns=" + b"n" * 100, b"startAt=&endAt=", b"format=export", b'orderBy="$key"&startAt="\xff"']
BODIES = [b'{"a":1}', b"1", b'"s"', b"null", b"{}", b"[1,2,{}]", b'{"a":{".sv":"timestamp"}}', b'{".priority":1}',
          b'{"a/b":1,"a":2}', b"{" * 200, b'{"\\ud800":1}', b"1e999", b'{"k":' + b'"x"' * 3 + b"}", b"\x00\x01", b"",
          b'{"op":"set","path":"/a","value":1}', b'{"op":"cancel","path":"/"}', b'{"op":"update","path":"/a","value":{"b/c":1}}']


def mutate(g, data):
    data = bytearray(data)
    for _ in range(g.randint(0, 3)):
        if not data:
            break
        choice = g.randrange(4)
        i = g.randrange(len(data))
        if choice == 0:
            data[i] = g.randrange(256)
        elif choice == 1:
            del data[i]
        elif choice == 2:
            data[i:i] = bytes([g.randrange(256)])
        else:
            data[i:i] = data[i:i + g.randint(1, 8)]
    return bytes(data)


def http_request(g):
    method = g.choice(METHODS)
    target = g.choice(PATHS)
    query = g.choice(QUERIES)
    if query:
        target += (b"&" if b"?" in target else b"?") + query
    body = g.choice(BODIES)
    headers = [b"Host: x"]
    if g.random() < 0.2:
        headers.append(b"Accept: text/event-stream")
    if g.random() < 0.1:
        headers.append(b"if-match: " + g.choice([b"null_etag", b"abc", b"\"x\""]))
    if g.random() < 0.1:
        headers.append(b"X-HTTP-Method-Override: " + g.choice(METHODS))
    if g.random() < 0.15:
        headers.append(b"Transfer-Encoding: chunked")
        chunks = g.choice([b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body), b"zz\r\n", b"5\r\nab\r\n0\r\n\r\n", b"0\r\n\r\n"])
        payload = chunks
    else:
        length = len(body) if g.random() < 0.9 else g.choice([0, len(body) + 5, 10 ** 12])
        headers.append(b"Content-Length: %d" % length)
        payload = body
    raw = method + b" " + target + b" HTTP/1.1\r\n" + b"\r\n".join(headers) + b"\r\n\r\n" + payload
    return mutate(g, raw) if g.random() < 0.5 else raw


def native_frame(g):
    payload = json.dumps(g.choice([
        {"path": "/a"}, {"op": "set", "path": "/a", "value": 1}, {"op": "update", "path": "/a", "value": {"b/c": 2}},
        {"path": "/a", "events": "value"}, {"subscription": 1}, {"since": None, "path": "/a"},
        {"op": "push", "path": "/l", "value": {"x": [1, {}]}, "silence": [1]}, {"path": "/a", "query": {"orderBy": '"$key"'}},
    ])).encode()
    frame = struct.pack(">IBBQ", 10 + len(payload), 2, g.choice([1, 2, 3, 4, 5, 6, 7, 13, 14, 20, 40, 45, 99]), g.randrange(1 << 64)) + payload
    return mutate(g, frame) if g.random() < 0.7 else frame


def status_of(answer):
    """The status of the first response in `answer`, or None when nothing complete came back."""
    if not answer.startswith(b"HTTP/1.1 "):
        return None
    try:
        return int(answer[9:12])
    except ValueError:
        return None


def test_mutated_requests_never_crash_the_daemon_or_get_a_5xx(daemon_factory):
    seed = int(os.environ.get("EDDY_SEED") or random.randrange(1 << 32))
    count = int(os.environ.get("EDDY_FUZZ_REQUESTS") or 2000)
    print(f"EDDY_SEED={seed} EDDY_FUZZ_REQUESTS={count}")
    g = random.Random(seed)
    daemon = daemon_factory("--http-header-timeout-seconds", "1", "--http-body-timeout-seconds", "1")
    requests.put(daemon.base_url + "/.settings/rules.json", data=json.dumps({"rules": {".read": True, ".write": True, "a": {".indexOn": ["x"]}}}))
    native_path = os.path.join(daemon.data_dir, "eddyd.sock")
    # Generated in order from the seed, sent by a pool: a truncated request waits for the 1 s
    # timeout, so one at a time 100,000 would take hours. (The interleaving is not replayable;
    # every request is.)
    work = [("http", http_request(g)) if g.random() < 0.7
            else (g.choice(["native", "native-on-http"]), [native_frame(g) for _ in range(g.randint(1, 4))]) for _ in range(count)]
    server_faults, lock, statuses = [], threading.Lock(), {}

    def send(n):
        kind, payload = work[n]
        if kind == "http":
            answer = b""
            # An event stream never ends by itself and sends a keep-alive every 10 s: reading
            # stops after 15 s in all (the status line is what is checked).
            deadline = time.monotonic() + 15
            with socket.create_connection(("127.0.0.1", daemon.port), timeout=10) as s:
                try:
                    s.sendall(payload)
                    s.shutdown(socket.SHUT_WR)  # what was sent is all there is
                except (BrokenPipeError, ConnectionResetError):
                    pass
                except OSError as e:
                    # The daemon closed a connection whose input it had not read: TCP resets
                    # it, and the shutdown fails with ENOTCONN. A refused head's connection
                    # now reads on before it closes, but only up to 1 MiB and from when its
                    # answer is out (seen once in 100,000 before it did: seed 2794219885,
                    # request 48,000, "G\x00T /a.json?xxx..." of 5,115 bytes). What was read
                    # before the reset, if anything, is still checked below.
                    if e.errno != errno.ENOTCONN:
                        raise
                try:
                    while len(answer) < 1 << 20 and time.monotonic() < deadline:
                        chunk = s.recv(65536)
                        if not chunk:
                            break
                        answer += chunk
                except (ConnectionResetError, socket.timeout):
                    pass
            status = status_of(answer)
            with lock:
                statuses[status] = statuses.get(status, 0) + 1
            if status is not None and status >= 500:
                with lock:
                    server_faults.append((n, status, payload[:200], answer[:300]))
        else:
            family = socket.AF_UNIX if kind == "native" else socket.AF_INET
            with socket.socket(family, socket.SOCK_STREAM) as s:
                s.settimeout(10)
                s.connect(native_path if kind == "native" else ("127.0.0.1", daemon.port))
                for frame in payload:
                    try:
                        s.sendall(frame)
                    except (BrokenPipeError, ConnectionResetError):
                        break
                try:
                    s.shutdown(socket.SHUT_WR)
                except OSError as e:
                    # The daemon closed the connection already (a malformed frame ends it) and,
                    # with the rest unread, reset it: TCP (native frames on the HTTP port) then
                    # refuses the shutdown with ENOTCONN, as the recv below would report the reset.
                    if e.errno != errno.ENOTCONN:
                        raise
                try:
                    while s.recv(65536):
                        pass
                except (ConnectionResetError, socket.timeout):
                    pass

    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=32) as pool:
        for done in range(0, count, 1000):
            list(pool.map(send, range(done, min(count, done + 1000))))
            assert daemon.running, f"seed {seed}: eddyd died in requests {done}..{done + 999}; log:\n{daemon.log_tail()}"
    print(f"{count} mutated requests in {time.monotonic() - started:.0f} s, {len(server_faults)} answered 5xx, daemon up")
    print("HTTP answers by status (None: closed without one):", dict(sorted(statuses.items(), key=lambda kv: (kv[0] is None, kv[0] or 0))))
    assert not server_faults, f"seed {seed}: 5xx answers (request, status, raw request, answer): {server_faults[:5]}"
    # Still serving, and the data it took is consistent.
    # The fuzzer may have locked the rules: the admin (emulator mode's `owner`) still writes.
    assert requests.put(daemon.url("/after"), data="1", headers={"Authorization": "Bearer owner"}).status_code == 200
    assert requests.get(daemon.url("/after")).json() == 1
    daemon.stop()
    run_eddy("verify", "--data", daemon.data_dir)
