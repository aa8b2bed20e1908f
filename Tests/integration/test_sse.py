"""Firebase REST streaming (Server-Sent Events) against a real eddyd, checked on the raw bytes:
the first `put`, then `put`/`patch` per write with paths relative to the location and an `id:`
line carrying the log id, keep-alives, query windows, resuming with `Last-Event-ID` (no gap, no
duplicate, also across a restart), firebase-admin's `listen()`, and streams ending at shutdown.
"""

import http.client
import json
import queue
import socket
import threading
import time
import uuid

import pytest
import requests

from conftest import firebase_app, wait_for_indexes


class SSEClient:
    """One streaming GET on a raw HTTP connection; frames (event, id, data, raw text) land in a
    queue as they arrive."""

    def __init__(self, daemon, path, query="", headers=None):
        self.conn = http.client.HTTPConnection("127.0.0.1", daemon.port, timeout=30)
        target = "/" + path.strip("/") + ".json" + (("?" + query) if query else "")
        self.conn.request("GET", target, headers={"Accept": "text/event-stream", **(headers or {})})
        self.response = self.conn.getresponse()
        self.frames = queue.Queue()
        self.reading = threading.Event()
        self.reading.set()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        lines = []
        try:
            while True:
                self.reading.wait()
                line = self.response.readline()
                if not line:
                    break
                text = line.decode("utf-8")
                assert text.endswith("\n") and not text.endswith("\r\n"), repr(text)
                if text == "\n":
                    fields = dict(l.split(": ", 1) for l in lines)
                    try:
                        data = json.loads(fields["data"])
                    except ValueError:  # auth_revoked's data is plain text; `raw` tells them apart
                        data = fields["data"]
                    self.frames.put((fields.get("event"), fields.get("id"), data, "".join(l + "\n" for l in lines)))
                    lines = []
                else:
                    lines.append(text[:-1])
        except Exception as error:  # connection closed by the test
            self.frames.put(("error", None, repr(error), ""))
        self.frames.put(("closed", None, None, ""))

    def next(self, timeout=10):
        return self.frames.get(timeout=timeout)

    def next_data(self, timeout=10):
        """The next put/patch (keep-alives skipped)."""
        while True:
            event, id, data, raw = self.next(timeout)
            if event != "keep-alive":
                return event, id, data, raw

    def close(self):
        # Shut the socket down first: closing the response while the reader thread is blocked in
        # a read would wait for the server's next frame.
        try:
            self.conn.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.conn.close()


def put(daemon, path, value):
    r = requests.put(daemon.url(path), data=json.dumps(value))
    assert r.status_code == 200, r.text


def test_stream_starts_with_a_put_then_follows_every_write(daemon):
    put(daemon, "/m", {"a": 1, "b": {"x": 2}})
    client = SSEClient(daemon, "/m")
    assert client.response.status == 200
    assert client.response.getheader("Content-Type") == "text/event-stream; charset=utf-8"
    event, first_id, data, raw = client.next_data()
    assert (event, data) == ("put", {"path": "/", "data": {"a": 1, "b": {"x": 2}}})
    assert raw == f"event: put\nid: {first_id}\ndata: " + '{"path":"/","data":{"a":1,"b":{"x":2}}}\n'

    put(daemon, "/m/c", 3)
    assert client.next_data()[0:3:2] == ("put", {"path": "/c", "data": 3})
    requests.patch(daemon.url("/m"), data=json.dumps({"a": None, "d": 4}))
    event, _, data, _ = client.next_data()
    assert (event, data) == ("patch", {"path": "/", "data": {"a": None, "d": 4}})
    put(daemon, "/m/b/x", 5)  # the written path, not the child that holds it
    assert client.next_data()[2] == {"path": "/b/x", "data": 5}
    put(daemon, "/elsewhere", 1)  # not under /m: nothing
    put(daemon, "/", {"m": "primitive"})  # above /m: the whole value
    event, last_id, data, _ = client.next_data()
    assert data == {"path": "/", "data": "primitive"}
    assert last_id > first_id
    requests.delete(daemon.url("/m"))
    assert client.next_data()[2] == {"path": "/", "data": None}
    client.close()


def test_streams_opened_together_on_a_large_location_start_with_the_same_put(daemon):
    """Streams opened on one location with nothing written between share one read and one
    encoding of the first put; a stream opened after a write starts from it, and streams of
    another form (export) or a query get their own."""
    big = {f"k{i:05}": {"v": "x" * 40, ".priority": i % 3} for i in range(3000)}
    put(daemon, "/shared", big)
    plain = {k: {"v": v["v"]} for k, v in big.items()}
    clients = [SSEClient(daemon, "/shared") for _ in range(4)]
    firsts = [c.next_data() for c in clients]
    assert all(f[2] == {"path": "/", "data": plain} for f in firsts)
    assert len({f[1] for f in firsts}) == 1 and len({f[3] for f in firsts}) == 1, "one id, the same bytes"
    export = SSEClient(daemon, "/shared", "format=export")
    assert export.next_data()[2]["data"]["k00001"] == {"v": "x" * 40, ".priority": 1}
    query = SSEClient(daemon, "/shared", 'orderBy="$key"&limitToFirst=2')
    assert query.next_data()[2]["data"] == {"k00000": plain["k00000"], "k00001": plain["k00001"]}
    put(daemon, "/shared/k00000/v", "changed")
    later = SSEClient(daemon, "/shared")
    event, later_id, data, _ = later.next_data()
    assert data["data"]["k00000"] == {"v": "changed"} and later_id > firsts[0][1]
    for c in clients:
        assert c.next_data()[2] == {"path": "/k00000/v", "data": "changed"}
    for c in clients + [export, query, later]:
        c.close()


def test_keep_alive_on_an_idle_stream(daemon_factory):
    daemon = daemon_factory("--sse-keep-alive-seconds", "1")
    client = SSEClient(daemon, "/idle")
    assert client.next()[0:3:2] == ("put", {"path": "/", "data": None})
    # With the 10 s default no keep-alive could arrive within this wait.
    event, id, data, raw = client.next(timeout=5)
    assert (event, id, data, raw) == ("keep-alive", None, None, "event: keep-alive\ndata: null\n")
    client.close()


def test_query_streams_follow_the_window(daemon):
    put(daemon, "/q", {"a": {"s": 3}, "b": {"s": 1}, "c": {"s": 2}})
    requests.put(daemon.base_url + "/.settings/rules.json", data=json.dumps({"rules": {".read": True, ".write": True, "q": {".indexOn": "s"}}}))
    wait_for_indexes(daemon)  # a query stream is refused while its index builds
    client = SSEClient(daemon, "/q", 'orderBy="s"&limitToFirst=2')
    assert client.next_data()[2] == {"path": "/", "data": {"b": {"s": 1}, "c": {"s": 2}}}
    put(daemon, "/q/d", {"s": 0})  # enters first; c leaves
    assert client.next_data()[0:3:2] == ("patch", {"path": "/", "data": {"c": None, "d": {"s": 0}}})
    put(daemon, "/q/a/s", 9)  # outside the window: nothing
    put(daemon, "/q/b/s", 0.5)
    assert client.next_data()[2] == {"path": "/b", "data": {"s": 0.5}}
    client.close()


def test_dropping_the_index_cancels_the_stream(daemon):
    put(daemon, "/c", {"a": {"s": 1}})
    requests.put(daemon.base_url + "/.settings/rules.json", data=json.dumps({"rules": {".read": True, ".write": True, "c": {".indexOn": "s"}}}))
    wait_for_indexes(daemon)  # a query stream is refused while its index builds
    client = SSEClient(daemon, "/c", 'orderBy="s"')
    assert client.next_data()[2] == {"path": "/", "data": {"a": {"s": 1}}}
    requests.put(daemon.base_url + "/.settings/rules.json", data=json.dumps({"rules": {".read": True, ".write": True}}))
    event, id, data, raw = client.next_data()
    assert event == "cancel" and id is None and data is None
    assert '".indexOn": "s" for path "/c" was removed' in raw
    assert client.next(timeout=10)[0] in ("closed", "error")


def test_resume_with_last_event_id_has_no_gap_and_no_duplicate(daemon):
    put(daemon, "/r", {"n": 0})
    client = SSEClient(daemon, "/r")
    _, start_id, _, _ = client.next_data()
    put(daemon, "/r/n", 1)
    _, seen_id, data, _ = client.next_data()
    assert data == {"path": "/n", "data": 1}
    client.close()
    # Missed while disconnected: a put, a multi-path patch, a write elsewhere, a delete.
    put(daemon, "/r/n", 2)
    requests.patch(daemon.url("/r"), data=json.dumps({"a/b": 1, "c": 2}))
    put(daemon, "/other", 1)
    requests.delete(daemon.url("/r/c"))

    def resumed(after):
        client = SSEClient(daemon, "/r", headers={"Last-Event-ID": after})
        frames = []
        put(daemon, "/r/live", True)  # the first live event marks the end of the replay
        while True:
            event, id, data, _ = client.next_data()
            frames.append((event, data))
            if data == {"path": "/live", "data": True}:
                client.close()
                return frames

    # The multi-path update reaches two parents: a patch for each, with the same id.
    assert resumed(seen_id) == [
        ("put", {"path": "/n", "data": 2}),
        ("patch", {"path": "/", "data": {"c": 2}}),
        ("patch", {"path": "/a", "data": {"b": 1}}),
        ("put", {"path": "/c", "data": None}),
        ("put", {"path": "/live", "data": True}),
    ]
    # Across a restart the log still holds them.
    daemon.restart()
    replay = resumed(seen_id)
    assert replay[:4] == [
        ("put", {"path": "/n", "data": 2}),
        ("patch", {"path": "/", "data": {"c": 2}}),
        ("patch", {"path": "/a", "data": {"b": 1}}),
        ("put", {"path": "/c", "data": None}),
    ]
    # An id the server cannot resume from gets a fresh full put.
    client = SSEClient(daemon, "/r", headers={"Last-Event-ID": "not-a-log-id"})
    assert client.next_data()[2]["path"] == "/"
    client.close()


# firebase-admin's listener thread raises when close() shuts its session mid-read; that is the
# SDK's own shutdown path, not a failure of the stream.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_firebase_admin_listen_receives_the_stream(daemon_factory):
    # firebase-admin's close() waits for the next frame: keep-alives every second bound it.
    daemon = daemon_factory("--sse-keep-alive-seconds", "1")
    ns = "sse" + uuid.uuid4().hex[:8]
    from firebase_admin import db

    with firebase_app(daemon.port, ns, "sse") as app:
        ref = db.reference("/chat", app=app)
        ref.set({"a": "hi"})
        events = queue.Queue()
        registration = ref.listen(lambda event: events.put((event.event_type, event.path, event.data)))
        try:
            assert events.get(timeout=10) == ("put", "/", {"a": "hi"})
            ref.child("b").set("there")
            assert events.get(timeout=10) == ("put", "/b", "there")
            ref.update({"a": None, "c": 1})
            assert events.get(timeout=10) == ("patch", "/", {"a": None, "c": 1})
            assert ref.get() == {"b": "there", "c": 1}
        finally:
            registration.close()


def sse_subscriptions(daemon):
    text = requests.get(daemon.base_url + "/metrics").text
    (line,) = [l for l in text.splitlines() if l.startswith('eddy_subscriptions{transport="sse"}')]
    return float(line.split()[-1])


def test_a_stream_whose_client_went_ends_at_once_not_at_the_next_write(daemon_factory):
    # An hour between keep-alives and no writes: before, a closed stream kept its listener
    # until a write to its socket failed, so the count stayed up for an hour.
    daemon = daemon_factory("--sse-keep-alive-seconds", "3600")
    kept = SSEClient(daemon, "/kept")
    kept.next_data()
    gone = [SSEClient(daemon, f"/gone/{i}", query='orderBy="$key"&limitToLast=2' if i % 2 else "") for i in range(6)]
    for client in gone:
        client.next_data()
    assert sse_subscriptions(daemon) == 7
    for client in gone:
        client.close()  # shutdown(SHUT_RDWR): the server gets the FIN
    deadline = time.monotonic() + 20
    while sse_subscriptions(daemon) != 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sse_subscriptions(daemon) == 1, "closed streams still counted"
    # The one still open is served as before.
    put(daemon, "/kept/a", 1)
    assert kept.next_data()[0:3:2] == ("put", {"path": "/a", "data": 1})
    kept.close()


def test_a_client_that_half_closes_ends_its_stream(daemon_factory):
    # Documented: the end of the client's side (its FIN) ends an endless answer, as proxies do;
    # the server finishes the response and closes.
    daemon = daemon_factory("--sse-keep-alive-seconds", "3600")
    sock = socket.create_connection(("127.0.0.1", daemon.port), timeout=20)
    sock.sendall(b"GET /half.json HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n")
    received = b""
    while b"event: put" not in received:
        received += sock.recv(65536)
    sock.shutdown(socket.SHUT_WR)
    while True:
        chunk = sock.recv(65536)  # the socket's 20 s timeout fails the test if the stream goes on
        if not chunk:
            break
        received += chunk
    assert received.endswith(b"0\r\n\r\n"), received[-64:]
    sock.close()
    assert sse_subscriptions(daemon) == 0


def engine_listeners(daemon):
    text = requests.get(daemon.base_url + "/metrics").text
    lines = [l for l in text.splitlines() if l.startswith('eddy_listeners{namespace="default"}')]
    return float(lines[0].split()[-1]) if lines else 0.0


def test_no_listener_outlives_a_client_that_went_before_its_stream_began(daemon):
    # A client that closes right after its request, before or while the answer's head goes out:
    # its listener, attached before the head, must go too (Hummingbird does not run the body of
    # an answer whose head it could not write).
    requests.put(daemon.url("/early"), data=json.dumps({str(i): i for i in range(200)}))
    for i in range(300):
        sock = socket.create_connection(("127.0.0.1", daemon.port))
        sock.sendall(b"GET /early.json HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n")
        if i % 3 == 0:
            sock.recv(10)
        if i % 2:
            # A reset instead of a FIN.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        sock.close()
    deadline = time.monotonic() + 20
    while (engine_listeners(daemon), sse_subscriptions(daemon)) != (0, 0) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (engine_listeners(daemon), sse_subscriptions(daemon)) == (0, 0)


def test_streams_end_when_the_daemon_stops(daemon):
    client = SSEClient(daemon, "/s")
    client.next_data()
    daemon.stop()  # fails the test if the daemon does not exit (an open stream must not hold it)
    while True:
        event = client.next(timeout=10)[0]
        if event in ("closed", "error"):
            break


def test_a_slow_consumer_is_cut_off_with_its_resume_id_and_resumes_without_a_gap(daemon_factory):
    daemon = daemon_factory("--stream-buffer-batches", "16")
    put(daemon, "/slow", {"n": -1})
    client = SSEClient(daemon, "/slow")
    client.next_data()
    client.reading.clear()  # stop reading: socket buffers fill, then the server's bounded buffer
    blob = "x" * 16384
    session = requests.Session()
    total = 400
    for n in range(total):
        r = session.put(daemon.url(f"/slow/n{n % 8}"), data=json.dumps({"i": n, "blob": blob}))
        assert r.status_code == 200  # writers never wait for a slow subscriber
    client.reading.set()
    frames = []
    while True:
        event, id, data, raw = client.next_data(timeout=30)
        if event in ("cancel", "closed", "error"):
            break
        frames.append((id, data))
    assert event == "cancel", (event, data)
    assert data is None, "Firebase's docs: a cancel's data is null"
    assert "reconnect with Last-Event-ID" in raw
    assert "fell more than 16 entries behind (--stream-buffer-batches)" in raw, "names the bound it passed"
    resume_id = raw.split("Last-Event-ID: ")[1].split(" ")[0]
    assert frames and frames[-1][0] == resume_id, "the id to resume after is the last one delivered"
    delivered = [d["data"]["i"] for _, d in frames]
    assert len(delivered) < total, "the stream was cut off before the end"
    client.close()
    # Resuming from there delivers exactly the rest, in order.
    resumed = SSEClient(daemon, "/slow", headers={"Last-Event-ID": resume_id})
    put(daemon, "/slow/done", True)
    rest = []
    while True:
        event, id, data, _ = resumed.next_data(timeout=30)
        if data == {"path": "/done", "data": True}:
            break
        rest.append(data["data"]["i"])
    resumed.close()
    assert delivered + rest == list(range(total)), "no gap, no duplicate"


def test_readers_that_leave_a_large_first_value_unread_are_bounded_by_the_stream_budget(daemon_factory):
    """A stream's first `put` left the shared budget once handed to the socket, so clients that
    opened streams on a large location and read nothing held it outside any bound (100 such on
    6.5 MB: 700 MB). Now a large write counts until the socket has taken it: with the budget
    full, a new stream is refused (503 naming the option), and a reader that leaves its write
    unread for 10 s is disconnected, after which streams open again."""
    budget = 1 << 20
    daemon = daemon_factory("--stream-buffers-bytes-total", str(budget))
    value = {f"k{i:05d}": "x" * 1000 for i in range(8000)}  # 8 MB: more than the socket buffers hold
    assert requests.put(daemon.url("/big"), data=json.dumps(value)).status_code == 200
    stalled = socket.socket()
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stalled.connect(("127.0.0.1", daemon.port))
    stalled.sendall(b"GET /big.json HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n")

    def open_stream():
        r = requests.get(daemon.url("/small"), headers={"Accept": "text/event-stream"}, stream=True, timeout=30)
        if r.status_code == 200:
            first = next(r.iter_lines())
            r.close()
            assert first == b"event: put", first
            return 200, None
        error = r.json()["error"]
        r.close()
        return r.status_code, error

    # Refused for as long as the stalled reader holds its bytes (a refusal can also come while
    # its first value is being read and encoded): wait for two refusals a second apart.
    deadline, refused_at = time.monotonic() + 30, None
    while True:
        status, error = open_stream()
        if status != 503:
            refused_at = None
        elif refused_at is None:
            refused_at = time.monotonic()
        elif time.monotonic() - refused_at >= 1:
            break
        assert time.monotonic() < deadline, "the stalled reader's 8 MB never filled the 1 MiB budget"
        time.sleep(0.2)
    assert "--stream-buffers-bytes-total" in error and str(budget) in error, error
    while open_stream()[0] != 200:
        assert time.monotonic() < refused_at + 60, "the stalled reader was never disconnected"
        time.sleep(0.5)
    # The stalled reader's connection was closed: reading it now ends before the whole value.
    stalled.settimeout(30)
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)  # read what is left quickly
    received, read_until = 0, time.monotonic() + 60
    while chunk := stalled.recv(1 << 20):
        received += len(chunk)
        assert time.monotonic() < read_until, "the stalled reader's stream is still open"
    stalled.close()
    assert received < len(json.dumps(value)), received
    assert requests.get(daemon.url("/big/k00000")).json() == "x" * 1000


def test_query_streams_resume_after_an_id_too(daemon):
    put(daemon, "/qr", {"a": {"s": 3}, "b": {"s": 1}, "c": {"s": 2}})
    requests.put(daemon.base_url + "/.settings/rules.json", data=json.dumps({"rules": {".read": True, ".write": True, "qr": {".indexOn": "s"}}}))
    wait_for_indexes(daemon)  # a query stream is refused while its index builds
    query = 'orderBy="s"&limitToFirst=2'
    client = SSEClient(daemon, "/qr", query)
    _, seen, data, _ = client.next_data()
    assert data == {"path": "/", "data": {"b": {"s": 1}, "c": {"s": 2}}}
    client.close()
    put(daemon, "/qr/d", {"s": 0})  # enters; c leaves
    put(daemon, "/qr/a/s", 9)  # outside the window: no event
    put(daemon, "/qr/b/s", 0.5)  # changes inside the window
    resumed = SSEClient(daemon, "/qr", query, headers={"Last-Event-ID": seen})
    assert resumed.next_data()[0:3:2] == ("patch", {"path": "/", "data": {"c": None, "d": {"s": 0}}})
    assert resumed.next_data()[2] == {"path": "/b", "data": {"s": 0.5}}
    put(daemon, "/qr/e", {"s": -1})  # then live
    assert resumed.next_data()[2] == {"path": "/", "data": {"b": None, "e": {"s": -1}}}
    resumed.close()


# firebase-admin's close() closes the response under its reader thread, which may then raise in
# urllib3 (its own race, after the test's checks).
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_firebase_admin_listener_cut_off_as_slow_resumes_without_a_gap(daemon_factory):
    """firebase-admin's listen() on a stream that falls behind: the cancel's data is null, so the
    client drops it instead of handing the callback an event whose `.data` fails; it sees the
    stream end and reconnects with the Last-Event-ID it kept, and the callback hears every write
    once, in order."""
    from firebase_admin import db

    daemon = daemon_factory("--stream-buffer-batches", "16")
    with firebase_app(daemon.port, "slowadmin", "slow") as app:
        ref = db.reference("/slow", app=app)
        ref.set({"start": True})
        heard = queue.Queue()
        failures = []
        hold = threading.Event()

        def callback(event):
            try:
                heard.put((event.event_type, event.path, event.data))
            except Exception as error:  # what a string cancel did: event.data raised TypeError
                failures.append(repr(error))
                raise
            hold.wait()  # the listener's thread reads nothing more until the writes are done

        registration = ref.listen(callback)
        try:
            assert heard.get(timeout=10) == ("put", "/", {"start": True})
            blob = "x" * 16384
            total = 400
            session = requests.Session()
            for n in range(total):
                r = session.put(daemon.url(f"/slow/n{n % 8}", ns="slowadmin"), data=json.dumps({"i": n, "blob": blob}))
                assert r.status_code == 200
            hold.set()
            seen = []
            while not seen or seen[-1] != total - 1:
                event_type, path, data = heard.get(timeout=60)
                assert event_type == "put" and path == f"/n{len(seen) % 8}", (event_type, path)
                seen.append(data["i"])
            assert seen == list(range(total)), "every write once, in order, across the reconnect"
            assert failures == []
        finally:
            hold.set()
            registration.close()

