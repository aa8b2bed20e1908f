"""64-bit integers keep every digit, as Firebase keeps longs: written and read back by
firebase-admin (Python ints), through a restart, in ordered queries (with and without an index),
over an event stream and a follower, and in increments (exact while the sum fits an int64; a
Double beyond, as Firebase's server falls back on overflow)."""

import json
import time

import requests

from conftest import firebase_app, follower_of, put_rules, wait_for_indexes
from test_sse import SSEClient

NS = "wide-ints"
VALUES = {
    "ns": 1_732_000_000_123_456_789,  # time.time_ns()-like
    "snowflake": 1_234_567_890_123_456_789,
    "max": 2**63 - 1,
    "min": -(2**63),
    "above53": 2**53 + 1,
    "below53": -(2**53) - 1,
    "exact53": 2**53,
    "big_float": 1e300,
    "small": 7,
}


def test_firebase_admin_reads_back_every_digit_and_after_a_restart(daemon):
    from firebase_admin import db

    with firebase_app(daemon.port, NS) as app:
        ref = db.reference("/numbers", app=app)
        ref.set(VALUES)
        got = ref.get()
        assert got == VALUES
        assert all(type(got[k]) is int for k in VALUES if k != "big_float")
    raw = requests.get(daemon.url("/numbers/max", ns=NS)).text
    assert raw == "9223372036854775807"
    daemon.stop()
    daemon.start()
    with firebase_app(daemon.port, NS) as app:
        assert db.reference("/numbers", app=app).get() == VALUES


def test_increments_are_exact_until_they_overflow(daemon):
    url = daemon.url("/counter", ns=NS)
    assert requests.put(url, data=json.dumps(2**53)).status_code == 200
    r = requests.put(url, data=json.dumps({".sv": {"increment": 1}}))
    assert r.status_code == 200 and r.json() == 2**53 + 1
    assert requests.put(url, data=json.dumps(2**63 - 2)).status_code == 200
    assert requests.put(url, data=json.dumps({".sv": {"increment": 1}})).json() == 2**63 - 1
    # One more overflows an int64: the sum is a Double, as Firebase's.
    overflowed = requests.put(url, data=json.dumps({".sv": {"increment": 1}})).json()
    assert isinstance(overflowed, float) and overflowed == 2.0**63
    assert requests.put(url, data=json.dumps({".sv": {"increment": 2**62 + 1}})).json() == 2.0**63 + 2.0**62


def test_queries_order_wide_integers_exactly(daemon):
    scores = {f"k{i}": {"score": v} for i, v in enumerate([2**53 + 3, 2**53 + 1, 2**53, 2**53 + 2, 2**63 - 1, 2**53 + 5])}
    put_rules(daemon, {"rules": {".read": True, ".write": True, "board": {".indexOn": "score"}}}, ns=NS)
    assert requests.put(daemon.url("/board", ns=NS), data=json.dumps(scores)).status_code == 200
    wait_for_indexes(daemon, ns=NS)
    ordered = sorted(scores, key=lambda k: scores[k]["score"])

    def query(**params):
        r = requests.get(daemon.url("/board", ns=NS, orderBy='"score"', **params))
        assert r.status_code == 200, r.text
        return r.json()

    # Served by the index (its keys order wide integers between Doubles)...
    assert list(query(limitToFirst=3)) == ordered[:3]
    assert query(equalTo=str(2**53 + 1)) == {"k1": {"score": 2**53 + 1}}
    assert query(equalTo=str(2**53)) == {"k2": {"score": 2**53}}
    assert set(query(startAt=str(2**53 + 1), endAt=str(2**53 + 3))) == {"k0", "k1", "k3"}
    assert set(query(startAfter=str(2**53), endBefore=str(2**53 + 3))) == {"k1", "k3"}
    assert list(query(limitToLast=1)) == ["k4"]
    # ... and by a live query's window (value order in memory), which follows a write.
    stream = SSEClient(daemon, "/board", query=f"ns={NS}&orderBy=%22score%22&limitToFirst=2")
    assert set(stream.next_data()[2]["data"]) == set(ordered[:2])
    assert requests.put(daemon.url("/board/k9", ns=NS), data=json.dumps({"score": 2**53 + 1 - 2})).status_code == 200
    assert set(query(limitToFirst=2)) == {"k9", "k2"}
    event, _, data, _ = stream.next_data()
    assert (event, data) == ("patch", {"path": "/", "data": {"k1": None, "k9": {"score": 2**53 - 1}}})
    stream.close()


def test_streams_and_followers_carry_every_digit(daemon_factory):
    leader = daemon_factory()
    follower = follower_of(daemon_factory, leader)
    stream = SSEClient(leader, "/live", query=f"ns={NS}")
    assert stream.next_data()[0] == "put"
    assert requests.put(leader.url("/live", ns=NS), data=json.dumps({"n": 2**63 - 1})).status_code == 200
    event, _, data, raw = stream.next_data()
    assert data == {"path": "/", "data": {"n": 2**63 - 1}} and "9223372036854775807" in raw
    stream.close()
    deadline = time.monotonic() + 30
    while True:
        r = requests.get(follower.url("/live/n", ns=NS))
        if r.status_code == 200 and r.text == "9223372036854775807":
            break
        assert time.monotonic() < deadline, r.text
        time.sleep(0.1)
