"""Secondary indexes on a real eddyd (FIREBASE_REFERENCE §2.2, §3; the index contract): `.indexOn`
declarations (a string, an array, a nested child path, ".value", under `$wildcard` parents) set
over `PUT /.settings/rules.json`; `GET /.settings/indexes.json` listing each index until it is
"ready"; `orderBy` a child path or `"$value"` with every bound (startAt / startAfter / endAt /
endBefore / equalTo, each with the optional key tie-break `startAt=3,"k"`) and limitToFirst /
limitToLast, checked against firebase_order.py's independent model of Firebase value order;
index maintenance through every kind of REST write; dropping an index; the query errors; the
offline CLI (`eddy index status|build`, `eddy query`, `eddy verify`).

The random windows print their seed; `EDDY_SEED=<seed>` replays them.
"""

import json
import os
import random
import time
import urllib.parse
import uuid

import pytest
import requests

from conftest import index_status, put_rules, run_eddy, wait_for_indexes
from firebase_order import Bound, as_dict, ordered, render, sort_value, value_cmp, value_sort_key, window

Q = urllib.parse.quote
MISSING = object()

# -- the value-order model itself -------------------------------------------------------------


def test_value_order_model_itself():
    # §2.2's derived example: orderByChild("h") -> c (missing), e, d, g, a, b, f.
    example = {"a": {"h": 3}, "b": {"h": "x"}, "c": {"x": 1}, "d": {"h": True}, "e": {"h": False},
               "f": {"h": {"k": 1}}, "g": {"h": 1.5}}
    assert [k for k, _ in ordered(example, "h")] == ["c", "e", "d", "g", "a", "b", "f"]
    assert value_cmp("\U0001F600", "\uff61") < 0  # UTF-16 code units: surrogates before U+FF61
    assert value_cmp("\ue000", "\U0001F600") > 0
    assert value_cmp(3, 3.0) == 0 and value_cmp(-0.0, 0) == 0
    assert value_cmp(True, 0) < 0 and value_cmp(10, "1") < 0 and value_cmp("~", [1]) < 0
    assert value_cmp(None, False) < 0 and value_cmp({"a": 1}, {"b": 0}) == 0
    # ties by key order (integer-likes first)
    tied = {"b": {"h": 1}, "10": {"h": 1}, "2": {"h": 1}, "a": {"h": 1}}
    assert [k for k, _ in ordered(tied, "h")] == ["2", "10", "a", "b"]
    # key tie-break bounds
    assert [k for k, _ in window(tied, "h", start=Bound(1, "10"))] == ["10", "a", "b"]
    assert [k for k, _ in window(tied, "h", start=Bound(1, "10", inclusive=False))] == ["a", "b"]
    assert [k for k, _ in window(tied, "h", end=Bound(1, "10", inclusive=False))] == ["2"]
    assert [k for k, _ in window(tied, "h", start=Bound(1, inclusive=False))] == []
    assert [k for k, _ in window(tied, "h", start=Bound(1, "a"), end=Bound(1, "a"))] == ["a"]


# -- data ---------------------------------------------------------------------------------------

ITEM_KEYS = [
    "-5", "0", "1", "01", "2", "007", "10", "42", "2147483647", "2147483648", "-", "--1", "-Nabc0", "-Nabc1", "+1",
    "A", "B", "Z", "_", "a", "a b", "ab", "b", "c", "d", "e", "f", "g", "h", "k", "m", "n", "p", "q", "r", "s",
    "t", "x", "y", "z", "~", "\u00e9", "\u65e5\u672c", "\ue000", "\uff61", "\U0001F600", "zz", "zzz",
]

SCORE_POOL = [
    MISSING, False, True, -1e300, -10, -1.5, 0, 0.5, 3, 3, 3.0, 3.25, 10, 1e15, 9007199254740991, "", " ", "3", "10",
    "A", "a", "a b", "ab", "\u00e9", "\ue000", "\uff61", "\U0001F600", {"x": 1}, [1, 2], {"y": {"z": 2}}, True, False,
    3, "a", MISSING, 10, -10,
]

PRIMITIVES = ["leaf", 42, True, False, -3, "zz", 3, 0.5]


def item_value(i, key):
    if i % 7 == 3:  # some children are primitives: a null sort value for child orders
        return PRIMITIVES[(i // 7) % len(PRIMITIVES)]
    child = {"name": key, "i": i}
    score = SCORE_POOL[i % len(SCORE_POOL)]
    if score is not MISSING:
        child["score"] = score
    kind = i % 6
    if kind == 0:
        child["metrics"] = {"views": i % 7, "likes": i}
    elif kind == 1:
        child["metrics"] = {"views": "v%d" % (i % 3)}
    elif kind == 3:
        child["metrics"] = "n/a"  # a primitive above the indexed path
    elif kind == 4:
        child["metrics"] = {"views": {"deep": i}}  # an object: "object" rank, ties by key
    elif kind == 5:
        child["metrics"] = {"views": i % 4 == 1, "likes": 1}
    return child


ITEMS = {key: item_value(i, key) for i, key in enumerate(ITEM_KEYS)}

SCORES = {"alice": 10, "bob": 3, "carol": 3, "dave": "x", "eve": True, "frank": False, "gina": 3.5,
          "hank": {"a": 1}, "ivy": -1, "0": 3, "1": 10, "jill": "3", "kim": "\U0001F600", "lee": "\uff61"}

PLAYERS = {"p1": {"score": 5}, "p2": {"score": 1}, "p3": {"score": 5}, "p4": {"level": 2}, "p5": {"score": "gold"}}

USER_POSTS = {
    "alice": {"p1": {"stars": 3}, "p2": {"stars": 1}, "p3": {"stars": "x"}, "p4": {"text": "no stars"}},
    "bob": {"p1": {"stars": 2}},
    "carl": "no posts",
}

EXAMPLE = {"a": {"h": 3}, "b": {"h": "x"}, "c": {"x": 1}, "d": {"h": True}, "e": {"h": False}, "f": {"h": {"k": 1}},
           "g": {"h": 1.5}}

RULES = {"rules": {
    ".read": True,
    ".write": True,
    "items": {".indexOn": ["score", "metrics/views", ".value"]},
    "scores": {".indexOn": ".value"},
    "players": {".indexOn": "score"},
    "user-posts": {"$uid": {".indexOn": "stars"}},
    "example": {".indexOn": ["h"]},
}}

EXPECTED_INDEXES = {
    ("/items", "score"): len(ITEMS),
    ("/items", "metrics/views"): len(ITEMS),
    ("/items", ".value"): len(ITEMS),
    ("/scores", ".value"): len(SCORES),
    ("/players", "score"): len(PLAYERS),
    ("/user-posts/$uid", "stars"): sum(len(v) for v in USER_POSTS.values() if isinstance(v, dict)),
    ("/example", "h"): len(EXAMPLE),
}

# -- helpers --------------------------------------------------------------------------------------

NAMESPACES = []  # every namespace this module writes, verified offline at the end


def new_ns(prefix):
    ns = f"{prefix}-{uuid.uuid4().hex[:8]}"
    NAMESPACES.append(ns)
    return ns


def enc_json(value):
    return Q(json.dumps(value, ensure_ascii=False), safe="")


def bound_param(value, key=None):
    """`3` or `3,"k"`, percent-encoded."""
    text = json.dumps(value, ensure_ascii=False)
    if key is not None:
        text += "," + json.dumps(key, ensure_ascii=False)
    return Q(text, safe="")


def query_url(d, path, ns, params):
    """`params`: (name, already-encoded value) pairs, sent in the given order."""
    return d.url(path) + "?" + "&".join(f"{n}={v}" for n, v in list(params) + [("ns", ns)])


def order_param(order):
    return ("orderBy", enc_json(order))


def describe(params):
    return "&".join(f"{n}={urllib.parse.unquote(v)}" for n, v in params)


def model_params(order, start=None, start_kind=None, end=None, end_kind=None, limit=None):
    """REST parameters and model arguments for one query."""
    params = [order_param(order)]
    model = {}
    if start_kind == "equalTo":
        params.append(("equalTo", bound_param(start[0], start[1])))
        model.update(start=Bound(start[0], start[1]), end=Bound(start[0], start[1]))
    elif start_kind:
        params.append((start_kind, bound_param(start[0], start[1])))
        model["start"] = Bound(start[0], start[1], inclusive=start_kind == "startAt")
    if end_kind:
        params.append((end_kind, bound_param(end[0], end[1])))
        model["end"] = Bound(end[0], end[1], inclusive=end_kind == "endAt")
    if limit:
        params.append((limit[0], str(limit[1])))
        model["first" if limit[0] == "limitToFirst" else "last"] = limit[1]
    return params, model


def expect_window(http, d, path, ns, children, order, params, model, failures=None):
    """Runs the query and compares it with the model; appends to `failures` (or asserts)."""
    url = query_url(d, path, ns, params)
    expected = window(children, order, **model)
    r = http.get(url)
    problem = None
    if r.status_code != 200:
        problem = f"status {r.status_code}: {r.text[:300]}"
    else:
        got = r.json()
        if as_dict(got) != dict(expected):
            exp_keys = [k for k, _ in expected]
            got_keys = [k for k, _ in ordered(as_dict(got), order)]
            problem = (f"expected keys {exp_keys}\n      got keys      {got_keys}"
                       + ("" if set(exp_keys) != set(got_keys) else "\n      (same keys, different child values)"))
        elif got != render(dict(expected)):
            problem = f"rendered {json.dumps(got)[:300]}, a plain read would render {json.dumps(render(dict(expected)))[:300]}"
    if problem:
        text = f"GET /{path.strip('/')}.json?{describe(params)} (ns {ns}): {problem}"
        if failures is None:
            pytest.fail(text)
        failures.append(text)
        return None
    return expected


def error_of(r, status=400):
    assert r.status_code == status, (r.status_code, r.text)
    body = r.json()
    assert list(body) == ["error"] and isinstance(body["error"], str), body
    return body["error"]


def not_defined(on, path):
    return f'Index not defined, add ".indexOn": "{on}", for path "{path}", to the rules'


# -- fixtures ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def d(module_daemon):
    return module_daemon


@pytest.fixture(scope="module")
def http():
    with requests.Session() as session:
        yield session


@pytest.fixture(scope="module")
def seed():
    value = os.environ.get("EDDY_SEED") or str(random.SystemRandom().randrange(2**32))
    print(f"\ntest_indexes: EDDY_SEED={value}")
    return value


@pytest.fixture(scope="module")
def main(d, http):
    """Namespace holding ITEMS, SCORES, ... written first, then RULES (so every index is built
    online over existing data); read-only afterwards."""
    ns = new_ns("ixmain")
    body = {"items": ITEMS, "scores": SCORES, "players": PLAYERS, "user-posts": USER_POSTS, "example": EXAMPLE,
            "itemsx": {"sibling": {"score": 3}}}
    r = http.put(d.url("/", ns=ns), data=json.dumps(body))
    assert r.status_code == 200, r.text
    assert as_dict(http.get(d.url("/items", ns=ns)).json()) == ITEMS
    put_rules(d, RULES, ns, http)
    wait_for_indexes(d, ns, session=http)
    return ns


# -- index status --------------------------------------------------------------------------------


def test_index_status_lists_each_declaration_ready(d, http, main):
    indexes = wait_for_indexes(d, main, session=http)
    found = {}
    for index in indexes:
        assert {"id", "location", "on", "state", "indexed"} <= set(index), index
        assert "position" not in index, index  # only while building
        assert isinstance(index["id"], int) and not isinstance(index["id"], bool), index
        assert index["state"] == "ready", index
        assert isinstance(index["indexed"], int) and not isinstance(index["indexed"], bool), index
        found[(index["location"], index["on"])] = index
    assert set(found) == set(EXPECTED_INDEXES), sorted(found)
    assert len({i["id"] for i in indexes}) == len(indexes), "index ids are not unique"
    counts = {k: found[k]["indexed"] for k in found}
    assert counts == EXPECTED_INDEXES, "indexed counts (children present when each index was built)"
    # another namespace has no index; the rules document is returned unchanged
    assert index_status(d, new_ns("ixempty"), http) == []
    assert http.get(d.base_url + f"/.settings/rules.json?ns={main}").json() == RULES


def test_index_status_refuses_writes(d, http, main):
    before = index_status(d, main, http)
    for method in ("PUT", "POST", "PATCH", "DELETE"):
        r = http.request(method, d.base_url + f"/.settings/indexes.json?ns={main}", data="{}")
        assert 400 <= r.status_code < 500, (method, r.status_code, r.text)
        assert isinstance(r.json().get("error"), str), (method, r.text)
    assert index_status(d, main, http) == before


# -- random windows against the model ------------------------------------------------------------

ORDERS = ["score", "metrics/views", "$value"]
LOCATION_OF = {"score": "items", "metrics/views": "items", "$value": "items"}

EXTRA_VALUES = [None, False, True, -1e301, -100, -10, -1.5, -1, 0, 0.25, 1, 2.9999, 3, 3.1, 3.25, 6, 11, 42, 1e16,
                "", " ", "0", "3", "4", "A", "a", "a a", "ab ", "b", "v0", "v1", "v3", "zz", "\u00e9", "\uffff",
                "\U0001F600", "\U0001F601", "\uff61", "leaf"]
EXTRA_KEYS = ["0", "1", "5", "aa", "a", "zzzz", "\U0001F600a", "-", "~~", "2147483647"]


def bound_pool(children, order):
    values = []
    for key, child in children.items():
        v = sort_value(key, child, order)
        if not isinstance(v, (dict, list)):
            values.append(v)
    return values + EXTRA_VALUES


def pick(rng, pool, keys):
    value = rng.choice(pool)
    key = rng.choice(keys) if rng.random() < 0.7 else rng.choice(EXTRA_KEYS)
    return value, key


START_KINDS = [None, "startAt", "startAfter", "startAt+key", "startAfter+key", "equalTo", "equalTo+key"]
END_KINDS = [None, "endAt", "endBefore", "endAt+key", "endBefore+key"]
LIMITS = [None, "limitToFirst", "limitToLast"]
DRAWS = 4


@pytest.mark.parametrize("start_kind", START_KINDS, ids=lambda s: s or "no-start")
@pytest.mark.parametrize("order", ORDERS)
def test_random_windows_match_the_model(d, http, main, seed, order, start_kind):
    rng = random.Random(f"{seed}/{order}/{start_kind}")
    children = ITEMS
    pool = bound_pool(children, order)
    keys = list(children)
    failures = []
    ends = [None] if start_kind and start_kind.startswith("equalTo") else END_KINDS
    for end_kind in ends:
        for limit_kind in LIMITS:
            for _ in range(DRAWS):
                start, end = pick(rng, pool, keys), pick(rng, pool, keys)
                if start_kind and end_kind and rng.random() < 0.5:  # a sorted pair: non-empty windows likely
                    if value_cmp(start[0], end[0]) > 0:
                        start, end = end, start
                if start_kind and "+key" not in start_kind:
                    start = (start[0], None)
                if end_kind and "+key" not in end_kind:
                    end = (end[0], None)
                limit = None
                if limit_kind:
                    limit = (limit_kind, rng.choice([1, 2, 3, 5, 8, len(children) - 1, len(children) + 3, 2147483647]))
                params, model = model_params(
                    order, start, start_kind and start_kind.split("+")[0], end, end_kind and end_kind.split("+")[0], limit)
                rng.shuffle(params)
                expect_window(http, d, LOCATION_OF[order], main, children, order, params, model, failures)
    assert not failures, f"seed {seed}: {len(failures)} wrong windows:\n" + "\n".join(failures[:15])


def test_exhaustive_single_bounds(d, http, main):
    """Every distinct sort value alone as each bound kind, for each order."""
    failures = []
    for order in ORDERS:
        values = list({value_sort_key(v): v for v in bound_pool(ITEMS, order)}.values())
        for value in values:
            for kind in ("startAt", "startAfter", "endAt", "endBefore", "equalTo"):
                is_start = kind.startswith("start") or kind == "equalTo"
                params, model = model_params(
                    order, (value, None) if is_start else None, kind if is_start else None,
                    (value, None) if not is_start else None, kind if not is_start else None)
                expect_window(http, d, "items", main, ITEMS, order, params, model, failures)
        for n in range(1, len(ITEMS) + 2):
            for kind in ("limitToFirst", "limitToLast"):
                params, model = model_params(order, limit=(kind, n))
                expect_window(http, d, "items", main, ITEMS, order, params, model, failures)
    assert not failures, f"{len(failures)} wrong windows:\n" + "\n".join(failures[:15])


# -- explicit cases ----------------------------------------------------------------------------------


def get_ok(http, d, path, ns, params):
    url = query_url(d, path, ns, params)
    r = http.get(url)
    assert r.status_code == 200, (describe(params), r.status_code, r.text)
    return r.json()


def keys_of(http, d, path, ns, order, *params):
    """The selected keys, in Firebase order (as a client would sort them)."""
    got = as_dict(get_ok(http, d, path, ns, [order_param(order)] + list(params)))
    return [k for k, _ in ordered(got, order)]


def test_reference_example_order(d, http, main):
    # §2.2: a:{h:3} b:{h:"x"} c:{x:1} d:{h:true} e:{h:false} f:{h:{k:1}} g:{h:1.5} -> c e d g a b f
    want = ["c", "e", "d", "g", "a", "b", "f"]
    for n in range(1, 8):
        assert keys_of(http, d, "example", main, "h", ("limitToFirst", str(n))) == want[:n], n
        assert keys_of(http, d, "example", main, "h", ("limitToLast", str(n))) == want[-n:], n
    assert get_ok(http, d, "example", main, [order_param("h")]) == EXAMPLE
    assert keys_of(http, d, "example", main, "h", ("equalTo", "null")) == ["c"]
    assert keys_of(http, d, "example", main, "h", ("startAt", "false"), ("endAt", "true")) == ["e", "d"]
    assert keys_of(http, d, "example", main, "h", ("startAfter", "true"), ("endBefore", bound_param("x"))) == ["g", "a"]
    assert keys_of(http, d, "example", main, "h", ("startAt", bound_param("x"))) == ["b", "f"]  # objects sort last
    assert keys_of(http, d, "example", main, "h", ("startAfter", bound_param("x"))) == ["f"]
    assert keys_of(http, d, "example", main, "h", ("startAt", "1.5"), ("limitToFirst", "1")) == ["g"]


def test_key_tie_break_bounds(d, http, main):
    """`startAt=3,"k"`: within equal sort values the key narrows the bound (§3)."""
    threes = [k for k, c in ordered(ITEMS, "score") if sort_value(k, c, "score") == 3]
    assert len(threes) >= 4, threes
    mid = threes[1]
    cases = {
        ("startAt",): threes[1:],
        ("startAfter",): threes[2:],
        ("endAt",): threes[:2],
        ("endBefore",): threes[:1],
        ("equalTo",): [mid],
    }
    for (kind,), want_threes in cases.items():
        params = [order_param("score"), (kind, bound_param(3, mid))]
        if kind.startswith("start"):
            params.append(("endAt", "3"))
        elif kind.startswith("end"):
            params.append(("startAt", "3"))
        got = keys_of(http, d, "items", main, "score", *params[1:])
        assert got == want_threes, (describe(params), got, want_threes)
    # a key between two tied keys, or before/after all of them
    assert keys_of(http, d, "items", main, "score", ("equalTo", bound_param(3, "nope"))) == []
    first = keys_of(http, d, "items", main, "score", ("startAt", bound_param(3, threes[0])), ("limitToFirst", "1"))
    assert first == [threes[0]]
    last = keys_of(http, d, "items", main, "score", ("endAt", bound_param(3, threes[-1])), ("limitToLast", "1"))
    assert last == [threes[-1]]
    # the key also narrows bounds of other types
    falses = [k for k, c in ordered(ITEMS, "score") if sort_value(k, c, "score") is False]
    assert keys_of(http, d, "items", main, "score", ("startAfter", bound_param(False, falses[0])), ("endAt", "false")) == falses[1:]
    # the key of a bound must be a string
    for bad in ('3,4', '3,true', '3,null', '"a",{"x":1}'):
        error_of(http.get(query_url(d, "items", main, [order_param("score"), ("startAt", Q(bad, safe=""))])))


def test_null_bound_selects_missing_children(d, http, main):
    missing = [k for k, c in ordered(ITEMS, "score") if sort_value(k, c, "score") is None]
    assert keys_of(http, d, "items", main, "score", ("equalTo", "null")) == missing
    assert keys_of(http, d, "items", main, "score", ("endAt", "null")) == missing
    assert keys_of(http, d, "items", main, "score", ("startAt", "null"), ("limitToFirst", str(len(missing)))) == missing
    assert keys_of(http, d, "items", main, "score", ("startAfter", "null"), ("limitToFirst", "1")) == [
        k for k, c in ordered(ITEMS, "score") if sort_value(k, c, "score") is False][:1]
    # primitive children have no "score": null too
    assert all(k in missing for k, c in ITEMS.items() if not isinstance(c, dict))


def test_types_are_distinct_bounds(d, http, main):
    """3 (number) and "3" (string) and true are different values; 3 and 3.0 are the same."""
    number_threes = {k for k, c in ITEMS.items() if sort_value(k, c, "score") == 3 and not isinstance(sort_value(k, c, "score"), bool)}
    assert set(keys_of(http, d, "items", main, "score", ("equalTo", "3"))) == number_threes
    assert set(keys_of(http, d, "items", main, "score", ("equalTo", "3.0"))) == number_threes
    string_threes = {k for k, c in ITEMS.items() if sort_value(k, c, "score") == "3"}
    assert set(keys_of(http, d, "items", main, "score", ("equalTo", bound_param("3")))) == string_threes
    assert keys_of(http, d, "scores", main, "$value", ("equalTo", bound_param("3"))) == ["jill"]
    assert keys_of(http, d, "scores", main, "$value", ("equalTo", "3")) == ["0", "bob", "carol"]
    trues = {k for k, c in ITEMS.items() if sort_value(k, c, "score") is True}
    assert set(keys_of(http, d, "items", main, "score", ("equalTo", "true"))) == trues
    assert keys_of(http, d, "items", main, "score", ("equalTo", "1")) == []  # true is not 1


def test_strings_sort_by_utf16_code_units(d, http, main):
    # "\U0001F600" (D83D DE00) < "\ue000" < "\uff61" in UTF-16; code points would put it last.
    for order, path, data in (("score", "items", ITEMS), ("$value", "scores", SCORES)):
        emoji = [k for k, c in ordered(data, order) if sort_value(k, c, order) == "\U0001F600"]
        ff61 = [k for k, c in ordered(data, order) if sort_value(k, c, order) == "\uff61"]
        assert emoji and ff61
        got = keys_of(http, d, path, main, order, ("startAt", bound_param("\U0001F600")), ("endAt", bound_param("\uff61")))
        assert got == [k for k, _ in window(data, order, start=Bound("\U0001F600"), end=Bound("\uff61"))], got
        assert got[0] in emoji and got[-1] in ff61, got
        assert not set(keys_of(http, d, path, main, order, ("startAfter", bound_param("\uff61")))) & set(emoji)


def test_nested_child_path(d, http, main):
    order = "metrics/views"
    # children whose "metrics" is a primitive, or missing, sort as null; objects at the path last
    nulls = [k for k, c in ordered(ITEMS, order) if sort_value(k, c, order) is None]
    assert keys_of(http, d, "items", main, order, ("equalTo", "null")) == nulls
    assert any(isinstance(c, dict) and c.get("metrics") == "n/a" for k, c in ITEMS.items() if k in nulls)
    objects = [k for k, c in ordered(ITEMS, order) if isinstance(sort_value(k, c, order), dict)]
    assert keys_of(http, d, "items", main, order, ("limitToLast", str(len(objects)))) == objects
    assert keys_of(http, d, "items", main, order, ("startAt", "2"), ("endAt", "4")) == [
        k for k, _ in window(ITEMS, order, start=Bound(2), end=Bound(4))]
    # firebase-admin sends the path with a raw "/" (§9.3)
    r = http.get(d.url("items") + f'?orderBy=%22metrics/views%22&startAt=%22v0%22&endAt=%22v9%22&ns={main}')
    assert r.status_code == 200, r.text
    assert as_dict(r.json()) == dict(window(ITEMS, order, start=Bound("v0"), end=Bound("v9")))


def test_order_by_value(d, http, main):
    order = "$value"
    for params, model in (
        ([], {}),
        ([("equalTo", "3")], {"start": Bound(3), "end": Bound(3)}),
        ([("startAt", "3"), ("endAt", bound_param("x"))], {"start": Bound(3), "end": Bound("x")}),
        ([("startAt", "true"), ("limitToFirst", "3")], {"start": Bound(True), "first": 3}),
        ([("limitToLast", "2")], {"last": 2}),
        ([("startAfter", "3"), ("endBefore", "10")], {"start": Bound(3, inclusive=False), "end": Bound(10, inclusive=False)}),
        ([("equalTo", bound_param(3, "bob"))], {"start": Bound(3, "bob"), "end": Bound(3, "bob")}),
        ([("startAt", bound_param(3, "bob")), ("endAt", "3")], {"start": Bound(3, "bob"), "end": Bound(3)}),
    ):
        expect_window(http, d, "scores", main, SCORES, order, [order_param(order)] + params, model)
    # on /items: primitives by value, then every object child, tied, by key
    objects = [k for k, c in ordered(ITEMS, order) if isinstance(c, (dict, list))]
    assert keys_of(http, d, "items", main, order, ("limitToLast", str(len(objects)))) == objects


def test_index_declared_as_a_string(d, http, main):
    expect_window(http, d, "players", main, PLAYERS, "score", [order_param("score"), ("startAt", "1"), ("endAt", "5")],
                  {"start": Bound(1), "end": Bound(5)})
    assert keys_of(http, d, "players", main, "score", ("equalTo", "5")) == ["p1", "p3"]
    assert keys_of(http, d, "players", main, "score", ("limitToFirst", "1")) == ["p4"]


def test_wildcard_parent(d, http, main):
    for uid in ("alice", "bob"):
        for params, model in (([], {}), ([("startAt", "2")], {"start": Bound(2)}), ([("limitToLast", "2")], {"last": 2}),
                              ([("equalTo", "null")], {"start": Bound(None), "end": Bound(None)})):
            expect_window(http, d, f"user-posts/{uid}", main, USER_POSTS[uid], "stars", [order_param("stars")] + params, model)
    # a matching location that holds a primitive, or nothing
    for uid in ("carl", "nobody"):
        assert get_ok(http, d, f"user-posts/{uid}", main, [order_param("stars"), ("limitToFirst", "2")]) is None
    # the parent of the wildcard, and a location below it, are not indexed
    assert error_of(http.get(query_url(d, "user-posts", main, [order_param("stars")]))) == not_defined("stars", "/user-posts")
    assert error_of(http.get(query_url(d, "user-posts/alice/p1", main, [order_param("stars")]))) == \
        not_defined("stars", "/user-posts/alice/p1")


def test_siblings_sharing_a_prefix_never_leak(d, http, main):
    for params in ([], [("limitToLast", "1000")], [("equalTo", "3")], [("startAt", "3"), ("endAt", "3")]):
        got = as_dict(get_ok(http, d, "items", main, [order_param("score")] + params))
        assert "sibling" not in got


def test_members_come_in_query_order_for_both_limits(d, http, main):
    """Firebase's query answers are unordered objects, but Eddy lists members in query order,
    limitToLast's too (it reads the window last first), for a child index and for keys."""
    for order, params in (("score", [("startAt", "0")]), ("$key", [])):
        for limit in ("limitToFirst", "limitToLast"):
            r = http.get(query_url(d, "items", main, [order_param(order)] + params + [(limit, "5")]))
            assert r.status_code == 200, r.text
            keys = list(json.loads(r.text, object_pairs_hook=lambda pairs: [k for k, _ in pairs]))
            first, last = (5, None) if limit == "limitToFirst" else (None, 5)
            expected = window(ITEMS, order, start=Bound(0) if params else None, first=first, last=last)
            assert keys == [k for k, _ in expected], (order, limit)


def test_print_pretty_with_a_query(d, http, main):
    params = [order_param("score"), ("startAt", "0"), ("limitToFirst", "4")]
    plain = http.get(query_url(d, "items", main, params))
    pretty = http.get(query_url(d, "items", main, params + [("print", "pretty")]))
    assert plain.status_code == pretty.status_code == 200, (plain.text, pretty.text)
    assert pretty.json() == plain.json() == render(dict(window(ITEMS, "score", start=Bound(0), first=4)))
    assert "\n" in pretty.text and "\n" not in plain.text.strip()
    assert len(pretty.text) > len(plain.text)


# -- errors ------------------------------------------------------------------------------------------


def test_filter_without_order_by(d, http, main):
    for query in ("startAt=3", 'equalTo="x"', "limitToFirst=2", "endAt=3,%22a%22", "startAfter=true&limitToLast=1"):
        r = http.get(d.url("items") + f"?{query}&ns={main}")
        assert error_of(r) == "orderBy must be defined when other query parameters are defined", query


def test_shallow_with_a_query_is_refused(d, http, main):
    for query in ('shallow=true&orderBy="score"', 'orderBy="score"&limitToFirst=1&shallow=true',
                  'orderBy="$value"&shallow=true', 'orderBy="metrics/views"&startAt=1&shallow=true'):
        error_of(http.get(d.url("items") + f"?{query}&ns={main}"))


@pytest.mark.parametrize("path,order,on", [
    ("items", "name", "name"),
    ("items", "metrics", "metrics"),
    ("items", "metrics/likes", "metrics/likes"),
    ("items", "score/x", "score/x"),
    ("items/a", "score", "score"),
    ("items/a/metrics", "views", "views"),
    ("scores", "score", "score"),
    ("players", "$value", ".value"),
    ("itemsx", "score", "score"),
    ("absent/deeper", "$value", ".value"),
])
def test_undeclared_orders_are_400(d, http, main, path, order, on):
    for extra in ([], [("limitToFirst", "1")], [("startAt", "3"), ("endAt", "4")]):
        r = http.get(query_url(d, path, main, [order_param(order)] + extra))
        assert error_of(r) == not_defined(on, "/" + path)


# -- index maintenance through writes ------------------------------------------------------------

MAINT_ORDERS = ["score", "metrics/views", "$value", "ts"]


def maintenance_queries(children, order, rng):
    """A fixed battery plus a few random windows over the current children."""
    pool = bound_pool(children, order) if children else EXTRA_VALUES
    keys = list(children) or EXTRA_KEYS
    queries = [
        [], [("limitToFirst", 3)], [("limitToLast", 3)], [("startAt", (3, None))], [("endAt", ("m", None))],
        [("equalTo", (3, None))], [("equalTo", (None, None))], [("startAfter", (True, None)), ("endBefore", ("zzz", None))],
        [("startAt", (3, "c")), ("limitToFirst", 2)], [("endBefore", (7, "d")), ("limitToLast", 2)],
    ]
    for _ in range(6):
        a, b = pick(rng, pool, keys), pick(rng, pool, keys)
        if value_cmp(a[0], b[0]) > 0:
            a, b = b, a
        queries.append([(rng.choice(["startAt", "startAfter"]), (a[0], a[1] if rng.random() < 0.4 else None)),
                        (rng.choice(["endAt", "endBefore"]), (b[0], b[1] if rng.random() < 0.4 else None))]
                       + ([(rng.choice(["limitToFirst", "limitToLast"]), rng.choice([1, 2, 4]))] if rng.random() < 0.5 else []))
    out = []
    for q in queries:
        params = [order_param(order)]
        model = {}
        for name, arg in q:
            if name.startswith("limit"):
                params.append((name, str(arg)))
                model["first" if name == "limitToFirst" else "last"] = arg
            else:
                params.append((name, bound_param(*arg)))
                if name == "equalTo":
                    model.update(start=Bound(*arg), end=Bound(*arg))
                elif name.startswith("start"):
                    model["start"] = Bound(*arg, inclusive=name == "startAt")
                else:
                    model["end"] = Bound(*arg, inclusive=name == "endAt")
        out.append((params, model))
    return out


def test_index_maintenance_through_rest_writes(d, http, seed):
    """Every kind of write keeps the indexes equal to the tree: after each one, queries on every
    index agree with the model applied to a plain read of the location."""
    ns = new_ns("ixmaint")
    rng = random.Random(f"{seed}/maintenance")
    put_rules(d, {"rules": {"items": {".indexOn": ["score", "metrics/views", ".value", "ts"]},
                            "other": {".indexOn": "score"}}}, ns, http)
    wait_for_indexes(d, ns, session=http)
    failures = []
    steps = []

    def w(method, path, body=None, expect=200):
        r = http.request(method, d.url(path, ns=ns), data=None if body is None else json.dumps(body))
        assert r.status_code == expect, (method, path, body, r.status_code, r.text)
        return r.json() if r.content else None

    def check(label):
        steps.append(label)
        r = http.get(d.url("items", ns=ns))
        assert r.status_code == 200, r.text
        value = r.json()
        children = as_dict(value) if isinstance(value, (dict, list)) else {}  # a primitive has no children
        for order in MAINT_ORDERS:
            for params, model in maintenance_queries(children, order, rng):
                before = len(failures)
                expect_window(http, d, "items", ns, children, order, params, model, failures)
                if len(failures) > before:
                    failures[-1] = f"after {label}: " + failures[-1]
        return children

    def item(score=MISSING, views=MISSING, **extra):
        child = dict(extra)
        if score is not MISSING:
            child["score"] = score
        if views is not MISSING:
            child["metrics"] = {"views": views}
        return child or "plain"

    check("nothing written")
    # above the location: the root
    w("PUT", "/", {"items": {"a": item(3, 1), "b": item(1, 2), "c": item("x", 3), "d": item(True, "v"),
                             "e": item(3, 1), "f": item(views=9), "g": 5, "h": item(None, None, tag="t")},
                   "other": {"o1": {"score": 1}}})
    check("PUT / (above the location)")
    # the location itself
    w("PUT", "/items", {"a": item(2, 5), "b": item(3, 3), "c": item(3, 3), "d": item(False), "e": "leaf", "f": item(10, 0),
                        "g": item(3.5, -1), "h": item([1, 2], {"x": 1}), "i": item(7, 7), "j": item("a", "a")})
    check("PUT /items (the location)")
    w("PUT", "/items/c", item(-4, 8))
    check("PUT /items/c (one child)")
    w("PATCH", "/items/c/metrics", {"views": 99, "likes": 1})
    check("PATCH /items/c/metrics (deep inside a child)")
    w("PATCH", "/items", {"d/score": 7, "e": None, "f/metrics/views": -1, "new1": item(3), "g": item(views=2)})
    check("PATCH /items (multi-path: deep, delete, new child, replace)")
    w("PATCH", "/", {"items/b/score": "str", "items/h": item(False), "other/o2": {"score": 2}})
    check("PATCH / (multi-path above the location)")
    pushed = [w("POST", "/items", item(3, i))["name"] for i in range(3)]
    w("POST", "/items", 3)
    check("POST /items (push)")
    w("DELETE", "/items/c")
    check("DELETE /items/c")
    w("DELETE", "/items/d/score")
    check("DELETE /items/d/score (the indexed field)")
    w("DELETE", f"/items/{pushed[1]}/metrics")
    check("DELETE /items/<push>/metrics (above a nested indexed path)")
    # server values
    before_ms = int(time.time() * 1000)
    w("PUT", "/items/a/score", {".sv": "timestamp"})
    w("PUT", "/items/b/ts", {".sv": "timestamp"})
    w("PATCH", "/items/j", {"ts": {".sv": "timestamp"}, "score": {".sv": {"increment": 5}}})
    children = check("server value timestamps and increment of a string")
    assert isinstance(children["a"]["score"], int) and children["a"]["score"] >= before_ms - 1000, children["a"]
    assert children["j"]["score"] == 5, children["j"]
    w("PATCH", "/items/i", {"score": {".sv": {"increment": 5}}})
    w("PUT", "/items/i/metrics/views", {".sv": {"increment": 2.5}})
    w("PUT", "/items/new2/score", {".sv": {"increment": -3}})
    children = check("server value increments")
    assert children["i"]["score"] == 12 and children["i"]["metrics"]["views"] == 9.5, children["i"]
    assert children["new2"] == {"score": -3}
    # a write below a primitive child turns it into an object; an indexed path becoming an object
    w("PUT", "/items/p", "prim")
    check("PUT /items/p (a primitive child)")
    w("PUT", "/items/p/score", 4)
    check("PUT /items/p/score (below a primitive)")
    w("PUT", "/items/q/score/deeper", 1)
    w("PUT", "/items/f/metrics/views/deeper", 1)
    check("PUT below an indexed path (object sort values)")
    w("PUT", "/items/q/score", 0)
    check("PUT /items/q/score (object back to a number)")
    # if-match writes go through the same path
    r = http.get(d.url("items/a", ns=ns), headers={"X-Firebase-ETag": "true"})
    r = http.put(d.url("items/a", ns=ns), data=json.dumps(item(-100)), headers={"if-match": r.headers["ETag"]})
    assert r.status_code == 200, r.text
    check("PUT if-match /items/a")
    # the whole location removed, then recreated by a multi-path update at the root
    w("DELETE", "/items")
    children = check("DELETE /items")
    assert children == {}
    w("PATCH", "/", {"items/z1": item(1, 1), "items/z2": item(1, 1), "items/z3": item(0, 2)})
    check("PATCH / recreating /items")
    w("PUT", "/items", "a primitive location")
    check("PUT /items (a primitive)")
    w("PUT", "/items/k/score", 3)
    check("PUT /items/k/score (below the primitive location)")
    w("DELETE", "/")
    assert check("DELETE /") == {}
    w("PUT", "/items", {"k": item(3, 3)})
    check("PUT /items after DELETE /")
    # the other index was maintained too
    assert keys_of(http, d, "other", ns, "score") == []
    assert not failures, f"seed {seed}: {len(failures)} wrong windows:\n" + "\n".join(failures[:20])
    indexes = wait_for_indexes(d, ns, session=http)
    assert all(i["state"] == "ready" for i in indexes)


def test_dropping_and_readding_an_index(d, http):
    ns = new_ns("ixdrop")
    data = {"a": {"score": 3, "rank": 1}, "b": {"score": 1, "rank": 2}, "c": {"score": 2, "rank": 3}}
    assert http.put(d.url("items", ns=ns), data=json.dumps(data)).status_code == 200
    put_rules(d, {"rules": {"items": {".indexOn": ["score", "rank"]}}}, ns, http)
    indexes = wait_for_indexes(d, ns, session=http)
    assert {(i["location"], i["on"]) for i in indexes} == {("/items", "score"), ("/items", "rank")}
    score_id = next(i["id"] for i in indexes if i["on"] == "score")
    assert keys_of(http, d, "items", ns, "score") == ["b", "c", "a"]
    # drop "score"
    put_rules(d, {"rules": {"items": {".indexOn": "rank"}}}, ns, http)
    indexes = index_status(d, ns, http)
    assert [(i["location"], i["on"]) for i in indexes] == [("/items", "rank")], indexes
    r = http.get(query_url(d, "items", ns, [order_param("score")]))
    assert error_of(r) == 'Index not defined, add ".indexOn": "score", for path "/items", to the rules'
    r = http.get(query_url(d, "items", ns, [order_param("score"), ("startAt", "1"), ("limitToFirst", "1")]))
    assert error_of(r) == 'Index not defined, add ".indexOn": "score", for path "/items", to the rules'
    assert keys_of(http, d, "items", ns, "rank") == ["a", "b", "c"]
    # writes while it is dropped, then it is declared again: built over the current data
    assert http.patch(d.url("items", ns=ns), data=json.dumps({"a/score": 0, "d": {"score": 1.5}, "b": None})).status_code == 200
    put_rules(d, {"rules": {"items": {".indexOn": ["rank", "score"]}}}, ns, http)
    indexes = wait_for_indexes(d, ns, session=http)
    assert {(i["location"], i["on"]) for i in indexes} == {("/items", "score"), ("/items", "rank")}
    now = as_dict(http.get(d.url("items", ns=ns)).json())
    assert keys_of(http, d, "items", ns, "score") == [k for k, _ in ordered(now, "score")] == ["a", "d", "c"]
    assert keys_of(http, d, "items", ns, "score", ("startAt", "1"), ("limitToFirst", "1")) == ["d"]
    assert keys_of(http, d, "items", ns, "rank") == [k for k, _ in ordered(now, "rank")] == ["d", "a", "c"]
    new_id = next(i["id"] for i in indexes if i["on"] == "score")
    print(f"score index id {score_id} -> {new_id} after drop and re-add")
    # every index dropped
    put_rules(d, {"rules": {".read": True, ".write": True}}, ns, http)
    assert index_status(d, ns, http) == []
    for order, on in (("score", "score"), ("rank", "rank")):
        assert error_of(http.get(query_url(d, "items", ns, [order_param(order)]))) == not_defined(on, "/items")
    # the data is untouched
    assert as_dict(http.get(d.url("items", ns=ns)).json()) == now


def test_new_wildcard_locations_are_indexed(d, http):
    ns = new_ns("ixwild")
    put_rules(d, {"rules": {"user-posts": {"$uid": {".indexOn": ["stars", ".value"]}}}}, ns, http)
    wait_for_indexes(d, ns, session=http)
    posts = {"dora": {"p1": {"stars": 5}, "p2": {"stars": 0}, "p3": 4}, "ed": {"p1": {"stars": 1}}}
    assert http.put(d.url("user-posts", ns=ns), data=json.dumps(posts)).status_code == 200
    assert http.patch(d.url("user-posts", ns=ns), data=json.dumps({"fay/p1": {"stars": 2}, "ed/p2/stars": 9})).status_code == 200
    r = http.post(d.url("user-posts/gus", ns=ns), data=json.dumps({"stars": 3}))
    assert r.status_code == 200
    tree = http.get(d.url("user-posts", ns=ns)).json()
    for uid, children in tree.items():
        for order in ("stars", "$value"):
            for params, model in (([], {}), ([("startAt", "1")], {"start": Bound(1)}), ([("limitToLast", "1")], {"last": 1})):
                expect_window(http, d, f"user-posts/{uid}", ns, children, order, [order_param(order)] + params, model)
    counts = {(i["location"], i["on"]): i for i in index_status(d, ns, http)}
    assert set(counts) == {("/user-posts/$uid", "stars"), ("/user-posts/$uid", ".value")}


# -- edge values, big children, unusual locations ------------------------------------------------

EDGE_VALUES = {
    "n01": -0.0, "n02": 0, "n03": 5e-324, "n04": -5e-324, "n05": 1.7976931348623157e308, "n06": -1.7976931348623157e308,
    "n07": 9007199254740992, "n08": 9007199254740994, "n09": 0.1, "n10": 0.30000000000000004, "n11": 0.3, "n12": 1e-300,
    "n13": -1, "n14": -0.5, "n15": 2, "n16": 2.0,
    "s01": "a", "s02": "a\u0000", "s03": "a\u0001", "s04": "a\u0000b", "s05": "ab", "s06": "", "s07": "\u0000",
    "s08": "\uffff", "s09": "\U0001F600", "s10": "\U0001F600\u0000", "s11": "\ue000", "s12": "x" * 5000,
    "s13": "x" * 5000 + "\u0000", "s14": "\u007f", "s15": "\u0080", "s16": "\u07ff", "s17": "\u0800", "s18": "\ud7ff",
    "s19": "\U0010FFFF", "s20": "a\u00ff", "s21": "a\u0100", "s22": " ", "s23": "\u001f",
    "b01": True, "b02": False, "o01": {"a": 1}, "o02": [0],
}


def test_edge_values_sort_like_firebase(d, http):
    """-0 ties with 0; denormals and extremes; strings holding NUL and other control characters,
    prefixes of each other, UTF-8 lengths 1-4, 5000 characters; as child and as value orders."""
    ns = new_ns("ixedge")
    as_child = {k: {"v": v} for k, v in EDGE_VALUES.items()}
    r = http.put(d.url("/", ns=ns), data=json.dumps({"edge": EDGE_VALUES, "edgec": as_child}))
    assert r.status_code == 200, r.text
    put_rules(d, {"rules": {"edge": {".indexOn": ".value"}, "edgec": {".indexOn": "v"}}}, ns, http)
    wait_for_indexes(d, ns, session=http)
    stored = as_dict(http.get(d.url("edge", ns=ns)).json())
    assert stored == EDGE_VALUES
    failures = []
    bounds = [v for v in EDGE_VALUES.values() if not isinstance(v, (dict, list))] + ["a\u0000a", "x" * 4999, "x" * 5001, 1e-323]
    for path, order, children in (("edge", "$value", EDGE_VALUES), ("edgec", "v", as_child)):
        for value in bounds:
            for kind in ("startAt", "startAfter", "endAt", "endBefore", "equalTo"):
                is_start = kind.startswith("start") or kind == "equalTo"
                params, model = model_params(
                    order, (value, None) if is_start else None, kind if is_start else None,
                    (value, None) if not is_start else None, kind if not is_start else None)
                expect_window(http, d, path, ns, children, order, params, model, failures)
            # ties: -0 / 0 and 2 / 2.0 are the same number, so the key decides
            for key in ("n01", "n02", "n15", "n16", "s02", "s12"):
                params, model = model_params(order, (value, key), "startAt", (value, key), "endAt")
                expect_window(http, d, path, ns, children, order, params, model, failures)
        for n in range(1, len(children) + 1):
            params, model = model_params(order, limit=("limitToFirst", n))
            expect_window(http, d, path, ns, children, order, params, model, failures)
    assert not failures, f"{len(failures)} wrong windows:\n" + "\n".join(failures[:15])


def test_big_children_are_returned_whole(d, http):
    """Children too big to be copied into the index (> 4 KiB, > 256 leaves) come back whole and
    stay ordered after writes inside them."""
    ns = new_ns("ixbig")
    put_rules(d, {"rules": {"big": {".indexOn": ["score", "meta/n"]}}}, ns, http)
    big = {
        "a": {"score": 1, "blob": "x" * 6000, "meta": {"n": 3}},
        "b": {"score": 2, "many": {f"k{i:03d}": i for i in range(300)}, "meta": {"n": 1}},
        "c": {"score": 0, "meta": {"n": 2}},
        "d": {"score": 1, "many": {f"k{i:03d}": {"deep": [i, i]} for i in range(200)}, "blob": "y" * 5000},
    }
    assert http.put(d.url("big", ns=ns), data=json.dumps(big)).status_code == 200
    failures = []

    def check(label):
        children = as_dict(http.get(d.url("big", ns=ns)).json())
        for order in ("score", "meta/n"):
            for params, model in (([], {}), ([("limitToFirst", "2")], {"first": 2}), ([("limitToLast", "2")], {"last": 2}),
                                  ([("equalTo", "1")], {"start": Bound(1), "end": Bound(1)}),
                                  ([("startAt", "1"), ("endAt", "2")], {"start": Bound(1), "end": Bound(2)})):
                before = len(failures)
                expect_window(http, d, "big", ns, children, order, [order_param(order)] + params, model, failures)
                if len(failures) > before:
                    failures[-1] = f"{label}: " + failures[-1]

    check("initial")
    for method, path, body in (
        ("PATCH", "big/b/many", {"k005": "changed", "k299": None}),
        ("PATCH", "big/b", {"score": -1}),
        ("PUT", "big/d/many/k010/deep/0", 99),
        ("PUT", "big/d/meta/n", 0),
        ("PUT", "big/a/blob", "short"),
        ("PATCH", "big/c", {"blob": "z" * 7000, "score": 1}),
        ("PATCH", "big", {"e": {"score": 1, "many": {f"k{i}": i for i in range(400)}}, "a/meta/n": 5}),
        ("DELETE", "big/b/many", None),
    ):
        r = http.request(method, d.url(path, ns=ns), data=None if body is None else json.dumps(body))
        assert r.status_code == 200, (method, path, r.text)
        check(f"{method} /{path}")
    assert not failures, f"{len(failures)} wrong windows:\n" + "\n".join(failures[:15])


def test_index_at_the_root_and_unusual_locations(d, http):
    ns = new_ns("ixroot")
    data = {"a": {"s": 2, "名前": "b", "a b": {"\u00fc": 1}}, "b": {"s": 1, "名前": "a"}, "c": 5,
            "\u65e5\u672c": {"x": {"名前": "z", "a b": {"\u00fc": 0}}, "y": {"名前": "y"}, "z": {"a b": {"\u00fc": 2}}},
            "1": {"é": {"p": {"s": 1}, "q": {"s": 0}}}}
    assert http.put(d.url("/", ns=ns), data=json.dumps(data)).status_code == 200
    put_rules(d, {"rules": {".indexOn": ["s", ".value"], "\u65e5\u672c": {".indexOn": ["名前", "a b/\u00fc"]},
                            "1": {"$x": {".indexOn": "s"}}}}, ns, http)
    indexes = wait_for_indexes(d, ns, session=http)
    assert {(i["location"], i["on"]) for i in indexes} == {
        ("/", "s"), ("/", ".value"), ("/\u65e5\u672c", "名前"), ("/\u65e5\u672c", "a b/\u00fc"), ("/1/$x", "s")}, indexes
    tree = http.get(d.url("/", ns=ns)).json()
    # the root's children
    for order in ("s", "$value"):
        for params, model in (([], {}), ([("limitToFirst", "2")], {"first": 2}), ([("startAt", "2")], {"start": Bound(2)})):
            expect_window(http, d, "/", ns, tree, order, [order_param(order)] + params, model)
    # percent-encoded non-ASCII location and child paths, and the same sent raw
    nihon = tree["\u65e5\u672c"]
    for order in ("名前", "a b/\u00fc"):
        for params, model in (([], {}), ([("startAt", bound_param("y"))], {"start": Bound("y")}),
                              ([("limitToLast", "1")], {"last": 1}), ([("equalTo", "null")], {"start": Bound(None), "end": Bound(None)})):
            expect_window(http, d, "\u65e5\u672c", ns, nihon, order, [order_param(order)] + params, model)
    r = http.get(d.base_url + f'/\u65e5\u672c.json?orderBy="名前"&limitToFirst=1&ns={ns}')
    assert r.status_code == 200 and r.json() == {"z": nihon["z"]}, r.text  # no 名前: null sorts first
    # an integer-like literal and a non-ASCII wildcard match
    expect_window(http, d, "1/é", ns, tree["1"]["é"], "s", [order_param("s"), ("limitToFirst", "1")], {"first": 1})
    assert error_of(http.get(query_url(d, "1", ns, [order_param("s")]))) == not_defined("s", "/1")


def test_literal_and_wildcard_declarations_together(d, http):
    ns = new_ns("ixboth")
    data = {"items": {"a": {"s": 2, "t": 1}, "b": {"s": 1, "t": 2}}, "other": {"x": {"s": 3}, "y": {"s": -1}}}
    assert http.put(d.url("/", ns=ns), data=json.dumps(data)).status_code == 200
    put_rules(d, {"rules": {"$any": {".indexOn": "s"}, "items": {".indexOn": ["s", "t"]}}}, ns, http)
    wait_for_indexes(d, ns, session=http)
    assert http.patch(d.url("/", ns=ns), data=json.dumps({"items/c": {"s": 0, "t": 0}, "other/z": {"s": 0}})).status_code == 200
    tree = http.get(d.url("/", ns=ns)).json()
    for path, order in (("items", "s"), ("items", "t"), ("other", "s")):
        for params, model in (([], {}), ([("limitToFirst", "1")], {"first": 1}), ([("startAt", "1")], {"start": Bound(1)})):
            expect_window(http, d, path, ns, tree[path], order, [order_param(order)] + params, model)
    assert error_of(http.get(query_url(d, "other", ns, [order_param("t")]))) == not_defined("t", "/other")


def test_duplicate_declarations(d, http):
    ns = new_ns("ixdup")
    assert http.put(d.url("items", ns=ns), data=json.dumps({"a": {"s": 2}, "b": {"s": 1}})).status_code == 200
    r = http.put(d.base_url + f"/.settings/rules.json?ns={ns}",
                 data=json.dumps({"rules": {".read": True, ".write": True, "items": {".indexOn": ["s", "s", ".value", ".value"]}}}))
    if r.status_code == 400:
        assert isinstance(r.json().get("error"), str)
        assert index_status(d, ns, http) == []
        return
    assert r.status_code == 200, r.text
    indexes = wait_for_indexes(d, ns, session=http)
    assert sorted((i["location"], i["on"]) for i in indexes) == [("/items", ".value"), ("/items", "s")], indexes
    assert keys_of(http, d, "items", ns, "s") == ["b", "a"]


# -- the offline CLI -------------------------------------------------------------------------------


def cli_json(*args):
    out = run_eddy(*args).stdout.decode("utf-8")
    return json.loads(out)


def test_offline_cli_index_status_query_build_and_verify(daemon_factory, tmp_path):
    d = daemon_factory()
    ns = "clins"
    with requests.Session() as s:
        body = {"items": ITEMS, "scores": SCORES, "user-posts": USER_POSTS}
        assert s.put(d.url("/"), data=json.dumps(body)).status_code == 200  # default namespace
        assert s.put(d.url("/", ns=ns), data=json.dumps({"scores": SCORES})).status_code == 200
        put_rules(d, RULES, session=s)
        put_rules(d, {"rules": {"scores": {".indexOn": ".value"}}}, ns, s)
        http_indexes = wait_for_indexes(d, session=s)
        wait_for_indexes(d, ns, session=s)
    d.stop()
    data = d.data_dir

    # eddy index status: one JSON object per index per line, as the HTTP endpoint lists them
    out = run_eddy("index", "status", "--data", data).stdout.decode("utf-8")
    lines = [json.loads(line) for line in out.splitlines() if line.strip()]
    key = lambda i: (i["location"], i["on"])  # noqa: E731
    assert sorted(lines, key=key) == sorted(http_indexes, key=key), out
    out = run_eddy("index", "status", "--data", data, "--ns", ns).stdout.decode("utf-8")
    lines = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert [(i["location"], i["on"], i["state"], i["indexed"]) for i in lines] == [("/scores", ".value", "ready", len(SCORES))]

    # eddy query with child and value orders
    def q(path, order, *args, ns_args=()):
        got = cli_json("query", path, "--data", data, "--order-by", json.dumps(order), *args, *ns_args)
        return got

    assert as_dict(q("/items", "score", "--start-at", "3", "--limit-to-first", "3")) == dict(
        window(ITEMS, "score", start=Bound(3), first=3))
    assert as_dict(q("/items", "score", "--start-after", '3,"a"', "--end-before", '"a"')) == dict(
        window(ITEMS, "score", start=Bound(3, "a", inclusive=False), end=Bound("a", inclusive=False)))
    assert as_dict(q("/items", "metrics/views", "--equal-to", "null")) == dict(
        window(ITEMS, "metrics/views", start=Bound(None), end=Bound(None)))
    assert as_dict(q("/items", "metrics/views", "--end-at", "3", "--limit-to-last", "4")) == dict(
        window(ITEMS, "metrics/views", end=Bound(3), last=4))
    assert as_dict(q("/scores", "$value", "--equal-to", "3")) == dict(window(SCORES, "$value", start=Bound(3), end=Bound(3)))
    assert as_dict(q("/scores", "$value", "--start-at", '3,"bob"', "--end-at", "10")) == dict(
        window(SCORES, "$value", start=Bound(3, "bob"), end=Bound(10)))
    assert as_dict(q("/scores", "$value", "--limit-to-last", "2", ns_args=("--ns", ns))) == dict(
        window(SCORES, "$value", last=2))
    assert as_dict(q("/user-posts/alice", "stars", "--start-at", "1")) == dict(
        window(USER_POSTS["alice"], "stars", start=Bound(1)))
    assert q("/items", "score", "--equal-to", '"no such value"') is None
    pretty = run_eddy("query", "/items", "--data", data, "--order-by", '"score"', "--limit-to-first", "2", "--pretty").stdout
    assert b"\n  " in pretty and as_dict(json.loads(pretty)) == dict(window(ITEMS, "score", first=2))
    # undeclared orders fail like the REST API
    r = run_eddy("query", "/items", "--data", data, "--order-by", '"name"', check=False)
    assert r.returncode == 1 and not_defined("name", "/items") in r.stderr.decode(), r
    r = run_eddy("query", "/scores", "--data", data, "--order-by", '"$value"', "--ns", "nonexistent", check=False)
    assert r.returncode == 1

    verify = run_eddy("verify", "--data", data)
    assert "index" in verify.stdout.decode().lower(), verify.stdout
    run_eddy("verify", "--data", data, "--ns", ns)

    # eddy rules set declares a new index; eddy index build builds it offline
    doc = json.loads(json.dumps(RULES))
    doc["rules"]["items"][".indexOn"].append("i")
    rules_file = tmp_path / "rules.json"
    rules_file.write_text(json.dumps(doc))
    run_eddy("rules", "set", str(rules_file), "--data", data)
    out = run_eddy("index", "status", "--data", data).stdout.decode("utf-8")
    lines = {(i["location"], i["on"]): i for i in map(json.loads, filter(str.strip, out.splitlines()))}
    assert ("/items", "i") in lines and lines[("/items", "i")]["state"] in ("building", "ready"), out
    build = run_eddy("index", "build", "--data", data)
    out = run_eddy("index", "status", "--data", data).stdout.decode("utf-8")
    lines = {(i["location"], i["on"]): i for i in map(json.loads, filter(str.strip, out.splitlines()))}
    assert all(i["state"] == "ready" for i in lines.values()), (out, build.stderr)
    assert lines[("/items", "i")]["indexed"] == len(ITEMS), out
    assert as_dict(q("/items", "i", "--start-at", "40")) == dict(window(ITEMS, "i", start=Bound(40)))
    run_eddy("verify", "--data", data)

    # the daemon serves the offline-built index
    d.start()
    with requests.Session() as s:
        assert {i["state"] for i in index_status(d, session=s)} == {"ready"}
        expect_window(s, d, "items", "default", ITEMS, "i", [order_param("i"), ("endAt", "5")], {"end": Bound(5)})
    d.stop()
    run_eddy("verify", "--data", data)


# -- last: the module's data directory verifies ---------------------------------------------------


def test_zz_verify_after_everything(d):
    """Runs last (file order): stops the module daemon and verifies every namespace written."""
    if not NAMESPACES:
        pytest.skip("no namespace written by this run")
    d.stop()
    try:
        for ns in NAMESPACES:
            r = run_eddy("verify", "--data", d.data_dir, "--ns", ns, check=False)
            if ns.startswith("ixempty") and r.returncode == 1:
                continue  # a namespace only read from may not exist on disk
            assert r.returncode == 0, (ns, r.returncode, r.stdout.decode(), r.stderr.decode())
    finally:
        d.start()
