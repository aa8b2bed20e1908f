"""Issue 18, item 1: a client that writes faster than the daemon commits is slowed down, never
refused. Past its bounds (1,024 requests or 64 MiB waiting per native connection; HTTP/1.1 takes
one pipelined request at a time) the daemon stops reading that connection, so TCP holds the
sender back; every request that was read is answered, in order, and applied. Meanwhile other
connections (a fresh GET, a subscriber) are served, and the daemon's memory stays bounded."""

import json
import socket
import threading
import time

import requests

from test_native import EVENTS, SUBSCRIBE, SUBSCRIBED, WRITE, WRITTEN, Native, rss_bytes

PUSHES = 20_000
HTTP_REQUESTS = 2_000


def test_a_native_writer_pipelining_20000_pushes_is_slowed_not_refused(daemon):
    subscriber = Native(daemon)
    subscriber.send(SUBSCRIBE, 1, {"path": "/flood", "events": "value"})
    assert subscriber.recv()[0] == SUBSCRIBED
    baseline = rss_bytes(daemon)
    writer = Native(daemon)
    writer.sock.settimeout(120)
    sent = []

    def send_all():
        for i in range(1, PUSHES + 1):
            writer.send(WRITE, i, {"op": "push", "path": "/flood", "value": {"i": i, "pad": "p" * 64}})
            sent.append(i)

    sender = threading.Thread(target=send_all, daemon=True)
    sender.start()
    # While the writer is held back: a fresh reader is answered, the subscriber hears events.
    fresh = requests.get(daemon.url("/other"), timeout=10)
    assert fresh.status_code == 200 and fresh.json() is None
    for _ in range(100):  # the attach value first, then the pushes' events
        kind, _, payload = subscriber.recv()
        assert kind == EVENTS
        if '"pad"' in json.dumps(payload):
            break
    else:
        raise AssertionError("the subscriber heard none of the pushes")
    peak = rss_bytes(daemon)
    answers = []
    for _ in range(PUSHES):
        answer = writer.recv()
        assert answer is not None, f"the connection ended after {len(answers)} answers"
        answers.append(answer)
        if len(answers) % 2000 == 0:
            peak = max(peak, rss_bytes(daemon))
    sender.join(timeout=60)
    assert len(sent) == PUSHES
    kinds = {kind for kind, _, _ in answers}
    assert kinds == {WRITTEN}, [a for a in answers if a[0] != WRITTEN][:3]
    assert [rid for _, rid, _ in answers] == list(range(1, PUSHES + 1))
    stored = requests.get(daemon.url("/flood"), params={"shallow": "true"}, timeout=60).json()
    assert len(stored) == PUSHES
    names = {payload["name"] for _, _, payload in answers}
    assert names == set(stored)
    # 20,000 requests of ~120 bytes and their answers: the bounds keep it to a few MiB.
    print(f"pipelined {PUSHES} pushes: RSS baseline {baseline >> 20} MiB, peak {peak >> 20} MiB")
    assert peak - baseline < 64 << 20, f"RSS rose {peak - baseline} bytes"
    writer.close()
    subscriber.close()


def test_an_http_client_pipelining_2000_requests_gets_every_answer_in_order(daemon):
    host, port = daemon.base_url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)))
    sock.settimeout(60)
    requests_bytes = b""
    for i in range(HTTP_REQUESTS):
        body = json.dumps({"i": i}).encode()
        requests_bytes += (
            f"PUT /piped/k{i:05d}.json HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode() + body
    sender = threading.Thread(target=sock.sendall, args=(requests_bytes,), daemon=True)
    sender.start()
    assert requests.get(daemon.url("/other"), timeout=10).status_code == 200  # served meanwhile
    buffer = b""
    bodies = []
    while len(bodies) < HTTP_REQUESTS:
        chunk = sock.recv(1 << 20)
        assert chunk, f"the connection ended after {len(bodies)} answers"
        buffer += chunk
        while (end := buffer.find(b"\r\n\r\n")) >= 0:
            head = buffer[:end].decode()
            length = next(int(line.split(":", 1)[1]) for line in head.split("\r\n") if line.lower().startswith("content-length:"))
            if len(buffer) < end + 4 + length:
                break
            assert head.startswith("HTTP/1.1 200"), head
            bodies.append(json.loads(buffer[end + 4 : end + 4 + length]))
            buffer = buffer[end + 4 + length :]
    sender.join(timeout=30)
    sock.close()
    assert bodies == [{"i": i} for i in range(HTTP_REQUESTS)]
    stored = requests.get(daemon.url("/piped"), timeout=30).json()
    assert stored == {f"k{i:05d}": {"i": i} for i in range(HTTP_REQUESTS)}


def test_many_pipelining_writers_together_are_slowed_not_refused(daemon):
    """Eight connections pipelining 2,500 pushes each keep up to 8 x 1,024 writes in flight,
    twice the commit queue's 4,096: the queue's bound holds them back too, none is refused."""
    writers = [Native(daemon) for _ in range(8)]
    per_writer = 2500

    def send_all(writer, w):
        for i in range(1, per_writer + 1):
            writer.send(WRITE, i, {"op": "push", "path": f"/many/w{w}", "value": i})

    senders = [threading.Thread(target=send_all, args=(writer, w), daemon=True) for w, writer in enumerate(writers)]
    for sender in senders:
        sender.start()
    for w, writer in enumerate(writers):
        writer.sock.settimeout(120)
        answers = [writer.recv() for _ in range(per_writer)]
        refused = [a for a in answers if a[0] != WRITTEN]
        assert not refused, refused[:3]
        assert [rid for _, rid, _ in answers] == list(range(1, per_writer + 1))
    for sender in senders:
        sender.join(timeout=60)
    stored = requests.get(daemon.url("/many"), timeout=60).json()
    assert {w: len(children) for w, children in stored.items()} == {f"w{w}": per_writer for w in range(8)}
    for writer in writers:
        writer.close()
