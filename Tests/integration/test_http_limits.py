"""Slow or broken HTTP clients cannot hold the server (issue 11, item 5): a request head that
trickles, or a body that stops short of its Content-Length, gets `408 Request Timeout` naming
the option and the connection closes, with nothing written; an idle keep-alive connection is
closed; an event stream (a response in progress) is never timed out; and at
`--http-connections-max` new connections wait until one closes, which the log says.

The daemons here use 1-2 s timeouts; each wait below is a bound on a failure, not a timing
assertion."""

import json
import socket
import time

import pytest
import requests

from conftest import conversation


@pytest.fixture(scope="module")
def d(module_daemon_factory):
    return module_daemon_factory(
        "--http-header-timeout-seconds", "1", "--http-body-timeout-seconds", "1", "--http-idle-timeout-seconds", "2")


def test_a_trickling_request_head_gets_408(d):
    answer = conversation(d, b"PUT /h.json HTTP/1.1\r\nHost: x\r\nContent-Le")
    assert answer.startswith(b"HTTP/1.1 408 Request Timeout\r\n"), answer[:200]
    assert b"connection: close" in answer.lower()
    body = json.loads(answer.split(b"\r\n\r\n", 1)[1])
    assert "--http-header-timeout-seconds" in body["error"]
    assert requests.get(d.url("/h")).json() is None


def test_a_body_shorter_than_its_content_length_gets_408_and_nothing_is_written(d):
    answer = conversation(d, b"PUT /b.json HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n1")
    assert answer.startswith(b"HTTP/1.1 408 Request Timeout\r\n"), answer[:200]
    assert "--http-body-timeout-seconds" in json.loads(answer.split(b"\r\n\r\n", 1)[1])["error"]
    assert requests.get(d.url("/b")).json() is None


def test_an_idle_keep_alive_connection_is_closed(d):
    answer = conversation(d, b"GET /i.json HTTP/1.1\r\nHost: x\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n") and answer.endswith(b"null"), answer[:200]


def test_a_connection_that_never_sends_a_byte_is_closed_when_idle(d):
    """A client that connects and sends nothing held a connection slot for good: the idle timer
    started only when the channel was already active as its handlers were added."""
    started = time.monotonic()
    assert conversation(d, b"", timeout=20) == b"", "closed without an answer"
    assert time.monotonic() - started < 15, "closed by the 2 s idle timeout, not the test's own"


def test_connections_closed_before_their_first_byte_free_their_slot_at_once(daemon_factory):
    """A connection closed without a byte (a port check, a load balancer's probe) stayed open on
    the server until the 120 s idle timeout, counted against --http-connections-max: 100 of them
    kept a cap of 20 full, and every new client waited two minutes."""
    daemon = daemon_factory("--http-connections-max", "20")
    for _ in range(100):
        socket.create_connection(("127.0.0.1", daemon.port), timeout=10).close()
    assert requests.get(daemon.url("/free"), timeout=20).json() is None


def test_a_keep_alive_connection_times_each_request_and_then_idles_out(d):
    """The deadline moves with every request (head, body, answer, idle) while one timer check
    per connection follows it: requests spaced under the idle timeout are all served, a body
    that stalls later on the same connection still gets its 408, and nothing else closes it."""
    with socket.create_connection(("127.0.0.1", d.port), timeout=15) as s:
        for n in range(4):
            body = b"%d" % n
            s.sendall(b"PUT /ka.json HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            assert read_until(s, b"\r\n\r\n" + body).startswith(b"HTTP/1.1 200 OK\r\n")
            time.sleep(0.6)  # under the 2 s idle timeout, past half the 1 s head and body ones
        s.sendall(b"PUT /ka.json HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n1")
        answer = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 408 Request Timeout\r\n"), answer[:200]
    assert "--http-body-timeout-seconds" in json.loads(answer.split(b"\r\n\r\n", 1)[1])["error"]
    assert requests.get(d.url("/ka")).json() == 3


def test_a_connection_answered_before_its_body_was_read_still_idles_out(d):
    # Refused from its path alone, the request is answered before its body is read; once the
    # body is in, the connection is idle and must close like any other.
    answer = conversation(d, b"PUT /.info/x.json HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n12345")
    assert answer.startswith(b"HTTP/1.1 400 Bad Request\r\n"), answer[:200]


def test_an_event_stream_is_never_timed_out(d):
    with socket.create_connection(("127.0.0.1", d.port), timeout=15) as s:
        s.sendall(b"GET /sse.json HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n")
        received = b""
        while b'"data":null' not in received:
            received += s.recv(65536)
        time.sleep(3.5)  # past every timeout of this daemon
        assert requests.put(d.url("/sse"), data="5").status_code == 200
        while b'"data":5' not in received:
            chunk = s.recv(65536)
            assert chunk, "the stream was closed"
            received += chunk


def read_until(s, marker):
    data = b""
    while marker not in data:
        chunk = s.recv(65536)
        assert chunk, f"closed before {marker!r}: {data[:300]!r}"
        data += chunk
    return data


def test_expect_100_continue_is_answered_before_the_body(d):
    """curl sends `Expect: 100-continue` with bodies over 1 KiB and waits a second for the
    interim answer; it comes at once, and the connection serves the next request after."""
    body = json.dumps("z" * 2000).encode()
    with socket.create_connection(("127.0.0.1", d.port), timeout=15) as s:
        s.sendall(b"PUT /expect.json HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n" % len(body))
        s.settimeout(0.9)  # well under curl's one second
        interim = read_until(s, b"\r\n\r\n")
        assert interim == b"HTTP/1.1 100 Continue\r\n\r\n", interim
        s.settimeout(15)
        s.sendall(body)
        answer = read_until(s, body)
        assert answer.startswith(b"HTTP/1.1 200 OK\r\n"), answer[:200]
        s.sendall(b"GET /expect.json HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_until(s, body).startswith(b"HTTP/1.1 200 OK\r\n")
    assert requests.get(d.url("/expect")).json() == "z" * 2000


def test_expect_100_continue_over_the_size_limit_is_refused_without_the_body(daemon_factory):
    daemon = daemon_factory("--request-bytes-max", "2048")
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=15) as s:
        s.sendall(b"PUT /big.json HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5000\r\n\r\n")
        answer = read_until(s, b"}")
    assert answer.startswith(b"HTTP/1.1 400 "), answer[:200]
    assert b"100 Continue" not in answer
    assert b"request-bytes-max" in answer


def test_request_bodies_in_flight_are_bounded_together(daemon_factory):
    """`--request-bodies-bytes-total`: the bodies of all clients in flight share one budget; a
    body it cannot take is refused with 503 naming the option, nothing applied, and once the
    others are done the next one is taken."""
    daemon = daemon_factory("--request-bytes-max", "2048", "--request-bodies-bytes-total", "4096")
    body = json.dumps("b" * 2000).encode()
    head = b"PUT /inflight/k%d.json HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
    held = []
    for i in range(2):  # two bodies of 2,002 bytes, half sent: the budget is taken
        s = socket.create_connection(("127.0.0.1", daemon.port), timeout=15)
        s.sendall(head % (i, len(body)) + body[:1000])
        held.append(s)
    time.sleep(0.3)
    r = requests.put(daemon.url("/inflight/k2"), data=body)
    assert r.status_code == 503, (r.status_code, r.text)
    assert "--request-bodies-bytes-total" in r.json()["error"]
    for s in held:
        s.sendall(body[1000:])
        assert read_until(s, b"\r\n\r\n").startswith(b"HTTP/1.1 200 OK")
        s.close()
    assert requests.put(daemon.url("/inflight/k3"), data=body).status_code == 200
    assert sorted(requests.get(daemon.url("/inflight")).json()) == ["k0", "k1", "k3"], "nothing of the refused body applied"


def test_at_the_connection_cap_new_connections_wait(daemon_factory):
    daemon = daemon_factory("--http-connections-max", "2")
    held = [socket.create_connection(("127.0.0.1", daemon.port), timeout=15) for _ in range(2)]
    for s in held:
        s.sendall(b"GET /c.json HTTP/1.1\r\nHost: x\r\n\r\n")
        assert s.recv(65536).startswith(b"HTTP/1.1 200")
    waiting = socket.create_connection(("127.0.0.1", daemon.port), timeout=1)
    waiting.sendall(b"GET /c.json HTTP/1.1\r\nHost: x\r\n\r\n")
    with pytest.raises(socket.timeout):
        waiting.recv(65536)  # not accepted while two are open
    held[0].close()
    waiting.settimeout(15)
    assert waiting.recv(65536).startswith(b"HTTP/1.1 200"), "served once one closed"
    waiting.close()
    held[1].close()
    daemon.stop()
    assert "HTTP connection cap reached: 2 open" in open(daemon.log_path).read()


def read_until(s, marker, limit=10):
    data = b""
    deadline = time.monotonic() + limit
    while marker not in data:
        assert time.monotonic() < deadline, data[:500]
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def test_http_1_0_requests_get_http_1_0_answers_without_chunks(d):
    """RFC 9112 §6.1: no Transfer-Encoding unless the request is HTTP/1.1. An HTTP/1.0 request is
    answered as HTTP/1.0 with Connection: close, the body as is (a streamed GET over 1 MiB, an
    event stream), and the connection closes after a finite answer; HTTP/1.1 keeps its chunks."""
    big = {f"k{i:05}": "x" * 100 for i in range(30000)}  # over 1 MiB of many children: streamed
    assert requests.put(d.url("/h10/big"), data=json.dumps(big)).status_code == 200
    answer = conversation(d, b"GET /h10/big.json HTTP/1.0\r\n\r\n")
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.0 200"), head
    assert b"transfer-encoding" not in head.lower() and b"connection: close" in head.lower(), head
    assert json.loads(body) == big, "the whole body, no chunk sizes, ended by the close"
    # An event stream over HTTP/1.0: raw event lines.
    with socket.create_connection(("127.0.0.1", d.port), timeout=15) as s:
        s.sendall(b"GET /h10/small.json HTTP/1.0\r\nAccept: text/event-stream\r\n\r\n")
        data = read_until(s, b"\n\n", limit=10)
        head, _, events = data.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.0 200") and b"transfer-encoding" not in head.lower(), head
        assert events.startswith(b"event: put\n"), events[:200]
    # HTTP/1.1 on the same port: chunked, and the connection stays for the next request.
    with socket.create_connection(("127.0.0.1", d.port), timeout=15) as s:
        s.sendall(b"GET /h10/big.json HTTP/1.1\r\nHost: x\r\n\r\n")
        data = read_until(s, b"\r\n0\r\n\r\n", limit=15)
        assert data.startswith(b"HTTP/1.1 200") and b"transfer-encoding: chunked" in data.lower(), data[:300]
        s.sendall(b"GET /h10/missing.json HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_until(s, b"null").endswith(b"null")


def refusal(answer):
    """The status line and the `error` of a whole answer read to the connection's end."""
    head, body = answer.split(b"\r\n\r\n", 1)
    assert b"connection: close" in head.lower(), head
    return head.split(b"\r\n", 1)[0].decode(), json.loads(body)["error"]


def test_a_request_head_the_parser_refuses_gets_an_error_body_and_nothing_is_written(d):
    """Hummingbird answered these with a bare `400` and no body; each says now what was wrong."""
    status, error = refusal(conversation(d, b"PUT /hp.json HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 100_000 + b"\r\nContent-Length: 1\r\n\r\n1"))
    assert status == "HTTP/1.1 431 Request Header Fields Too Large" and "81920 bytes" in error, (status, error)
    status, error = refusal(conversation(d, b"BREW /hp.json HTTP/1.1\r\nHost: x\r\n\r\n"))
    assert status == "HTTP/1.1 400 Bad Request" and "unknown method" in error, (status, error)
    status, error = refusal(conversation(d, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"))
    assert status == "HTTP/1.1 400 Bad Request" and "HTTP/2" in error, (status, error)
    status, error = refusal(conversation(d, b"PUT /hp.json HTTP/1.1\r\nHost: x\r\nContent-Length: x1\r\n\r\n1"))
    assert status == "HTTP/1.1 400 Bad Request" and "content-length" in error, (status, error)
    assert requests.get(d.url("/hp")).json() is None


def test_a_refused_head_is_answered_while_the_client_is_still_sending(d):
    """A head refused at its first bytes is answered before the rest of a long request arrives.
    Closing the socket with that rest unread made TCP reset the connection, and the reset could
    discard the answer before the client read it (50 of 50 lost, 2026-12-01): the daemon now
    closes only its output and drops what still arrives until the client ends its side."""
    for attempt in range(20):
        with socket.create_connection(("127.0.0.1", d.port), timeout=15) as s:
            s.sendall(b"G\x00T /lr.json HTTP/1.1\r\nHost: x\r\nContent-Length: 200000\r\n\r\n")
            time.sleep(0.05)  # the answer is written and the output closed before the rest comes
            s.sendall(b"x" * 200_000)
            s.shutdown(socket.SHUT_WR)
            answer = b""
            while chunk := s.recv(65536):
                answer += chunk
        status, error = refusal(answer)
        assert status == "HTTP/1.1 400 Bad Request" and "unknown method" in error, (attempt, status, error)
    assert requests.get(d.url("/lr")).json() is None


def test_a_refused_head_after_pipelined_requests_is_answered_after_their_answers(d):
    answer = conversation(
        d, b"PUT /pp.json HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\n7GET /pp.json HTTP/1.1\r\nHost: x\r\n\r\nGET /q.json HTTP/1.1\r\nBad Header\r\n\r\n")
    first, rest = answer.split(b"\r\n\r\n7", 1)
    assert first.startswith(b"HTTP/1.1 200 OK\r\n"), answer[:300]
    second, third = rest.split(b"\r\n\r\n7", 1)
    assert second.startswith(b"HTTP/1.1 200 OK\r\n"), answer[:400]
    status, error = refusal(third)
    assert status == "HTTP/1.1 400 Bad Request" and "invalid character in header" in error, (status, error)
