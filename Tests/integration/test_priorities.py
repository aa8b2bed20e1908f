"""Priorities over REST, as Firebase's REST API documents them: written in the export form
(`{".value": v, ".priority": p}`, a `.priority` member) or at `<path>/.priority.json`, read back
with `format=export` only, ordering `orderBy="$priority"` queries (no priority first, then
numbers, then strings, ties by key), imported by firebase-admin writes, seen through by rules,
and replicated to followers (digests equal)."""

import functools
import json
import os
import random

import pytest
import requests

from conftest import firebase_app, follower_of, put_rules
from firebase_order import firebase_key_cmp, value_cmp
from test_replication import digest_and_verify, wait_caught_up, wait_for_log
from test_native import ERROR, GET, VALUE, WRITE, WRITTEN, Native
from test_sse import SSEClient

SEED = int(os.environ.get("EDDY_TEST_SEED", random.randrange(1 << 30)))


@pytest.fixture(scope="module", autouse=True)
def print_seed():
    print(f"test_priorities seed: {SEED} (EDDY_TEST_SEED={SEED} repeats it)")


def put(daemon, path, value):
    r = requests.put(daemon.url(path), data=json.dumps(value))
    assert r.status_code == 200, r.text
    return r.json()


def export(daemon, path, **params):
    r = requests.get(daemon.url(path), params={"format": "export", **params})
    assert r.status_code == 200, r.text
    return r.json()


def test_the_export_form_round_trips_and_plain_reads_leave_priorities_out(daemon):
    value = {
        "a": {".priority": 1, "b": {".value": 2, ".priority": "x"}, "c": {"d": {".value": True, ".priority": 3.5}}},
        "f": {".value": "s", ".priority": 0},
        "plain": [1, 2],
    }
    assert put(daemon, "/t", value) == {"a": {"b": 2, "c": {"d": True}}, "f": "s", "plain": [1, 2]}
    assert requests.get(daemon.url("/t")).json() == {"a": {"b": 2, "c": {"d": True}}, "f": "s", "plain": [1, 2]}
    # format=export never renders arrays (Firebase's export); the rest is what was written.
    assert export(daemon, "/t") == {**value, "plain": {"0": 1, "1": 2}}
    assert export(daemon, "/t/a/b") == {".value": 2, ".priority": "x"}
    assert requests.get(daemon.url("/t/a/c/d/.priority")).json() == 3.5
    # shallow answers keys only, and a priority is no child.
    assert requests.get(daemon.url("/t/a"), params={"shallow": "true"}).json() == {"b": True, "c": True}


def test_writes_replace_and_keep_priorities_as_firebase_does(daemon):
    put(daemon, "/w", {"x": {".value": 1, ".priority": 5}, "y": {".value": 2, ".priority": 6}, ".priority": 1})
    r = requests.patch(daemon.url("/w"), data=json.dumps({"x": 10}))
    assert r.status_code == 200, r.text
    assert export(daemon, "/w") == {".priority": 1, "x": 10, "y": {".value": 2, ".priority": 6}}, "an update keeps its location's"
    put(daemon, "/w/y/z", 3)
    assert export(daemon, "/w/y") == {".priority": 6, "z": 3}, "a primitive replaced by a child keeps its priority"
    requests.delete(daemon.url("/w/y/z"))
    assert requests.get(daemon.url("/w/y/.priority")).json() is None, "an emptied node keeps none"
    put(daemon, "/w", {"x": 1})
    assert export(daemon, "/w") == {"x": 1}, "a set replaces the location's priority"


def select(children, start=None, end=None, first=None, last=None):
    """Brute force: the keys a priority query selects, from {key: priority or None}, in
    Firebase's priority order (none, numbers, strings; ties by key). `start`/`end`: (priority,
    key or None, inclusive)."""

    def cmp(a, b):
        return value_cmp(a[1], b[1]) or firebase_key_cmp(a[0], b[0])

    entries = sorted(children.items(), key=functools.cmp_to_key(cmp))

    def position(entry, bound):
        value, key, _ = bound
        c = value_cmp(entry[1], value)
        if c == 0 and key is not None:
            c = firebase_key_cmp(entry[0], key)
        return c

    if start is not None:
        entries = [e for e in entries if position(e, start) > 0 or (start[2] and position(e, start) == 0)]
    if end is not None:
        entries = [e for e in entries if position(e, end) < 0 or (end[2] and position(e, end) == 0)]
    if first is not None:
        entries = entries[:first]
    if last is not None:
        entries = entries[-last:]
    return {k for k, _ in entries}


def test_priority_queries_match_a_brute_force_order(daemon):
    rng = random.Random(SEED)
    priorities = [None, None, 1, 2, 2, -3.5, 10, "a", "b", "b", "zz", "10"]
    children = {}
    value = {}
    for i in range(40):
        key = rng.choice([f"k{i}", str(i), f"-{i}x"])
        p = rng.choice(priorities)
        children[key] = p
        value[key] = {".value": i} if p is None else {".value": i, ".priority": p}
    put(daemon, "/pq", value)
    keys = sorted(children, key=functools.cmp_to_key(firebase_key_cmp))
    bounds = [None, 2, "b", -3.5, "10"]
    checked = 0

    def bound(params, inclusive_name, exclusive_name):
        """A random bound (priority, key or None, inclusive), added to `params` as REST names it."""
        v = rng.choice(bounds)
        k = rng.choice(keys) if rng.random() < 0.3 else None
        inclusive = rng.random() < 0.5
        params[inclusive_name if inclusive else exclusive_name] = json.dumps(v) + ("," + json.dumps(k) if k else "")
        return (v, k, inclusive)

    for _ in range(150):
        params = {"orderBy": '"$priority"'}
        start = end = first = last = None
        if rng.random() < 0.6:
            start = bound(params, "startAt", "startAfter")
        if rng.random() < 0.5:
            end = bound(params, "endAt", "endBefore")
        if rng.random() < 0.5:
            if rng.random() < 0.5:
                first = rng.randint(1, 10)
                params["limitToFirst"] = str(first)
            else:
                last = rng.randint(1, 10)
                params["limitToLast"] = str(last)
        r = requests.get(daemon.url("/pq"), params=params)
        assert r.status_code == 200, (params, r.text)
        got = r.json() or {}
        if isinstance(got, list):  # integer keys render as an array, holes as null
            got = {str(i): v for i, v in enumerate(got) if v is not None}
        expected = select(children, start, end, first, last)
        assert set(got) == expected, (SEED, params)
        assert all(got[k] == value[k][".value"] for k in got), "answers hold data without priorities"
        with_priorities = export(daemon, "/pq", **params) or {}
        assert set(with_priorities) == expected and all(with_priorities[k] == (value[k] if ".priority" in value[k] else value[k][".value"]) for k in expected)
        checked += 1
    assert checked == 150


def test_rules_see_data_without_priorities(daemon):
    put_rules(daemon, {"rules": {".read": True, ".write": True, "r": {"$k": {".validate": "newData.isNumber()"}}}})
    r = requests.put(daemon.url("/r/x"), data=json.dumps({".value": 1, ".priority": 2}))
    assert r.status_code == 200, r.text
    r = requests.put(daemon.url("/r/x/.priority"), data="3")
    assert r.status_code == 200, r.text
    r = requests.put(daemon.url("/r/y"), data=json.dumps({".value": "s", ".priority": 2}))
    assert r.status_code == 401 and r.json() == {"error": "Permission denied"}, r.text
    assert export(daemon, "/r") == {"x": {".value": 1, ".priority": 3}}


def test_streams_carry_data_without_priorities(daemon):
    put(daemon, "/s", {"a": {".value": 1, ".priority": 1}})
    client = SSEClient(daemon, "/s")
    try:
        assert client.next_data()[2] == {"path": "/", "data": {"a": 1}}
        requests.put(daemon.url("/s/a/.priority"), data="2")  # the data is as it was: no event
        put(daemon, "/s/b", {".value": 2, ".priority": 5})
        assert client.next_data()[2] == {"path": "/b", "data": 2}
    finally:
        client.close()


def test_an_export_stream_carries_priorities_and_priority_only_writes(daemon):
    """format=export on a stream: the first put and every change hold the priorities, and a
    write that changes only a priority is a put at <node>/.priority; resuming with
    Last-Event-ID replays the same."""
    put(daemon, "/xs", {"a": {".value": 1, ".priority": 1}, ".priority": "own"})
    client = SSEClient(daemon, "/xs", "format=export")
    try:
        event, first_id, data, _ = client.next_data()
        assert data == {"path": "/", "data": {"a": {".value": 1, ".priority": 1}, ".priority": "own"}}, data
        requests.put(daemon.url("/xs/a/.priority"), data="2")
        assert client.next_data()[2] == {"path": "/a/.priority", "data": 2}
        requests.put(daemon.url("/xs/.priority"), data='"mine"')
        assert client.next_data()[2] == {"path": "/.priority", "data": "mine"}
        put(daemon, "/xs/b", {".value": 2, ".priority": 5})
        assert client.next_data()[2] == {"path": "/b", "data": {".value": 2, ".priority": 5}}
    finally:
        client.close()
    resumed = SSEClient(daemon, "/xs", "format=export", headers={"Last-Event-ID": first_id})
    try:
        seen = [resumed.next_data()[2] for _ in range(3)]
        assert seen == [{"path": "/a/.priority", "data": 2}, {"path": "/.priority", "data": "mine"},
                        {"path": "/b", "data": {".value": 2, ".priority": 5}}], seen
    finally:
        resumed.close()


def test_a_priority_ordered_stream_follows_the_priorities(daemon):
    put(daemon, "/ps", {"a": {".value": 1, ".priority": 2}, "b": {".value": 2, ".priority": 1}})
    client = SSEClient(daemon, "/ps", 'orderBy="$priority"&limitToFirst=1')
    try:
        assert client.next_data()[2] == {"path": "/", "data": {"b": 2}}
        requests.put(daemon.url("/ps/a/.priority"), data="0")  # a is now first
        event, _, data, _ = client.next_data()
        assert (event, data) == ("patch", {"path": "/", "data": {"a": 1, "b": None}}), (event, data)
        assert requests.get(daemon.url("/ps"), params={"orderBy": '"$priority"', "limitToFirst": "1"}).json() == {"a": 1}
    finally:
        client.close()


def test_firebase_admin_writes_priorities_in_the_export_form(daemon):
    from firebase_admin import db

    with firebase_app(daemon.port, "prio-ns") as app:
        ref = db.reference("/fa", app=app)
        ref.set({"x": {".value": 1, ".priority": 2}, "y": {"z": 3, ".priority": "p"}})
        assert ref.get() == {"x": 1, "y": {"z": 3}}
        ref.update({"x/.priority": 4})
        assert ref.child("x").get() == 1
    r = requests.get(daemon.url("/fa", ns="prio-ns"), params={"format": "export"})
    assert r.json() == {"x": {".value": 1, ".priority": 4}, "y": {"z": 3, ".priority": "p"}}, r.text


def test_followers_replicate_priorities(daemon_factory):
    leader = daemon_factory()
    follower = follower_of(daemon_factory, leader)
    put(leader, "/f", {"a": {".value": 1, ".priority": 5}, "b": {"c": 2, ".priority": "s"}, ".priority": 1})
    requests.put(leader.url("/f/a/.priority"), data='"t"')
    requests.delete(leader.url("/f/b/c"))
    requests.patch(leader.url("/f"), data=json.dumps({"d": {".value": 4, ".priority": 4}}))
    wait_caught_up(leader, follower)
    assert export(follower, "/f") == export(leader, "/f") == {".priority": 1, "a": {".value": 1, ".priority": "t"}, "d": {".value": 4, ".priority": 4}}
    leader.stop()
    follower.stop()
    assert digest_and_verify(follower) == digest_and_verify(leader)


def test_the_native_protocol_reads_and_writes_a_locations_priority(daemon):
    put(daemon, "/n", {"a": 1})
    native = Native(daemon)
    try:
        native.send(WRITE, 1, {"op": "set", "path": "/n/a/.priority", "value": 7})
        kind, rid, payload = native.recv()
        assert (kind, rid) == (WRITTEN, 1), payload
        native.send(GET, 2, {"path": "/n/a/.priority"})
        kind, rid, payload = native.recv()
        assert (kind, rid, payload) == (VALUE, 2, {"value": 7})
        native.send(WRITE, 3, {"op": "remove", "path": "/n/a/.priority"})
        assert native.recv()[0] == WRITTEN
        native.send(WRITE, 4, {"op": "set", "path": "/n/a/.priority", "value": [1]})
        kind, rid, payload = native.recv()
        assert kind == ERROR and "priority of /n/a" in payload["message"], payload
        native.send(WRITE, 5, {"op": "push", "path": "/n/a/.priority", "value": 1})
        kind, rid, payload = native.recv()
        assert kind == ERROR and ".priority" in payload["message"], payload
    finally:
        native.close()
    assert export(daemon, "/n") == {"a": 1}


def test_a_follower_bootstrapped_from_a_snapshot_has_the_priorities(daemon_factory):
    """The snapshot a new follower of a long log is copied from carries the priority family."""
    leader = daemon_factory("--snapshot-bootstrap-entries", "50")
    for i in range(60):
        put(leader, f"/s/k{i}", {".value": i, ".priority": 60 - i} if i % 2 else {"v": i, ".priority": f"p{i}"})
    follower = follower_of(daemon_factory, leader)
    wait_for_log(follower, "bootstrapped from a snapshot")
    requests.put(leader.url("/s/k1/.priority"), data="100")  # live, after the snapshot
    wait_caught_up(leader, follower)
    assert export(follower, "/s") == export(leader, "/s")
    assert requests.get(follower.url("/s"), params={"orderBy": '"$priority"', "limitToFirst": "2"}).json() == {"k59": 59, "k57": 57}
    leader.stop()
    follower.stop()
    assert digest_and_verify(follower) == digest_and_verify(leader)


def test_rules_read_priorities_with_getPriority(daemon):
    put_rules(daemon, {"rules": {
        ".write": True,
        "ranked": {".read": True, "$k": {".validate": "newData.getPriority() != null && newData.getPriority() != 'banned'"}},
        "shown": {"$k": {".read": "data.getPriority() == 'public'"}},
    }})
    assert requests.put(daemon.url("/ranked/a"), data=json.dumps({".value": 1, ".priority": 3})).status_code == 200
    assert requests.put(daemon.url("/ranked/b"), data="1").status_code == 401, "no priority"
    assert requests.put(daemon.url("/ranked/a/.priority"), data='"x"').status_code == 200
    assert requests.put(daemon.url("/ranked/a/.priority"), data='"banned"').status_code == 401
    assert requests.delete(daemon.url("/ranked/a/.priority")).status_code == 401, "removing it leaves none"
    assert requests.patch(daemon.url("/ranked"), data=json.dumps({"c": {".value": 2, ".priority": 1}})).status_code == 200
    assert export(daemon, "/ranked") == {"a": {".value": 1, ".priority": "x"}, "c": {".value": 2, ".priority": 1}}
    requests.put(daemon.url("/shown"), data=json.dumps({"p": {".value": 1, ".priority": "public"}, "q": {".value": 2, ".priority": "private"}}))
    assert requests.get(daemon.url("/shown/p")).status_code == 200
    assert requests.get(daemon.url("/shown/q")).status_code == 401
    requests.put(daemon.url("/shown/q/.priority"), data='"public"')
    assert requests.get(daemon.url("/shown/q")).json() == 2

