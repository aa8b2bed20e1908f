"""firebase-admin (Python) against a real eddyd in emulator mode (FIREBASE_REFERENCE §9):
`FIREBASE_DATABASE_EMULATOR_HOST=127.0.0.1:PORT` and `databaseURL`
`https://fake-project-id.firebaseio.com` -> every request carries `ns=fake-project-id` and
`Authorization: Bearer owner`; no Google credentials are needed."""

import os
import re
import threading
import time
import uuid

import firebase_admin
import pytest

from conftest import firebase_app
import requests
from firebase_admin import db, exceptions

NS = "fake-project-id"
PUSH_ID = re.compile(r"^[-0-9A-Z_a-z]{20}$")


@pytest.fixture(scope="module")
def app(module_daemon):
    with firebase_app(module_daemon.port, NS, "eddy") as app:
        yield app


@pytest.fixture
def ref(app, request):
    name = "fa_" + re.sub(r"[^A-Za-z0-9_]", "_", request.node.name)[:50] + "_" + uuid.uuid4().hex[:6]
    return db.reference("/" + name, app=app)


def rest_get(daemon, path, ns=NS):
    r = requests.get(daemon.url(path, ns=ns))
    assert r.status_code == 200, r.text
    return r.json()


def test_writes_land_in_the_project_namespace(ref, module_daemon):
    ref.set({"where": "fake-project-id"})
    assert rest_get(module_daemon, ref.path) == {"where": "fake-project-id"}
    assert rest_get(module_daemon, ref.path, ns="default") is None


def test_set_and_get(ref):
    value = {
        "str": "s",
        "int": 42,
        "float": 2.5,
        "neg": -7,
        "bool": True,
        "false": False,
        "list": ["a", "b", {"c": 1}],
        "nested": {"a": {"b": {"c": "deep"}}},
    }
    ref.set(value)
    assert ref.get() == value
    assert ref.child("nested").child("a").get() == {"b": {"c": "deep"}}
    assert ref.child("nested/a/b/c").get() == "deep"
    assert ref.child("list").get() == ["a", "b", {"c": 1}]
    assert ref.child("missing").get() is None
    ref.child("int").set(43)
    assert ref.child("int").get() == 43
    for primitive in ("text", 0, 1.5, True, False, ["x"]):
        ref.child("prim").set(primitive)
        assert ref.child("prim").get() == primitive


def test_set_empty_dict_deletes(ref):
    ref.set({"a": 1, "b": 2})
    ref.child("a").set({})
    assert ref.get() == {"b": 2}


def test_push(ref):
    child = ref.push({"text": "hello", "n": 1})
    assert PUSH_ID.match(child.key), child.key
    assert child.get() == {"text": "hello", "n": 1}
    assert ref.get() == {child.key: {"text": "hello", "n": 1}}


def test_push_default_value_is_empty_string(ref):
    child = ref.push()
    assert PUSH_ID.match(child.key)
    assert child.get() == ""
    assert ref.get() == {child.key: ""}


def test_push_keys_are_ordered(ref):
    keys = [ref.push(i).key for i in range(20)]
    assert keys == sorted(keys)
    assert ref.get() == {k: i for i, k in enumerate(keys)}


def test_update_with_multi_segment_keys(ref):
    ref.set({"users": {"ada": {"name": "Ada", "since": 1}, "bob": {"name": "Bob"}}, "count": 2, "stale": True})
    ref.update({"users/ada/since": 2, "users/carol": {"name": "Carol"}, "count": 3, "stale": None, "users/bob/name": None})
    assert ref.get() == {"users": {"ada": {"name": "Ada", "since": 2}, "carol": {"name": "Carol"}}, "count": 3}
    ref.child("users").update({"ada": {"only": "this"}})
    assert ref.child("users/ada").get() == {"only": "this"}


def test_update_creates_missing_location(ref):
    ref.child("a/b").update({"c/d": 1, "e": "f"})
    assert ref.get() == {"a": {"b": {"c": {"d": 1}, "e": "f"}}}


def test_delete(ref):
    ref.set({"a": {"x": 1}, "b": 2})
    ref.child("a").delete()
    assert ref.get() == {"b": 2}
    ref.delete()
    assert ref.get() is None
    ref.child("never").delete()  # deleting absent data is fine


def test_get_shallow(ref):
    ref.set({"a": {"deep": {"er": 1}}, "b": "leaf", "c": 3})
    assert ref.get(shallow=True) == {"a": True, "b": True, "c": True}
    assert ref.child("b").get(shallow=True) == "leaf"
    assert ref.child("none").get(shallow=True) is None


def test_get_with_etag(ref):
    ref.set({"v": 1})
    data, etag = ref.get(etag=True)
    assert data == {"v": 1}
    assert isinstance(etag, str) and etag
    assert ref.get(etag=True) == (data, etag)
    ref.child("v").set(2)
    data2, etag2 = ref.get(etag=True)
    assert data2 == {"v": 2} and etag2 != etag
    missing, missing_etag = ref.child("missing").get(etag=True)
    assert missing is None and isinstance(missing_etag, str)


def test_get_if_changed(ref):
    ref.set({"v": 1})
    _, etag = ref.get(etag=True)
    assert ref.get_if_changed(etag) == (False, None, None)
    ref.update({"w": 2})
    changed, data, new_etag = ref.get_if_changed(etag)
    assert changed is True
    assert data == {"v": 1, "w": 2}
    assert isinstance(new_etag, str) and new_etag != etag
    assert ref.get_if_changed(new_etag) == (False, None, None)
    assert new_etag == ref.get(etag=True)[1]


def test_set_if_unchanged_success(ref):
    ref.set({"v": 1})
    _, etag = ref.get(etag=True)
    ok, value, new_etag = ref.set_if_unchanged(etag, {"v": 2})
    assert ok is True and value == {"v": 2}
    assert isinstance(new_etag, str) and new_etag != etag
    assert ref.get(etag=True) == ({"v": 2}, new_etag)


def test_set_if_unchanged_failure(ref):
    ref.set({"v": 1})
    _, etag = ref.get(etag=True)
    ref.set({"v": "changed by someone else"})
    current, current_etag = ref.get(etag=True)
    ok, value, etag_412 = ref.set_if_unchanged(etag, {"v": 2})
    assert ok is False
    assert value == current == {"v": "changed by someone else"}
    assert etag_412 == current_etag
    assert ref.get() == {"v": "changed by someone else"}
    # retrying with the ETag from the 412 succeeds
    ok, value, _ = ref.set_if_unchanged(etag_412, {"v": 3})
    assert ok is True and ref.get() == {"v": 3}


def test_a_change_of_priority_alone_makes_an_etag_stale(ref):
    """Firebase's hash of a location covers its priorities: set_if_unchanged after another
    client changed only a priority is refused, with the data as a plain GET reads it."""
    ref.set({"v": 1, ".priority": 5})
    data, etag = ref.get(etag=True)
    assert data == {"v": 1}
    ref.update({".priority": 7})
    assert ref.get() == {"v": 1}, "the data reads the same"
    _, now = ref.get(etag=True)
    assert now != etag
    ok, value, etag_412 = ref.set_if_unchanged(etag, {"v": 2})
    assert (ok, value, etag_412) == (False, {"v": 1}, now)
    assert ref.get() == {"v": 1}
    ok, value, _ = ref.set_if_unchanged(etag_412, {"v": 2})
    assert ok is True and ref.get() == {"v": 2}


def test_a_transaction_reruns_after_a_change_of_priority(ref, module_daemon):
    """The transaction's conditional write covers the priority too: a priority changed between
    its read and its write sends the block round again (on the same data)."""
    ref.set({"n": 1, ".priority": 1})
    seen = []

    def bump(current):
        seen.append(current)
        if len(seen) == 1:
            r = requests.patch(module_daemon.url(ref.path, ns=NS), json={".priority": 2})
            assert r.status_code == 200, r.text
        return {"n": current["n"] + 1}

    assert ref.transaction(bump) == {"n": 2}
    assert seen == [{"n": 1}, {"n": 1}], seen
    assert ref.get() == {"n": 2}


def test_set_if_unchanged_on_missing_location(ref):
    data, etag = ref.child("new").get(etag=True)
    assert data is None
    ok, _, _ = ref.child("new").set_if_unchanged(etag, "created")
    assert ok is True
    assert ref.child("new").get() == "created"
    ok, value, _ = ref.child("new").set_if_unchanged(etag, "again")
    assert ok is False and value == "created"


def test_transaction_single(ref):
    assert ref.child("counter").transaction(lambda v: (v or 0) + 1) == 1
    assert ref.child("counter").transaction(lambda v: (v or 0) + 1) == 2
    assert ref.transaction(lambda v: {**(v or {}), "other": "x"}) == {"counter": 2, "other": "x"}
    assert ref.get() == {"counter": 2, "other": "x"}


def test_transaction_aborted_by_exception_writes_nothing(ref):
    ref.set(5)

    def fail(_):
        raise RuntimeError("abort")

    with pytest.raises(RuntimeError):
        ref.transaction(fail)
    assert ref.get() == 5


def test_concurrent_transactions_all_land(ref):
    counter = ref.child("counter")
    threads_count, per_thread = 6, 10
    results = []
    lock = threading.Lock()
    errors = []

    def worker():
        try:
            done = 0
            while done < per_thread:
                try:
                    value = counter.transaction(lambda v: (v or 0) + 1)
                except db.TransactionAbortedError:
                    continue  # 25 lost races in a row: nothing was written; try again
                with lock:
                    results.append(value)
                done += 1
        except Exception as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(threads_count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    total = threads_count * per_thread
    assert counter.get() == total
    # every successful transaction saw a distinct predecessor: no lost or doubled update
    assert sorted(results) == list(range(1, total + 1))


def test_unicode_and_emoji_round_trip(ref, module_daemon):
    value = {
        "café": "naïve résumé",
        "emoji": "😀🎉👍🏽 family: 👨‍👩‍👧",
        "ключ": "значение",
        "日本語": "テスト",
        "math": "𝄞 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
        "rtl": "שלום عربى",
    }
    ref.set(value)
    assert ref.get() == value
    ref.child("😀").set("smile 😀")
    assert ref.child("😀").get() == "smile 😀"
    pushed = ref.push("pushed 🎉")
    assert pushed.get() == "pushed 🎉"
    ref.update({"ключ": "новое 🙂", "日本語/子": "子供"})
    got = ref.get()
    assert got["ключ"] == "новое 🙂" and got["日本語"] == {"子": "子供"}
    assert got["😀"] == "smile 😀"
    # the raw REST answer is UTF-8 and decodes to the same
    raw = requests.get(module_daemon.url(ref.path, ns=NS))
    assert raw.content.decode("utf-8")
    assert raw.json() == got


def test_server_errors_map_to_firebase_exceptions(ref):
    ref.set({"a": {"b": 1}})
    with pytest.raises(exceptions.InvalidArgumentError) as info:
        ref.update({"a": 1, "a/b": 2})
    assert "ancestor" in str(info.value) and "/a/b" in str(info.value)
    with pytest.raises(exceptions.InvalidArgumentError) as info:
        ref.set({"bad.key": 1})
    assert "bad.key" in str(info.value)
    with pytest.raises(exceptions.InvalidArgumentError) as info:
        ref.child("s").set("x" * (10 * 1024 * 1024 + 1))
    assert "10485760" in str(info.value)
    assert ref.get() == {"a": {"b": 1}}


def test_server_values_through_the_sdk(ref):
    before = int(time.time() * 1000)
    ref.set({"at": {".sv": "timestamp"}, "n": 1})
    ref.update({"n": {".sv": {"increment": 4}}})
    got = ref.get()
    assert got["n"] == 5
    assert isinstance(got["at"], int) and got["at"] >= before - 1000


def test_long_keys_under_long_paths(ref):
    # Firebase limits each key to 768 bytes and the depth to 32, not the whole path's length.
    keys = ["k" * 700, "é" * 384, "\U0001F600" * 192]  # 700, 768 and 768 bytes
    deep = ref.child("/".join(keys))
    deep.set({"v": 1})
    assert deep.get() == {"v": 1}
    ref.child(keys[0]).update({keys[1] + "/x" * 2: 2})
    assert ref.child(keys[0]).child(keys[1]).child("x/x").get() == 2
    with pytest.raises(exceptions.InvalidArgumentError, match="769 bytes; keyBytesMax is 768"):
        ref.child("k" * 769).set(1)
