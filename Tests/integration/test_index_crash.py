"""Crash safety of secondary indexes (the index contract; DESIGN "Write path"): SIGKILL eddyd in
the middle of an online index build and check it resumes to "ready" with entries that agree with
the tree; a query on a building index answers 503 after waiting; writes during a build are
indexed; and SIGKILL while writers PATCH / POST / PUT / DELETE indexed data (several times),
after which every acknowledged write is there and indexed queries agree with the tree.
`eddy verify` (which checks every ready index entry by entry) passes at the end of each.

Seeded: the seed is printed; `EDDY_SEED=<n>` replays the same kill schedule and write choices
(thread interleaving is not reproducible)."""

import json
import os
import random
import threading
import time

import pytest
import requests

from conftest import index_status, put_rules, run_eddy, wait_for_indexes
from firebase_order import Bound, SortedWindow, as_dict, value_cmp, window

BUILD_CHILDREN = int(os.environ.get("EDDY_INDEX_CRASH_CHILDREN", "50000"))
PATCH_CHUNK = 5000


def crash_seed():
    seed = int(os.environ.get("EDDY_SEED") or random.SystemRandom().randrange(1 << 31))
    print(f"\nindex crash test seed: {seed} (replay with EDDY_SEED={seed})")
    return seed


def big_child(i):
    return {"score": (i * 7919) % 1000, "metrics": {"views": i % 97}, "g": i % 10}


def big_key(i):
    return f"k{i:06d}"


def load(d, children, session, chunk=PATCH_CHUNK):
    items = list(children.items())
    for start in range(0, len(items), chunk):
        r = session.patch(d.url("items"), data=json.dumps(dict(items[start:start + chunk])), timeout=120)
        assert r.status_code == 200, r.text[:300]


def test_sorted_window_agrees_with_the_reference_model():
    rng = random.Random(7)
    pool = [None, False, True, -2, 0, 1, 1.5, 3, 3, "", "a", "b", "\U0001F600", "\uff61", {"x": 1}]
    keys = ["0", "1", "01", "10", "a", "b", "ab", "-", "\U0001F600", "\uff61", "z"]
    children = {k: ({"s": rng.choice(pool)} if rng.random() < 0.8 else rng.choice(pool[1:-1])) for k in keys}
    fast = SortedWindow(children)
    bounds = [v for v in pool if not isinstance(v, dict)] + [2, "aa"]
    for order in ("s", "$value", "$key"):
        for _ in range(2000):
            model = {}
            for side in ("start", "end"):
                if rng.random() < 0.7:
                    value = rng.choice(keys + ["00x", "c"]) if order == "$key" else rng.choice(bounds)
                    key = rng.choice(keys + ["aa", "5"]) if order != "$key" and rng.random() < 0.5 else None
                    model[side] = Bound(value, key, inclusive=rng.random() < 0.5)
            if rng.random() < 0.3:
                model[rng.choice(["first", "last"])] = rng.choice([1, 2, 5])
            assert fast.window(order, **model) == window(children, order, **model), (order, model)


def q(session, d, path, params, timeout=30):
    url = d.url(path) + "?" + "&".join(f"{n}={requests.utils.quote(v, safe='')}" for n, v in params)
    return session.get(url, timeout=timeout)


def check_queries(session, d, path, model, order, cases, label):
    """`cases`: (params, model kwargs) with raw JSON parameter values."""
    failures = []
    for params, kwargs in cases:
        r = q(session, d, path, [("orderBy", json.dumps(order))] + params)
        want = model.window(order, **kwargs) if isinstance(model, SortedWindow) else window(model, order, **kwargs)
        if r.status_code != 200:
            failures.append(f"{label}: GET {path} orderBy={order} {params}: {r.status_code} {r.text[:200]}")
            continue
        got = as_dict(r.json())
        if got != dict(want):
            missing = [k for k, _ in want if k not in got][:5]
            extra = [k for k in got if k not in dict(want)][:5]
            wrong = [k for k, v in want if k in got and got[k] != v][:5]
            failures.append(f"{label}: GET {path} orderBy={order} {params}: {len(got)} children, expected {len(want)}; "
                            f"missing {missing} extra {extra} wrong values {wrong}")
    return failures


def big_cases(rng):
    cases = [
        ([("limitToFirst", "5")], {"first": 5}),
        ([("limitToLast", "5")], {"last": 5}),
        ([("equalTo", "0")], {"start": Bound(0), "end": Bound(0)}),
        ([("equalTo", "999")], {"start": Bound(999), "end": Bound(999)}),
        ([("startAt", '500,"k050000"'), ("limitToFirst", "7")], {"start": Bound(500, "k050000"), "first": 7}),
        ([("endBefore", '3,"k000100"'), ("limitToLast", "4")], {"end": Bound(3, "k000100", inclusive=False), "last": 4}),
    ]
    for _ in range(6):
        a = rng.randrange(1000)
        b = a + rng.randrange(3)
        cases.append(([("startAt", str(a)), ("endAt", str(b))], {"start": Bound(a), "end": Bound(b)}))
    return cases


@pytest.mark.slow
def test_sigkill_during_an_online_index_build(daemon_factory):
    seed = crash_seed()
    rng = random.Random(seed)
    children = {big_key(i): big_child(i) for i in range(BUILD_CHILDREN)}
    d = daemon_factory("--durability", "sync")
    t0 = time.monotonic()
    with requests.Session() as s:
        load(d, children, s)
    print(f"loaded {len(children)} children in {time.monotonic() - t0:.1f} s")
    d.stop()
    d.args = ["--durability", "sync", "--index-build-chunk", "500", "--index-build-pause-ms", "5"]
    d.start()
    seen = []
    with requests.Session() as s:
        t0 = time.monotonic()
        put_rules(d, {"rules": {"items": {".indexOn": ["score", "metrics/views"]}}}, session=s)
        print(f"rules PUT answered in {time.monotonic() - t0:.2f} s")
        target = rng.choice([1, BUILD_CHILDREN // 10, BUILD_CHILDREN // 3])
        deadline = time.monotonic() + 60
        while True:
            indexes = index_status(d, session=s)
            seen.append(indexes)
            building = [i for i in indexes if i["state"] == "building" and i["indexed"] >= target]
            if building:
                break
            if all(i["state"] == "ready" for i in indexes):
                pytest.fail(f"the build finished before it was seen building with indexed > 0 "
                            f"(raise EDDY_INDEX_CRASH_CHILDREN); statuses seen: {seen[:3]} ... {seen[-1]}")
            assert time.monotonic() < deadline, f"no build progress within 60 s: {indexes}"
            time.sleep(0.01)
        for index in building:
            assert isinstance(index.get("position"), str) and index["position"].startswith("/items/"), index
            assert 0 < index["indexed"] < BUILD_CHILDREN, index
        d.kill()
    print(f"killed mid-build: {building}")
    # offline, the build stays where it was: `eddy index status` does not advance it, and
    # `eddy query` refuses the building index at once
    first = run_eddy("index", "status", "--data", d.data_dir).stdout
    assert run_eddy("index", "status", "--data", d.data_dir).stdout == first
    offline = [json.loads(line) for line in first.decode().splitlines() if line]
    assert any(i["state"] == "building" for i in offline), offline
    r = run_eddy("query", "/items", "--data", d.data_dir, "--order-by", '"score"', "--limit-to-first", "1", check=False)
    assert r.returncode == 1 and "still building" in r.stderr.decode(), (r.returncode, r.stderr, r.stdout[:200])
    d.args = ["--durability", "sync"]
    d.start()
    with requests.Session() as s:
        after = index_status(d, session=s)
        print(f"after restart: {after}")
        assert {(i["location"], i["on"]) for i in after} == {("/items", "score"), ("/items", "metrics/views")}
        t0 = time.monotonic()
        final = wait_for_indexes(d, timeout=120, session=s)
        print(f"ready {time.monotonic() - t0:.1f} s after the restart: {final}")
        for index in final:
            assert index["indexed"] == BUILD_CHILDREN, ("a resumed build skipped or recounted children", index)
            assert "position" not in index, index
        model = SortedWindow(children)
        failures = []
        for order in ("score", "metrics/views"):
            failures += check_queries(s, d, "items", model, order, big_cases(rng), "after the resumed build")
        assert not failures, f"seed {seed}:\n" + "\n".join(failures)
    d.stop()
    t0 = time.monotonic()
    run_eddy("verify", "--data", d.data_dir, timeout=300)
    print(f"eddy verify took {time.monotonic() - t0:.1f} s")
    lines = [json.loads(line) for line in run_eddy("index", "status", "--data", d.data_dir).stdout.decode().splitlines() if line]
    assert {(i["state"], i["indexed"]) for i in lines} == {("ready", BUILD_CHILDREN)}, lines


@pytest.mark.slow
def test_building_index_answers_503_and_indexes_concurrent_writes(daemon_factory):
    """A throttled build (100 children per chunk, 300 ms pauses: ~9 s): a query on it waits
    about 5 s and answers 503; a ready index keeps answering; writes on both sides of the build
    position are indexed; SIGKILL mid-build; after the restart everything agrees."""
    seed = crash_seed()
    rng = random.Random(seed)
    n = 3000
    children = {big_key(i): big_child(i) for i in range(n)}
    d = daemon_factory("--durability", "sync", "--index-build-chunk", "100", "--index-build-pause-ms", "300")
    with requests.Session() as s:
        put_rules(d, {"rules": {"items": {".indexOn": "g"}}}, session=s)  # ready at once: nothing to index
        load(d, children, s, chunk=1000)
        wait_for_indexes(d, session=s)
        put_rules(d, {"rules": {"items": {".indexOn": ["g", "score"]}}}, session=s)
        t0 = time.monotonic()
        r = q(s, d, "items", [("orderBy", '"score"'), ("limitToFirst", "1")])
        waited = time.monotonic() - t0
        assert r.status_code == 503, (r.status_code, r.text[:200], waited)
        assert "still building" in r.json()["error"], r.text
        assert waited >= 4.0, f"the 503 came after {waited:.1f} s, without waiting for the build"
        # the ready index answers meanwhile
        r = q(s, d, "items", [("orderBy", '"g"'), ("equalTo", "3"), ("limitToFirst", "2")])
        assert r.status_code == 200 and as_dict(r.json()) == dict(window(children, "g", start=Bound(3), end=Bound(3), first=2))
        status = {i["on"]: i for i in index_status(d, session=s)}
        assert status["score"]["state"] == "building" and status["g"]["state"] == "ready", status
        # writes on both sides of the build position, while it builds
        updates = {}
        for i in sorted(set(range(0, 40)) | set(range(n - 40, n)) | {rng.randrange(n) for _ in range(40)}):
            key = big_key(i)
            kind = rng.random()
            if kind < 0.25:
                updates[key] = None
            elif kind < 0.5:
                updates[f"{key}/score"] = rng.randrange(1000)
            elif kind < 0.75:
                updates[key] = {"score": rng.choice([-1, 0, 1000, "s", True]), "g": 1}
            else:
                updates[f"{key}/score"] = None
        updates["k999999"] = {"score": -5, "g": 0}
        updates["a-first"] = {"score": 2000, "g": 11}
        assert s.patch(d.url("items"), data=json.dumps(updates)).status_code == 200
        status = {i["on"]: i for i in index_status(d, session=s)}
        assert status["score"]["state"] == "building", status
        print(f"killing at {status['score']}")
        d.kill()
    # offline while it is building: verify passes (it checks ready indexes), queries on the
    # ready index work, the building one is refused
    verify = run_eddy("verify", "--data", d.data_dir, check=False)
    assert verify.returncode == 0, (verify.stdout, verify.stderr)
    offline = {i["on"]: i for i in map(json.loads, filter(None, run_eddy("index", "status", "--data", d.data_dir).stdout.decode().splitlines()))}
    assert offline["score"]["state"] == "building" and offline["g"]["state"] == "ready", offline
    r = run_eddy("query", "/items", "--data", d.data_dir, "--order-by", '"score"', "--limit-to-first", "1", check=False)
    assert r.returncode == 1 and "still building" in r.stderr.decode(), (r.returncode, r.stderr)
    r = run_eddy("query", "/items", "--data", d.data_dir, "--order-by", '"g"', "--equal-to", "11")
    assert json.loads(r.stdout) == {"a-first": {"score": 2000, "g": 11}}
    d.args = ["--durability", "sync"]
    d.start()
    with requests.Session() as s:
        wait_for_indexes(d, timeout=60, session=s)
        tree = as_dict(s.get(d.url("items"), timeout=60).json())
        assert len(tree) > n - 200
        failures = []
        for order in ("score", "g"):
            cases = [([], {}), ([("limitToFirst", "3")], {"first": 3}), ([("limitToLast", "3")], {"last": 3}),
                     ([("equalTo", "null")], {"start": Bound(None), "end": Bound(None)}),
                     ([("startAt", "true"), ("endAt", "0")], {"start": Bound(True), "end": Bound(0)}),
                     ([("startAt", '"s"')], {"start": Bound("s")}),
                     ([("startAt", "990"), ("endBefore", '"s"')], {"start": Bound(990), "end": Bound("s", inclusive=False)})]
            failures += check_queries(s, d, "items", tree, order, cases, "after writes during the build")
        assert not failures, f"seed {seed}:\n" + "\n".join(failures)
    d.stop()
    run_eddy("verify", "--data", d.data_dir)


# -- SIGKILL while writers change indexed data ------------------------------------------------------

WRITERS = 6
KILLS = 4
OWNED = 30
STATIC = 1500


def canon(value):
    return json.dumps(value, sort_keys=True)


def set_in(child, segments, value):
    """The child after writing `value` (None deletes) at `segments` inside it; empty objects are
    pruned, writing below a primitive replaces it."""
    if not segments:
        return value
    out = dict(child) if isinstance(child, dict) else {}
    inner = set_in(out.get(segments[0]), segments[1:], value)
    if inner is None or inner == {}:
        out.pop(segments[0], None)
    else:
        out[segments[0]] = inner
    return out or None


def increment(child, delta):
    score = child.get("score") if isinstance(child, dict) else None
    number = isinstance(score, int) and not isinstance(score, bool)
    return set_in(child, ["score"], score + delta if number else delta)


class Gate:
    """Writers pass it before each request; the controller closes it, kills the daemon, waits
    until every writer is parked (its in-flight request answered or failed), checks, reopens."""

    def __init__(self, url):
        self.cond = threading.Condition()
        self.is_open = True
        self.stopped = False
        self.url = url
        self.parked = 0

    def enter(self):
        with self.cond:
            while not self.is_open and not self.stopped:
                self.parked += 1
                self.cond.notify_all()
                self.cond.wait()
                self.parked -= 1
            return None if self.stopped else self.url

    def close(self):
        with self.cond:
            self.is_open = False

    def reopen(self, url):
        with self.cond:
            self.url = url
            self.is_open = True
            self.cond.notify_all()

    def stop(self):
        with self.cond:
            self.stopped = True
            self.cond.notify_all()

    def wait_parked(self, count, timeout=30):
        deadline = time.monotonic() + timeout
        with self.cond:
            while self.parked < count:
                remaining = deadline - time.monotonic()
                assert remaining > 0, f"only {self.parked} of {count} writers parked"
                self.cond.wait(remaining)


def random_child(rng, w):
    child = {"w": w}
    score = rng.choice([0, 1, 2, 3, 5, 8, 13, 20, "s1", "s2", True, False, None])
    if score is not None:
        child["score"] = score
    if rng.random() < 0.7:
        child["metrics"] = {"views": rng.randrange(10)}
    if rng.random() < 0.6:
        child["tag"] = rng.choice(["a", "b", "c"])
    return child


class Writer(threading.Thread):
    def __init__(self, index, gate, seed, state):
        super().__init__(name=f"writer-{index}", daemon=True)
        self.index = index
        self.gate = gate
        self.rng = random.Random(seed * 1000 + index)
        self.state = state  # key -> set of canonical values it may hold (one when certain)
        self.unacked_pushes = {}  # seq -> value
        self.acked = 0
        self.doubtful = 0
        self.odd = []
        self.error = None

    def run(self):
        try:
            self.loop()
        except BaseException as e:  # reported by the test
            self.error = e

    def apply(self, key, fn, ok):
        old = self.state.get(key, {canon(None)})
        new = {canon(fn(json.loads(c))) for c in old}
        self.state[key] = new if ok else old | new

    def loop(self):
        session = requests.Session()
        seq = 0
        while True:
            base = self.gate.enter()
            if base is None:
                break
            rng = self.rng
            keys = list(self.state)
            key = rng.choice(keys)
            kind = rng.choices(["put", "patch", "multi", "delete", "delete_field", "post", "incr", "put_deep"],
                               [25, 20, 10, 8, 7, 10, 10, 10])[0]
            effects = []  # (key, fn)
            if kind == "put":
                value = random_child(rng, self.index)
                request = ("PUT", f"/items/{key}", value)
                effects.append((key, lambda c, v=value: v))
            elif kind == "patch":
                score, views = rng.randrange(30), rng.randrange(10)
                request = ("PATCH", f"/items/{key}", {"score": score, "metrics/views": views, "w": self.index})
                effects.append((key, lambda c, s=score, v=views: set_in(set_in(set_in(c, ["score"], s), ["metrics", "views"], v),
                                                                      ["w"], self.index)))
            elif kind == "multi":
                other = rng.choice(keys)
                while other == key and len(keys) > 1:
                    other = rng.choice(keys)
                score = rng.choice([rng.randrange(30), "s3", False])
                replacement = random_child(rng, self.index) if rng.random() < 0.7 else None
                request = ("PATCH", "/items", {f"{key}/score": score, other: replacement})
                effects.append((key, lambda c, s=score: set_in(c, ["score"], s)))
                effects.append((other, lambda c, v=replacement: v))
            elif kind == "delete":
                request = ("DELETE", f"/items/{key}", None)
                effects.append((key, lambda c: None))
            elif kind == "delete_field":
                field = rng.choice(["metrics", "score", "tag"])
                request = ("DELETE", f"/items/{key}/{field}", None)
                effects.append((key, lambda c, f=field: set_in(c, [f], None)))
            elif kind == "incr":
                delta = rng.choice([1, 2, -1, 10])
                request = ("PATCH", f"/items/{key}", {"score": {".sv": {"increment": delta}}})
                effects.append((key, lambda c, dl=delta: increment(c, dl)))
            elif kind == "put_deep":
                views = rng.randrange(10)
                request = ("PUT", f"/items/{key}/metrics/views", views)
                effects.append((key, lambda c, v=views: set_in(c, ["metrics", "views"], v)))
            else:
                seq += 1
                value = random_child(rng, self.index)
                value["seq"] = seq
                request = ("POST", "/items", value)
            method, path, body = request
            ok = False
            try:
                r = session.request(method, base + path + ".json", data=None if body is None else json.dumps(body),
                                    timeout=(2, 10))
                ok = r.status_code == 200
                if not ok and r.status_code != 503:
                    self.odd.append((method, path, body, r.status_code, r.text[:200]))
            except (requests.ConnectionError, requests.Timeout):
                session.close()
                session = requests.Session()
            if ok:
                self.acked += 1
            else:
                self.doubtful += 1
            if kind == "post":
                if ok:
                    self.state[r.json()["name"]] = {canon(value)}
                else:
                    self.unacked_pushes[seq] = value
            for k, fn in effects:
                self.apply(k, fn, ok)
        session.close()


def owned_key(w, j):
    return f"w{w}k{j:02d}"


def static_child(i):
    return {"score": i % 23, "metrics": {"views": i % 7}, "tag": "abc"[i % 3], "s": True}


@pytest.mark.slow
def test_sigkill_while_writers_change_indexed_data(daemon_factory):
    seed = crash_seed()
    rng = random.Random(seed)
    d = daemon_factory("--durability", "sync", "--index-build-chunk", "50", "--index-build-pause-ms", "10")
    static = {f"s{i:05d}": static_child(i) for i in range(STATIC)}
    states = []
    initial = dict(static)
    for w in range(WRITERS):
        state = {}
        for j in range(OWNED):
            child = random_child(random.Random(seed + w * 100 + j), w)
            initial[owned_key(w, j)] = child
            state[owned_key(w, j)] = {canon(child)}
        states.append(state)
    with requests.Session() as s:
        load(d, initial, s, chunk=2000)
        put_rules(d, {"rules": {"items": {".indexOn": ["score", "metrics/views"]}}}, session=s)
        wait_for_indexes(d, session=s)
    gate = Gate(d.base_url)
    writers = [Writer(w, gate, seed, states[w]) for w in range(WRITERS)]
    for w in writers:
        w.start()
    acked_per_run = []
    checked = []
    try:
        for run in range(KILLS):
            acked_before = sum(w.acked for w in writers)
            if run == 1:
                # a new index, built online while the writers go on (and maybe killed mid-build)
                put_rules(d, {"rules": {"items": {".indexOn": ["score", "metrics/views", "tag"]}}})
            time.sleep(rng.uniform(0.3, 1.2))
            gate.close()
            statuses = index_status(d) if rng.random() < 0.5 else None
            d.kill()
            gate.wait_parked(WRITERS)
            acked_per_run.append(sum(w.acked for w in writers) - acked_before)
            d.start()
            checked.append(check_after_restart(d, writers, static, rng, seed, f"restart {run + 1}", statuses))
            gate.reopen(d.base_url)
        time.sleep(0.5)
        gate.close()
        gate.wait_parked(WRITERS)
        checked.append(check_after_restart(d, writers, static, rng, seed, "final (no kill)", None))
    finally:
        gate.stop()
        for w in writers:
            w.join(timeout=30)
    for w in writers:
        assert w.error is None, f"{w.name}: {w.error!r}"
        assert not w.odd, f"{w.name}: unexpected answers {w.odd[:3]}"
    print(f"acked writes per killed run: {acked_per_run}; doubtful: {sum(w.doubtful for w in writers)}; "
          f"children after each restart: {checked}")
    assert all(n > 0 for n in acked_per_run), f"a run acknowledged no write: {acked_per_run}"
    d.stop()
    verify = run_eddy("verify", "--data", d.data_dir, check=False)
    assert verify.returncode == 0, (verify.returncode, verify.stdout.decode(), verify.stderr.decode())
    lines = [json.loads(line) for line in run_eddy("index", "status", "--data", d.data_dir).stdout.decode().splitlines() if line]
    assert {(i["on"], i["state"]) for i in lines} == {("score", "ready"), ("metrics/views", "ready"), ("tag", "ready")}, lines


def check_after_restart(d, writers, static, rng, seed, label, statuses_before_kill):
    """With every writer parked: the tree holds every acknowledged write (a key whose writes were
    all acknowledged has exactly the modelled value; one with a write in doubt one of its
    possible values); unknown children are unacknowledged pushes; indexed queries agree with
    the tree. Then the model takes the tree as certain (the killed process is gone)."""
    with requests.Session() as s:
        r = s.get(d.url("items"), timeout=60)
        assert r.status_code == 200, r.text[:300]
        tree = as_dict(r.json())
        problems = []
        for key, value in static.items():
            if tree.get(key) != value:
                problems.append(f"static child {key}: {tree.get(key)} != {value}")
        known = set(static)
        for w in writers:
            for key, candidates in w.state.items():
                known.add(key)
                actual = canon(tree.get(key))
                if actual not in candidates:
                    kind = "acknowledged" if len(candidates) == 1 else "possible"
                    problems.append(f"{w.name} {key}: holds {actual}, {kind} value(s) {sorted(candidates)[:4]}")
                w.state[key] = {actual}
        pushed = {}
        for w in writers:
            for seq, value in w.unacked_pushes.items():
                pushed[canon(value)] = (w, seq)
        for key in sorted(set(tree) - known):
            origin = pushed.pop(canon(tree[key]), None)
            if origin is None:
                problems.append(f"unknown child {key}: {tree[key]}")
                continue
            w, seq = origin
            w.state[key] = {canon(tree[key])}
            del w.unacked_pushes[seq]
        for w in writers:  # the rest never landed and never will
            w.unacked_pushes.clear()
        assert not problems, f"seed {seed}, {label}:\n" + "\n".join(problems[:20])
        indexes = wait_for_indexes(d, timeout=60, session=s)
        failures = []
        for order in [i["on"] for i in indexes]:
            cases = [([], {}), ([("limitToFirst", "5")], {"first": 5}), ([("limitToLast", "5")], {"last": 5}),
                     ([("equalTo", "null")], {"start": Bound(None), "end": Bound(None)})]
            for _ in range(8):
                a = rng.choice([0, 1, 2, 3, 5, 8, 10, 13, 20, 25, "s1", "s2", "s3", True, False, "a", "b", "c"])
                b = rng.choice([0, 1, 2, 3, 5, 8, 10, 13, 20, 25, "s1", "s2", "s3", True, False, "a", "b", "c"])
                if value_cmp(a, b) > 0:
                    a, b = b, a
                start_kind, end_kind = rng.choice(["startAt", "startAfter"]), rng.choice(["endAt", "endBefore"])
                params = [(start_kind, json.dumps(a)), (end_kind, json.dumps(b))]
                model = {"start": Bound(a, inclusive=start_kind == "startAt"), "end": Bound(b, inclusive=end_kind == "endAt")}
                if rng.random() < 0.5:
                    n = rng.choice([1, 3, 10])
                    kind = rng.choice(["limitToFirst", "limitToLast"])
                    params.append((kind, str(n)))
                    model["first" if kind == "limitToFirst" else "last"] = n
                cases.append((params, model))
            failures += check_queries(s, d, "items", SortedWindow(tree), order, cases, label)
        assert not failures, f"seed {seed}; index status before the kill {statuses_before_kill}:\n" + "\n".join(failures[:20])
        return len(tree)
