"""`/.settings/rules.json` on a real eddyd: the default document, replacing it (as the Firebase
emulator answers), refusals that name the rules path, namespaces, persistence across a restart,
`eddy rules get|set`, and firebase-admin's private rules client (FIREBASE_REFERENCE §9.4)."""

import json

import pytest
import requests

from conftest import firebase_app, run_eddy

OWNER = {"Authorization": "Bearer owner"}
DOC = {"rules": {".read": "auth != null", "users": {"$uid": {".indexOn": ["age", "metrics/views"]}}}}


def rules_url(d, **params):
    url = d.base_url + "/.settings/rules.json"
    if params:
        url += "?" + "&".join(f"{k}={v}" for k, v in params.items())
    return url


def test_default_rules_allow_everything(daemon):
    r = requests.get(rules_url(daemon, format="strict"), headers=OWNER)
    assert r.status_code == 200
    assert r.json() == {"rules": {".read": True, ".write": True}}


def test_put_replaces_rules_per_namespace_and_survives_a_restart(daemon):
    r = requests.put(rules_url(daemon, ns="proj-a"), headers=OWNER, data=json.dumps(DOC))
    assert r.status_code == 200 and r.json() == {"status": "ok"}
    assert requests.get(rules_url(daemon, ns="proj-a")).json() == DOC
    assert requests.get(rules_url(daemon, ns="proj-b")).json() == {"rules": {".read": True, ".write": True}}
    # A PUT replaces the whole document.
    replacement = {"rules": {"scores": {".indexOn": ".value"}}}
    assert requests.put(rules_url(daemon, ns="proj-a"), data=json.dumps(replacement)).status_code == 200
    daemon.restart()
    assert requests.get(rules_url(daemon, ns="proj-a")).json() == replacement


@pytest.mark.parametrize("document, fragment", [
    ({"rules": 1}, 'one member "rules"'),
    ({"rules": {".foo": {}}}, "unknown rule .foo"),
    ({"rules": {"a": {".indexOn": 3}}}, "rules at /a: .indexOn must be a string or an array"),
    ({"rules": {"a": {"b": {".indexOn": "x.y"}}}}, "rules at /a/b"),
    ({"rules": {"a": {".write": 2}}}, ".write must be a boolean"),
])
def test_bad_rules_are_refused_and_nothing_changes(daemon, document, fragment):
    before = requests.get(rules_url(daemon)).json()
    r = requests.put(rules_url(daemon), data=json.dumps(document))
    assert r.status_code == 400
    assert fragment in r.json()["error"]
    assert requests.get(rules_url(daemon)).json() == before


def test_rules_nested_too_deep_are_refused_and_the_daemon_stays_up(daemon):
    """An expression nested deeper than 128 levels is refused by name (it used to exhaust the
    stack and end the daemon); thousands of || alternatives are fine."""
    before = requests.get(rules_url(daemon)).json()
    deep = [
        "(" * 800 + "true" + ")" * 800,
        "!" * 2000 + "true",
        " + ".join(["1"] * 3000) + " > 0",
        "data" + ".parent()" * 1000 + ".exists()",
    ]
    for expression in deep:
        r = requests.put(rules_url(daemon), data=json.dumps({"rules": {"a": {".read": expression}}}))
        assert r.status_code == 400, r.text
        assert "nests deeper than 128 levels" in r.json()["error"] and "rules at /a" in r.json()["error"], r.text[:300]
        assert requests.get(rules_url(daemon)).json() == before
    many = " || ".join(f"auth.uid === 'u{i}'" for i in range(3000))
    r = requests.put(rules_url(daemon, ns="deep-ok"), data=json.dumps({"rules": {".read": many, ".write": True}}))
    assert r.status_code == 200, r.text[:300]
    assert requests.put(daemon.url("/x", ns="deep-ok"), data="1").status_code == 200
    assert requests.get(daemon.url("/x", ns="deep-ok")).status_code == 401, "no credential: denied"


def test_matches_answers_in_linear_time_and_refuses_backtracking_features(daemon):
    """`matches()` runs without backtracking: /^(a+)+$/ against a long run of a's and a b (which
    held the namespace's committer for minutes) is answered at once, and writes to the rest of
    the namespace go on; lookaround and backreferences are refused when the rules are set."""
    doc = {"rules": {".read": True, "r": {".write": "!data.exists() && newData.val().matches(/^(a+)+$/)"},
                     "other": {".write": True}}}
    assert requests.put(rules_url(daemon, ns="regex"), data=json.dumps(doc)).status_code == 200
    r = requests.put(daemon.url("/r", ns="regex"), data=json.dumps("a" * 5000 + "b"), timeout=60)
    assert r.status_code == 401, r.text
    r = requests.put(daemon.url("/r", ns="regex"), data=json.dumps("a" * 5000), timeout=60)
    assert r.status_code == 200, r.text
    assert requests.put(daemon.url("/other", ns="regex"), data="1", timeout=60).status_code == 200
    for pattern, reason in (("^(?=a)", "lookaround"), ("(a)\\1", "backreferences"), ("a**", "nothing to repeat")):
        bad = {"rules": {"r": {".validate": "newData.val().matches(/" + pattern + "/)"}}}
        r = requests.put(rules_url(daemon, ns="regex"), data=json.dumps(bad))
        assert r.status_code == 400 and reason in r.json()["error"] and "invalid regular expression" in r.json()["error"], r.text
    assert requests.get(rules_url(daemon, ns="regex")).json() == doc


def test_rules_string_operations_are_bounded_and_large_documents_refused(daemon):
    """A needle of 10,000 bytes in a 1 MB value is searched in linear time (a naive search held
    the shared threads for minutes), chained replace() is refused past 10 MiB (it made gigabytes
    and ended the daemon), and a rules document over Firebase's 256 KB is refused unparsed."""
    doc = {"rules": {".read": True, ".write": True,
                     "c": {".validate": "newData.child('s').val().contains(newData.child('n').val())"},
                     "r": {".validate": "newData.val().replace('a', '" + "a" * 1000 + "').replace('a', '" + "a" * 1000 + "').length < 5"}}}
    assert requests.put(rules_url(daemon, ns="strcost"), data=json.dumps(doc)).status_code == 200
    value = {"s": "a" * 1_000_000, "n": "a" * 10_000 + "b"}
    r = requests.put(daemon.url("/c", ns="strcost"), data=json.dumps(value), timeout=60)
    assert r.status_code == 401, r.text
    value["s"] += "b"
    assert requests.put(daemon.url("/c", ns="strcost"), data=json.dumps(value), timeout=60).status_code == 200
    r = requests.put(daemon.url("/r", ns="strcost"), data=json.dumps("a" * 100_000), timeout=60)
    assert r.status_code == 401, r.text
    assert requests.get(daemon.url("/r", ns="strcost")).json() is None
    assert requests.put(daemon.url("/other", ns="strcost"), data="1", timeout=60).status_code == 200
    # 256 KiB of rules source at most, comments included.
    before = requests.get(rules_url(daemon, ns="strcost")).json()
    big = {"rules": {".read": True, **{f"k{i:06}": {".write": True} for i in range(20_000)}}}
    body = json.dumps(big)
    assert len(body) > 256 * 1024
    r = requests.put(rules_url(daemon, ns="strcost"), data=body)
    assert r.status_code == 400 and "rulesDocumentBytesMax is 262144" in r.json()["error"], r.text[:300]
    assert requests.get(rules_url(daemon, ns="strcost")).json() == before
    fits = {"rules": {".read": True, **{f"k{i:06}": {".write": True} for i in range(8_000)}}}
    assert len(json.dumps(fits)) < 256 * 1024
    assert requests.put(rules_url(daemon, ns="strcost"), data=json.dumps(fits)).status_code == 200


# Firebase's rules documents carry comments (the documentation's examples, the CLI's
# database.rules.json); they are blanked in place, so errors keep their line and column.
COMMENTED = """{
  /* Firebase's example style */
  "rules": {
    "users": {
      "$uid": {
        // Only the owner reads and writes. "//" inside a string stays: "a//b"
        ".read": "auth != null && auth.uid === $uid",
        ".write": "auth != null && auth.uid === $uid", /* trailing */
        ".indexOn": ["a//b"]
      }
    }
  }
}"""


def test_rules_with_comments_are_accepted(daemon, tmp_path):
    r = requests.put(rules_url(daemon, ns="commented"), headers=OWNER, data=COMMENTED)
    assert (r.status_code, r.json()) == (200, {"status": "ok"}), r.text
    uid = {".read": "auth != null && auth.uid === $uid", ".write": "auth != null && auth.uid === $uid", ".indexOn": ["a//b"]}
    assert requests.get(rules_url(daemon, ns="commented"), headers=OWNER).json() == {"rules": {"users": {"$uid": uid}}}
    # An error after a comment still names its line and column in the text as sent.
    bad = '{\n  // a comment\n  "rules": {"a": }\n}'
    r = requests.put(rules_url(daemon, ns="commented"), headers=OWNER, data=bad)
    assert r.status_code == 400 and "line 3" in r.json()["error"], r.text
    unterminated = '{"rules": {}} /* never closed'
    assert requests.put(rules_url(daemon, ns="commented"), headers=OWNER, data=unterminated).status_code == 400
    assert requests.get(rules_url(daemon, ns="commented"), headers=OWNER).json() == {"rules": {"users": {"$uid": uid}}}
    path = tmp_path / "database.rules.json"
    path.write_text(COMMENTED)
    daemon.stop()
    out = run_eddy("rules", "set", str(path), "--data", str(daemon.data_dir)).stdout.decode()
    assert "1 .indexOn" in out
    daemon.start()


def test_rules_methods_and_declared_index_queries(daemon):
    """A declared index answers its queries; an undeclared one gets Firebase's 400."""
    assert requests.delete(rules_url(daemon)).status_code == 405
    assert requests.post(rules_url(daemon), data="{}").status_code == 405
    requests.put(daemon.url("/users"), data=json.dumps({"b": {"age": 2}, "a": {"age": 3}, "c": {"age": 1}}))
    requests.put(rules_url(daemon), data=json.dumps({"rules": {"users": {".indexOn": "age"}}}))
    # The rules grant no .read: the admin reads (an unauthenticated read is denied, as in Firebase).
    r = requests.get(daemon.url("/users") + '?orderBy="age"&limitToFirst=2', headers=OWNER)
    assert r.status_code == 200 and r.json() == {"c": {"age": 1}, "b": {"age": 2}}
    assert requests.get(daemon.url("/users") + '?orderBy="age"').status_code == 401
    r = requests.get(daemon.url("/users") + '?orderBy="name"', headers=OWNER)
    assert r.status_code == 400 and 'Index not defined, add ".indexOn": "name", for path "/users"' in r.json()["error"]


def test_cli_rules_get_and_set(daemon_factory, tmp_path):
    daemon = daemon_factory()
    requests.put(rules_url(daemon), data=json.dumps(DOC))
    daemon.stop()
    out = run_eddy("rules", "get", "--data", str(daemon.data_dir)).stdout.decode()
    assert json.loads(out) == DOC
    path = tmp_path / "rules.json"
    path.write_text(json.dumps({"rules": {"x": {".indexOn": "y"}}}))
    out = run_eddy("rules", "set", str(path), "--data", str(daemon.data_dir)).stdout.decode()
    assert "1 .indexOn" in out
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"rules": {".nope": {}}}))
    r = run_eddy("rules", "set", str(bad), "--data", str(daemon.data_dir), check=False)
    assert r.returncode == 1 and "unknown rule .nope" in r.stderr.decode()
    assert json.loads(run_eddy("rules", "get", "--data", str(daemon.data_dir)).stdout) == {"rules": {"x": {".indexOn": "y"}}}


def test_firebase_admin_private_rules_client(daemon):
    # What tooling built on firebase-admin does: its private client against /.settings/rules.json.
    from firebase_admin import db
    with firebase_app(daemon.port, "fake-project-id", "eddy-rules") as app:
        client = db.reference("/", app=app)._client
        # The client adds ns=fake-project-id itself; extra params are a query string.
        client.request("put", "/.settings/rules.json", json=DOC)
        got = client.body("get", "/.settings/rules.json", params="format=strict")
        assert got == DOC
    assert requests.get(rules_url(daemon, ns="fake-project-id")).json() == DOC


def test_query_order_by_key_alone_reaches_the_rules_on_streams_too(daemon):
    """`orderBy="$key"` with nothing else is still a query: the rules see `query.orderByKey`
    true on a GET and on an event stream alike, and a plain read sees it false. After a rules
    change each stream is checked again with the query it named, not with its shared window's."""
    from test_sse import SSEClient

    owner = {"Authorization": "Bearer owner"}
    rules = {"rules": {"p": {".read": "query.orderByKey == true"}, "other": {".read": True}}}
    assert requests.put(daemon.base_url + "/.settings/rules.json", headers=owner, data=json.dumps(rules)).status_code == 200
    assert requests.put(daemon.url("/p"), headers=owner, data=json.dumps({"a": 1, "b": 2})).status_code == 200
    assert requests.get(daemon.url("/p") + '?orderBy="$key"').json() == {"a": 1, "b": 2}
    assert requests.get(daemon.url("/p")).status_code == 401
    keyed = SSEClient(daemon, "/p", query='orderBy="$key"')
    assert keyed.response.status == 200
    event, _, data, _ = keyed.next()
    assert (event, data) == ("put", {"path": "/", "data": {"a": 1, "b": 2}}), (event, data)
    plain = SSEClient(daemon, "/p")
    assert plain.response.status == 401
    # A rules change that keeps the keyed read allowed keeps the keyed stream.
    rules["rules"]["other"] = {".read": False}
    assert requests.put(daemon.base_url + "/.settings/rules.json", headers=owner, data=json.dumps(rules)).status_code == 200
    assert requests.put(daemon.url("/p/c"), headers=owner, data="3").status_code == 200
    event, _, data, _ = keyed.next()
    assert (event, data) == ("put", {"path": "/c", "data": 3}), (event, data)
