"""The Firebase-compatible REST API of a real eddyd, request by request (FIREBASE_REFERENCE §1,
§6, §7; DESIGN "Interfaces"). One daemon serves the module; each test writes under its own
top-level key."""

import json
import re
import time
import uuid

import pytest
import requests

from conftest import eddy_log, run_eddy

PUSH_ID = re.compile(r"^[-0-9A-Z_a-z]{20}$")
PUSH_ALPHABET = "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz"


@pytest.fixture(scope="module")
def d(module_daemon):
    return module_daemon


@pytest.fixture(scope="module")
def http():
    with requests.Session() as session:  # keep-alive across the module
        yield session


@pytest.fixture
def base(request):
    """A fresh top-level key for this test."""
    return "t_" + re.sub(r"[^A-Za-z0-9_]", "_", request.node.name)[:60] + "_" + uuid.uuid4().hex[:6]


def get(http, d, path, **params):
    r = http.get(d.url(path, **params))
    assert r.status_code == 200, r.text
    return r.json()


def put(http, d, path, value, **params):
    r = http.put(d.url(path, **params), data=json.dumps(value))
    assert r.status_code == 200, r.text
    return r.json()


# -- basic reads and writes ----------------------------------------------------------------


def test_get_absent_is_null(http, d, base):
    r = http.get(d.url(base + "/nothing/here"))
    assert r.status_code == 200
    assert r.text == "null"
    assert r.headers["Content-Type"].startswith("application/json")


def test_put_answers_written_value_and_get_reads_it(http, d, base):
    value = {"name": "Ada", "born": 1815, "tags": {"math": True, "poet": False}, "ratio": 0.1, "neg": -2.5e-7}
    r = http.put(d.url(base + "/ada"), data=json.dumps(value))
    assert r.status_code == 200
    assert r.headers["Content-Type"].startswith("application/json")
    assert r.json() == value
    assert get(http, d, base + "/ada") == value
    assert get(http, d, base) == {"ada": value}
    assert get(http, d, base + "/ada/tags/math") is True
    assert get(http, d, base + "/ada/name") == "Ada"


def test_numbers_keep_their_exact_value_and_integers_render_as_integers(http, d, base):
    values = {"i": 5, "big": 9007199254740991, "f": 0.1, "tiny": 5e-324, "huge": 1.7976931348623157e308, "neg": -0.5}
    put(http, d, base, values)
    r = http.get(d.url(base + "/i"))
    assert r.text == "5"
    got = get(http, d, base)
    for key, value in values.items():
        assert got[key] == value and type(got[key]) is type(value), key


def test_put_replaces_whole_subtree(http, d, base):
    put(http, d, base, {"a": {"x": 1, "y": 2}, "b": 3})
    put(http, d, base + "/a", {"z": 9})
    assert get(http, d, base) == {"a": {"z": 9}, "b": 3}
    put(http, d, base + "/a", "leaf")
    assert get(http, d, base) == {"a": "leaf", "b": 3}
    put(http, d, base + "/a/deeper", True)  # a primitive ancestor is replaced by the object
    assert get(http, d, base) == {"a": {"deeper": True}, "b": 3}


def test_firebase_wrapped_values_and_null_priorities_are_unwrapped(http, d, base):
    # What a Firebase export without priorities holds, and what its SDKs accept.
    assert put(http, d, base + "/leaf", {".value": 1}) == 1
    put(http, d, base + "/obj", {"a": {".value": "x", ".priority": None}, "b": 2, ".priority": None})
    r = http.patch(d.url(base), data=json.dumps({"c": {".value": True}}))
    assert r.status_code == 200, r.text
    assert get(http, d, base) == {"leaf": 1, "obj": {"a": "x", "b": 2}, "c": True}
    # A priority that is not a number, a string or null is refused, naming where, and nothing is written.
    for body in ({"a": 1, ".priority": True}, {"z": {".value": 1, ".priority": {"p": 1}}}):
        r = http.put(d.url(base + "/refused"), data=json.dumps(body))
        assert r.status_code == 400 and "priority of /" in r.json()["error"] and "/refused" in r.json()["error"], r.text
    r = http.put(d.url(base + "/refused"), data=json.dumps({".value": 1, "other": 2}))
    assert r.status_code == 400 and '".value" and other keys' in r.json()["error"], r.text
    assert get(http, d, base + "/refused") is None


def test_root_read_and_write(daemon):
    with requests.Session() as s:
        assert s.get(daemon.url("/")).json() is None
        assert s.put(daemon.url("/"), data='{"a": 1, "b": {"c": "d"}}').json() == {"a": 1, "b": {"c": "d"}}
        assert s.get(daemon.url("/")).json() == {"a": 1, "b": {"c": "d"}}
        assert s.get(daemon.base_url + "/.json").json() == {"a": 1, "b": {"c": "d"}}
        assert s.delete(daemon.url("/")).text == "null"
        assert s.get(daemon.url("/")).json() is None


def test_delete_answers_null_and_removes(http, d, base):
    put(http, d, base, {"a": 1, "b": 2})
    r = http.delete(d.url(base + "/a"))
    assert r.status_code == 200
    assert r.text == "null"
    assert get(http, d, base) == {"b": 2}
    r = http.delete(d.url(base + "/never/existed"))
    assert r.status_code == 200 and r.json() is None


def test_removing_last_child_removes_parent(http, d, base):
    put(http, d, base + "/p/q/r", 1)
    http.delete(d.url(base + "/p/q/r"))
    assert get(http, d, base + "/p") is None
    assert get(http, d, base) is None


@pytest.mark.parametrize("empty", [{}, None, {"a": {}}, {"a": None}, {"a": {"b": {}}}])
def test_empty_objects_and_null_delete(http, d, base, empty):
    put(http, d, base, {"keep": 1, "x": {"old": True}})
    r = http.put(d.url(base + "/x"), data=json.dumps(empty))
    assert r.status_code == 200
    assert r.json() is None
    assert get(http, d, base) == {"keep": 1}


def test_nulls_inside_objects_are_pruned(http, d, base):
    r = http.put(d.url(base), data=json.dumps({"a": 1, "b": None, "c": {"d": None, "e": {}}, "f": {"g": 2, "h": None}}))
    assert r.status_code == 200
    assert r.json() == {"a": 1, "f": {"g": 2}}
    assert get(http, d, base) == {"a": 1, "f": {"g": 2}}


# -- arrays --------------------------------------------------------------------------------


def test_arrays_are_stored_as_integer_keys_and_rendered_on_read(http, d, base):
    assert put(http, d, base + "/arr", ["a", "b", "c"]) == ["a", "b", "c"]
    assert get(http, d, base + "/arr") == ["a", "b", "c"]
    assert get(http, d, base + "/arr/1") == "b"
    # shallow over an array: Firebase's rendering is unverified (FIREBASE_REFERENCE §11.2); both shapes say the same
    assert get(http, d, base + "/arr", shallow="true") in ([True, True, True], {"0": True, "1": True, "2": True})
    http.delete(d.url(base + "/arr/1"))
    assert get(http, d, base + "/arr") == ["a", None, "c"]


def test_sparse_integer_keys_render_as_array_with_holes(http, d, base):
    put(http, d, base + "/s", {"0": "a", "2": "c"})
    r = http.get(d.url(base + "/s"))
    assert r.json() == ["a", None, "c"]
    assert r.text.replace(" ", "") == '["a",null,"c"]'


def test_too_sparse_integer_keys_stay_an_object(http, d, base):
    put(http, d, base + "/s", {"0": "a", "5": "f"})
    assert get(http, d, base + "/s") == {"0": "a", "5": "f"}
    put(http, d, base + "/n", {"1": "x", "01": "y"})  # "01" is not a canonical array index
    assert get(http, d, base + "/n") == {"1": "x", "01": "y"}


def test_array_of_objects_round_trips(http, d, base):
    value = [{"a": 1}, [1, 2], "s", None, True]
    # the null element is not stored; keys 0,1,2,4: largest 4 < 2 * 4, so still an array with a hole
    assert put(http, d, base, value) == [{"a": 1}, [1, 2], "s", None, True]
    assert get(http, d, base) == [{"a": 1}, [1, 2], "s", None, True]


# -- POST (push) ---------------------------------------------------------------------------


def test_post_answers_push_id_and_stores_value(http, d, base):
    r = http.post(d.url(base + "/msgs"), data=json.dumps({"text": "hi", "n": 1}))
    assert r.status_code == 200
    body = r.json()
    assert set(body) == {"name"}
    name = body["name"]
    assert PUSH_ID.match(name), name
    assert get(http, d, f"{base}/msgs/{name}") == {"text": "hi", "n": 1}


def test_push_ids_increase_and_encode_the_time(http, d, base):
    before = int(time.time() * 1000)
    names = [http.post(d.url(base), data=json.dumps(i)).json()["name"] for i in range(30)]
    after = int(time.time() * 1000)
    assert names == sorted(names)
    assert len(set(names)) == len(names)
    stored = get(http, d, base)
    assert stored == {name: i for i, name in enumerate(names)}
    for name in names:
        ms = 0
        for ch in name[:8]:
            ms = ms * 64 + PUSH_ALPHABET.index(ch)
        assert before - 2000 <= ms <= after + 2000, (name, ms, before, after)


def test_post_under_a_primitive_replaces_it(http, d, base):
    put(http, d, base, 5)
    name = http.post(d.url(base), data='"child"').json()["name"]
    assert get(http, d, base) == {name: "child"}


def test_post_of_primitive_and_empty_string(http, d, base):
    name = http.post(d.url(base), data='""').json()["name"]
    assert get(http, d, f"{base}/{name}") == ""
    name2 = http.post(d.url(base), data="false").json()["name"]
    assert get(http, d, f"{base}/{name2}") is False


# -- PATCH ---------------------------------------------------------------------------------


def test_patch_merges_children_and_answers_body(http, d, base):
    put(http, d, base, {"a": 1, "b": {"x": 1, "y": 2}, "c": 3})
    r = http.patch(d.url(base), data=json.dumps({"b": {"z": 3}, "d": 4}))
    assert r.status_code == 200
    assert r.json() == {"b": {"z": 3}, "d": 4}
    assert get(http, d, base) == {"a": 1, "b": {"z": 3}, "c": 3, "d": 4}


def test_patch_multi_path_keys_and_null_deletes(http, d, base):
    put(http, d, base, {"u1": {"name": "a", "since": 1}, "u2": {"name": "b"}, "gone": True})
    r = http.patch(d.url(base), data=json.dumps({"u1/since": 2, "u2/deep/er": "x", "gone": None, "u1/name": None}))
    assert r.status_code == 200
    assert get(http, d, base) == {"u1": {"since": 2}, "u2": {"name": "b", "deep": {"er": "x"}}}


def test_patch_creates_missing_location(http, d, base):
    r = http.patch(d.url(base + "/new/place"), data=json.dumps({"a/b": 1}))
    assert r.status_code == 200
    assert get(http, d, base) == {"new": {"place": {"a": {"b": 1}}}}


def test_patch_with_empty_object_value_deletes_that_child(http, d, base):
    put(http, d, base, {"a": {"x": 1}, "b": 2})
    assert http.patch(d.url(base), data='{"a": {}}').status_code == 200
    assert get(http, d, base) == {"b": 2}


# -- server values -------------------------------------------------------------------------


def test_server_timestamp(http, d, base):
    before = int(time.time() * 1000)
    r = http.put(d.url(base), data=json.dumps({"at": {".sv": "timestamp"}, "plain": 1}))
    after = int(time.time() * 1000)
    assert r.status_code == 200
    written = r.json()
    stored = get(http, d, base)
    assert stored == written
    assert isinstance(stored["at"], int)
    assert before - 1000 <= stored["at"] <= after + 1000
    # pushed and patched timestamps resolve as well
    name = http.post(d.url(base + "/p"), data='{".sv": "timestamp"}').json()["name"]
    assert isinstance(get(http, d, f"{base}/p/{name}"), int)
    http.patch(d.url(base), data='{"q/at": {".sv": "timestamp"}}')
    assert get(http, d, base + "/q/at") >= stored["at"]


def test_server_increment(http, d, base):
    inc = lambda n: json.dumps({".sv": {"increment": n}})  # noqa: E731
    r = http.put(d.url(base + "/c"), data=inc(5))
    assert r.status_code == 200 and r.json() == 5  # absent target -> n
    assert put(http, d, base + "/c", {".sv": {"increment": 2}}) == 7
    assert put(http, d, base + "/c", {".sv": {"increment": -10}}) == -3
    assert put(http, d, base + "/c", {".sv": {"increment": 0.5}}) == -2.5
    assert get(http, d, base + "/c") == -2.5
    put(http, d, base + "/s", "text")
    assert put(http, d, base + "/s", {".sv": {"increment": 3}}) == 3  # non-number target -> n
    put(http, d, base + "/o", {"x": 1})
    assert put(http, d, base + "/o", {".sv": {"increment": 4}}) == 4
    http.patch(d.url(base), data=json.dumps({"c": {".sv": {"increment": 1.5}}, "n/m": {".sv": {"increment": 1}}}))
    assert get(http, d, base) == {"c": -1, "s": 3, "o": 4, "n": {"m": 1}}


def test_concurrent_increments_all_land(http, d, base):
    import concurrent.futures

    def bump(_):
        with requests.Session() as s:
            for _ in range(10):
                assert s.put(d.url(base), data='{".sv": {"increment": 1}}').status_code == 200

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(bump, range(8)))
    assert get(http, d, base) == 80


# -- X-HTTP-Method-Override ----------------------------------------------------------------


def test_method_override(http, d, base):
    r = http.post(d.url(base), data='{"a": 1, "b": 2}', headers={"X-HTTP-Method-Override": "PUT"})
    assert r.status_code == 200 and r.json() == {"a": 1, "b": 2}
    assert get(http, d, base) == {"a": 1, "b": 2}  # a PUT, not a push
    r = http.post(d.url(base), data='{"c": 3}', headers={"X-HTTP-Method-Override": "PATCH"})
    assert r.status_code == 200
    assert get(http, d, base) == {"a": 1, "b": 2, "c": 3}
    r = http.post(d.url(base + "/a"), headers={"X-HTTP-Method-Override": "DELETE"})
    assert r.status_code == 200 and r.text == "null"
    assert get(http, d, base) == {"b": 2, "c": 3}
    r = http.post(d.url(base), headers={"X-HTTP-Method-Override": "get"})
    assert r.status_code == 200 and r.json() == {"b": 2, "c": 3}


def test_method_override_query_parameter(http, d, base):
    """Firebase's REST reference: "You can also use the x-http-method-override query parameter"
    (its example: POST ...?x-http-method-override=DELETE). Before, the parameter was ignored and
    the POST pushed its body."""
    put(http, d, base, {"a": 1})
    r = http.post(d.url(base + "/a", **{"X-HTTP-Method-Override": "PUT"}), data="5")
    assert r.status_code == 200 and r.json() == 5
    assert get(http, d, base) == {"a": 5}, "a PUT, not a push"
    r = http.post(d.url(base, **{"x-http-method-override": "patch"}), data='{"b": 2}')
    assert r.status_code == 200
    assert get(http, d, base) == {"a": 5, "b": 2}
    r = http.post(d.url(base + "/a", **{"x-http-method-override": "DELETE"}))
    assert r.status_code == 200 and r.text == "null"
    assert get(http, d, base) == {"b": 2}
    # the header wins over the parameter
    r = http.post(d.url(base + "/b", **{"x-http-method-override": "DELETE"}), data="3", headers={"X-HTTP-Method-Override": "PUT"})
    assert r.status_code == 200 and get(http, d, base) == {"b": 3}


# -- paths: percent-encoding and non-ASCII -------------------------------------------------


def test_percent_encoded_path_segments(http, d, base):
    r = http.put(d.base_url + f"/{base}/a%20b/%C3%BCn%C3%AF.json", data='"v"')
    assert r.status_code == 200, r.text
    assert get(http, d, base) == {"a b": {"ünï": "v"}}
    # the same keys, sent unencoded by requests' own quoting (as firebase-admin does)
    assert http.get(d.url(f"{base}/a b/ünï")).json() == "v"


def test_non_ascii_and_emoji_keys_and_values(http, d, base):
    value = {"ключ": "значение", "emoji😀": "café 😀 𝄞", "日本": {"語": "テスト"}, "mixed": "a\u00e9\u4e2d\U0001f600"}
    # ensure_ascii (surrogate pairs on the wire, as firebase-admin sends) ...
    r = http.put(d.url(base + "/ascii"), data=json.dumps(value), headers={"Content-Type": "application/json"})
    assert r.status_code == 200 and r.json() == value
    # ... and raw UTF-8
    r = http.put(d.url(base + "/utf8"), data=json.dumps(value, ensure_ascii=False).encode("utf-8"))
    assert r.status_code == 200 and r.json() == value
    r = http.get(d.url(base))
    assert r.content.decode("utf-8")  # the answer is valid UTF-8
    assert r.json() == {"ascii": value, "utf8": value}
    assert http.get(d.url(f"{base}/ascii/emoji😀")).json() == "café 😀 𝄞"
    assert http.get(d.url(f"{base}/utf8/日本/語")).json() == "テスト"


def test_escaped_characters_in_strings_round_trip(http, d, base):
    value = 'quote " backslash \\ slash / tab \t nl \n cr \r nul \u0000 bell \u0007 del \u007f'
    assert put(http, d, base, value) == value
    assert get(http, d, base) == value


def test_doubled_slashes_are_ignored(http, d, base):
    put(http, d, base + "/a/b", 1)
    assert http.get(d.base_url + f"//{base}//a///b.json").json() == 1


# -- print, shallow, unknown parameters ----------------------------------------------------


def test_print_pretty(http, d, base):
    value = {"a": {"b": [1, 2]}, "c": "d"}
    r = http.put(d.url(base, print="pretty"), data=json.dumps(value))
    assert r.status_code == 200
    assert "\n" in r.text and "  " in r.text
    assert r.json() == value
    r = http.get(d.url(base, print="pretty"))
    # Firebase's layout (Jackson's pretty printer): two spaces per object, `"key" : value`,
    # arrays on one line.
    assert r.text == '{\n  "a" : {\n    "b" : [ 1, 2 ]\n  },\n  "c" : "d"\n}', r.text
    assert r.json() == value
    compact = http.get(d.url(base)).text
    assert compact == '{"a":{"b":[1,2]},"c":"d"}'


def test_format_export_never_renders_arrays(http, d, base):
    put(http, d, base, {"list": ["a", "b"], "sparse": {"0": "x", "2": "z"}, "n": 1})
    assert get(http, d, base + "/list") == ["a", "b"]
    assert get(http, d, base + "/list", format="export") == {"0": "a", "1": "b"}
    whole = {"list": {"0": "a", "1": "b"}, "sparse": {"0": "x", "2": "z"}, "n": 1}
    assert get(http, d, base, format="export") == whole
    assert get(http, d, base, format="export", print="pretty") == whole
    r = http.get(d.url(base + "/list", format="export") + '&orderBy="$key"&limitToFirst=1')
    assert (r.status_code, r.json()) == (200, {"0": "a"}), r.text


def test_download_names_the_file(http, d, base):
    put(http, d, base, {"a": 1})
    r = http.get(d.url(base, download="backup.json"))
    assert r.status_code == 200 and r.json() == {"a": 1}
    assert r.headers["Content-Disposition"] == 'attachment; filename="backup.json"'
    assert "Content-Disposition" not in http.get(d.url(base)).headers
    # A write ignores it; a name that cannot be quoted as it is is refused, naming it.
    assert "Content-Disposition" not in http.put(d.url(base + "/b", download="x.json"), data="2").headers
    r = http.get(d.url(base, download='a"b'))
    assert r.status_code == 400 and 'download=a"b' in r.json()["error"]


def test_print_silent(http, d, base):
    for method, path, body in [
        ("PUT", base + "/a", '{"x": 1}'),
        ("PATCH", base + "/a", '{"y": 2}'),
        ("POST", base + "/list", '"p"'),
        ("DELETE", base + "/a/x", None),
    ]:
        r = http.request(method, d.url(path, print="silent"), data=body)
        assert r.status_code == 204, (method, r.text)
        assert r.content == b""
    got = get(http, d, base)
    assert got["a"] == {"y": 2}
    assert list(got["list"].values()) == ["p"]
    r = http.get(d.url(base, print="silent"))
    assert r.status_code == 204 and r.content == b""


def test_shallow(http, d, base):
    put(http, d, base, {"a": {"deep": {"er": 1}}, "b": "leaf", "c": 3})
    assert get(http, d, base, shallow="true") == {"a": True, "b": True, "c": True}
    assert get(http, d, base + "/b", shallow="true") == "leaf"
    assert get(http, d, base + "/c", shallow="true") == 3
    assert get(http, d, base + "/absent", shallow="true") is None
    assert get(http, d, base, shallow="false") == {"a": {"deep": {"er": 1}}, "b": "leaf", "c": 3}


def test_shallow_refuses_etags(http, d, base):
    # An ETag of the shallow form could never match the data in a later if-match.
    put(http, d, base, {"a": 1})
    for headers in ({"X-Firebase-ETag": "true"}, {"if-none-match": "null_etag"}):
        r = http.get(d.url(base, shallow="true"), headers=headers)
        assert r.status_code == 400
        assert "shallow" in r.json()["error"]


def test_callback_wraps_the_answer_in_jsonp(http, d, base):
    """Firebase's `callback=` (JSONP): GET answers `fn(<json>);` as JavaScript, for plain reads,
    queries, pretty output and answers large enough to be streamed."""
    put(http, d, base, {"a": {"s": 2}, "b": {"s": 1}})
    r = http.get(d.url(base, callback="gotData"))
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/javascript")
    assert r.text.startswith("gotData(") and r.text.endswith(");")
    assert json.loads(r.text[len("gotData("):-2]) == {"a": {"s": 2}, "b": {"s": 1}}
    r = http.get(d.url(base, callback="app.handlers.$got_1", orderBy='"$key"', limitToFirst="1"))
    assert r.status_code == 200 and json.loads(r.text[len("app.handlers.$got_1("):-2]) == {"a": {"s": 2}}
    r = http.get(d.url(base + "/a", callback="cb", print="pretty"))
    assert json.loads(r.text[3:-2]) == {"s": 2}
    big = {f"k{i}": "x" * 1000 for i in range(3000)}  # about 3 MB: sent in chunks
    put(http, d, base + "/big", big)
    r = http.get(d.url(base + "/big", callback="cb"))
    assert r.status_code == 200 and r.text.startswith("cb(") and r.text.endswith(");")
    assert json.loads(r.text[3:-2]) == big


def test_callback_names_are_checked(http, d, base):
    # Only a function name: the answer must never carry a script of the caller's choosing.
    for name in ("alert(1)", "1abc", "a..b", "a.", "", "x" * 257, "cb;evil", "é"):
        r = http.get(d.url(base, callback=name))
        assert r.status_code == 400, name
        assert "callback=" in r.json()["error"]
    r = http.put(d.url(base, callback="cb"), data="1")
    assert r.status_code == 400 and "only allowed on GET" in r.json()["error"]
    assert get(http, d, base) is None  # nothing of the refused write applied
    r = http.get(d.url(base, callback="cb"), headers={"Accept": "text/event-stream"}, stream=True)
    assert r.status_code == 400 and "cannot be streamed" in r.json()["error"]


def test_timeout_limits_a_read(http, d, base):
    """`timeout=<n>ms|s|min`, at most 15 min: a read that takes longer is answered 400; a bad
    value is a 400 naming it; writes accept it and are not limited by it."""
    big = {f"k{i}": "x" * 1000 for i in range(3000)}
    put(http, d, base, big)
    assert get(http, d, base, timeout="10s") == big
    assert get(http, d, base, timeout="15min") == big
    r = http.get(d.url(base, timeout="1ms"))
    assert r.status_code == 400 and "longer than timeout=" in r.json()["error"]
    for bad in ("16min", "0ms", "3h", "1.5s", "s", "-1s", "99999999999ms"):
        r = http.get(d.url(base, timeout=bad))
        assert r.status_code == 400, bad
        assert f"timeout={bad}" in r.json()["error"], r.text
    r = http.put(d.url(base + "/w", timeout="3s"), data="1")
    assert r.status_code == 200
    r = http.put(d.url(base + "/w", timeout="3x"), data="2")
    assert r.status_code == 400
    assert get(http, d, base + "/w") == 1


def test_write_size_limit_is_checked(http, d, base):
    for limit in ("tiny", "small", "medium", "large", "unlimited"):
        r = http.put(d.url(base + "/" + limit, writeSizeLimit=limit), data="1")
        assert r.status_code == 200, (limit, r.text)
    r = http.put(d.url(base + "/huge", writeSizeLimit="huge"), data="1")
    assert r.status_code == 400 and "writeSizeLimit=huge" in r.json()["error"]
    assert get(http, d, base + "/huge") is None


def test_unknown_parameters_are_ignored(http, d, base):
    r = http.put(d.url(base, auth="token", access_token="x", whatever="1"), data="1")
    assert r.status_code == 200
    assert get(http, d, base, auth="token") == 1
    assert get(http, d, base, format="export") == 1


def test_child_order_needs_an_index(http, d, base):
    # orderBy="$key" works (test_queries.py); child orders need an .indexOn rule, which does not exist yet.
    put(http, d, base, {"ada": {"age": 36}, "bob": {"age": 20}})
    r = http.get(d.url(base) + '?orderBy="age"')
    assert r.status_code == 400
    assert r.json()["error"] == f'Index not defined, add ".indexOn": "age", for path "/{base}", to the rules'


# -- ETags ---------------------------------------------------------------------------------


def test_etag_on_request(http, d, base):
    put(http, d, base, {"a": 1})
    r = http.get(d.url(base), headers={"X-Firebase-ETag": "true"})
    assert r.status_code == 200 and r.json() == {"a": 1}
    etag = r.headers["ETag"]
    assert etag and etag != "null_etag"
    assert "ETag" not in http.get(d.url(base)).headers
    assert http.get(d.url(base), headers={"X-Firebase-ETag": "true"}).headers["ETag"] == etag  # stable
    put(http, d, base, {"a": 2})
    assert http.get(d.url(base), headers={"X-Firebase-ETag": "true"}).headers["ETag"] != etag
    put(http, d, base, {"a": 1})
    assert http.get(d.url(base), headers={"X-Firebase-ETag": "true"}).headers["ETag"] == etag  # content-based


def test_etag_of_absent_data(http, d, base):
    r = http.get(d.url(base + "/none"), headers={"X-Firebase-ETag": "true"})
    assert r.status_code == 200 and r.json() is None
    assert r.headers["ETag"] == "null_etag"


def test_if_none_match(http, d, base):
    put(http, d, base, {"v": 1})
    etag = http.get(d.url(base), headers={"X-Firebase-ETag": "true"}).headers["ETag"]
    r = http.get(d.url(base), headers={"if-none-match": etag})
    assert r.status_code == 304
    assert r.content == b""
    r = http.get(d.url(base), headers={"if-none-match": "stale"})
    assert r.status_code == 200 and r.json() == {"v": 1}
    assert r.headers["ETag"] == etag
    put(http, d, base, {"v": 2})
    r = http.get(d.url(base), headers={"if-none-match": etag})
    assert r.status_code == 200 and r.json() == {"v": 2}
    assert r.headers["ETag"] != etag
    r = http.get(d.url(base + "/absent"), headers={"if-none-match": "null_etag"})
    assert r.status_code == 304


def test_if_match_put(http, d, base):
    put(http, d, base, {"v": 1})
    etag = http.get(d.url(base), headers={"X-Firebase-ETag": "true"}).headers["ETag"]
    r = http.put(d.url(base), data='{"v": 2}', headers={"if-match": etag})
    assert r.status_code == 200 and r.json() == {"v": 2}
    new_etag = r.headers["ETag"]
    assert new_etag == http.get(d.url(base), headers={"X-Firebase-ETag": "true"}).headers["ETag"]
    # stale: 412, current value and ETag, nothing written
    r = http.put(d.url(base), data='{"v": 3}', headers={"if-match": etag})
    assert r.status_code == 412
    assert r.json() == {"v": 2}
    assert r.headers["ETag"] == new_etag
    assert get(http, d, base) == {"v": 2}
    # print=silent does not hide the 412 body
    r = http.put(d.url(base, print="silent"), data='{"v": 3}', headers={"if-match": etag})
    assert r.status_code == 412 and r.json() == {"v": 2}


def test_if_match_on_patch_or_post_is_refused_not_ignored(http, d, base):
    """Conditional requests are PUT and DELETE: a PATCH or POST with if-match would otherwise be
    applied whatever the ETag, losing the update it meant to guard."""
    put(http, d, base, {"v": 1})
    etag = http.get(d.url(base), headers={"X-Firebase-ETag": "true"}).headers["ETag"]
    for method, body in (("PATCH", '{"v": 2}'), ("POST", "3")):
        for tag in (etag, "stale"):
            r = http.request(method, d.url(base), data=body, headers={"if-match": tag})
            assert r.status_code == 400, (method, r.text)
            assert "if-match is supported on PUT and DELETE only" in r.json()["error"], r.text
    assert get(http, d, base) == {"v": 1}, "nothing of the refused writes applied"


def test_writes_answer_an_etag_when_asked(http, d, base):
    """Firebase's REST reference: an ETag can be requested "with any method other than PATCH";
    PUT answers the ETag of the put data, POST of the posted data, DELETE of null."""
    r = http.put(d.url(base + "/p"), data='{"a": 1}', headers={"X-Firebase-ETag": "true"})
    assert r.status_code == 200
    assert r.headers["ETag"] == http.get(d.url(base + "/p"), headers={"X-Firebase-ETag": "true"}).headers["ETag"]
    r = http.post(d.url(base + "/list"), data='{"b": 2}', headers={"X-Firebase-ETag": "true"})
    assert r.status_code == 200
    pushed = r.json()["name"]
    assert r.headers["ETag"] == http.get(d.url(base + "/list/" + pushed), headers={"X-Firebase-ETag": "true"}).headers["ETag"]
    r = http.delete(d.url(base + "/p"), headers={"X-Firebase-ETag": "true"})
    assert r.status_code == 200 and r.headers["ETag"] == "null_etag"
    assert "ETag" not in http.put(d.url(base + "/q"), data="1").headers, "only when asked"
    # PATCH: refused, nothing applied
    r = http.patch(d.url(base + "/q"), data='{"x": 1}', headers={"X-Firebase-ETag": "true"})
    assert r.status_code == 400 and "X-Firebase-ETag is not supported on PATCH" in r.json()["error"], r.text
    assert get(http, d, base + "/q") == 1


def test_if_match_on_get_is_refused(http, d, base):
    """Firebase's REST reference answers a GET with if-match 400 "not supported"."""
    put(http, d, base, {"v": 1})
    etag = http.get(d.url(base), headers={"X-Firebase-ETag": "true"}).headers["ETag"]
    for tag in (etag, "stale"):
        r = http.get(d.url(base), headers={"if-match": tag})
        assert r.status_code == 400 and "if-match is not supported on GET" in r.json()["error"], r.text


def test_the_priority_virtual_child_reads_and_writes_a_locations_priority(http, d, base):
    """Firebase's <path>/.priority.json: GET reads the location's priority (null when none or
    when nothing is there), PUT sets it and DELETE removes it; an empty location keeps none."""
    put(http, d, base, {"a": 1})
    for path in (base + "/.priority", base + "/a/.priority", base + "/absent/.priority"):
        r = http.get(d.url(path))
        assert r.status_code == 200 and r.text == "null", (path, r.text)
    r = http.put(d.url(base + "/a/.priority"), data="1")
    assert r.status_code == 200 and r.json() == 1, r.text
    assert http.get(d.url(base + "/a/.priority")).json() == 1
    r = http.patch(d.url(base), data='{"a/.priority": "x"}')
    assert r.status_code == 200, r.text
    assert http.get(d.url(base + "/a/.priority")).json() == "x"
    assert get(http, d, base) == {"a": 1}, "the data reads without its priority"
    assert http.get(d.url(base), params={"format": "export"}).json() == {"a": {".value": 1, ".priority": "x"}}
    r = http.delete(d.url(base + "/a/.priority"))
    assert r.status_code == 200, r.text
    assert http.get(d.url(base + "/a/.priority")).text == "null"
    assert http.put(d.url(base + "/absent/.priority"), data="2").status_code == 200
    assert http.get(d.url(base + "/absent/.priority")).text == "null"
    assert get(http, d, base + "/absent") is None, "a priority alone makes no value"
    r = http.put(d.url(base + "/a/.priority"), data='{"b": 1}')
    assert r.status_code == 400 and "priority of " in r.json()["error"] and base + "/a must be" in r.json()["error"], r.text
    r = http.post(d.url(base + "/a/.priority"), data="1")
    assert r.status_code == 400 and ".priority" in r.json()["error"], r.text


def test_an_unquoted_orderBy_gets_firebases_message(http, d, base):
    r = http.get(d.url(base), params={"orderBy": "age", "equalTo": "1"})
    assert r.status_code == 400
    assert r.json()["error"].startswith("orderBy must be a valid JSON encoded path"), r.text
    assert "orderBy=age is not JSON" in r.json()["error"], "and says what was wrong"


def test_etag_of_a_conditional_write_is_the_etag_of_what_was_stored(http, d, base):
    body = '{"a": 1, "b": null, "c": {}, "t": {".sv": "timestamp"}, "arr": ["x", null, "z"]}'
    r = http.put(d.url(base), data=body, headers={"if-match": "null_etag"})
    assert r.status_code == 200
    stored = http.get(d.url(base), headers={"X-Firebase-ETag": "true"})
    assert r.json() == stored.json()
    assert set(stored.json()) == {"a", "t", "arr"}
    assert r.headers["ETag"] == stored.headers["ETag"]
    # so it can be chained straight into the next conditional write
    r = http.put(d.url(base), data='{"a": 2}', headers={"if-match": r.headers["ETag"]})
    assert r.status_code == 200


def test_etags_cover_priorities(http, d, base):
    """An ETag is of the location's export form, as Firebase's hash covers priorities: a PUT's
    ETag is the one a GET then answers, for priorities at any depth; a change of priority
    alone changes it; a 412 answers the current value in the form the request reads."""
    shapes = [
        {"x": 1, ".priority": 5},
        {".value": "leaf", ".priority": "p"},
        {"a": {".value": 1, ".priority": 2.5}, "b": {"c": True, ".priority": "z"}},
        {"l": ["x", {".value": "y", ".priority": 1}]},
        {"t": 1, ".priority": {".sv": "timestamp"}},
        {"plain": {"no": "priority"}},
    ]
    for shape in shapes:
        r = http.put(d.url(base), data=json.dumps(shape), headers={"X-Firebase-ETag": "true"})
        assert r.status_code == 200, r.text
        got = http.get(d.url(base), headers={"X-Firebase-ETag": "true"})
        assert r.headers["ETag"] == got.headers["ETag"], (shape, got.text)
        exported = http.get(d.url(base, format="export"), headers={"X-Firebase-ETag": "true"})
        assert exported.headers["ETag"] == got.headers["ETag"], shape
    put(http, d, base, {"x": 1, ".priority": 5})
    etag = http.get(d.url(base), headers={"X-Firebase-ETag": "true"}).headers["ETag"]
    assert http.get(d.url(base), headers={"if-none-match": etag}).status_code == 304
    r = http.put(d.url(base + "/.priority"), data="7")
    assert r.status_code == 200, r.text
    r = http.get(d.url(base), headers={"if-none-match": etag})
    assert r.status_code == 200 and r.json() == {"x": 1} and r.headers["ETag"] != etag
    now = r.headers["ETag"]
    r = http.put(d.url(base), data='{"x": 2}', headers={"if-match": etag})
    assert r.status_code == 412 and r.json() == {"x": 1} and r.headers["ETag"] == now, r.text
    r = http.put(d.url(base, format="export"), data='{"x": 2}', headers={"if-match": etag})
    assert r.status_code == 412 and r.json() == {"x": 1, ".priority": 7}, r.text
    assert http.get(d.url(base, format="export")).json() == {"x": 1, ".priority": 7}, "nothing applied"
    # a priority below the location counts as well
    put(http, d, base, {"a": {"b": 1}})
    etag = http.get(d.url(base), headers={"X-Firebase-ETag": "true"}).headers["ETag"]
    assert http.put(d.url(base + "/a/.priority"), data='"p"').status_code == 200
    r = http.delete(d.url(base), headers={"if-match": etag})
    assert r.status_code == 412 and r.json() == {"a": {"b": 1}}, r.text
    assert get(http, d, base) == {"a": {"b": 1}}


def test_if_match_null_etag(http, d, base):
    r = http.put(d.url(base + "/new"), data='"x"', headers={"if-match": "null_etag"})
    assert r.status_code == 200 and r.json() == "x"
    r = http.put(d.url(base + "/new"), data='"y"', headers={"if-match": "null_etag"})
    assert r.status_code == 412 and r.json() == "x"
    assert r.headers["ETag"] != "null_etag"
    assert get(http, d, base + "/new") == "x"


def test_if_match_delete(http, d, base):
    put(http, d, base, {"v": 1})
    etag = http.get(d.url(base), headers={"X-Firebase-ETag": "true"}).headers["ETag"]
    r = http.delete(d.url(base), headers={"if-match": "wrong"})
    assert r.status_code == 412
    assert r.json() == {"v": 1} and r.headers["ETag"] == etag
    assert get(http, d, base) == {"v": 1}
    r = http.delete(d.url(base), headers={"if-match": etag})
    assert r.status_code == 200 and r.text == "null"
    assert r.headers.get("ETag") == "null_etag"
    assert get(http, d, base) is None
    r = http.delete(d.url(base), headers={"if-match": etag})
    assert r.status_code == 412 and r.json() is None and r.headers["ETag"] == "null_etag"


# -- namespaces ----------------------------------------------------------------------------


def test_namespaces_are_separate_databases(http, d, base):
    assert http.put(d.url(base, ns="alpha"), data='"in alpha"').status_code == 200
    assert http.put(d.url(base, ns="beta_2-x"), data='"in beta"').status_code == 200
    assert get(http, d, base, ns="alpha") == "in alpha"
    assert get(http, d, base, ns="beta_2-x") == "in beta"
    assert get(http, d, base) is None
    assert get(http, d, base, ns="default") is None
    assert get(http, d, base, ns="other") is None
    put(http, d, base, "in default")
    assert get(http, d, base, ns="default") == "in default"
    assert get(http, d, base, ns="alpha") == "in alpha"


# -- errors and special routes -------------------------------------------------------------


def test_path_without_json_suffix_is_404(http, d, base):
    for method in ("GET", "PUT", "DELETE"):
        r = http.request(method, d.base_url + f"/{base}", data="1")
        assert r.status_code == 404, method
        assert "error" in r.json()
    r = http.get(d.base_url + "/")
    assert r.status_code == 404
    assert get(http, d, base) is None


@pytest.mark.parametrize("method", ["OPTIONS", "PROPFIND", "TRACE", "MKCOL"])
def test_other_methods_are_405(http, d, base, method):
    r = http.request(method, d.url(base))
    assert r.status_code == 405
    assert set(x.strip() for x in r.headers["Allow"].split(",")) == {"GET", "PUT", "POST", "PATCH", "DELETE"}
    assert method in r.json()["error"]


def test_info(http, d):
    assert get(http, d, "/.info/connected") is True
    assert get(http, d, "/.info/serverTimeOffset") == 0
    for method in ("PUT", "PATCH", "POST", "DELETE"):
        r = http.request(method, d.url("/.info/connected"), data="false")
        assert r.status_code == 400, method
        assert "/.info/" in r.json()["error"]
    assert get(http, d, "/.info/connected") is True


def test_error_body_shape(http, d, base):
    r = http.put(d.url(base + "/a.b"), data="1")
    assert r.status_code == 400
    assert r.headers["Content-Type"].startswith("application/json")
    body = r.json()
    assert list(body) == ["error"] and isinstance(body["error"], str) and body["error"]


# -- persistence and the CLI ---------------------------------------------------------------


def test_data_survives_restart_and_cli_reads_it(daemon):
    with requests.Session() as s:
        assert s.put(daemon.url("/keep"), data='{"a": [1, 2], "b": "é😀"}').status_code == 200
        name = s.post(daemon.url("/list"), data='{"x": 1}').json()["name"]
        assert s.patch(daemon.url("/keep"), data='{"c/d": true}').status_code == 200
        assert s.delete(daemon.url("/keep/b")).status_code == 200
        assert s.put(daemon.url("/other", ns="second"), data="2").status_code == 200
    expected = {"keep": {"a": [1, 2], "c": {"d": True}}, "list": {name: {"x": 1}}}
    daemon.stop()
    out = run_eddy("get", "/", "--data", daemon.data_dir).stdout.decode()
    assert json.loads(out) == expected
    assert json.loads(run_eddy("get", "/keep/a/1", "--data", daemon.data_dir).stdout) == 2
    assert json.loads(run_eddy("get", "/other", "--data", daemon.data_dir, "--ns", "second").stdout) == 2
    entries = eddy_log(daemon.data_dir)
    assert [(e["kind"], e["path"]) for e in entries] == [
        ("set", "/keep"),
        ("push", "/list"),
        ("update", "/keep"),
        ("remove", "/keep/b"),
    ]
    assert entries[1]["changes"] == {f"/list/{name}": {"x": 1}}
    assert entries[2]["changes"] == {"/keep/c/d": True}
    assert entries[3]["before"] == {"/keep/b": "é😀"}
    ids = [e["id"] for e in entries]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert run_eddy("verify", "--data", daemon.data_dir).returncode == 0
    assert run_eddy("verify", "--data", daemon.data_dir, "--ns", "second").returncode == 0
    daemon.start()
    with requests.Session() as s:
        assert s.get(daemon.url("/")).json() == expected
        assert s.get(daemon.url("/other", ns="second")).json() == 2


def test_offline_cli_commands_refuse_while_daemon_runs(daemon):
    requests.put(daemon.url("/x"), data="1")
    # Maintenance commands and --offline open the directory themselves: refused, saying why.
    for args in (["verify"], ["get", "/", "--offline"]):
        r = run_eddy(*args, "--data", daemon.data_dir, check=False)
        assert r.returncode != 0
        assert b"in use" in r.stderr and b"eddyd running" in r.stderr
    # Data commands go through the running daemon instead.
    assert run_eddy("get", "/", "--data", daemon.data_dir).stdout.strip() == b'{"x":1}'
