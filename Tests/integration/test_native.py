"""The native protocol on the daemon's Unix socket (EddyProtocol/Frame.swift), spoken from
Python: length-prefixed, versioned frames with request ids; reads, queries, writes acknowledged
with their log id, subscriptions whose `subscribed` answer names the log id they are live after
and whose events carry log ids (value events carry the change, protocol version 2); errors
naming what was wrong; malformed frames (and version-1 frames) close the connection; a
subscriber that stops reading gets `behind` and is disconnected."""

import json
import os
import resource
import socket
import stat
import struct
import threading
import time

import pytest
import requests

from value_cache import apply_change

GET, QUERY, WRITE, SUBSCRIBE, UNSUBSCRIBE = 1, 2, 3, 4, 5
VALUE, WRITTEN, SUBSCRIBED, EVENTS, BEHIND, UNSUBSCRIBED, ERROR = 20, 21, 22, 23, 24, 25, 26


class Native:
    def __init__(self, daemon):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(20)
        self.sock.connect(os.path.join(daemon.data_dir, "eddyd.sock"))
        self.buf = bytearray()

    def send(self, kind, request_id, payload, version=2):
        body = json.dumps(payload).encode()
        self.sock.sendall(struct.pack(">IBBQ", 10 + len(body), version, kind, request_id) + body)

    def recv(self):
        """(kind, request id, payload), or None at end of stream."""
        while True:
            if len(self.buf) >= 4:
                (n,) = struct.unpack(">I", self.buf[:4])
                if len(self.buf) >= 4 + n:
                    version, kind, request_id = struct.unpack(">BBQ", self.buf[4:14])
                    assert version == 2
                    payload = json.loads(bytes(self.buf[14 : 4 + n]))
                    del self.buf[: 4 + n]
                    return kind, request_id, payload
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self.buf += chunk

    def close(self):
        self.sock.close()


@pytest.fixture
def native(daemon):
    client = Native(daemon)
    yield client
    client.close()


def test_socket_file_is_group_accessible(daemon):
    mode = os.stat(os.path.join(daemon.data_dir, "eddyd.sock")).st_mode
    assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o660


def test_reads_writes_and_queries(native, daemon):
    native.send(WRITE, 1, {"op": "set", "path": "/u", "value": {"b": {"age": 2}, "a": {"age": 1}}})
    kind, rid, written = native.recv()
    assert (kind, rid) == (WRITTEN, 1) and written["logID"]
    native.send(WRITE, 2, {"op": "push", "path": "/u", "value": {"age": 3}})
    kind, rid, pushed = native.recv()
    assert kind == WRITTEN and pushed["name"] == pushed["logID"]
    native.send(WRITE, 3, {"op": "update", "path": "/u", "value": {"a/age": 5, "b": None}})
    assert native.recv()[0] == WRITTEN
    native.send(GET, 4, {"path": "/u"})
    assert native.recv() == (VALUE, 4, {"value": {"a": {"age": 5}, pushed["name"]: {"age": 3}}})
    native.send(QUERY, 5, {"path": "/u", "query": {"orderBy": '"$key"', "limitToFirst": "1"}})
    assert native.recv() == (VALUE, 5, {"value": {pushed["name"]: {"age": 3}}})
    assert requests.get(daemon.url("/u/a/age")).json() == 5  # the same database as HTTP
    native.send(WRITE, 6, {"op": "remove", "path": "/u"})
    assert native.recv()[0] == WRITTEN


def test_writes_of_one_connection_commit_in_order(native):
    for i in range(200):
        native.send(WRITE, 100 + i, {"op": "set", "path": "/order", "value": i})
    ids = []
    for i in range(200):
        kind, rid, payload = native.recv()
        assert (kind, rid) == (WRITTEN, 100 + i)
        ids.append(payload["logID"])
    assert ids == sorted(ids)
    native.send(GET, 1, {"path": "/order"})
    assert native.recv() == (VALUE, 1, {"value": 199})


def test_pipelined_writes_commit_in_order_and_a_read_sees_the_earlier_ones(native):
    """Writes are not answered one at a time: a client may send many before reading. A read
    waits for the connection's earlier writes, and the writes after it wait for the read."""
    for i in range(100):
        native.send(WRITE, 1000 + i, {"op": "set", "path": "/piped", "value": i})
    native.send(GET, 1, {"path": "/piped"})
    for i in range(100, 200):
        native.send(WRITE, 1000 + i, {"op": "set", "path": "/piped", "value": i})
    answers = [native.recv() for _ in range(201)]
    assert [(kind, rid) for kind, rid, _ in answers[:100]] == [(WRITTEN, 1000 + i) for i in range(100)]
    assert answers[100] == (VALUE, 1, {"value": 99})
    assert [(kind, rid) for kind, rid, _ in answers[101:]] == [(WRITTEN, 1000 + i) for i in range(100, 200)]
    ids = [payload["logID"] for kind, _, payload in answers if kind == WRITTEN]
    assert ids == sorted(ids) and len(set(ids)) == 200
    native.send(GET, 2, {"path": "/piped"})
    assert native.recv() == (VALUE, 2, {"value": 199})


def test_writes_that_open_a_namespace_or_are_refused_answer_like_any_other(native):
    """A small write may be handled on the event loop, and the first one to a namespace that is
    not open yet is not: either way each write gets its own answer, a refused one changes
    nothing, and a connection's writes to one namespace commit in the order sent. (Writes to
    different namespaces commit independently, so their answers are matched by request id.)"""
    native.send(WRITE, 1, {"op": "set", "path": "/a", "value": 1, "ns": "opened_by_write"})
    first = native.recv()
    assert first[:2] == (WRITTEN, 1)
    # Now open and nothing queued: the burst below is taken on the event loop up to frame 6.
    native.send(WRITE, 2, {"op": "set", "path": "/a", "value": 2, "ns": "opened_by_write"})
    native.send(WRITE, 3, {"op": "frobnicate", "path": "/a", "value": 3, "ns": "opened_by_write"})
    native.send(WRITE, 4, {"op": "set", "path": "/a", "value": 4})
    native.send(WRITE, 5, {"op": "set", "path": "/a/b.c", "value": 5, "ns": "opened_by_write"})
    native.send(WRITE, 6, {"op": "set", "path": "/a", "value": 6, "ns": "bad.name"})
    answers = {rid: (kind, payload) for kind, rid, payload in (native.recv() for _ in range(5))}
    assert answers[2][0] == WRITTEN and answers[4][0] == WRITTEN
    assert first[2]["logID"] < answers[2][1]["logID"]
    assert answers[3][0] == ERROR and answers[3][1]["message"].startswith("write op frobnicate")
    assert answers[5][0] == ERROR and answers[5][1]["code"] == "invalidKey" and "b.c" in answers[5][1]["message"]
    assert answers[6][0] == ERROR and "bad.name" in answers[6][1]["message"]
    native.send(GET, 7, {"path": "/a", "ns": "opened_by_write"})
    assert native.recv() == (VALUE, 7, {"value": 2})
    native.send(GET, 8, {"path": "/a"})
    assert native.recv() == (VALUE, 8, {"value": 4})


def test_subscriptions_are_live_after_their_log_id(native, daemon):
    requests.put(daemon.url("/feed"), data=json.dumps({"a": 1}))
    native.send(SUBSCRIBE, 7, {"path": "/feed"})
    kind, rid, subscribed = native.recv()
    assert (kind, rid) == (SUBSCRIBED, 7) and subscribed["liveAfter"]
    kind, rid, first = native.recv()
    assert (kind, rid) == (EVENTS, 7)
    assert first["events"] == [{"kind": "child_added", "key": "a", "value": 1}, {"kind": "value", "value": {"a": 1}}]
    other = Native(daemon)
    other.send(WRITE, 1, {"op": "set", "path": "/feed/b", "value": 2})
    _, _, written = other.recv()
    kind, rid, update = native.recv()
    assert (kind, rid) == (EVENTS, 7)
    assert update["events"] == [
        {"kind": "child_added", "key": "b", "prev": "a", "value": 2, "logID": written["logID"]},
        {"kind": "value", "logID": written["logID"], "changes": [{"op": "put", "path": "/b", "data": 2}]},
    ]
    assert written["logID"] > subscribed["liveAfter"]
    # A write that silences the subscription is not heard by it.
    native.send(WRITE, 8, {"op": "set", "path": "/feed/c", "value": 3, "silence": [7]})
    assert native.recv()[0] == WRITTEN
    native.send(UNSUBSCRIBE, 9, {"subscription": 7})
    assert native.recv() == (UNSUBSCRIBED, 9, {"subscription": 7, "removed": True})
    other.send(WRITE, 2, {"op": "set", "path": "/feed/d", "value": 4})
    other.recv()
    native.send(GET, 10, {"path": "/feed/d"})
    assert native.recv() == (VALUE, 10, {"value": 4}), "no events after unsubscribe"
    other.close()


def test_a_subscribe_sent_with_a_write_holds_that_write_back_no_time(daemon):
    """A write and a subscribe sent together on a new connection (the write, its first request,
    goes to the connection's task): the subscribe does not take its place in the order of writes
    before that write reached the engine. It did once: the write then waited for the listen and
    the listen for the write's answer until the place expired (50 ms, counted in
    eddy_listen_order_expired_total), and other connections' listens made meanwhile missed the
    write in their first value. The listen attaches after the write."""

    def expired():
        text = requests.get(daemon.base_url + "/metrics").text
        lines = [l for l in text.splitlines() if l.startswith('eddy_listen_order_expired_total{namespace="default"}')]
        return float(lines[0].split()[-1]) if lines else 0.0

    def frame(kind, request_id, payload):
        body = json.dumps(payload).encode()
        return struct.pack(">IBBQ", 10 + len(body), 2, kind, request_id) + body

    before = expired()
    for i in range(20):
        client = Native(daemon)
        client.sock.sendall(
            frame(WRITE, 1, {"op": "set", "path": f"/together/{i}", "value": {"a": 5}})
            + frame(SUBSCRIBE, 2, {"path": f"/together/{i}"})
        )
        answers = {}
        while 1 not in answers or 2 not in answers:
            kind, rid, payload = client.recv()
            answers.setdefault(rid, (kind, payload))
        (kind, written), (subscribed_kind, subscribed) = answers[1], answers[2]
        assert kind == WRITTEN and subscribed_kind == SUBSCRIBED, answers
        assert subscribed["liveAfter"] == written["logID"], "the listen attaches after the connection's write"
        client.close()
    assert expired() == before, "a subscribe's place held a write of its own connection back"


def test_errors_name_what_is_wrong(native):
    native.send(GET, 1, {"path": "/bad.key"})
    kind, rid, error = native.recv()
    assert (kind, rid) == (ERROR, 1) and error["code"] == "invalidKey" and "bad.key" in error["message"]
    native.send(WRITE, 2, {"op": "frobnicate", "path": "/x"})
    assert native.recv()[2]["message"].startswith("write op frobnicate")
    # A write that lost its value is refused, not taken for null (which deletes).
    native.send(WRITE, 5, {"op": "set", "path": "/kept", "value": 1})
    assert native.recv()[0] == WRITTEN
    for op in ("set", "push", "update"):
        native.send(WRITE, 6, {"op": op, "path": "/kept"})
        kind, rid, error = native.recv()
        assert (kind, rid) == (ERROR, 6) and f'write op {op} needs a "value"' in error["message"], error
    native.send(GET, 7, {"path": "/kept"})
    assert native.recv() == (VALUE, 7, {"value": 1})
    native.send(WRITE, 8, {"op": "set", "path": "/kept", "value": None})
    assert native.recv()[0] == WRITTEN
    native.send(SUBSCRIBE, 3, {"path": "/x", "query": {"orderBy": '"age"'}})
    assert 'Index not defined, add ".indexOn": "age", for path "/x"' in native.recv()[2]["message"]
    native.send(GET, 4, {"path": "/x", "ns": "../etc"})
    assert native.recv()[0] == ERROR


def test_errors_quote_long_input_only_in_part(native, daemon):
    """A 4 MiB `since` came back whole in its error (and its log line). Messages are bounded:
    the head and the end of the sentence, and how much was left out."""
    native.send(SUBSCRIBE, 1, {"path": "/x", "since": "9" * (4 << 20)})
    kind, rid, error = native.recv()
    assert (kind, rid) == (ERROR, 1), error
    assert len(error["message"].encode()) < 5000 and "bytes left out" in error["message"], error["message"][:200]
    assert error["message"].startswith("\"since\" 999") and error["message"].endswith("999 is not a log id"), error["message"][:200]
    response = requests.get(daemon.url("/y"), params={"orderBy": '"' + "k" * 30_000 + '"'})
    assert response.status_code == 400 and len(response.content) < 5000 and "bytes left out" in response.json()["error"], response.content[:300]
    log = open(daemon.log_path, "rb").read()
    assert b"9" * 5000 not in log and b"k" * 5000 not in log


@pytest.mark.parametrize(
    "frame",
    [
        struct.pack(">IBBQ", 10, 9, GET, 1),
        struct.pack(">IBBQ", 10, 1, GET, 1),  # version 1 (whole-value events) is no longer spoken
        struct.pack(">IBBQ", 10, 2, 99, 1),
        struct.pack(">I", 0x7FFFFFFF),
    ],
)
def test_malformed_frames_close_the_connection(daemon, frame):
    client = Native(daemon)
    client.sock.sendall(frame)
    kind, _, error = client.recv()
    assert kind == ERROR and error["message"]
    assert client.recv() is None
    client.close()


def flood(daemon, subscriber, total):
    """Writes `total` 8 KiB values under /flood (all acknowledged: writers never wait for a slow
    subscriber), then reads everything `subscriber` was sent until the daemon closes it.
    Returns the writer connection and the frames."""
    writer = Native(daemon)
    blob = "x" * 8192
    for i in range(total):
        writer.send(WRITE, i, {"op": "set", "path": f"/flood/k{i % 4}", "value": {"i": i, "blob": blob}})
    for i in range(total):
        assert writer.recv()[0] == WRITTEN
    frames = []
    while True:
        frame = subscriber.recv()
        if frame is None:
            return writer, frames
        frames.append(frame)


def test_a_subscriber_that_stops_reading_is_told_it_is_behind(daemon_factory):
    daemon = daemon_factory("--stream-buffer-batches", "16")
    subscriber = Native(daemon)
    subscriber.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    subscriber.send(SUBSCRIBE, 1, {"path": "/flood"})
    assert subscriber.recv()[0] == SUBSCRIBED
    writer, frames = flood(daemon, subscriber, 600)
    assert frames[-1][0] == BEHIND, [f[0] for f in frames[-3:]]
    assert len(frames) < 600
    delivered = [f[2]["events"][-1].get("logID") for f in frames if f[0] == EVENTS]
    last = frames[-1][2]["lastDelivered"]
    assert last in delivered, "behind names a log id the subscriber was sent"
    # Resuming after the last id received delivers exactly the rest of the 600 writes.
    received = [f[2]["events"][0]["value"]["i"] for f in frames if f[0] == EVENTS and f[2]["events"][0].get("logID")]
    # Each value event carries just the write: a put of one child, never the whole location.
    for f in frames:
        if f[0] == EVENTS and f[2]["events"][0].get("logID"):
            (change,) = f[2]["events"][-1]["changes"]
            assert change["op"] == "put" and change["path"].startswith("/k") and change["data"]["i"] == f[2]["events"][0]["value"]["i"]
    resumed = Native(daemon)
    resumed.send(SUBSCRIBE, 2, {"path": "/flood", "since": delivered[-1]})
    assert resumed.recv()[0] == SUBSCRIBED
    rest = []
    while len(received) + len(rest) < 600:
        kind, _, payload = resumed.recv()
        assert kind == EVENTS
        rest.append(payload["events"][0]["value"]["i"])
    assert received + rest == list(range(600)), "no gap, no duplicate"
    resumed.close()
    writer.close()


def test_one_write_to_a_location_many_subscriptions_share_reaches_them_all(daemon_factory):
    """A write makes one events frame per subscription it reaches: 600 subscriptions of one
    connection on one location were cut off by a single write at a buffer of 32 frames (8,192
    by default, while 100,000 subscriptions per connection are allowed). Each subscription may
    have one frame waiting beyond the buffer now; a reader that falls behind is still cut off."""
    daemon = daemon_factory("--stream-buffer-batches", "32")
    client = Native(daemon)
    count = 600
    for n in range(count):
        # Different queries, so each is its own listener with its own events.
        client.send(SUBSCRIBE, n + 1, {"path": "/many", "query": {"orderBy": '"$key"', "startAt": f'"{n:04d}"'}})
    subscribed = 0
    while subscribed < count:
        kind, _, payload = client.recv()
        assert kind in (SUBSCRIBED, EVENTS), (kind, payload)
        subscribed += kind == SUBSCRIBED
    requests.put(daemon.url("/many/9999"), data="1")
    reached = set()
    client.sock.settimeout(20)
    while len(reached) < count:
        kind, rid, payload = client.recv()
        assert kind == EVENTS, (kind, payload)
        if any(e.get("logID") for e in payload["events"]):
            reached.add(rid)
    assert reached == set(range(1, count + 1))
    client.close()


def test_eddy_watch_prints_events_as_json_lines(daemon):
    import subprocess
    from conftest import EDDY

    requests.put(daemon.url("/w"), data=json.dumps({"a": 1}))
    watch = subprocess.Popen(
        [EDDY, "watch", "/w", "--data", daemon.data_dir, "--order-by", '"$key"', "--limit-to-last", "1", "--max-events", "4"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = json.loads(watch.stdout.readline())
    assert first["subscribed"]["liveAfter"]
    assert json.loads(watch.stdout.readline()) == {"kind": "child_added", "key": "a", "value": 1}
    assert json.loads(watch.stdout.readline()) == {"kind": "value", "value": {"a": 1}}
    requests.put(daemon.url("/w/b"), data="2")
    removed = json.loads(watch.stdout.readline())
    assert removed["kind"] == "child_removed" and removed["key"] == "a" and removed["logID"] > first["subscribed"]["liveAfter"]
    assert watch.wait(timeout=20) == 0
    # --events value: the whole value first, then only the changes.
    values = subprocess.Popen(
        [EDDY, "watch", "/w", "--data", daemon.data_dir, "--events", "value", "--max-events", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert "subscribed" in json.loads(values.stdout.readline())
    assert json.loads(values.stdout.readline()) == {"kind": "value", "value": {"a": 1, "b": 2}}
    requests.put(daemon.url("/w/a/deep"), data="3")
    change = json.loads(values.stdout.readline())
    assert change["changes"] == [{"op": "put", "path": "/a/deep", "data": 3}] and change["logID"]
    assert values.wait(timeout=20) == 0
    failed = subprocess.run([EDDY, "watch", "/w", "--socket", "/nonexistent/eddyd.sock"], capture_output=True, timeout=20)
    assert failed.returncode == 1 and b"cannot connect to /nonexistent/eddyd.sock" in failed.stderr


def test_subscriptions_resume_after_a_log_id(native, daemon):
    native.send(WRITE, 1, {"op": "set", "path": "/res", "value": {"a": 1}})
    _, _, first = native.recv()
    for i, (path, value) in enumerate([("/res/b", 2), ("/elsewhere", 0), ("/res/a", None)]):
        native.send(WRITE, 10 + i, {"op": "set", "path": path, "value": value})
        native.recv()
    native.send(SUBSCRIBE, 2, {"path": "/res", "since": first["logID"]})
    kind, rid, subscribed = native.recv()
    assert (kind, rid) == (SUBSCRIBED, 2)
    batches = [native.recv(), native.recv()]
    assert [b[0] for b in batches] == [EVENTS, EVENTS]
    assert [[(e["kind"], e.get("key")) for e in b[2]["events"]] for b in batches] == [
        [("child_added", "b"), ("value", None)],
        [("child_removed", "a"), ("value", None)],
    ]
    assert batches[1][2]["events"][-1]["changes"] == [{"op": "put", "path": "/a", "data": None}]
    native.send(SUBSCRIBE, 3, {"path": "/res", "since": "not-a-log-id"})
    kind, rid, error = native.recv()
    assert (kind, rid) == (ERROR, 3) and "is not a log id" in error["message"]


def test_value_subscriptions_receive_the_change_and_apply_to_the_value(native, daemon):
    """`"events": "value"`: the first frame holds the whole value, every later one only what
    its write changed (put at the written path, patch of updated children), so a client that
    applies them holds exactly what a GET returns."""
    big = {f"c{i}": {"x": i, "pad": "p" * 1000} for i in range(200)}
    requests.put(daemon.url("/vs"), data=json.dumps(big))
    native.send(SUBSCRIBE, 1, {"path": "/vs", "events": "value"})
    assert native.recv()[0] == SUBSCRIBED
    kind, _, first = native.recv()
    assert kind == EVENTS and first["events"] == [{"kind": "value", "value": big}]
    value = first["events"][0]["value"]

    writer = Native(daemon)
    writes = [
        (WRITE, {"op": "set", "path": "/vs/c7/x", "value": 70}, [{"op": "put", "path": "/c7/x", "data": 70}]),
        (WRITE, {"op": "update", "path": "/vs", "value": {"c1/x": 10, "c2/x": 20}}, None),
        (WRITE, {"op": "update", "path": "/vs/c3", "value": {"x": None, "y": 3}}, [{"op": "patch", "path": "/c3", "data": {"x": None, "y": 3}}]),
        (WRITE, {"op": "remove", "path": "/vs/c4"}, [{"op": "put", "path": "/c4", "data": None}]),
        (WRITE, {"op": "set", "path": "/elsewhere", "value": 1}, "nothing"),
        (WRITE, {"op": "set", "path": "/vs/c5/x", "value": 5}, "nothing"),  # the same value again
        (WRITE, {"op": "set", "path": "/", "value": {"vs": {"only": 1}}}, [{"op": "put", "path": "/", "data": {"only": 1}}]),
    ]
    for i, (kind, request, expected) in enumerate(writes):
        writer.send(kind, 100 + i, request)
        assert writer.recv()[0] == WRITTEN
        if expected == "nothing":
            continue
        kind, _, frame = native.recv()
        assert kind == EVENTS
        (event,) = frame["events"]
        assert event["kind"] == "value" and "value" not in event
        if expected is not None:
            assert event["changes"] == expected
        assert sum(len(json.dumps(c)) for c in event["changes"]) < 2000, "a change, not the location"
        for change in event["changes"]:
            value = apply_change(value, change["op"], change["path"], change["data"])
        native.send(GET, 200 + i, {"path": "/vs"})
        assert native.recv() == (VALUE, 200 + i, {"value": value})
    native.send(SUBSCRIBE, 2, {"path": "/vs", "events": "some"})
    kind, rid, error = native.recv()
    assert (kind, rid) == (ERROR, 2) and '"events" must be "all" or "value"' in error["message"]
    writer.close()


@pytest.mark.parametrize(
    "kind,payload,needle",
    [
        (UNSUBSCRIBE, {"subscription": 1e20}, '"subscription" must be the request id of the subscribe'),
        (UNSUBSCRIBE, {"subscription": -1}, "from 0 to 9007199254740992"),
        (UNSUBSCRIBE, {"subscription": 1.5}, "not 1.5"),
        (UNSUBSCRIBE, {"subscription": "7"}, '"subscription"'),
        (WRITE, {"op": "set", "path": "/n", "value": 1, "silence": [-1]}, '"silence" must be a list of subscription ids'),
        (WRITE, {"op": "set", "path": "/n", "value": 1, "silence": [1e30]}, "not 1e+30"),
        (WRITE, {"op": "set", "path": "/n", "value": 1, "silence": ["x"]}, '"silence"'),
        (WRITE, {"op": "set", "path": "/n", "value": 1, "silence": 5}, '"silence" must be a list'),
    ],
)
def test_numbers_out_of_range_are_refused_not_fatal(native, daemon, kind, payload, needle):
    """Issue 11: `unsubscribe {"subscription": 1e20}` and `silence: [-1]` trapped eddyd (Double to
    integer conversions). They are answered with an error naming the field; nothing is written
    and the daemon keeps serving."""
    native.send(kind, 3, payload)
    answer_kind, rid, error = native.recv()
    assert (answer_kind, rid) == (ERROR, 3) and error["code"] == "invalidArgument", error
    assert needle in error["message"], error["message"]
    native.send(GET, 4, {"path": "/n"})
    assert native.recv() == (VALUE, 4, {"value": None}), "the refused write was not applied"
    assert requests.get(daemon.url("/n")).status_code == 200


@pytest.mark.parametrize(
    "flags",
    [
        ("--stream-buffer-bytes", "65536"),  # its own bound
        ("--stream-buffer-bytes", "1073741824", "--stream-buffers-bytes-total", "65536"),  # the shared one
    ],
    ids=["per-subscriber bytes", "all subscribers' bytes"],
)
def test_a_stalled_subscriber_is_bounded_in_bytes(daemon_factory, flags):
    """Issue 11, item 4: the per-connection bound counted frames (1,024 of up to 16 MiB each),
    so a few stalled subscribers could take gigabytes. With the frame count out of reach, a
    subscriber that stops reading is cut off with `behind` once the bytes waiting for it pass
    its bound or the daemon's total, and resumes from there without a gap."""
    daemon = daemon_factory("--stream-buffer-batches", "1000000", *flags)
    subscriber = Native(daemon)
    subscriber.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    subscriber.send(SUBSCRIBE, 1, {"path": "/flood", "events": "value"})
    assert subscriber.recv()[0] == SUBSCRIBED
    total = 1000  # 8 MB of events: far past either bound, far below the frame count
    writer, frames = flood(daemon, subscriber, total)
    assert frames[-1][0] == BEHIND, [f[0] for f in frames[-3:]]
    received = [f[2]["events"][0]["changes"][0]["data"]["i"] for f in frames if f[0] == EVENTS and f[2]["events"][0].get("logID")]
    assert len(received) < total
    # A client resumes from the id it was given, again if its catch-up (8 MB here) is cut off
    # too: every round delivers at least one entry, so it ends, with no gap and no duplicate.
    last = frames[-1][2]["lastDelivered"]
    rounds = 0
    while len(received) < total:
        rounds += 1
        assert rounds <= 200, f"no progress: {len(received)} of {total} after {rounds} resumes"
        resumed = Native(daemon)
        resumed.send(SUBSCRIBE, 2, {"path": "/flood", "events": "value", "since": last})
        assert resumed.recv()[0] == SUBSCRIBED
        before = len(received)
        while len(received) < total:
            frame = resumed.recv()
            assert frame is not None, "closed without behind"
            kind, _, payload = frame
            if kind == BEHIND:
                last = payload["lastDelivered"]
                break
            assert kind == EVENTS
            received.append(payload["events"][0]["changes"][0]["data"]["i"])
            last = payload["events"][0]["logID"]
        assert len(received) > before, "a resume delivered nothing"
        resumed.close()
    assert received == list(range(total)), "no gap, no duplicate"
    writer.close()


def rss_bytes(daemon):
    with open(f"/proc/{daemon.process.pid}/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))


def test_a_client_that_pipelines_reads_without_reading_answers_holds_bounded_memory(daemon):
    """Issue 11, item 4: answers waiting for a client that does not read them are bounded in
    bytes (the next request waits once 4 MiB are unread); nothing is dropped: once the client
    reads, every answer arrives, in order."""
    big = "x" * (1 << 20)
    assert requests.put(daemon.url("/big"), json=big).status_code == 200
    client = Native(daemon)
    client.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    baseline = rss_bytes(daemon)
    count = 64  # 64 MiB of answers if they were all built at once
    for i in range(count):
        client.send(GET, i, {"path": "/big"})
    time.sleep(1.5)
    held = rss_bytes(daemon) - baseline
    assert held < 24 << 20, f"{held} bytes held for an unread client"
    for i in range(count):
        assert client.recv() == (VALUE, i, {"value": big})
    client.close()
    assert requests.get(daemon.url("/big")).status_code == 200


@pytest.mark.parametrize("count, size", [(3000, 100), (96, 1 << 20)], ids=["requests", "bytes"])
def test_a_client_that_sends_faster_than_it_is_served_is_read_no_faster(daemon, count, size):
    """Requests waiting to be served are bounded: past 1,024 of them or 64 MiB the daemon stops
    reading the socket, so the client's sends block instead of filling the daemon's memory;
    every write is still applied and answered in order."""
    assert requests.put(daemon.url("/big"), json="x" * (8 << 20)).status_code == 200
    client = Native(daemon)
    client.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    # 96 MiB of writes through a debug eddyd that shares two cores with other tests' daemons:
    # an answer may take longer than the usual 20 s to come, which is no hang.
    client.sock.settimeout(120)
    client.send(GET, 0, {"path": "/big"})  # an answer the client leaves unread holds up the request task
    payload = "y" * size
    sent = []

    def sender():
        for i in range(1, count + 1):
            client.send(WRITE, i, {"op": "set", "path": f"/fast/k{i % 4}", "value": payload})
            sent.append(i)

    thread = threading.Thread(target=sender, daemon=True)
    thread.start()
    time.sleep(2)
    assert len(sent) < count, f"the daemon read all {count} requests of {size} bytes it could not serve yet"
    answers = [client.recv() for _ in range(count + 1)]
    thread.join(timeout=30)
    assert [a[:2] for a in answers] == [(VALUE, 0)] + [(WRITTEN, i) for i in range(1, count + 1)]
    assert requests.get(daemon.url("/fast/k0")).json() == payload
    client.close()


def test_conditional_writes_compare_and_set(native, daemon):
    """`ifMatch` on a write applies it only while the location's ETag is the one given; a
    refusal carries the current value and its ETag, so a transaction can retry at once."""
    native.send(WRITE, 1, {"op": "set", "path": "/cas", "value": 1})
    assert native.recv()[0] == WRITTEN
    native.send(GET, 2, {"path": "/cas", "etag": True})
    kind, _, answer = native.recv()
    assert kind == VALUE and answer["value"] == 1
    assert answer["etag"] == requests.get(daemon.url("/cas"), headers={"X-Firebase-ETag": "true"}).headers["ETag"]
    native.send(WRITE, 3, {"op": "set", "path": "/cas", "value": 2, "ifMatch": answer["etag"]})
    assert native.recv()[0] == WRITTEN
    native.send(WRITE, 4, {"op": "set", "path": "/cas", "value": 3, "ifMatch": answer["etag"]})
    kind, rid, refused = native.recv()
    assert (kind, rid) == (ERROR, 4) and refused["code"] == "preconditionFailed", refused
    assert refused["current"] == 2 and refused["etag"] != answer["etag"]
    native.send(WRITE, 5, {"op": "set", "path": "/cas", "value": 3, "ifMatch": refused["etag"]})
    assert native.recv()[0] == WRITTEN
    assert requests.get(daemon.url("/cas")).json() == 3


def test_conditional_writes_compare_the_priorities_too(native, daemon):
    """The ETag covers priorities (Firebase's hash does): `get` with `etag` answers the plain
    value and the ETag REST answers; after a change of priority alone the ETag is stale, and
    the refusal carries the current value in export form."""
    native.send(WRITE, 1, {"op": "set", "path": "/casp", "value": {"v": 1, ".priority": 1}})
    assert native.recv()[0] == WRITTEN
    for rid, flags in ((2, {}), (3, {"priorities": True})):
        native.send(GET, rid, {"path": "/casp", "etag": True, **flags})
        kind, _, answer = native.recv()
        expected = {"v": 1, ".priority": 1} if flags else {"v": 1}
        assert kind == VALUE and answer["value"] == expected, answer
        assert answer["etag"] == requests.get(daemon.url("/casp"), headers={"X-Firebase-ETag": "true"}).headers["ETag"]
    native.send(WRITE, 4, {"op": "set", "path": "/casp/.priority", "value": 2})
    assert native.recv()[0] == WRITTEN
    native.send(WRITE, 5, {"op": "set", "path": "/casp", "value": {"v": 2}, "ifMatch": answer["etag"]})
    kind, rid, refused = native.recv()
    assert (kind, rid) == (ERROR, 5) and refused["code"] == "preconditionFailed", refused
    assert refused["current"] == {"v": 1, ".priority": 2}, refused
    assert refused["etag"] == requests.get(daemon.url("/casp"), headers={"X-Firebase-ETag": "true"}).headers["ETag"]
    native.send(WRITE, 6, {"op": "set", "path": "/casp", "value": {"v": 2}, "ifMatch": refused["etag"]})
    assert native.recv()[0] == WRITTEN
    assert requests.get(daemon.url("/casp", format="export")).json() == {"v": 2}


def test_the_native_protocol_over_tcp(daemon_factory):
    """`--native-listen HOST:PORT` serves the same protocol over TCP; eddyd prints the address."""
    daemon = daemon_factory("--native-listen", "127.0.0.1:0")
    out = daemon.native_tcp
    assert out, "eddyd printed no native TCP address"
    host, port = out.rsplit(":", 1)
    client = Native.__new__(Native)
    client.sock = socket.create_connection((host, int(port)), timeout=20)
    client.buf = bytearray()
    client.send(WRITE, 1, {"op": "set", "path": "/tcp", "value": "yes"})
    assert client.recv()[0] == WRITTEN
    client.send(GET, 2, {"path": "/tcp"})
    assert client.recv() == (VALUE, 2, {"value": "yes"})
    client.close()


def test_a_coalescing_subscription_gets_every_entry_in_log_order(daemon):
    """`coalesce: true`: a live events frame may hold several entries (those committed together);
    the subscriber still gets every write, once, in log order, each event naming its entry, and
    the value it rebuilds from the changes is the stored one. A subscriber without it gets one
    entry per frame, as before."""
    coalescing, plain, writer = Native(daemon), Native(daemon), Native(daemon)
    coalescing.send(SUBSCRIBE, 1, {"path": "/burst", "events": "value", "coalesce": True})
    plain.send(SUBSCRIBE, 1, {"path": "/burst", "events": "value"})
    for client in (coalescing, plain):
        assert client.recv()[0] == SUBSCRIBED
        kind, _, first = client.recv()
        assert kind == EVENTS and first["events"] == [{"kind": "value", "value": None}]
    count = 500
    # Pipelined: the daemon commits them in groups of many entries.
    for i in range(count):
        writer.send(WRITE, i, {"op": "set", "path": f"/burst/k{i:03d}", "value": i})
    acks = {}
    while len(acks) < count:
        kind, request_id, payload = writer.recv()
        assert kind == WRITTEN, payload
        acks[request_id] = payload["logID"]
    in_order = [acks[i] for i in range(count)]
    assert in_order == sorted(in_order)

    def read(client):
        frames, ids, value = [], [], {}
        while len(ids) < count:
            kind, _, payload = client.recv()
            assert kind == EVENTS, payload
            frames.append(payload["events"])
            for event in payload["events"]:
                assert event["kind"] == "value" and event["logID"], event
                ids.append(event["logID"])
                for change in event["changes"]:
                    value = apply_change(value, change["op"], change["path"], change["data"])
        return frames, ids, value

    frames, ids, value = read(coalescing)
    assert ids == in_order, "every entry once, in log order"
    assert value == {f"k{i:03d}": i for i in range(count)}
    print(f"coalescing subscriber: {count} entries in {len(frames)} frames")
    plain_frames, plain_ids, _ = read(plain)
    assert plain_ids == in_order and len(plain_frames) == count, "one entry per frame without coalesce"
    for client in (coalescing, plain, writer):
        client.close()


def test_coalesce_must_be_a_boolean(native):
    native.send(SUBSCRIBE, 1, {"path": "/a", "coalesce": "yes"})
    kind, request_id, payload = native.recv()
    assert kind == ERROR and request_id == 1
    assert payload["code"] == "invalidArgument" and '"coalesce"' in payload["message"], payload


ON_DISCONNECT, CANCEL_DISCONNECT = 13, 14


def test_on_disconnect_writes_run_when_a_connection_ends_however_it_ends(daemon_factory):
    """Firebase's onDisconnect over the native protocol: validated at registration (a bad key or
    a push is refused, naming it, and a write the rules deny now is refused as Firebase refuses
    it, permission denied; none of them holds anything), run in order when the connection ends
    (here a process that dies with its socket open: the kernel closes it), with the identity of
    the registration and the rules as they are when they run (checked again: /presence/locked,
    allowed when registered, is denied by then); cancelled ones do not run."""
    d = daemon_factory()
    requests.put(d.url("/presence"), data=json.dumps({"a": "online", "b": "here", "c": "keep", "locked": "x"})).raise_for_status()
    write_rule = "$k != 'never' && ($k != 'locked' || !root.child('lockdown').exists())"
    requests.put(d.base_url + "/.settings/rules.json", data=json.dumps(
        {"rules": {".read": True, "presence": {"$k": {".write": write_rule}}}})).raise_for_status()
    script = f"""
import json, os, socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect({os.path.join(d.data_dir, "eddyd.sock")!r})
def send(kind, rid, payload):
    body = json.dumps(payload).encode()
    s.sendall(struct.pack(">IBBQ", 10 + len(body), 2, kind, rid) + body)
def recv():
    head = b""
    while len(head) < 4: head += s.recv(4 - len(head))
    n = struct.unpack(">I", head)[0]
    body = b""
    while len(body) < n: body += s.recv(n - len(body))
    return body[1], json.loads(body[10:])
send({ON_DISCONNECT}, 1, {{"op": "set", "path": "/presence/a", "value": "offline"}})
send({ON_DISCONNECT}, 2, {{"op": "remove", "path": "/presence/b"}})
send({ON_DISCONNECT}, 3, {{"op": "update", "path": "/presence", "value": {{"seen": {{".sv": "timestamp"}}, "n": 1}}}})
send({ON_DISCONNECT}, 4, {{"op": "set", "path": "/presence/c", "value": "changed"}})
send({ON_DISCONNECT}, 5, {{"op": "set", "path": "/presence/locked", "value": "denied when it runs"}})
send({ON_DISCONNECT}, 6, {{"op": "set", "path": "/presence/a", "value": "offline at last"}})
send({CANCEL_DISCONNECT}, 7, {{"path": "/presence/c"}})
send({ON_DISCONNECT}, 8, {{"op": "set", "path": "/presence/bad", "value": {{"a.b": 1}}}})
send({ON_DISCONNECT}, 9, {{"op": "push", "path": "/presence", "value": 1}})
send({ON_DISCONNECT}, 10, {{"op": "set", "path": "/presence/never", "value": "denied when registered"}})
for _ in range(10):
    kind, payload = recv()
    print(kind, json.dumps(payload, sort_keys=True), flush=True)
sys.stdin.readline()
os.kill(os.getpid(), 9)
"""
    import subprocess, sys
    child = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        lines = [child.stdout.readline() for _ in range(10)]
        assert all(lines), lines
        answers = [(int(line.split(" ", 1)[0]), json.loads(line.split(" ", 1)[1])) for line in lines]
        assert answers[:6] == [(VALUE, {"value": None})] * 6
        assert answers[6] == (VALUE, {"value": {"cancelled": 1}})
        assert answers[7][0] == ERROR and '"a.b"' in answers[7][1]["message"]
        assert answers[8][0] == ERROR and "push" in answers[8][1]["message"]
        assert answers[9][0] == ERROR and answers[9][1]["code"] == "permissionDenied", answers[9]
        # Registered, not run; now the rules deny /presence/locked.
        assert requests.get(d.url("/presence/a")).json() == "online"
        requests.put(d.url("/lockdown"), headers={"Authorization": "Bearer owner"}, data="true").raise_for_status()
        child.stdin.write("\n")
        child.stdin.flush()
        child.wait(timeout=60)
    finally:
        child.kill()
    # The rules refuse the one write of the whole list (/presence/locked), so its parts are made
    # one at a time in path order: /presence/seen is the last of them.
    deadline = time.monotonic() + 20
    while "seen" not in (after := requests.get(d.url("/presence")).json()):
        assert time.monotonic() < deadline, (after, d.log_tail(2000))
        time.sleep(0.05)
    assert after["a"] == "offline at last"
    assert "b" not in after and after["c"] == "keep" and after["n"] == 1 and "bad" not in after
    assert abs(after["seen"] / 1000 - time.time()) < 60
    assert after["locked"] == "x", "the rules are checked when the write runs"
    assert "never" not in after
    assert "an onDisconnect write was not made" in d.log_tail(4000)


def test_on_disconnect_writes_are_bounded_per_connection(native):
    for i in range(1000):
        native.send(ON_DISCONNECT, i + 1, {"op": "set", "path": f"/bounded/{i}", "value": i})
    for i in range(1000):
        assert native.recv() == (VALUE, i + 1, {"value": None})
    native.send(ON_DISCONNECT, 5000, {"op": "set", "path": "/bounded/x", "value": 1})
    kind, rid, payload = native.recv()
    assert (kind, rid) == (ERROR, 5000) and payload["code"] == "limitExceeded" and "onDisconnectCountMax" in payload["message"]
    native.send(CANCEL_DISCONNECT, 5001, {"path": "/bounded"})
    assert native.recv() == (VALUE, 5001, {"value": {"cancelled": 1000}})


def test_on_disconnect_writes_run_when_eddyd_stops(daemon_factory):
    """A stop closes every connection and waits for their onDisconnect writes before the
    databases close: after a restart each is there."""
    d = daemon_factory()
    for i in range(3):
        client = Native(d)
        client.send(ON_DISCONNECT, 1, {"op": "set", "path": f"/stopped/{i}", "value": "ran"})
        assert client.recv() == (VALUE, 1, {"value": None})
        d.stop()
        d.start()
        assert requests.get(d.url(f"/stopped/{i}")).json() == "ran", d.log_tail(2000)
        client.close()


def native_on_http_port(daemon):
    """A native client on eddyd's HTTP port (which tells the protocols apart by the first byte)."""
    client = Native.__new__(Native)
    client.sock = socket.create_connection((daemon.base_url.split("//")[1].rsplit(":", 1)[0], daemon.port), timeout=20)
    client.buf = bytearray()
    return client


def test_the_http_port_takes_the_native_protocol_too(daemon):
    """Frames on the HTTP port are served as on the socket, beside HTTP on the same port;
    subscriptions there are live, and the metrics count them as native."""
    client = native_on_http_port(daemon)
    client.send(WRITE, 1, {"op": "set", "path": "/both/a", "value": "native"})
    assert client.recv()[0] == WRITTEN
    assert requests.get(daemon.url("/both/a")).json() == "native"
    client.send(SUBSCRIBE, 2, {"path": "/both"})
    assert client.recv()[:2] == (SUBSCRIBED, 2)
    assert client.recv()[:2] == (EVENTS, 2)
    assert requests.put(daemon.url("/both/b"), json="http").status_code == 200
    kind, rid, payload = client.recv()
    assert (kind, rid) == (EVENTS, 2)
    assert any(e.get("key") == "b" and e.get("value") == "http" for e in payload["events"]), payload
    metrics = requests.get(daemon.base_url + "/metrics").text
    assert 'eddy_subscriptions{transport="native"} 1' in metrics, [l for l in metrics.splitlines() if "subscriptions" in l]
    client.close()


def test_a_silent_connection_on_the_http_port_closes_after_the_idle_timeout(daemon_factory):
    d = daemon_factory("--http-idle-timeout-seconds", "1")
    sock = socket.create_connection(("127.0.0.1", d.port), timeout=30)  # far past the 1 s idle timeout
    assert sock.recv(1) == b"", "closed without a byte"
    sock.close()


def test_a_stop_closes_native_connections_on_the_http_port_and_runs_their_on_disconnect_writes(daemon_factory):
    d = daemon_factory()
    client = native_on_http_port(d)
    client.send(ON_DISCONNECT, 1, {"op": "set", "path": "/stopped/http-port", "value": "ran"})
    assert client.recv() == (VALUE, 1, {"value": None})
    d.stop()  # asserts a clean exit within its timeout: the stop did not wait for the client to leave
    assert client.recv() is None, "the connection was closed"
    d.start()
    assert requests.get(d.url("/stopped/http-port")).json() == "ran", d.log_tail(2000)
    client.close()


def test_on_disconnect_writes_of_a_native_connection_on_the_http_port_run_when_it_ends(daemon):
    """The HTTP listener allows half-closed connections; a native client's end still ends its
    connection there, and runs its onDisconnect writes."""
    client = native_on_http_port(daemon)
    client.send(ON_DISCONNECT, 1, {"op": "set", "path": "/ended/http-port", "value": "ran"})
    assert client.recv() == (VALUE, 1, {"value": None})
    client.sock.shutdown(socket.SHUT_WR)
    assert client.recv() is None, "the server closed its side too"
    deadline = time.monotonic() + 10
    while requests.get(daemon.url("/ended/http-port")).json() != "ran":
        assert time.monotonic() < deadline, daemon.log_tail(2000)
        time.sleep(0.05)
    client.close()


def test_a_followers_http_port_is_http_only(daemon_factory):
    """A follower redirects writes to the leader over HTTP; its HTTP port does not take the
    native protocol (where writes would only be refused), so a client probing it keeps REST."""
    from conftest import follower_of

    leader = daemon_factory()
    follower = follower_of(daemon_factory, leader)
    sock = socket.create_connection(("127.0.0.1", follower.port), timeout=10)
    body = json.dumps({"path": "/"}).encode()
    sock.sendall(struct.pack(">IBBQ", 10 + len(body), 2, GET, 1) + body)
    answer = b""
    while True:
        chunk = sock.recv(4096)
        if not chunk:
            break
        answer += chunk
        if b"\r\n\r\n" in answer:
            break
    sock.close()
    assert answer == b"" or answer.startswith(b"HTTP/1.1 4"), answer[:200]
    client = native_on_http_port(leader)  # the leader's port does
    client.send(GET, 1, {"path": "/"})
    assert client.recv() == (VALUE, 1, {"value": None})
    client.close()


def test_a_burst_of_connections_waits_in_the_listen_queue(daemon):
    # Every client of a restarted daemon reconnects at once. A Unix-socket connect finds the
    # accept queue full at once (EAGAIN) rather than waiting, so the queue must hold the burst:
    # with the 256 it had, most of 2,000 back-to-back connects failed.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    # Both ends hold a descriptor per connection, eddyd under the same hard limit.
    burst = 2000 if hard == resource.RLIM_INFINITY else min(2000, hard - 300)
    if burst < 1024:
        pytest.skip(f"the file-descriptor limit ({hard}) is too low for a burst that overflows the old queue")
    if soft < burst + 200:
        resource.setrlimit(resource.RLIMIT_NOFILE, (burst + 200, hard))
    path = os.path.join(daemon.data_dir, "eddyd.sock")
    clients, refused = [], 0
    try:
        for _ in range(burst):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.setblocking(False)  # as NIO's clients connect: a full queue fails at once
            try:
                sock.connect(path)
                clients.append(sock)
            except BlockingIOError:
                refused += 1
                sock.close()
        assert refused == 0, f"{refused} of {burst} connects found the accept queue full"
        for i, sock in enumerate(clients):
            sock.setblocking(True)
            sock.settimeout(20)
            body = json.dumps({"path": "/burst"}).encode()
            sock.sendall(struct.pack(">IBBQ", 10 + len(body), 2, GET, i) + body)
        for i, sock in enumerate(clients):
            answer = b""
            while len(answer) < 4 or len(answer) < 4 + struct.unpack(">I", answer[:4])[0]:
                answer += sock.recv(65536)
            assert struct.unpack(">BBQ", answer[4:14]) == (2, VALUE, i) and json.loads(answer[14:]) == {"value": None}
    finally:
        for sock in clients:
            sock.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


TAIL, TAILING = 7, 27


def native_subscriptions(daemon):
    text = requests.get(daemon.base_url + "/metrics").text
    (line,) = [l for l in text.splitlines() if l.startswith('eddy_subscriptions{transport="native"}')]
    return float(line.split()[-1])


def answer_to(client, request_id):
    """The answer frame to `request_id`, skipping events of other subscriptions."""
    while True:
        kind, rid, payload = client.recv()
        if rid == request_id and kind != EVENTS:
            return kind, payload


def test_a_request_id_names_one_open_subscription_or_tail(native, daemon):
    # Before, a second subscribe with the id of an open one replaced it in the connection's
    # table: the first listener outlived the connection (the gauge stayed up for good).
    native.send(SUBSCRIBE, 5, {"path": "/dup"})
    assert answer_to(native, 5)[0] == SUBSCRIBED
    native.send(SUBSCRIBE, 5, {"path": "/dup/other"})
    kind, error = answer_to(native, 5)
    assert kind == ERROR and error["code"] == "invalidArgument" and "request id 5" in error["message"], error
    native.send(TAIL, 9, {})
    assert answer_to(native, 9)[0] == TAILING
    native.send(TAIL, 9, {})
    kind, error = answer_to(native, 9)
    assert kind == ERROR and "request id 9" in error["message"], error
    native.send(SUBSCRIBE, 9, {"path": "/dup"})  # a tail's id is taken too
    assert answer_to(native, 9)[0] == ERROR
    assert native_subscriptions(daemon) == 1
    # Once unsubscribed, the id may name a new subscription.
    native.send(UNSUBSCRIBE, 6, {"subscription": 5})
    assert answer_to(native, 6) == (UNSUBSCRIBED, {"subscription": 5, "removed": True})
    native.send(SUBSCRIBE, 5, {"path": "/dup"})
    assert answer_to(native, 5)[0] == SUBSCRIBED
    native.close()
    deadline = time.monotonic() + 20
    while native_subscriptions(daemon) != 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert native_subscriptions(daemon) == 0


def test_subscriptions_are_bounded_per_connection_and_across_the_daemon(daemon_factory):
    daemon = daemon_factory("--subscriptions-per-connection-max", "3", "--subscriptions-max", "5")
    a, b = Native(daemon), Native(daemon)
    try:
        for i in range(1, 4):
            a.send(SUBSCRIBE, i, {"path": f"/bounded/a{i}"})
            assert answer_to(a, i)[0] == SUBSCRIBED
        a.send(SUBSCRIBE, 4, {"path": "/bounded/a4"})
        kind, error = answer_to(a, 4)
        assert kind == ERROR and error["code"] == "limitExceeded", error
        assert "3 subscriptions and tails" in error["message"] and "--subscriptions-per-connection-max" in error["message"]
        a.send(TAIL, 5, {})  # tails count toward the connection's bound
        assert answer_to(a, 5)[1]["code"] == "limitExceeded"
        for i in range(1, 3):
            b.send(SUBSCRIBE, i, {"path": f"/bounded/b{i}"})
            assert answer_to(b, i)[0] == SUBSCRIBED
        b.send(SUBSCRIBE, 3, {"path": "/bounded/b3"})
        kind, error = answer_to(b, 3)
        assert kind == ERROR and error["code"] == "limitExceeded" and "--subscriptions-max" in error["message"], error
        assert native_subscriptions(daemon) == 5
        # A refused subscription hears nothing: a write there reaches no one.
        b.send(WRITE, 10, {"op": "set", "path": "/bounded/b3", "value": 1})
        assert answer_to(b, 10)[0] == WRITTEN
        # Room made on one connection is room for the other.
        a.send(UNSUBSCRIBE, 11, {"subscription": 1})
        assert answer_to(a, 11)[0] == UNSUBSCRIBED
        b.send(SUBSCRIBE, 3, {"path": "/bounded/b3"})
        assert answer_to(b, 3)[0] == SUBSCRIBED
        kind, rid, first = b.recv()
        assert (kind, rid) == (EVENTS, 3) and first["events"][-1] == {"kind": "value", "value": 1}
    finally:
        a.close()
        b.close()


def test_a_subscription_whose_connection_closes_while_it_attaches_goes_too(daemon):
    # The connection closing between the subscribe's answer and its registration used to leave
    # the listener behind for good (closed() found nothing to remove yet).
    requests.put(daemon.url("/attach"), data=json.dumps({str(i): i for i in range(200)}))
    for i in range(300):
        client = Native(daemon)
        client.send(SUBSCRIBE, 1, {"path": "/attach"})
        if i % 2:
            client.recv()  # sometimes after the answer began to arrive
        client.close()
    def listeners():
        text = requests.get(daemon.base_url + "/metrics").text
        (line,) = [l for l in text.splitlines() if l.startswith('eddy_listeners{namespace="default"}')]
        return float(line.split()[-1])

    deadline = time.monotonic() + 20
    while (native_subscriptions(daemon), listeners()) != (0, 0) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (native_subscriptions(daemon), listeners()) == (0, 0)


def partial_frame(daemon, body_bytes, declared=16 << 20):
    """A native connection that sent a frame's length (`declared` bytes after the prefix), its
    header and `body_bytes` of its payload, and then nothing more."""
    client = Native(daemon)
    try:
        client.sock.sendall(struct.pack(">IBBQ", declared, 2, WRITE, 1) + b" " * body_bytes)
    except (BrokenPipeError, ConnectionResetError):
        pass  # refused and closed while sending: what it was told is read next
    return client


def test_frames_arriving_on_many_connections_share_the_request_budget(daemon_factory):
    """Each connection could hold most of a 16 MiB frame (and 64 MiB of queued requests), with
    no bound across connections and before any auth: 300 connections that sent most of a frame
    and stopped held 4.9 GB. Frames arriving now count in --request-bodies-bytes-total with
    HTTP bodies: the connection that would pass it gets an error naming it and is closed."""
    daemon = daemon_factory("--request-bytes-max", str(16 << 20), "--request-bodies-bytes-total", str(32 << 20))
    held = [partial_frame(daemon, 12 << 20) for _ in range(2)]  # 24 MiB of 32
    refused = partial_frame(daemon, 12 << 20)
    kind, _, error = refused.recv()
    assert kind == ERROR and error["code"] == "busy" and "--request-bodies-bytes-total" in error["message"], error
    assert refused.recv() is None, "the refused connection is closed"
    # The daemon still serves, over the native socket and HTTP, within the budget.
    native = Native(daemon)
    native.send(WRITE, 2, {"op": "set", "path": "/fine", "value": "x" * (4 << 20)})
    assert native.recv()[:2] == (WRITTEN, 2)
    assert requests.get(daemon.url("/fine")).json() == "x" * (4 << 20)
    # The stalled connections give their bytes back when they go: a large frame fits again.
    for client in held:
        client.close()
    deadline = time.monotonic() + 10
    while True:
        native.send(WRITE, 3, {"op": "set", "path": "/big", "value": {"a": "y" * (6 << 20), "b": "z" * (6 << 20)}})
        frame = native.recv()
        if frame is not None and frame[:2] == (WRITTEN, 3):
            break
        assert time.monotonic() < deadline, f"the budget was not given back: {frame}"
        native = Native(daemon)
        time.sleep(0.2)
    assert requests.get(daemon.url("/big/b")).json() == "z" * (6 << 20)


def test_a_frame_that_stops_arriving_ends_its_connection(daemon_factory):
    daemon = daemon_factory("--http-body-timeout-seconds", "1")
    stalled = partial_frame(daemon, 1000, declared=100_000)
    stalled.sock.settimeout(15)
    kind, _, error = stalled.recv()
    assert kind == ERROR and "stopped arriving" in error["message"] and "--http-body-timeout-seconds" in error["message"], error
    assert stalled.recv() is None
    # A connection that sends whole frames and then idles stays (subscribers idle for hours).
    idle = Native(daemon)
    idle.send(GET, 1, {"path": "/x"})
    assert idle.recv() == (VALUE, 1, {"value": None})
    time.sleep(2.5)
    idle.send(GET, 2, {"path": "/x"})
    assert idle.recv() == (VALUE, 2, {"value": None})


def replication_connection(daemon, hello=True):
    """A raw connection to the leader's replication socket, saying a follower's hello unless
    `hello` is False."""
    client = Native.__new__(Native)
    client.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.sock.settimeout(20)
    client.sock.connect(os.path.join(daemon.data_dir, "replication.sock"))
    client.buf = bytearray()
    if hello:
        try:
            client.send(40, 0, {"protocol": 4, "ns": "default", "follower": "w", "databaseID": None, "lastApplied": None, "snapshot": False})
        except BrokenPipeError:
            pass  # one past the cap is refused and closed at once; the refusal is still there to read
    return client


def next_replication_frame(client):
    """(kind, raw payload), or None at the end: replication frames may carry binary payloads."""
    while True:
        if len(client.buf) >= 4:
            (n,) = struct.unpack(">I", client.buf[:4])
            if len(client.buf) >= 4 + n:
                kind, payload = client.buf[5], bytes(client.buf[14 : 4 + n])
                del client.buf[: 4 + n]
                return kind, payload
        try:
            chunk = client.sock.recv(1 << 20)
        except ConnectionResetError:  # closed with our frames unread
            return None
        if not chunk:
            return None
        client.buf += chunk


REPLICATION_WELCOME, REPLICATION_REFUSED = 41, 42


def test_a_watch_frame_is_bounded_by_the_namespaces_the_leader_holds(daemon):
    """A follower's `watch` frame registered every namespace it named, held or not: one frame
    naming 900,000 made-up namespaces filled the leader's tables for good and stalled every
    heartbeat. Names the leader does not hold now fire at once (a follower learns a namespace
    is gone), at most 64 of them; a frame naming more is refused."""
    requests.put(daemon.url("/a"), data="1")
    few = replication_connection(daemon)
    few.send(50, 0, {"namespaces": {f"gone{i}": None for i in range(3)}})
    too_many = replication_connection(daemon)
    too_many.send(50, 0, {"namespaces": {f"made-up{i}": None for i in range(100_000)}})
    while True:
        frame = next_replication_frame(too_many)
        assert frame is not None, "closed without saying why"
        if frame[0] == REPLICATION_REFUSED:
            break
    assert "100000 namespaces this leader does not hold" in json.loads(frame[1])["message"], frame
    assert requests.get(daemon.url("/a"), timeout=10).json() == 1
    few.close()
    too_many.close()


def test_replication_connections_are_capped_and_idle_ones_closed(daemon_factory):
    """Nothing bounded the replication listeners: 2,000 connections that said hello and read
    nothing held 6 GB once writes flowed. At most --replication-connections-max are taken now,
    one past it is refused naming the option, and one that says no hello goes after 10 s."""
    daemon = daemon_factory("--replication-connections-max", "3")
    requests.put(daemon.url("/a"), data="1")
    silent = [replication_connection(daemon, hello=False) for _ in range(2)]
    follower = replication_connection(daemon)
    assert next_replication_frame(follower)[0] == REPLICATION_WELCOME
    opened_at = time.monotonic()
    extra = replication_connection(daemon)
    kind, payload = next_replication_frame(extra)
    refusal = json.loads(payload)
    assert kind == REPLICATION_REFUSED and refusal["reason"] == "busy", refusal
    assert "--replication-connections-max 3" in refusal["message"], refusal
    assert next_replication_frame(extra) is None
    # The silent ones are closed after their 10 s; the follower stays (heartbeats).
    for client in silent:
        assert next_replication_frame(client) is None
    waited = time.monotonic() - opened_at
    assert 8 < waited < 18, waited
    late = replication_connection(daemon)
    assert next_replication_frame(late)[0] == REPLICATION_WELCOME
    requests.put(daemon.url("/b"), data="2")
    kinds = set()
    while 43 not in kinds:  # entries: the follower still streams
        kinds.add(next_replication_frame(follower)[0])
    for client in [follower, late, extra, *silent]:
        client.close()


def test_checkpoints_are_bounded_and_released_when_their_connection_ends(daemon):
    """200 `checkpoint` requests without a release left 200 checkpoints on disk, each keeping
    every file it linked, until the next start. At most 8 are held now, and a connection's
    are released when it ends (a backup that died)."""
    requests.put(daemon.url("/c"), data="1")
    client = Native(daemon)
    held = os.path.join(daemon.data_dir, ".checkpoints")
    for n in range(8):
        client.send(9, n + 1, {})
        kind, _, answer = client.recv()
        assert kind == VALUE and answer["value"]["id"], answer
    client.send(9, 100, {})
    kind, _, error = client.recv()
    assert kind == ERROR and error["code"] == "busy" and "at most 8" in error["message"], error
    assert len(os.listdir(held)) == 8
    client.close()
    deadline = time.monotonic() + 15
    while os.path.exists(held) and os.listdir(held):
        assert time.monotonic() < deadline, f"not released: {os.listdir(held)}"
        time.sleep(0.1)
    again = Native(daemon)
    again.send(9, 1, {})
    assert again.recv()[0] == VALUE
    again.close()
