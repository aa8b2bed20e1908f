"""SSE conformance: one row per write shape, checked on the raw event stream of a real eddyd.

Firebase's REST streaming ("Retrieving Data", section "Streaming from the REST API",
https://firebase.google.com/docs/database/rest/retrieve-data#section-rest-streaming): after the
first `put` of the whole value at "/", every change is a `put` ("the data at path is replaced")
or a `patch` ("for each key in data, update the corresponding key in path"), with `path`
relative to the listened location. Eddy sends exactly the change:

- a set, push or delete below the location: `put` at the written path with the value there;
- an update: one `patch` per parent of the updated paths, holding only the updated children;
- a write at or above the location: `put "/"` with the location's new value;
- a write beside the location, or one that changes nothing: no event.
Every frame of one write carries that write's log id as `id:`, ids increase, and a query stream
keeps its window (children entering, leaving, changing).

Each row writes under its own subtree, then writes a marker below the listened location: the
marker's event ends the row, so "no event" is asserted exactly, with no sleeping.
"""

import json
import os
import queue
import random
import uuid

import pytest
import requests

from conftest import firebase_app, wait_for_indexes
from test_sse import SSEClient
from value_cache import apply_change


@pytest.fixture(scope="module")
def d(module_daemon_factory):
    return module_daemon_factory("--sse-keep-alive-seconds", "1")


def rel(path):
    return "/" + path.strip("/")


def call(d, method, path, body=None):
    r = requests.request(method, d.url(path), data=None if method in ("GET", "DELETE") else json.dumps(body))
    assert r.status_code == 200, (method, path, r.status_code, r.text)
    return r.json()


def frames_until_marker(client, marker_path):
    """(event, id, data, raw) frames up to (excluding) the marker's put."""
    frames = []
    while True:
        event, id, data, raw = client.next_data()
        assert event in ("put", "patch"), (event, data)
        if data == {"path": marker_path, "data": True}:
            return frames, id
        frames.append((event, id, data, raw))


# (name, initial value of the row's root R, listened location below R, writes, expected events)
# Paths in writes are relative to R; "{push}" in an expected path is the POST's answered name.
# Expected events are (event, data) in order; rows whose order is not defined list a set.
ROWS = [
    ("set below", {"t1": {"list": {"a": 1}}}, "t1", [("PUT", "t1/deep/x/y/z", 5)],
     [("put", {"path": "/deep/x/y/z", "data": 5})]),
    ("set at", {"t1": {"a": 1}}, "t1", [("PUT", "t1", {"b": 2})],
     [("put", {"path": "/", "data": {"b": 2}})]),
    ("set above", {"t1": {"a": 1}, "o": 1}, "t1", [("PUT", "", {"t1": {"z": 26}})],
     [("put", {"path": "/", "data": {"z": 26}})]),
    ("set above removes the location", {"t1": {"a": 1}, "o": 1}, "t1", [("PUT", "", {"o": 2})],
     [("put", {"path": "/", "data": None})]),
    ("set above, location unchanged", {"t1": {"a": 1}, "o": 1}, "t1", [("PUT", "", {"t1": {"a": 1}, "o": 2})], []),
    ("set beside", {"t1": {"a": 1}, "o": 1}, "t1", [("PUT", "o", 3)], []),
    ("set beside, sibling location", {"t1": {"a": 1}, "t2": {"a": 1}}, "t1", [("PUT", "t2/a", 3)], []),
    ("set the same value", {"t1": {"a": 1}}, "t1", [("PUT", "t1/a", 1)], []),
    ("set a primitive below", {"t1": {"a": {"b": 1}}}, "t1", [("PUT", "t1/a", "x")],
     [("put", {"path": "/a", "data": "x"})]),
    ("set below a primitive", {"t1": {"p": 5}}, "t1", [("PUT", "t1/p/q", 1)],
     [("put", {"path": "/p/q", "data": 1})]),
    ("set a server timestamp", {"t1": {"a": 1}}, "t1", [("PUT", "t1/at", {".sv": "timestamp"})],
     [("put", {"path": "/at", "data": "<number>"})]),
    ("set an empty object deletes", {"t1": {"a": {"b": 1}, "c": 1}}, "t1", [("PUT", "t1/a", {})],
     [("put", {"path": "/a", "data": None})]),
    ("push below", {"t1": {"list": {"a": 1}}}, "t1", [("POST", "t1/list", {"k": "v"})],
     [("put", {"path": "/list/{push}", "data": {"k": "v"}})]),
    ("push at", {"t1": {"a": 1}}, "t1", [("POST", "t1", "x")],
     [("put", {"path": "/{push}", "data": "x"})]),
    ("push beside", {"t1": {"a": 1}, "o": {}}, "t1", [("POST", "o", 1)], []),
    ("delete below", {"t1": {"a": 1, "b": 2}}, "t1", [("DELETE", "t1/a", None)],
     [("put", {"path": "/a", "data": None})]),
    ("delete at", {"t1": {"a": 1}}, "t1", [("DELETE", "t1", None)],
     [("put", {"path": "/", "data": None})]),
    ("delete above", {"t1": {"a": 1}}, "t1", [("DELETE", "", None)],
     [("put", {"path": "/", "data": None})]),
    ("delete nothing", {"t1": {"a": 1}}, "t1", [("DELETE", "t1/none", None)], []),
    ("delete beside", {"t1": {"a": 1}, "o": 1}, "t1", [("DELETE", "o", None)], []),
    ("update below", {"t1": {"list": {"a": 1}}}, "t1", [("PATCH", "t1/list", {"b": 2, "a": None})],
     [("patch", {"path": "/list", "data": {"a": None, "b": 2}})]),
    ("update at", {"t1": {"a": 1}}, "t1", [("PATCH", "t1", {"b": 2, "c": {"d": 3}})],
     [("patch", {"path": "/", "data": {"b": 2, "c": {"d": 3}}})]),
    ("update from above with a deep key", {"t1": {"list": {"a": 1}}}, "t1", [("PATCH", "", {"t1/list/b": 2})],
     [("patch", {"path": "/list", "data": {"b": 2}})]),
    ("update above naming the location", {"t1": {"a": 1}, "o": 1}, "t1", [("PATCH", "", {"t1": {"n": 1}, "o": 2})],
     [("put", {"path": "/", "data": {"n": 1}})]),
    ("update above naming an ancestor", {"t1": {"in": {"a": 1}}, "o": 1}, "t1/in", [("PATCH", "", {"t1": {"in": 5}})],
     [("put", {"path": "/", "data": 5})]),
    ("update beside", {"t1": {"a": 1}, "o": {"x": 1}}, "t1", [("PATCH", "o", {"x": 2})], []),
    ("update partly unchanged", {"t1": {"a": 1}}, "t1", [("PATCH", "t1", {"a": 1, "b": 2})],
     [("patch", {"path": "/", "data": {"b": 2}})]),
    ("multi-path update, one parent", {"t1": {"l": {"a": 1}}}, "t1", [("PATCH", "", {"t1/l/b": 2, "t1/l/c": 3, "o": 1})],
     [("patch", {"path": "/l", "data": {"b": 2, "c": 3}})]),
    ("multi-path update, several parents", {"t1": {"a": 1}}, "t1", [("PATCH", "", {"t1/x/y": 1, "t1/c": 2, "t1/a": None, "o": 1})],
     {("patch", json.dumps({"path": "/", "data": {"a": None, "c": 2}}, sort_keys=True)),
      ("patch", json.dumps({"path": "/x", "data": {"y": 1}}, sort_keys=True))}),
]


def prepare(d, row_root, initial):
    call(d, "PUT", row_root, initial)


@pytest.mark.parametrize("name,initial,location,writes,expected", ROWS, ids=[row[0] for row in ROWS])
def test_write_shapes(d, name, initial, location, writes, expected):
    root = "/c" + uuid.uuid4().hex[:10]
    prepare(d, root, initial)
    listened = root + "/" + location
    client = SSEClient(d, listened)
    try:
        event, first_id, data, raw = client.next_data()
        assert event == "put" and data == {"path": "/", "data": call(d, "GET", listened)}
        pushed = None
        for method, path, body in writes:
            answer = call(d, method, root + ("/" + path if path else ""), body)
            if method == "POST":
                pushed = answer["name"]
        marker = "/zz-marker"
        # A write at or above the location may have removed it: the marker recreates it.
        call(d, "PUT", listened + marker, True)
        frames, marker_id = frames_until_marker(client, marker)
        got = [(event, data) for event, _, data, _ in frames]
        if isinstance(expected, set):
            assert {(e, json.dumps(x, sort_keys=True)) for e, x in got} == expected and len(got) == len(expected), got
        else:
            want = []
            for event, data in expected:
                data = dict(data, path=data["path"].replace("{push}", pushed or ""))
                if data["data"] == "<number>":
                    assert isinstance(got[len(want)][1]["data"], (int, float)) if len(got) > len(want) else False, got
                    data["data"] = got[len(want)][1]["data"]
                want.append((event, data))
            assert got == want, f"{name}: {got}"
        ids = {id for _, id, _, _ in frames}
        assert len(ids) <= 1, f"{name}: all frames of one write share one id: {ids}"
        for id in ids:
            assert first_id < id < marker_id
        for _, _, data, raw in frames:
            # `data:` is compact JSON with "path" first, LF endings (checked by SSEClient).
            assert raw.splitlines()[-1] == "data: " + json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    finally:
        client.close()


def test_frames_of_one_multi_path_update_share_its_id_and_order_by_path(d):
    root = "/mp" + uuid.uuid4().hex[:8]
    call(d, "PUT", root, {"a": 1})
    client = SSEClient(d, root)
    try:
        client.next_data()
        call(d, "PATCH", "/", {root.strip("/") + "/x/y": 1, root.strip("/") + "/c": 2, root.strip("/") + "/b/z": 3})
        call(d, "PUT", root + "/zz-marker", True)
        frames, _ = frames_until_marker(client, "/zz-marker")
        assert [(e, d["path"]) for e, _, d, _ in frames] == [("patch", "/"), ("patch", "/b"), ("patch", "/x")]
        assert len({id for _, id, _, _ in frames}) == 1
        raw = "".join(r for _, _, _, r in frames)
        id = frames[0][1]
        assert raw == (
            f'event: patch\nid: {id}\ndata: {{"path":"/","data":{{"c":2}}}}\n'
            f'event: patch\nid: {id}\ndata: {{"path":"/b","data":{{"z":3}}}}\n'
            f'event: patch\nid: {id}\ndata: {{"path":"/x","data":{{"y":1}}}}\n'
        )
    finally:
        client.close()


QUERY_ROWS = [
    ("child enters, another leaves", ("PUT", "d", {"s": 0}), [("patch", {"path": "/", "data": {"c": None, "d": {"s": 0}}})]),
    ("child outside the window changes", ("PUT", "a/s", 9), []),
    ("child inside changes", ("PUT", "b/t", True), [("put", {"path": "/b", "data": {"s": 1, "t": True}})]),
    ("child inside moves within", ("PUT", "b/s", 1.5), [("put", {"path": "/b", "data": {"s": 1.5}})]),
    ("child leaves, next enters", ("DELETE", "b", None), [("patch", {"path": "/", "data": {"a": {"s": 3}, "b": None}})]),
    ("location replaced", ("PUT", "", {"x": {"s": 5}}), [("patch", {"path": "/", "data": {"b": None, "c": None, "x": {"s": 5}}})]),
]


@pytest.mark.parametrize("name,write,expected", QUERY_ROWS, ids=[r[0] for r in QUERY_ROWS])
def test_query_windows(d, name, write, expected):
    root = "/q" + uuid.uuid4().hex[:10]
    call(d, "PUT", root, {"a": {"s": 3}, "b": {"s": 1}, "c": {"s": 2}})
    rules = requests.get(d.base_url + "/.settings/rules.json").json()
    rules.setdefault("rules", {})[root.strip("/")] = {".indexOn": "s"}
    assert requests.put(d.base_url + "/.settings/rules.json", data=json.dumps(rules)).status_code == 200
    wait_for_indexes(d)
    client = SSEClient(d, root, 'orderBy="s"&limitToFirst=2')
    try:
        assert client.next_data()[2] == {"path": "/", "data": {"b": {"s": 1}, "c": {"s": 2}}}
        method, path, body = write
        call(d, method, root + ("/" + path if path else ""), body)
        # Marker: sorts first (s = -1) so it enters the window.
        call(d, "PUT", root + "/zz-marker", {"s": -1})
        got = []
        while True:
            event, id, data, _ = client.next_data()
            if "zz-marker" in json.dumps(data):
                break
            got.append((event, data))
        assert got == expected, f"{name}: {got}"
    finally:
        client.close()


# firebase-admin's listener thread raises when close() shuts its session mid-read; that is the
# SDK's own shutdown path, not a failure of the stream.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_firebase_admin_listen_at_a_parent(d):
    """The official SDK's `Reference.listen()` (emulator mode): `event_type`, `path` and `data`
    as Firebase defines them; firebase-admin's own integration test asserts that a push under
    the listened reference arrives as `path == '/' + key`."""
    from firebase_admin import db

    ns = "listen" + uuid.uuid4().hex[:8]
    with firebase_app(d.port, ns, "listen") as app:
        ref = db.reference("/users", app=app)
        ref.set({"ada": {"name": "Ada", "age": 36}})
        events = queue.Queue()
        registration = ref.listen(lambda e: events.put((e.event_type, e.path, e.data)))
        try:
            assert events.get(timeout=10) == ("put", "/", {"ada": {"name": "Ada", "age": 36}})
            key = ref.push({"name": "Bob"}).key
            assert events.get(timeout=10) == ("put", "/" + key, {"name": "Bob"})
            ref.child("ada/age").set(37)
            assert events.get(timeout=10) == ("put", "/ada/age", 37)
            ref.child("ada").update({"age": 38, "city": "London"})
            assert events.get(timeout=10) == ("patch", "/ada", {"age": 38, "city": "London"})
            ref.update({"ada/age": 39, key + "/name": "Robert"})
            got = sorted([events.get(timeout=10), events.get(timeout=10)], key=lambda e: e[1])
            assert got == sorted([("patch", "/ada", {"age": 39}), ("patch", "/" + key, {"name": "Robert"})], key=lambda e: e[1])
            ref.child(key).delete()
            assert events.get(timeout=10) == ("put", "/" + key, None)
            db.reference("/", app=app).update({"users": {"cy": 1}, "other": 2})
            assert events.get(timeout=10) == ("put", "/", {"cy": 1})
            db.reference("/other", app=app).set(3)  # beside: nothing
            ref.child("cy").set(2)
            assert events.get(timeout=10) == ("put", "/cy", 2)
            assert events.empty()
        finally:
            registration.close()


def apply_event(cache, event, data):
    return apply_change(cache, event, data["path"], data["data"])


def normalize(value):
    """What a GET renders: objects with integer keys may come back as arrays."""
    if isinstance(value, list):
        return normalize({str(i): v for i, v in enumerate(value) if v is not None})
    if isinstance(value, dict):
        out = {k: normalize(v) for k, v in value.items()}
        out = {k: v for k, v in out.items() if v is not None}
        return out or None
    return value


def test_a_cache_applying_every_event_equals_a_fresh_get(d):
    seed = int(os.environ.get("EDDY_SEED") or random.randrange(1 << 32))
    writes = int(os.environ.get("EDDY_EVENTS_MAX") or 200)
    print(f"EDDY_SEED={seed} EDDY_EVENTS_MAX={writes}")
    g = random.Random(seed)
    root = "m" + uuid.uuid4().hex[:8]
    keys = ["a", "b", "c", "0", "1"]

    def path(depth_max):
        return "/".join(g.choice(keys) for _ in range(g.randint(0, depth_max)))

    def value(depth=0):
        kind = g.randrange(5 if depth < 2 else 3)
        if kind == 0:
            return None
        if kind == 1:
            return g.randint(0, 3)
        if kind == 2:
            return g.choice(["x", "y"])
        return {k: value(depth + 1) for k in keys if g.random() < 0.5}

    def full(p):
        return "/" + root + ("/" + p if p else "")

    call(d, "PUT", full(""), {"a": {"b": 1, "c": {"a": "x"}}, "b": 2, "1": {"0": "y"}})
    # Listened locations: the row root, children and grandchildren (some absent, some primitive).
    locations = sorted({""} | {path(2) for _ in range(7)})
    streams = []
    for location in locations:
        client = SSEClient(d, full(location))
        event, _, data, _ = client.next_data()
        assert event == "put" and data["path"] == "/"
        streams.append([location, client, normalize(data["data"])])
    try:
        for step in range(writes):
            at = path(3)
            op = g.randrange(6)
            if op <= 1:
                method, body = "PUT", value()
            elif op == 2:
                method, body = "DELETE", None
            elif op == 3:
                method, body = "POST", value(2) or 1
            else:
                method, body = "PATCH", {}
                for k in keys:
                    if g.random() < 0.5:
                        below = "/".join([k] + [g.choice(keys) for _ in range(g.randint(0, 2))])
                        body[below] = value(1)
                body = body or {"b": 1}
            description = f"seed {seed} step {step}: {method} {full(at)} {json.dumps(body)}"
            call(d, method, full(at), body)
            # Sync every stream: a marker under each location, then compare, then remove it.
            for stream in streams:
                location, client, cache = stream
                marker = f"zz{step}"
                call(d, "PUT", full(location) + "/" + marker, True)
                while True:
                    event, _, data, _ = client.next_data()
                    if data == {"path": "/" + marker, "data": True}:
                        break
                    cache = apply_event(cache, event, data)
                cache = apply_event(cache, "put", {"path": "/" + marker, "data": True})
                assert normalize(cache) == normalize(call(d, "GET", full(location))), f"{description}; stream at {full(location)}"
                call(d, "DELETE", full(location) + "/" + marker)
                event, _, data, _ = client.next_data()
                cache = apply_event(cache, event, data)
                stream[2] = cache
    finally:
        for _, client, _ in streams:
            client.close()
