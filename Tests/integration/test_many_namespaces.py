"""More namespaces than stay open at once (namespacesOpenMax, 64): a daemon used with a fresh
`?ns=` per test run or per tenant keeps serving every one of them. The least recently used
namespace nobody holds closes to make room and reopens with its data on its next request; a
namespace held by an event stream or a native connection stays open and keeps delivering."""

import json
import time

import requests

from conftest import firebase_app
from test_native import EVENTS, GET, SUBSCRIBE, SUBSCRIBED, VALUE, WRITE, WRITTEN, Native
from test_sse import SSEClient

OPEN_MAX = 64


def test_more_namespaces_than_stay_open_all_keep_their_data(daemon):
    session = requests.Session()
    stream = SSEClient(daemon, "/feed", query="ns=held-sse")
    assert stream.next_data()[:3] == ("put", None, {"path": "/", "data": None})
    native = Native(daemon)
    native.send(SUBSCRIBE, 1, {"path": "/feed", "ns": "held-native"})
    assert native.recv()[0] == SUBSCRIBED
    assert native.recv()[0] == EVENTS

    count = OPEN_MAX + 16
    for i in range(count):
        r = session.put(daemon.url("/value", ns=f"tenant-{i}"), data=json.dumps({"i": i}))
        assert r.status_code == 200, (i, r.text)
    # Every namespace answers with its own data, the first ones reopened from disk.
    for i in range(count):
        r = session.get(daemon.url("/value", ns=f"tenant-{i}"))
        assert r.status_code == 200 and r.json() == {"i": i}, (i, r.text)
    assert "closed an idle namespace to open another" in daemon.log_tail(200_000)

    # The held namespaces stayed open: their listeners still hear writes.
    r = session.put(daemon.url("/feed/a", ns="held-sse"), data="1")
    assert r.status_code == 200
    assert stream.next_data()[2] == {"path": "/a", "data": 1}
    other = Native(daemon)
    other.send(WRITE, 1, {"op": "set", "path": "/feed/b", "value": 2, "ns": "held-native"})
    kind, _, written = other.recv()
    assert kind == WRITTEN
    kind, rid, update = native.recv()
    assert (kind, rid) == (EVENTS, 1) and update["events"][-1]["logID"] == written["logID"]
    other.close()
    native.close()
    stream.close()

    # Native connections that used a namespace each and closed let it go again.
    for i in range(OPEN_MAX + 8):
        client = Native(daemon)
        client.send(WRITE, 1, {"op": "set", "path": "/n", "value": i, "ns": f"native-{i}"})
        assert client.recv()[0] == WRITTEN, i
        client.send(GET, 2, {"path": "/n", "ns": f"tenant-{i % count}"})
        assert client.recv() == (VALUE, 2, {"value": None}), i
        client.close()
    metrics = session.get(daemon.base_url + "/metrics")
    assert metrics.status_code == 200
    figures = dict(
        line.split(" ", 1) for line in metrics.text.splitlines() if line.startswith("eddy_namespaces_")
    )
    assert float(figures["eddy_namespaces_open"]) == OPEN_MAX
    assert float(figures["eddy_namespaces_closed_for_room"]) >= count + 8 - OPEN_MAX


def test_firebase_admin_apps_on_fresh_namespaces(daemon):
    from firebase_admin import db

    for i in range(OPEN_MAX + 6):
        with firebase_app(daemon.port, f"run-{i}") as app:
            ref = db.reference("/scores", app=app)
            ref.push({"score": i})
            assert [v["score"] for v in ref.get().values()] == [i]


def test_every_open_namespace_held_refuses_one_more_by_name(daemon):
    streams = []
    try:
        # The default namespace is open already (and never closed for room).
        for i in range(OPEN_MAX - 1):
            streams.append(SSEClient(daemon, "/", query=f"ns=busy-{i}"))
            assert streams[-1].next_data()[0] == "put"
        r = requests.get(daemon.url("/x", ns="one-more"))
        assert r.status_code == 503, r.text
        message = r.json()["error"]
        assert "one-more" in message and "namespacesOpenMax" in message, message
        # One stream ends: its namespace can close, and the next request succeeds.
        streams.pop(0).close()
        deadline = time.monotonic() + 10
        while True:
            r = requests.put(daemon.url("/x", ns="one-more"), data="1")
            if r.status_code == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert r.status_code == 200, r.text
        # The held ones were not closed for it: their streams still hear writes.
        r = requests.put(daemon.url("/y", ns="busy-1"), data="2")
        assert r.status_code == 200
        assert streams[0].next_data()[2] == {"path": "/y", "data": 2}
    finally:
        for stream in streams:
            stream.close()
