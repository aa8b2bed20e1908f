"""Small REST writes answered on the event loop (`RESTWriteAtOnceHandler`) next to requests
Hummingbird answers, on a real eddyd: answers in request order over pipelined requests, a body
that does not parse handed back (refused once, counted once), the request bodies' budget given
back, HTTP/1.0, and the same answers (headers included) as the responder's; and a connection's
first writes read raw (`RESTRawWriteHandler`): the same answers as through the codec, pipelined,
split across reads, from a client that half-closes."""

import json
import re
import socket
import time

import requests

from conftest import conversation


def answers(data):
    """The answers in `data`, in order: (status line, headers lower-cased, body bytes)."""
    out = []
    while data:
        head, data = data.split(b"\r\n\r\n", 1)
        lines = head.decode().split("\r\n")
        headers = {}
        for line in lines[1:]:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        out.append((lines[0], headers, data[:length]))
        data = data[length:]
    return out


def request(method, path, body=None, headers=(), version="HTTP/1.1"):
    lines = [f"{method} {path} {version}", "Host: 127.0.0.1"]
    lines += list(headers)
    payload = b""
    if body is not None:
        payload = body if isinstance(body, bytes) else json.dumps(body).encode()
        lines.append(f"Content-Length: {len(payload)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + payload


def metric(daemon, name):
    text = requests.get(daemon.base_url + "/metrics").text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.split("{")[0].split(" ")[0] == name)


def taken(daemon):
    """Writes answered on the event loop so far (the rest went to Hummingbird's task)."""
    return metric(daemon, "eddy_rest_writes_at_once_total")


def read_raw(daemon):
    """Of them, the writes read from the bytes, ahead of the HTTP parser."""
    return metric(daemon, "eddy_rest_writes_read_raw_total")


def refused_writes(daemon):
    """Writes of the default namespace `eddy_writes_total` counts as refused (by error code)."""
    text = requests.get(daemon.base_url + "/metrics").text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("eddy_writes_total{") and 'namespace="default"' in line
               and 'outcome="committed"' not in line and 'outcome="precondition_failed"' not in line)


def test_pipelined_writes_and_reads_are_answered_and_applied_in_order(daemon):
    requests.put(daemon.url("/o"), data="{}").raise_for_status()  # the namespace is open
    before = taken(daemon)
    big = "x" * 40_000  # over the 16 KiB a write answered at once may have: Hummingbird's
    raw = b"".join([
        request("PUT", "/o/a.json", 1),
        request("GET", "/o/a.json"),
        request("POST", "/o/list.json", {"x": 1}),
        request("PATCH", "/o.json", {"b": 2}),
        request("PUT", "/o/c.json", b'{"bad'),
        request("PUT", "/o/a.json", big),
        request("PUT", "/o/a.json", 3),
        request("PUT", "/o/d.json", 4, headers=["Origin: http://127.0.0.1"]),
        request("PUT", "/o/e.json?print=silent", 5),
        request("GET", "/o.json", headers=["Connection: close"]),
    ])
    got = answers(conversation(daemon, raw))
    statuses = [status for status, _, _ in got]
    assert statuses == ["HTTP/1.1 200 OK"] * 4 + ["HTTP/1.1 400 Bad Request"] + ["HTTP/1.1 200 OK"] * 3 + [
        "HTTP/1.1 204 No Content", "HTTP/1.1 200 OK"], statuses
    bodies = [body for _, _, body in got]
    assert bodies[0] == b"1" and bodies[1] == b"1"
    name = json.loads(bodies[2])["name"]
    assert json.loads(bodies[3]) == {"b": 2}
    assert "invalid JSON" in json.loads(bodies[4])["error"]
    assert json.loads(bodies[5]) == big and bodies[6] == b"3" and bodies[7] == b"4" and bodies[8] == b""
    # The big PUT (Hummingbird's) was applied before the small one after it (taken at once).
    assert json.loads(bodies[9]) == {"a": 3, "b": 2, "d": 4, "e": 5, "list": {name: {"x": 1}}}
    # Taken at once: the first PUT only. Every request read while it was in flight waited for
    # its answer and then went to Hummingbird, behind the GET it was given (answers in order).
    assert taken(daemon) == before + 1


def test_a_write_answered_at_once_has_the_responders_headers(daemon):
    requests.put(daemon.url("/h"), data="0").raise_for_status()
    before = taken(daemon)
    session = requests.Session()
    for method, body in (("put", "1"), ("post", '{"n": 1}'), ("patch", '{"m": 2}')):
        r = getattr(session, method)(daemon.url("/h/w" if method == "put" else "/h"), data=body)
        assert r.status_code == 200, r.text
        assert r.headers["Content-Type"] == "application/json; charset=utf-8"
        assert r.headers["Server"] == "eddyd"
        assert re.fullmatch(r"[A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d GMT", r.headers["Date"]), r.headers
        assert int(r.headers["Content-Length"]) == len(r.content)
        assert re.fullmatch(r"[-0-9A-Za-z_]{20}", r.headers["X-Eddy-Log-ID"]), r.headers
    r = session.put(daemon.url("/h/w"), headers={"X-Firebase-ETag": "true"}, data="2")
    assert r.status_code == 200 and r.headers["ETag"], r.headers
    stale = session.put(daemon.url("/h/w"), headers={"if-match": "stale"}, data="3")
    assert stale.status_code == 412 and stale.json() == 2 and stale.headers["ETag"] == r.headers["ETag"], stale.text
    assert session.put(daemon.url("/h/w"), headers={"if-match": r.headers["ETag"]}, data="4").status_code == 200
    assert session.get(daemon.url("/h/w")).json() == 4
    # After Hummingbird's answer (the GET) the connection's next write is taken again.
    assert session.put(daemon.url("/h/w"), data="5").json() == 5
    assert taken(daemon) == before + 7


def test_a_body_that_does_not_parse_is_refused_once_and_nothing_is_written(daemon):
    session = requests.Session()
    session.put(daemon.url("/p"), data="1").raise_for_status()
    before, taken_before = refused_writes(daemon), taken(daemon)
    for body in ('{"a": ', '{"a.b": 1}', '"\\ud800"'):
        r = session.put(daemon.url("/p"), data=body)
        assert r.status_code == 400 and r.json()["error"], r.text
    assert refused_writes(daemon) == before + 3
    # The first and the last do not parse and went to Hummingbird; the key with a dot parses
    # and is refused by the engine's validation, answered at once.
    assert taken(daemon) == taken_before + 1
    assert session.get(daemon.url("/p")).json() == 1


def test_the_request_bodies_budget_is_given_back(daemon_factory):
    """With room for one body at a time, every write of a keep-alive session still fits: each
    body's bytes go back to the budget when its write is answered (or handed on)."""
    d = daemon_factory("--request-bytes-max", "2048", "--request-bodies-bytes-total", "2048")
    session = requests.Session()
    session.put(d.url("/warm"), data="0").raise_for_status()
    text = json.dumps("y" * 1500)
    for i in range(40):
        assert session.put(d.url(f"/b/{i % 4}"), data=text).status_code == 200
        if i % 10 == 0:
            assert session.put(d.url("/b/bad"), data='{"x": ' + " " * 1500).status_code == 400
    assert session.get(d.url("/b/3")).json() == "y" * 1500
    assert taken(d) >= 40


def test_an_http10_write_is_answered_as_http10_and_the_connection_closes(daemon):
    requests.put(daemon.url("/v"), data="0").raise_for_status()
    before = taken(daemon)
    got = answers(conversation(daemon, request("PUT", "/v.json", 7, version="HTTP/1.0")))
    assert len(got) == 1 and got[0][0] == "HTTP/1.0 200 OK" and got[0][2] == b"7", got
    assert requests.get(daemon.url("/v")).json() == 7
    assert taken(daemon) == before + 1


def test_rules_decide_writes_answered_at_once(daemon):
    owner = {"Authorization": "Bearer owner"}
    rules = {"rules": {"shut": {".write": False}, "open": {".write": True, ".validate": "newData.isNumber()"}}}
    assert requests.put(daemon.url("/.settings/rules", ns="fast"), headers=owner, data=json.dumps(rules)).status_code == 200
    session = requests.Session()
    before = taken(daemon)
    for _ in range(3):  # the namespace is open and the caller known after the first
        r = session.put(daemon.url("/shut", ns="fast"), data="1")
        assert (r.status_code, r.json()) == (401, {"error": "Permission denied"}), r.text
        r = session.put(daemon.url("/open", ns="fast"), data='"text"')
        assert (r.status_code, r.json()) == (401, {"error": "Permission denied"}), r.text
        assert session.put(daemon.url("/open", ns="fast"), data="5").status_code == 200
    assert requests.get(daemon.url("/", ns="fast"), headers=owner).json() == {"open": 5}
    assert taken(daemon) == before + 9


# -- the raw path (`RESTRawWriteHandler`): a connection's first writes, read before the codec ----


def read_answer(sock, data=b""):
    """One answer from a live connection: (status line, [(name, value)] in order, body), and
    the bytes read past it."""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"connection closed before an answer: {data!r}"
        data += chunk
    head, data = data.split(b"\r\n\r\n", 1)
    lines = head.decode().split("\r\n")
    fields = [tuple(part.strip() for part in line.split(":", 1)) for line in lines[1:]]
    length = int(dict((name.lower(), value) for name, value in fields).get("content-length", "0"))
    while len(data) < length:
        chunk = sock.recv(65536)
        assert chunk, "connection closed inside an answer"
        data += chunk
    return (lines[0], fields, data[:length]), data[length:]


def test_a_connections_first_writes_are_answered_as_the_codec_answers_them(daemon):
    """The same PUT read raw (the connection's first requests) and, after a GET sent the
    connection to the codec, through Hummingbird's codec: the same status line and fields in the
    same order, with the same values but the date and the log ID."""
    requests.put(daemon.url("/r"), data="0").raise_for_status()
    before, raw_before = taken(daemon), read_raw(daemon)
    put = request("PUT", "/r/a.json", 1, headers=["X-Firebase-ETag: true", "Content-Type: application/json"])
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=15) as s:
        s.sendall(put)
        raw, rest = read_answer(s)
        s.sendall(request("POST", "/r/list.json", {"n": 1}))
        posted, rest = read_answer(s, rest)
        s.sendall(request("GET", "/r/a.json"))
        got, rest = read_answer(s, rest)
        s.sendall(put)
        codec, rest = read_answer(s, rest)
        assert rest == b""
    assert raw[0] == codec[0] == posted[0] == "HTTP/1.1 200 OK" and got == ("HTTP/1.1 200 OK", got[1], b"1"), (raw, codec, got)
    assert [name for name, _ in raw[1]] == [name for name, _ in codec[1]], (raw[1], codec[1])
    varying = {"Date", "X-Eddy-Log-ID"}
    assert [f for f in raw[1] if f[0] not in varying] == [f for f in codec[1] if f[0] not in varying], (raw[1], codec[1])
    assert raw[2] == codec[2] == b"1"
    assert json.loads(posted[2])["name"] in requests.get(daemon.url("/r/list")).json()
    # Both PUTs and the POST were answered at once: the first two read raw, the last behind the
    # codec (the GET sent the connection there).
    assert (taken(daemon), read_raw(daemon)) == (before + 3, raw_before + 2)


def test_pipelined_small_writes_read_raw_are_answered_in_order(daemon):
    requests.put(daemon.url("/q"), data="0").raise_for_status()
    before, raw_before = taken(daemon), read_raw(daemon)
    raw = b"".join(request("POST", "/q/list.json", {"i": i}) for i in range(30))
    raw += request("GET", "/q/list.json", headers=["Connection: close"])
    got = answers(conversation(daemon, raw))
    assert [status for status, _, _ in got] == ["HTTP/1.1 200 OK"] * 31, got
    names = [json.loads(body)["name"] for _, _, body in got[:30]]
    assert names == sorted(names) and len(set(names)) == 30  # push IDs: in the order written
    listed = json.loads(got[30][2])
    assert [listed[name]["i"] for name in names] == list(range(30))
    assert (taken(daemon), read_raw(daemon)) == (before + 30, raw_before + 30)


def test_a_raw_request_split_across_reads_or_from_a_half_closing_client_is_answered(daemon):
    requests.put(daemon.url("/s"), data="0").raise_for_status()
    # Head and body in two sends: the head goes on to the codec, which waits for the body.
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=15) as s:
        whole = request("PUT", "/s/split.json", {"k": "v"})
        head_end = whole.index(b"\r\n\r\n") + 4
        s.sendall(whole[:head_end])
        time.sleep(0.3)
        s.sendall(whole[head_end:])
        answer, _ = read_answer(s)
        assert answer[0] == "HTTP/1.1 200 OK" and json.loads(answer[2]) == {"k": "v"}, answer
    # A client that ends its output after a write read raw still gets the answer.
    raw_before = read_raw(daemon)
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=15) as s:
        s.sendall(request("PUT", "/s/closing.json", 7))
        s.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    got = answers(data)
    assert [(status, body) for status, _, body in got] == [("HTTP/1.1 200 OK", b"7")], data
    assert requests.get(daemon.url("/s/closing")).json() == 7
    assert read_raw(daemon) == raw_before + 1


def test_a_half_closing_client_gets_the_answer_to_a_write_taken_at_once(daemon):
    """A client that ends its output after sending a write (shutdown(SHUT_WR)) gets its answer:
    Hummingbird, which never sees a write taken at once, would close the connection at the
    input's end, before the answer. Behind the codec (after a GET on the connection)."""
    requests.put(daemon.url("/hc"), data="0").raise_for_status()
    before, raw_before = taken(daemon), read_raw(daemon)
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=15) as s:
        s.sendall(request("GET", "/hc.json"))
        got, rest = read_answer(s)
        assert got[2] == b"0", got
        s.sendall(request("PUT", "/hc.json", 8))
        s.shutdown(socket.SHUT_WR)
        data = rest
        while chunk := s.recv(65536):
            data += chunk
    assert [(status, body) for status, _, body in answers(data)] == [("HTTP/1.1 200 OK", b"8")], data
    assert requests.get(daemon.url("/hc")).json() == 8
    assert (taken(daemon), read_raw(daemon)) == (before + 1, raw_before)
