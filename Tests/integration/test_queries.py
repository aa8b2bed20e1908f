"""Ordered queries over REST (FIREBASE_REFERENCE §2, §3, §9.3, §9.7): `orderBy="$key"` with
startAt / startAfter / endAt / endBefore / equalTo / limitToFirst / limitToLast, checked against
an independent Python implementation of Firebase key order over many seeded random windows;
every query error with its text; the same queries through firebase-admin; percent-encoding.

The random windows print their seed; `EDDY_SEED=<seed>` replays them.
"""

import json
import os
import random
import urllib.parse
import uuid

import firebase_admin
import pytest

from conftest import firebase_app
import requests
from firebase_admin import db, exceptions

# -- Firebase key order (§2.1): firebase_order.py, written independently of the server ---------

from firebase_order import (  # noqa: E402
    INT32_MIN, ambiguous, as_dict, firebase_key, firebase_key_cmp, integer_value, key_sort_key, render)


def test_firebase_key_cmp_itself():
    # §2.1's derived example, and the UTF-16 (not code point) order of non-BMP characters.
    ordered = ["-1", "0", "1", "01", "001", "2", "10", "2147483647", "-", "2147483648", "A", "a", "b"]
    shuffled = ordered[:]
    random.Random(1).shuffle(shuffled)
    assert sorted(shuffled, key=firebase_key) == ordered
    assert firebase_key_cmp("\U0001F600", "\uff61") < 0  # surrogates (D83D) before FF61
    assert firebase_key_cmp("\ue000", "\U0001F600") > 0
    assert integer_value("0000000000005") == 5  # 13 characters, still integer-like in JS
    assert integer_value("12345678901") is None and integer_value("-2147483649") is None
    assert integer_value("-2147483648") == INT32_MIN
    assert integer_value("+1") is None and integer_value(" 1") is None and integer_value("\u0663") is None
    assert integer_value("1\n") is None


# -- data ------------------------------------------------------------------------------------

KEYS = [
    # integer-like (int32, the regex): by value, then shorter first
    "-2147483648", "-10", "-1", "0", "1", "01", "001", "2", "007", "10", "0000000000010", "1234567890",
    "2147483647",
    # strings
    "-2147483649", "2147483648", "12345678901", "-", "--1", "+1", " 1", "1 ", "1a", "A", "Z", "_", "a", "a b",
    "ab", "b", "z", "~", "\u00e9", "\u65e5\u672c", "\ue000", "\uff61", "\U0001F600",
]

# Bounds that are not keys: between, before and after keys, and characters keys cannot hold.
EXTRA_BOUNDS = [
    "", " ", "-3", "-2147483647", "3", "9", "02", "11", "999", "2147483646", "2147483649", "-a", "-0a", "0a", "1 2",
    "A0", "a a", "aa", "ab ", "b0", "y", "zzz", "\u00e90", "\u0451", "\uffff", "\U0001F600a", "\U0001F601",
    "\ue000\ue000", "a.b", "a/b", "$x", "[x]", "a\u0001", "\u007f",
]

BOUNDS = KEYS + EXTRA_BOUNDS


def value_for(i, key):
    kind = i % 4
    if kind == 0:
        return {"i": i, "key": key, "deep": {"list": [i, "x"], "t": True}}
    if kind == 1:
        return f"s{i}"
    if kind == 2:
        return i * 1.5
    return i % 8 == 3


DATA = {key: value_for(i, key) for i, key in enumerate(KEYS)}
SORTED_KEYS = sorted(KEYS, key=firebase_key)


def test_test_data_is_unambiguous():
    assert len(set(BOUNDS)) == len(BOUNDS)
    for a in BOUNDS:
        for b in BOUNDS:
            assert not ambiguous(a, b), (a, b)


def expected_window(start=None, start_inclusive=True, end=None, end_inclusive=True, first=None, last=None):
    """Firebase semantics, by brute force over the sorted keys."""
    selected = []
    for key in SORTED_KEYS:
        if start is not None:
            c = firebase_key_cmp(key, start)
            if c < 0 or (c == 0 and not start_inclusive):
                continue
        if end is not None:
            c = firebase_key_cmp(key, end)
            if c > 0 or (c == 0 and not end_inclusive):
                continue
        selected.append(key)
    if first is not None:
        selected = selected[:first]
    if last is not None:
        selected = selected[-last:] if last > 0 else []
    return {k: DATA[k] for k in selected}


# -- fixtures ----------------------------------------------------------------------------------


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
    print(f"\ntest_queries: EDDY_SEED={value}")
    return value


@pytest.fixture(scope="module")
def items(d, http):
    """`/<base>/items` holds DATA; siblings sharing its prefix and a primitive sit next to it."""
    base = "q_" + uuid.uuid4().hex[:8]
    body = {
        "items": DATA,
        "items2": {"0": "sibling", "zz": "sibling"},
        "item": {"a": "sibling", "~": "sibling"},
        "itemsa": "sibling",
        "prim": "leaf",
    }
    r = http.put(d.url(base), data=json.dumps(body))
    assert r.status_code == 200, r.text
    assert as_dict(http.get(d.url(base + "/items")).json()) == DATA
    return base + "/items"


Q = urllib.parse.quote


def enc(value, ascii_only=False):
    """A query value JSON-encoded, then fully percent-encoded (UTF-8)."""
    return Q(json.dumps(value, ensure_ascii=ascii_only), safe="")


KEY_ORDER = "orderBy=" + Q('"$key"', safe="")


def query_url(d, path, params):
    """`params`: (name, raw already-encoded value) pairs, sent in the given order."""
    return d.url(path) + "?" + "&".join(f"{name}={value}" for name, value in params)


def error_of(r):
    assert r.status_code == 400, (r.status_code, r.text)
    body = r.json()
    assert list(body) == ["error"] and isinstance(body["error"], str), body
    return body["error"]


# -- random windows against the model ----------------------------------------------------------

STARTS = [None, "startAt", "startAfter"]
ENDS = [None, "endAt", "endBefore"]
LIMITS = [None, "limitToFirst", "limitToLast"]
COMBOS = [(s, e, l) for s in STARTS for e in ENDS for l in LIMITS] + [("equalTo", "equalTo", l) for l in LIMITS]
DRAWS = 60


def pick_bound(rng):
    # Mostly existing keys (hits inclusive/exclusive edges), sometimes in-between strings.
    return rng.choice(KEYS) if rng.random() < 0.6 else rng.choice(EXTRA_BOUNDS)


@pytest.mark.parametrize("combo", COMBOS, ids=lambda c: "+".join(x for x in dict.fromkeys(c) if x) or "orderBy-only")
def test_key_windows_match_firebase_order(d, http, items, seed, combo):
    start_kind, end_kind, limit_kind = combo
    rng = random.Random(f"{seed}/{'+'.join(str(x) for x in combo)}")
    print(f"seed {seed}, combo {combo}")
    draws = DRAWS if (start_kind or end_kind or limit_kind) else 3
    for draw in range(draws):
        params = [("orderBy", Q('"$key"', safe="") if rng.random() < 0.5 else '"$key"')]
        model = {}
        if start_kind == "equalTo":
            v = pick_bound(rng)
            params.append(("equalTo", enc(v, rng.random() < 0.5)))
            model.update(start=v, end=v)
        else:
            if start_kind and end_kind and rng.random() < 0.5:
                # A sorted pair makes non-empty windows likely; unsorted pairs test start > end.
                a, b = sorted([pick_bound(rng), pick_bound(rng)], key=firebase_key)
            else:
                a, b = pick_bound(rng), pick_bound(rng)
            if start_kind:
                params.append((start_kind, enc(a, rng.random() < 0.5)))
                model.update(start=a, start_inclusive=start_kind == "startAt")
            if end_kind:
                params.append((end_kind, enc(b, rng.random() < 0.5)))
                model.update(end=b, end_inclusive=end_kind == "endAt")
        if limit_kind:
            n = rng.choice([1, 1, 2, 3, 5, 8, len(KEYS) - 1, len(KEYS), len(KEYS) + 3, 2147483647])
            params.append((limit_kind, str(n)))
            model["first" if limit_kind == "limitToFirst" else "last"] = n
        rng.shuffle(params)
        url = query_url(d, items, params)
        expected = expected_window(**model)
        r = http.get(url)
        assert r.status_code == 200, (seed, draw, url, r.text)
        got = r.json()
        assert as_dict(got) == expected, (
            f"seed {seed} draw {draw}: GET {url}\nmodel {model}\n"
            f"expected keys {[k for k in SORTED_KEYS if k in expected]}\n"
            f"got keys      {sorted(as_dict(got), key=firebase_key)}"
        )
        assert got == render(expected), (url, got)  # object vs array as a plain read renders it


def test_exhaustive_single_bounds_and_limits(d, http, items):
    """Every bound alone, and each existing key with every limit near it."""
    for bound in BOUNDS:
        for kind, model in (
            ("startAt", {"start": bound}),
            ("startAfter", {"start": bound, "start_inclusive": False}),
            ("endAt", {"end": bound}),
            ("endBefore", {"end": bound, "end_inclusive": False}),
            ("equalTo", {"start": bound, "end": bound}),
        ):
            url = query_url(d, items, [("orderBy", '"$key"'), (kind, enc(bound))])
            r = http.get(url)
            assert r.status_code == 200, (url, r.text)
            assert as_dict(r.json()) == expected_window(**model), url
    for n in range(1, len(KEYS) + 2):
        for kind, model in (("limitToFirst", {"first": n}), ("limitToLast", {"last": n})):
            url = query_url(d, items, [("orderBy", '"$key"'), (kind, str(n))])
            assert as_dict(http.get(url).json()) == expected_window(**model), url


def test_explicit_windows(d, http, items):
    def get(*params):
        r = http.get(query_url(d, items, [("orderBy", '"$key"')] + [(n, v if n.startswith("limit") else enc(v)) for n, v in params]))
        assert r.status_code == 200, r.text
        return r.json()

    assert as_dict(get()) == DATA
    assert sorted(as_dict(get(("limitToFirst", "4"))), key=firebase_key) == ["-2147483648", "-10", "-1", "0"]
    assert SORTED_KEYS[-3:] == ["\U0001F600", "\ue000", "\uff61"]  # UTF-16 order: surrogates before U+E000
    assert sorted(as_dict(get(("limitToLast", "3"))), key=firebase_key) == SORTED_KEYS[-3:]
    # value ties: shorter first; exclusive bounds exclude only the exact key
    assert set(as_dict(get(("startAt", "1"), ("endAt", "001")))) == {"1", "01", "001"}
    assert set(as_dict(get(("startAfter", "1"), ("endBefore", "001")))) == {"01"}
    assert set(as_dict(get(("startAt", "01"), ("endAt", "01")))) == {"01"}
    assert set(as_dict(get(("equalTo", "10")))) == {"10"}
    assert set(as_dict(get(("equalTo", "0000000000010")))) == {"0000000000010"}
    # integers before strings; int32 edges
    assert set(as_dict(get(("startAt", "2147483647"), ("endAt", "-")))) == {"2147483647", " 1", "+1", "-"}
    assert set(as_dict(get(("startAfter", "1234567890"), ("endBefore", "--1")))) == {"2147483647", " 1", "+1", "-"}
    assert set(as_dict(get(("startAt", "-"), ("endAt", "A")))) == {
        "-", "--1", "-2147483649", "1 ", "12345678901", "1a", "2147483648", "A"}
    # empty windows: start > end, equal exclusive bounds, bounds between keys, absent key
    assert get(("startAt", "b"), ("endAt", "a")) is None
    assert get(("startAt", "a"), ("endBefore", "a")) is None
    assert get(("startAfter", "a"), ("endAt", "a")) is None
    assert get(("startAfter", "a"), ("endBefore", "a b")) is None
    assert get(("startAt", "aa"), ("endAt", "aa")) is None
    assert get(("equalTo", "nope")) is None
    assert get(("startAt", "2"), ("endAt", "1"), ("limitToFirst", "3")) is None
    assert get(("startAt", "b"), ("endAt", "a"), ("limitToLast", "3")) is None
    # limits inside a window
    assert set(as_dict(get(("startAt", "0"), ("endAt", "2"), ("limitToFirst", "2")))) == {"0", "1"}
    assert set(as_dict(get(("startAt", "0"), ("endAt", "2"), ("limitToLast", "2")))) == {"001", "2"}
    assert set(as_dict(get(("startAfter", "A"), ("limitToFirst", "2")))) == {"Z", "_"}
    assert set(as_dict(get(("endBefore", "A"), ("limitToLast", "2")))) == {"1a", "2147483648"}
    # the selected children come back whole
    assert as_dict(get(("equalTo", "-2147483648"))) == {"-2147483648": DATA["-2147483648"]}
    assert DATA["-2147483648"] == {"i": 0, "key": "-2147483648", "deep": {"list": [0, "x"], "t": True}}


def test_array_like_windows_render_as_plain_reads_do(d, http, items):
    # {"0","1"} qualifies as an array (§1); a window is rendered like any other value.
    r = http.get(query_url(d, items, [("orderBy", '"$key"'), ("startAt", enc("0")), ("endAt", enc("1"))]))
    assert r.json() == [DATA["0"], DATA["1"]]


def test_siblings_sharing_a_prefix_never_leak(d, http, items):
    base = items.rsplit("/", 1)[0]
    for params in ([], [("limitToFirst", "100")], [("limitToLast", "100")], [("startAt", enc("zz"))],
                   [("startAt", enc("~")), ("limitToLast", "5")], [("endAt", enc("0"))], [("endBefore", enc("-2147483648"))],
                   [("endAt", enc("\uffff")), ("limitToLast", "100")], [("startAfter", enc("\uffff"))]):
        r = http.get(query_url(d, items, [("orderBy", '"$key"')] + params))
        assert r.status_code == 200, r.text
        assert "sibling" not in json.dumps(r.json()), (params, r.text)
    r = http.get(query_url(d, base + "/item", [("orderBy", '"$key"'), ("limitToLast", "5")]))
    assert r.json() == {"a": "sibling", "~": "sibling"}
    r = http.get(query_url(d, base + "/items2", [("orderBy", '"$key"'), ("limitToFirst", "1")]))
    assert r.json() == ["sibling"]


def test_query_on_integer_named_locations(d, http):
    base = "qi_" + uuid.uuid4().hex[:8]
    body = {"1": {"a": 1, "b": 2}, "01": {"c": 3}, "10": {"d": 4}, "2": "leaf"}
    assert http.put(d.url(base), data=json.dumps(body)).status_code == 200
    for location, want in (("1", {"a": 1, "b": 2}), ("01", {"c": 3}), ("10", {"d": 4})):
        for extra in ([], [("limitToLast", "5")], [("limitToFirst", "5")], [("startAt", enc("a"))]):
            r = http.get(query_url(d, f"{base}/{location}", [("orderBy", '"$key"')] + extra))
            assert r.status_code == 200 and r.json() == want, (location, extra, r.text)


def test_query_on_primitive_or_absent_location_is_null(d, http, items):
    base = items.rsplit("/", 1)[0]
    for path in (base + "/prim", base + "/itemsa", items + "/01", items + "/absent", base + "/absent/deeper"):
        for params in ([], [("limitToFirst", "1")], [("limitToLast", "1")], [("startAt", enc(""))],
                       [("startAt", enc("a")), ("endAt", enc("z"))], [("equalTo", enc("leaf"))], [("endBefore", enc("~"))]):
            r = http.get(query_url(d, path, [("orderBy", '"$key"')] + params))
            assert r.status_code == 200, (path, params, r.text)
            assert r.json() is None, (path, params, r.text)


def test_query_at_root(daemon):
    with requests.Session() as s:
        assert s.put(daemon.url("/"), data=json.dumps({"b": {"c": 2}, "1": 3, "a": "x", "01": 4})).status_code == 200

        def q(*params):
            r = s.get(daemon.base_url + "/.json?" + "&".join([KEY_ORDER] + list(params)))
            assert r.status_code == 200, r.text
            return r.json()

        assert q("limitToFirst=1") == [None, 3] == render({"1": 3})  # key "1" alone renders as an array
        assert q("limitToLast=1") == {"b": {"c": 2}}
        assert q("startAfter=%2201%22") == {"a": "x", "b": {"c": 2}}
        assert q("startAt=%22a%22", "endAt=%22a%22") == {"a": "x"}


def test_query_sees_later_writes(d, http):
    base = "qw_" + uuid.uuid4().hex[:8]
    assert http.put(d.url(base), data=json.dumps({"a": 1, "b": {"x": 2}, "c": 3})).status_code == 200
    url = query_url(d, base, [("orderBy", '"$key"'), ("limitToLast", "2")])
    assert http.get(url).json() == {"b": {"x": 2}, "c": 3}
    assert http.delete(d.url(base + "/c")).status_code == 200
    assert http.get(url).json() == {"a": 1, "b": {"x": 2}}
    assert http.patch(d.url(base), data=json.dumps({"b": None, "d/e": 5})).status_code == 200
    assert http.get(url).json() == {"a": 1, "d": {"e": 5}}


def test_bound_with_nul_character_next_to_an_object_child(d, http):
    # JS: "a" < "a\0" < "a\u0001" < "b"; no stored key holds a control character.
    base = "qn_" + uuid.uuid4().hex[:8]
    assert http.put(d.url(base), data=json.dumps({"a": {"x": 1}, "b": 2, "c": {"y": 3}})).status_code == 200
    failures = []
    cases = [
        ([("startAt", '"a\\u0000"')], {"b": 2, "c": {"y": 3}}),
        ([("startAfter", '"a\\u0000"')], {"b": 2, "c": {"y": 3}}),
        ([("startAt", '"a\\u0000"'), ("limitToFirst", "1")], {"b": 2}),
        ([("equalTo", '"a\\u0000"')], None),
        ([("endAt", '"a\\u0000"')], {"a": {"x": 1}}),
        ([("endAt", '"a\\u0000"'), ("limitToLast", "5")], {"a": {"x": 1}}),
        ([("endBefore", '"a\\u0000"'), ("limitToLast", "5")], {"a": {"x": 1}}),
        ([("startAt", '"a\\u0000"'), ("limitToLast", "5")], {"b": 2, "c": {"y": 3}}),
    ]
    for params, want in cases:
        url = query_url(d, base, [("orderBy", '"$key"')] + [(n, Q(v, safe="")) for n, v in params])
        r = http.get(url)
        got = r.json() if r.status_code == 200 else (r.status_code, r.text)
        if got != want:
            failures.append(f"GET ?orderBy=\"$key\"&{'&'.join(f'{n}={v}' for n, v in params)}: expected {want}, got {got}")
    assert not failures, "\n".join(failures)


# -- errors ------------------------------------------------------------------------------------

NO_ORDER = "orderBy must be defined when other query parameters are defined"
KEY_TYPE = "Provided key index type is invalid, must be string"
ONE_ARG = "When ordering by key, you may only pass one argument"
START_SET = "Starting point was already set"
END_SET = "Ending point was already set"
LIMIT_SET = "Limit was already set"
POSITIVE = "must be a positive integer"
TWO_ORDERS = "You can't combine multiple orderBy calls"

K = '"$key"'

ERROR_CASES = [
    # (query string (sent raw; requests quotes '"' and spaces), expected text, exact?)
    ('startAt="a"', NO_ORDER, True),
    ('endAt="a"', NO_ORDER, True),
    ('equalTo="a"', NO_ORDER, True),
    ("limitToFirst=1", NO_ORDER, True),
    ("limitToLast=1", NO_ORDER, True),
    ('startAfter="a"&endBefore="b"', NO_ORDER, True),
    (f"orderBy={K}&startAt=1", KEY_TYPE, True),
    (f"orderBy={K}&startAfter=1.5", KEY_TYPE, True),
    (f"orderBy={K}&endAt=true", KEY_TYPE, True),
    (f"orderBy={K}&endBefore=false", KEY_TYPE, True),
    (f"orderBy={K}&equalTo=null", KEY_TYPE, True),
    (f"orderBy={K}&startAt=-1", KEY_TYPE, True),
    (f'startAt=3&orderBy={K}', KEY_TYPE, True),
    (f'orderBy={K}&startAt="a","b"', ONE_ARG, False),
    (f'orderBy={K}&endAt="a","b"', ONE_ARG, False),
    (f'orderBy={K}&equalTo="a","b"', ONE_ARG, False),
    (f'orderBy={K}&startAfter="a","b"', ONE_ARG, False),
    (f'orderBy={K}&endBefore="a","b"', ONE_ARG, False),
    (f'orderBy={K}&startAt="a"&equalTo="b"', START_SET, False),
    (f'orderBy={K}&equalTo="b"&startAt="a"', START_SET, False),
    (f'orderBy={K}&startAt="a"&startAfter="b"', START_SET, False),
    (f'orderBy={K}&startAfter="b"&startAt="a"', START_SET, False),
    (f'orderBy={K}&startAt="a"&startAt="a"', START_SET, False),
    (f'orderBy={K}&equalTo="a"&equalTo="b"', START_SET, False),
    (f'orderBy={K}&equalTo="a"&startAfter="a"', START_SET, False),
    (f'orderBy={K}&endAt="a"&endBefore="b"', END_SET, False),
    (f'orderBy={K}&endBefore="b"&endAt="a"', END_SET, False),
    (f'orderBy={K}&endAt="a"&endAt="a"', END_SET, False),
    (f'orderBy={K}&endAt="a"&equalTo="a"', END_SET, False),
    (f'orderBy={K}&equalTo="a"&endBefore="b"', END_SET, False),
    (f"orderBy={K}&limitToFirst=1&limitToLast=1", LIMIT_SET, False),
    (f"orderBy={K}&limitToLast=1&limitToFirst=1", LIMIT_SET, False),
    (f"orderBy={K}&limitToFirst=1&limitToFirst=2", LIMIT_SET, False),
    (f"orderBy={K}&limitToFirst=0", POSITIVE, False),
    (f"orderBy={K}&limitToFirst=-1", POSITIVE, False),
    (f"orderBy={K}&limitToFirst=x", POSITIVE, False),
    (f"orderBy={K}&limitToFirst=1.5", POSITIVE, False),
    (f"orderBy={K}&limitToFirst=", POSITIVE, False),
    (f"orderBy={K}&limitToLast=0", POSITIVE, False),
    (f"orderBy={K}&limitToLast=-1", POSITIVE, False),
    (f"orderBy={K}&limitToLast=x", POSITIVE, False),
    (f"orderBy={K}&limitToLast=99999999999999999999999", POSITIVE, False),
    (f"orderBy={K}&orderBy={K}", TWO_ORDERS, False),
    (f'orderBy={K}&orderBy="$value"', TWO_ORDERS, False),
    (f'orderBy="age"&orderBy={K}', TWO_ORDERS, False),
]


@pytest.mark.parametrize("query,text,exact", ERROR_CASES,
                         ids=[c[0] if isinstance(c, tuple) else c.id for c in ERROR_CASES])
def test_query_errors(d, http, items, query, text, exact):
    message = error_of(http.get(d.url(items) + "?" + query))
    if exact:
        assert message == text
    else:
        assert text in message


@pytest.mark.parametrize("order,index_on", [
    ('"$value"', ".value"),
    ('"age"', "age"),
    ('"stats/score"', "stats/score"),
    ("%22%24value%22", ".value"),
])
def test_unindexed_orders_need_an_index(d, http, items, order, index_on):
    for extra in ("", '&startAt=3', "&limitToFirst=2", '&equalTo="x"&limitToLast=1'):
        message = error_of(http.get(d.url(items) + f"?orderBy={order}" + extra))
        assert message == f'Index not defined, add ".indexOn": "{index_on}", for path "/{items}", to the rules'
    # also where nothing is stored
    message = error_of(http.get(d.url(items + "/nothing/here") + f"?orderBy={order}"))
    assert message == f'Index not defined, add ".indexOn": "{index_on}", for path "/{items}/nothing/here", to the rules'


def test_priority_order_selects_as_if_every_priority_were_null(d, http, items):
    """Where no child has a priority (as here), every child's is null: priority order is key
    order, a null bound narrows by its key, a non-null start selects nothing and a non-null end
    everything (Firebase's order: null first). Children with priorities: test_priorities.py."""
    def get(query):
        r = http.get(d.url(items) + "?" + query)
        assert r.status_code == 200, (query, r.text)
        return r.json()
    keys = sorted(get('orderBy="$key"'), key=key_sort_key)
    k = keys[len(keys) // 2]
    same = [
        ('orderBy="$priority"', 'orderBy="$key"'),
        ('orderBy="$priority"&limitToFirst=2', 'orderBy="$key"&limitToFirst=2'),
        (f'orderBy="$priority"&startAt=null,"{k}"', f'orderBy="$key"&startAt="{k}"'),
        (f'orderBy="$priority"&startAfter=null,"{k}"&limitToFirst=1', f'orderBy="$key"&startAfter="{k}"&limitToFirst=1'),
        (f'orderBy="$priority"&endAt=null,"{k}"&limitToLast=2', f'orderBy="$key"&endAt="{k}"&limitToLast=2'),
        ('orderBy="$priority"&endAt="z"&limitToLast=2', 'orderBy="$key"&limitToLast=2'),
        ('orderBy="$priority"&equalTo=null', 'orderBy="$key"'),
        (f'orderBy="$priority"&equalTo=null,"{k}"', f'orderBy="$key"&equalTo="{k}"'),
    ]
    for priority_query, key_query in same:
        assert get(priority_query) == get(key_query), priority_query
    for empty in ('orderBy="$priority"&startAt=1', 'orderBy="$priority"&startAt="a"&limitToFirst=3',
                  'orderBy="$priority"&startAfter=null', 'orderBy="$priority"&endBefore=null', 'orderBy="$priority"&equalTo=5'):
        assert get(empty) is None, empty


def test_malformed_query_values_are_400(d, http, items):
    for query in ("orderBy=$key", "orderBy=key", 'orderBy="$key"&startAt=a', 'orderBy="$key"&startAt=',
                  'orderBy="$key"&endAt="a', 'orderBy="$key"&startAt="a",', 'orderBy="$key"&startAt={"a":1}',
                  'orderBy="$key"&equalTo="\\ud83d"', "orderBy=%ZZ"):
        r = http.get(d.url(items) + "?" + query)
        assert r.status_code == 400, (query, r.text)
        assert isinstance(r.json()["error"], str)


@pytest.mark.parametrize("method", ["PUT", "POST", "PATCH", "DELETE"])
@pytest.mark.parametrize("query", [f"orderBy={K}", f"orderBy={K}&limitToFirst=1", f'orderBy={K}&startAt="a"'])
def test_query_parameters_on_writes_are_refused_without_effect(d, http, method, query):
    base = "qm_" + uuid.uuid4().hex[:8]
    assert http.put(d.url(base), data=json.dumps({"a": 1})).status_code == 200
    body = json.dumps({"b": 2}) if method in ("PUT", "PATCH", "POST") else None
    r = http.request(method, d.url(base) + "?" + query, data=body)
    error_of(r)
    assert http.get(d.url(base)).json() == {"a": 1}
    # X-HTTP-Method-Override: the same refusal
    if method != "POST":
        r = http.post(d.url(base) + "?" + query, data=body or "", headers={"X-HTTP-Method-Override": method})
        error_of(r)
        assert http.get(d.url(base)).json() == {"a": 1}


def test_shallow_with_a_query_is_refused(d, http, items):
    for query in (f"shallow=true&orderBy={K}", f"orderBy={K}&limitToFirst=1&shallow=true", f'shallow=true&orderBy="age"'):
        error_of(http.get(d.url(items) + "?" + query))
    # shallow=false is not shallow
    r = http.get(d.url(items) + f"?shallow=false&orderBy={K}&limitToFirst=1")
    assert r.status_code == 200 and as_dict(r.json()) == expected_window(first=1)


# -- firebase-admin ------------------------------------------------------------------------------

NS = "fake-project-id"


@pytest.fixture(scope="module")
def app(d):
    with firebase_app(d.port, NS, "eddy-q") as app:
        yield app


@pytest.fixture(scope="module")
def admin_items(app):
    ref = db.reference("/fq_" + uuid.uuid4().hex[:8] + "/items", app=app)
    ref.set(DATA)
    return ref


# The SDK sends values unencoded; a string holding & or # is cut on the wire (§9.3).
ADMIN_BOUNDS = [b for b in BOUNDS if "&" not in b and "#" not in b]


def test_admin_key_queries(admin_items):
    ref = admin_items
    assert as_dict(ref.order_by_key().get()) == DATA
    assert as_dict(ref.order_by_key().start_at("1").end_at("A").limit_to_first(4).get()) == expected_window(
        start="1", end="A", first=4)
    assert as_dict(ref.order_by_key().start_at("1").end_at("A").limit_to_last(4).get()) == expected_window(
        start="1", end="A", last=4)
    assert as_dict(ref.order_by_key().equal_to("01").get()) == {"01": DATA["01"]}
    assert as_dict(ref.order_by_key().equal_to("\U0001F600").get()) == {"\U0001F600": DATA["\U0001F600"]}
    assert ref.order_by_key().equal_to("nope").get() is None
    assert as_dict(ref.order_by_key().limit_to_last(3).get()) == expected_window(last=3)
    assert as_dict(ref.order_by_key().limit_to_first(3).get()) == expected_window(first=3)
    assert ref.order_by_key().start_at("b").end_at("a").get() is None
    # firebase-admin re-sorts $key results as plain strings (§9.7); the server chose the window
    got = ref.order_by_key().start_at("0").end_at("10").get()
    assert list(got) == sorted(expected_window(start="0", end="10"))


def test_admin_random_windows(admin_items, seed):
    rng = random.Random(f"{seed}/admin")
    print(f"seed {seed}")
    for draw in range(80):
        query = admin_items.order_by_key()
        model = {}
        shape = rng.choice(["start", "end", "both", "equal", "none"])
        a, b = rng.choice(ADMIN_BOUNDS), rng.choice(ADMIN_BOUNDS)
        if shape == "both" and rng.random() < 0.5:
            a, b = sorted([a, b], key=firebase_key)
        if shape in ("start", "both"):
            query = query.start_at(a)
            model["start"] = a
        if shape in ("end", "both"):
            query = query.end_at(b)
            model["end"] = b
        if shape == "equal":
            query = query.equal_to(a)
            model.update(start=a, end=a)
        limit = rng.choice([None, "first", "last"])
        n = rng.choice([1, 2, 3, 7, len(KEYS) + 1])
        if limit == "first":
            query = query.limit_to_first(n)
            model["first"] = n
        elif limit == "last":
            query = query.limit_to_last(n)
            model["last"] = n
        got = query.get()
        assert as_dict(got) == expected_window(**model), f"seed {seed} draw {draw}: {model}"


def test_admin_unindexed_orders_raise_invalid_argument(admin_items):
    for query in (admin_items.order_by_child("x"), admin_items.order_by_child("x/y").limit_to_first(1),
                  admin_items.order_by_value(), admin_items.order_by_value().equal_to(1)):
        with pytest.raises(exceptions.InvalidArgumentError) as info:
            query.get()
        assert "Index not defined" in str(info.value)


def test_admin_key_query_type_errors_raise_invalid_argument(admin_items):
    with pytest.raises(exceptions.InvalidArgumentError) as info:
        admin_items.order_by_key().start_at(1).get()
    assert str(info.value) == KEY_TYPE
    with pytest.raises(exceptions.InvalidArgumentError) as info:
        admin_items.order_by_key().equal_to(True).get()
    assert str(info.value) == KEY_TYPE


# -- percent-encoding --------------------------------------------------------------------------

ENC_KEYS = ["a", "a b", "a b c", "a%20b", "a&b", "a+b", "ab", "\u00e9", "e", "f", "\u65e5\u672c", "\U0001F600", "+", " "]
ENC_DATA = {k: f"v:{k}" for k in ENC_KEYS}


@pytest.fixture(scope="module")
def enc_items(d, http):
    path = "qe_" + uuid.uuid4().hex[:8]
    assert http.put(d.url(path), data=json.dumps(ENC_DATA)).status_code == 200
    return path


def enc_window(start=None, end=None):
    return {k: v for k, v in ENC_DATA.items()
            if (start is None or firebase_key_cmp(k, start) >= 0) and (end is None or firebase_key_cmp(k, end) <= 0)}


def test_bounds_as_requests_quotes_them(d, http, enc_items):
    """Raw `"`, spaces, `+` and non-ASCII in the URL; requests' requote_uri encodes only the
    unsafe ones, as it does for firebase-admin (§9.3): `+` arrives literally and means `+`."""
    base = d.url(enc_items) + '?orderBy="$key"&'
    for key in ("a b", "a+b", "a b c", "\u00e9", "\u65e5\u672c", "\U0001F600", "+", " "):
        r = http.get(base + "equalTo=" + json.dumps(key, ensure_ascii=False))
        assert r.status_code == 200, (key, r.request.url, r.text)
        assert r.json() == {key: ENC_DATA[key]}, (key, r.request.url)
        assert "%22" in r.request.url  # requests did quote the JSON quotes
    r = http.get(base + 'startAt="a b"&endAt="a+b"')
    assert r.json() == enc_window("a b", "a+b") and set(r.json()) == {"a b", "a b c", "a%20b", "a&b", "a+b"}
    r = http.get(base + 'startAt="a+"&endAt="\u00e9"')
    assert r.json() == enc_window("a+", "\u00e9")
    r = http.get(d.url(enc_items) + '?orderBy=%22$key%22&equalTo="a+b"')
    assert r.json() == {"a+b": "v:a+b"}


def test_bounds_fully_percent_encoded(d, http, enc_items):
    base = d.url(enc_items) + "?orderBy=%22%24key%22&"
    cases = {
        "equalTo=%22a%20b%22": {"a b"},
        "equalTo=%22a%2Bb%22": {"a+b"},
        "equalTo=%22a%2bb%22": {"a+b"},
        "equalTo=%22a%26b%22": {"a&b"},
        "equalTo=%22a%2520b%22": {"a%20b"},
        "equalTo=%22%C3%A9%22": {"\u00e9"},
        "equalTo=%22%c3%a9%22": {"\u00e9"},
        "equalTo=%22%F0%9F%98%80%22": {"\U0001F600"},
        "equalTo=%22%5Cu00e9%22": {"\u00e9"},
        "equalTo=%22%5Cud83d%5Cude00%22": {"\U0001F600"},
        "equalTo=%22%E6%97%A5%E6%9C%AC%22": {"\u65e5\u672c"},
        "startAt=%22a%20b%22&endAt=%22a%20b%20c%22": {"a b", "a b c"},
        "startAt=%22%2B%22&endBefore=%22a%22": {"+"},
    }
    for query, keys in cases.items():
        r = http.get(base + query)
        assert r.status_code == 200, (query, r.text)
        assert set(as_dict(r.json())) == keys, query
    # a JSON escape of a non-ASCII character, sent raw
    r = http.get(d.url(enc_items) + '?orderBy="$key"&equalTo="\\u00e9"')
    assert r.json() == {"\u00e9": "v:\u00e9"}
    # a malformed escape is a 400, not a silent miss
    error_of(http.get(base + "equalTo=%22a%2"))
    error_of(http.get(base + "equalTo=%22%C3%22"))  # not UTF-8 after decoding


def test_admin_bounds_with_spaces_plus_and_non_ascii(app):
    ref = db.reference("/fqe_" + uuid.uuid4().hex[:8], app=app)
    ref.set(ENC_DATA)
    # Not "a%20b": the SDK sends values unencoded, so the server rightly decodes its %20 (§9.3).
    for key in ("a b", "a+b", "a b c", "\u00e9", "\u65e5\u672c", "\U0001F600", "+", " "):
        assert as_dict(ref.order_by_key().equal_to(key).get()) == {key: ENC_DATA[key]}, key
    assert as_dict(ref.order_by_key().start_at("a b").end_at("a+b").get()) == enc_window("a b", "a+b")
    assert as_dict(ref.order_by_key().start_at("\u00e9").limit_to_first(2).get()) == {
        "\u00e9": ENC_DATA["\u00e9"], "\u65e5\u672c": ENC_DATA["\u65e5\u672c"]}
