"""Indexed queries through firebase-admin 7.7.0 in emulator mode (FIREBASE_REFERENCE §9.3, §9.7):
`order_by_child` (plain and nested paths), `order_by_value`, `order_by_key` with start_at /
end_at / equal_to / limit_to_first / limit_to_last, against firebase_order.py's model. The SDK
re-sorts results client-side into an OrderedDict (§9.7); the data uses ASCII, non-integer keys
and ASCII strings, where its sort agrees with Firebase order, so the order is checked too.

The random windows print their seed; `EDDY_SEED=<seed>` replays them."""

import os
import random
import uuid

import pytest
from firebase_admin import db, exceptions

from conftest import firebase_app, wait_for_indexes
from firebase_order import Bound, value_cmp, window

NS = "fake-project-id"

SCORE_POOL = [None, False, True, -7, -1.5, 0, 1, 2, 3, 3, 3, 3.5, 4, 10, 12, 100, "", "3", "a", "a b", "apple", "b",
              "zebra", {"x": 1}, [1, 2], True, 3, "a", None, 10, 2]


def player(i):
    child = {"name": f"n{i}"}
    score = SCORE_POOL[i % len(SCORE_POOL)]
    if score is not None:
        child["score"] = score
    if i % 4 == 0:
        child["metrics"] = {"views": i % 9}
    elif i % 4 == 1:
        child["metrics"] = {"views": "v%d" % (i % 3), "likes": i}
    elif i % 4 == 2:
        child["metrics"] = "none"
    return child


PLAYERS = {f"p{i:02d}": player(i) for i in range(44)}
SCORES = {"alice": 10, "bob": 3, "carol": 3, "dave": "x", "eve": True, "frank": False, "gina": 3.5, "hank": {"a": 1},
          "ivy": -1, "jill": "3", "kate": 3, "liam": "x y"}
POSTS = {"alice": {"m1": {"stars": 3}, "m2": {"stars": 1}, "m3": {"stars": 2}}, "bob": {"m1": {"stars": 9}}}

RULES = {"rules": {
    ".read": True,
    ".write": True,
    "players": {".indexOn": ["score", "metrics/views"]},
    "scores": {".indexOn": ".value"},
    "posts": {"$uid": {".indexOn": "stars"}},
}}


@pytest.fixture(scope="module")
def d(module_daemon):
    return module_daemon


@pytest.fixture(scope="module")
def app(d):
    with firebase_app(d.port, NS, "eddy-ixq") as app:
        yield app


@pytest.fixture(scope="module")
def root(app, d):
    """`/<base>` holding players, scores and posts, with RULES rebased under it."""
    base = "faq_" + uuid.uuid4().hex[:8]
    ref = db.reference("/" + base, app=app)
    ref.set({"players": PLAYERS, "scores": SCORES, "posts": POSTS})
    rules = {"rules": {".read": True, ".write": True, base: {k: v for k, v in RULES["rules"].items() if not k.startswith(".")}}}
    # through the SDK's private client, as tooling built on firebase-admin does (§9.4)
    ref._client.request("put", "/.settings/rules.json", json=rules)
    wait_for_indexes(d, NS)
    return ref


@pytest.fixture(scope="module")
def seed():
    value = os.environ.get("EDDY_SEED") or str(random.SystemRandom().randrange(2**32))
    print(f"\ntest_firebase_admin_queries: EDDY_SEED={value}")
    return value


def expect(query, children, order, **model):
    got = query.get()
    want = window(children, order, **model)
    if not want:
        assert got is None, (model, got)
        return got
    assert isinstance(got, dict), got
    assert list(got.items()) == want, (model, list(got), [k for k, _ in want])
    return got


def test_order_by_child_with_bounds_and_limits(root):
    ref = root.child("players")
    expect(ref.order_by_child("score").start_at(3).end_at(10).limit_to_first(4), PLAYERS, "score",
           start=Bound(3), end=Bound(10), first=4)
    expect(ref.order_by_child("score").start_at(3).end_at(10).limit_to_last(4), PLAYERS, "score",
           start=Bound(3), end=Bound(10), last=4)
    expect(ref.order_by_child("score").start_at(2.5).end_at(5), PLAYERS, "score", start=Bound(2.5), end=Bound(5))
    expect(ref.order_by_child("score").equal_to(3), PLAYERS, "score", start=Bound(3), end=Bound(3))
    expect(ref.order_by_child("score").equal_to("3"), PLAYERS, "score", start=Bound("3"), end=Bound("3"))
    expect(ref.order_by_child("score").equal_to(True), PLAYERS, "score", start=Bound(True), end=Bound(True))
    expect(ref.order_by_child("score").start_at(False).end_at(True), PLAYERS, "score", start=Bound(False), end=Bound(True))
    expect(ref.order_by_child("score").start_at("a").end_at("b"), PLAYERS, "score", start=Bound("a"), end=Bound("b"))
    expect(ref.order_by_child("score").start_at("a b").limit_to_first(3), PLAYERS, "score", start=Bound("a b"), first=3)
    expect(ref.order_by_child("score").limit_to_first(5), PLAYERS, "score", first=5)
    expect(ref.order_by_child("score").limit_to_last(5), PLAYERS, "score", last=5)
    expect(ref.order_by_child("score").end_at(0), PLAYERS, "score", end=Bound(0))
    expect(ref.order_by_child("score").start_at(1000), PLAYERS, "score", start=Bound(1000))
    expect(ref.order_by_child("score").equal_to("nothing"), PLAYERS, "score", start=Bound("nothing"), end=Bound("nothing"))
    got = expect(ref.order_by_child("score"), PLAYERS, "score")
    assert got == PLAYERS


def test_order_by_nested_child(root):
    ref = root.child("players")
    expect(ref.order_by_child("metrics/views"), PLAYERS, "metrics/views")
    expect(ref.order_by_child("metrics/views").start_at(2).end_at(6), PLAYERS, "metrics/views", start=Bound(2), end=Bound(6))
    expect(ref.order_by_child("metrics/views").start_at(2).limit_to_first(3), PLAYERS, "metrics/views",
           start=Bound(2), first=3)
    expect(ref.order_by_child("metrics/views").equal_to("v1"), PLAYERS, "metrics/views", start=Bound("v1"), end=Bound("v1"))
    expect(ref.order_by_child("metrics/views").limit_to_last(2), PLAYERS, "metrics/views", last=2)
    expect(ref.order_by_child("metrics/views").end_at(False).limit_to_last(3), PLAYERS, "metrics/views",
           end=Bound(False), last=3)


def test_order_by_value(root):
    ref = root.child("scores")
    expect(ref.order_by_value(), SCORES, "$value")
    expect(ref.order_by_value().equal_to(3), SCORES, "$value", start=Bound(3), end=Bound(3))
    expect(ref.order_by_value().equal_to("x"), SCORES, "$value", start=Bound("x"), end=Bound("x"))
    expect(ref.order_by_value().equal_to("x y"), SCORES, "$value", start=Bound("x y"), end=Bound("x y"))
    expect(ref.order_by_value().start_at(3).end_at(10).limit_to_first(3), SCORES, "$value",
           start=Bound(3), end=Bound(10), first=3)
    expect(ref.order_by_value().start_at("3").limit_to_last(2), SCORES, "$value", start=Bound("3"), last=2)
    expect(ref.order_by_value().end_at(True), SCORES, "$value", end=Bound(True))


def test_order_by_key(root):
    ref = root.child("players")
    expect(ref.order_by_key().limit_to_last(2), PLAYERS, "$key", last=2)
    expect(ref.order_by_key().limit_to_first(3), PLAYERS, "$key", first=3)
    expect(ref.order_by_key().start_at("p10").end_at("p13"), PLAYERS, "$key", start=Bound("p10"), end=Bound("p13"))
    expect(ref.order_by_key().equal_to("p07"), PLAYERS, "$key", start=Bound("p07"), end=Bound("p07"))


def test_wildcard_parent(root):
    for uid, children in POSTS.items():
        expect(root.child("posts").child(uid).order_by_child("stars").start_at(2), children, "stars", start=Bound(2))
        expect(root.child("posts").child(uid).order_by_child("stars").limit_to_first(1), children, "stars", first=1)


def test_random_child_windows(root, seed):
    rng = random.Random(f"{seed}/admin-index")
    ref = root.child("players")
    values = [v for v in SCORE_POOL if v is not None and not isinstance(v, (dict, list))] + [-100, 2.5, 11, "aa", "c", "zzz"]
    failures = []
    for draw in range(60):
        order = rng.choice(["score", "metrics/views"])
        query = ref.order_by_child(order)
        model = {}
        shape = rng.choice(["start", "end", "both", "equal", "none"])
        a, b = rng.choice(values), rng.choice(values)
        if shape == "both" and rng.random() < 0.6 and value_cmp(a, b) > 0:
            a, b = b, a
        if shape in ("start", "both"):
            query, model["start"] = query.start_at(a), Bound(a)
        if shape in ("end", "both"):
            query, model["end"] = query.end_at(b), Bound(b)
        if shape == "equal":
            query = query.equal_to(a)
            model.update(start=Bound(a), end=Bound(a))
        limit = rng.choice([None, "first", "last"])
        n = rng.choice([1, 2, 3, 7, len(PLAYERS) + 1])
        if limit == "first":
            query, model["first"] = query.limit_to_first(n), n
        elif limit == "last":
            query, model["last"] = query.limit_to_last(n), n
        want = window(PLAYERS, order, **model)
        got = query.get()
        got_items = list(got.items()) if isinstance(got, dict) else got
        if (got_items if want else got) != (want if want else None):
            failures.append(f"draw {draw} order {order} {model}: expected {[k for k, _ in want]}, got "
                            f"{list(got) if isinstance(got, dict) else got}")
    assert not failures, f"seed {seed}:\n" + "\n".join(failures)


def test_unindexed_child_query_raises(root):
    for query in (root.child("players").order_by_child("name"),
                  root.child("players").order_by_child("metrics/likes").limit_to_first(1),
                  root.child("scores").order_by_child("score"),
                  root.child("players").order_by_value().equal_to(3),
                  root.child("posts").order_by_child("stars")):
        with pytest.raises(exceptions.InvalidArgumentError) as info:
            query.get()
        assert "Index not defined" in str(info.value), str(info.value)
    with pytest.raises(exceptions.InvalidArgumentError) as info:
        root.child("players").order_by_child("name").start_at("n1").get()
    assert str(info.value) == f'Index not defined, add ".indexOn": "name", for path "{root.child("players").path}", to the rules'


def test_results_follow_later_writes(root):
    ref = root.child("live")
    ref.set({"a": {"score": 1}, "b": {"score": 2}})
    rules = ref._client.body("get", "/.settings/rules.json", params="format=strict")
    base = root.key
    rules["rules"][base]["live"] = {".indexOn": "score"}
    ref._client.request("put", "/.settings/rules.json", json=rules)
    assert list(ref.order_by_child("score").get()) == ["a", "b"]
    ref.child("a").update({"score": 3})
    assert list(ref.order_by_child("score").get()) == ["b", "a"]
    c = ref.push({"score": 0})
    assert list(ref.order_by_child("score").limit_to_first(1).get()) == [c.key]
    ref.child("b").delete()
    assert list(ref.order_by_child("score").get()) == [c.key, "a"]
    ref.child("a/score").set({".sv": {"increment": -10}})
    assert list(ref.order_by_child("score").get()) == ["a", c.key]
    assert ref.order_by_child("score").start_at(100).get() is None
