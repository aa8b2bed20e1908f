"""Authentication and rules enforcement on a real eddyd with credentials configured: an admin
secret, HS256 tokens minted by `eddy token`, RS256 tokens checked against Firebase's x509 key map
(a key pair made here), all refusals (expired, wrong aud/iss, bad signature, alg none, tampered
claims) 401, rules enforced on REST reads, writes, multi-path updates, SSE streams and the native
socket, locked default rules, admin-only settings and namespaces, Host and CORS checks, and rules
errors with line and column."""

import base64
import datetime
import json
import time

import jwt
import pytest
import requests
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from conftest import run_eddy
from test_native import Native
from test_sse import SSEClient

PROJECT = "proj-auth"
ADMIN = "admin-secret-0123456789abcdef"
HS_SECRET = "hs256-secret-0123456789abcdef-0123456789"
ISS = f"https://securetoken.google.com/{PROJECT}"

RULES = {
    "rules": {
        "users": {
            "$uid": {
                ".read": "$uid === auth.uid",
                ".write": "$uid === auth.uid",
                "name": {".validate": "newData.isString() && newData.val().length < 20"},
            }
        },
        "public": {".read": True, ".write": "auth != null"},
        "admins_only": {".read": "auth.token.admin === true"},
        "posts": {
            ".read": "query.orderByChild === 'owner' && query.equalTo === auth.uid",
            ".indexOn": "owner",
        },
    }
}


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    """An RSA key pair, its self-signed certificate in Firebase's {kid: PEM} map, and the files."""
    root = tmp_path_factory.mktemp("keys")
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "eddy-test")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(private.public_key())
        .serial_number(1).not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=1))
        .sign(private, hashes.SHA256())
    )
    (root / "keys.json").write_text(json.dumps({"kid-1": cert.public_bytes(serialization.Encoding.PEM).decode()}))
    (root / "admin").write_text(ADMIN + "\n")
    (root / "hs").write_text(HS_SECRET + "\n")
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return {"dir": root, "private_pem": pem}


@pytest.fixture(scope="module")
def secured(module_daemon_factory, keys):
    d = module_daemon_factory(
        "--admin-token-file", str(keys["dir"] / "admin"), "--jwt-secret-file", str(keys["dir"] / "hs"),
        "--jwt-keys-file", str(keys["dir"] / "keys.json"), "--project-id", PROJECT,
        "--allowed-host", "db.example.test", "--cors-origin", "https://app.example.test")
    return d


def admin():
    return {"Authorization": f"Bearer {ADMIN}"}


def claims(uid, **extra):
    now = int(time.time())
    return {"sub": uid, "aud": PROJECT, "iss": ISS, "iat": now, "exp": now + 3600, **extra}


def rs256(keys, payload, kid="kid-1"):
    return jwt.encode(payload, keys["private_pem"], algorithm="RS256", headers={"kid": kid})


def hs256(payload, secret=HS_SECRET):
    return jwt.encode(payload, secret, algorithm="HS256", headers={"kid": "eddy-hs256"})


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture(scope="module")
def ruled(secured):
    r = requests.put(secured.base_url + "/.settings/rules.json", headers=admin(), data=json.dumps(RULES))
    assert r.status_code == 200, r.text
    return secured


def test_a_new_database_is_locked_and_settings_are_the_admins(secured):
    # Before any rules: the default is locked (Firebase's locked mode), for reads and writes.
    r = requests.get(secured.url("/anything"))
    assert (r.status_code, r.json()) == (401, {"error": "Permission denied"})
    assert requests.put(secured.url("/anything"), data="1").status_code == 401
    assert requests.get(secured.base_url + "/.settings/rules.json").status_code == 401
    assert requests.get(secured.base_url + "/.settings/rules.json", headers=bearer("owner")).status_code == 401, "owner is the admin only in emulator mode"
    r = requests.get(secured.base_url + "/.settings/rules.json", headers=admin())
    assert r.status_code == 200 and "rules" in r.json()
    assert requests.put(secured.url("/seed"), headers=admin(), data='"x"').status_code == 200


def test_tokens_of_both_kinds_read_and_write_their_own_data(ruled, keys):
    alice = hs256(claims("alice"))
    bob = rs256(keys, claims("bob"))
    assert requests.put(ruled.url("/users/alice/name"), headers=bearer(alice), data='"Alice"').status_code == 200
    assert requests.put(ruled.url("/users/bob/name", auth=bob), data='"Bob"').status_code == 200, "?auth= works too"
    assert requests.get(ruled.url("/users/alice"), headers=bearer(alice)).json() == {"name": "Alice"}
    r = requests.get(ruled.url("/users/bob"), headers=bearer(alice))
    assert (r.status_code, r.json()) == (401, {"error": "Permission denied"})
    assert requests.put(ruled.url("/users/bob/name"), headers=bearer(alice), data='"Mallory"').status_code == 401
    assert requests.get(ruled.url("/users/bob"), headers=admin()).json() == {"name": "Bob"}, "nothing of a denied write applied"
    assert requests.get(ruled.url("/users"), headers=bearer(alice)).status_code == 401, "no filtering: /users is not wholly readable"


def test_validate_rules_and_multi_path_updates(ruled):
    alice = bearer(hs256(claims("alice")))
    assert requests.put(ruled.url("/users/alice/name"), headers=alice, data="42").status_code == 401
    assert requests.put(ruled.url("/users/alice/name"), headers=alice, data=json.dumps("x" * 30)).status_code == 401
    r = requests.patch(ruled.url("/"), headers=alice, data=json.dumps({"users/alice/age": 3, "public/a": 1}))
    assert r.status_code == 200
    r = requests.patch(ruled.url("/"), headers=alice, data=json.dumps({"users/alice/age": 4, "users/bob/age": 4}))
    assert r.status_code == 401, "one denied path denies the whole update"
    assert requests.get(ruled.url("/users/alice/age"), headers=alice).json() == 3
    assert requests.get(ruled.url("/public/a")).json() == 1, "public is readable without a credential"
    assert requests.put(ruled.url("/public/b"), data="1").status_code == 401, "auth != null"


def test_custom_claims_and_query_rules(ruled):
    assert requests.put(ruled.url("/admins_only/x"), headers=admin(), data="1").status_code == 200
    assert requests.get(ruled.url("/admins_only"), headers=bearer(hs256(claims("carol")))).status_code == 401
    assert requests.get(ruled.url("/admins_only"), headers=bearer(hs256(claims("carol", admin=True)))).json() == {"x": 1}
    requests.put(ruled.url("/posts"), headers=admin(), data=json.dumps({"p1": {"owner": "alice"}, "p2": {"owner": "bob"}}))
    alice = bearer(hs256(claims("alice")))
    r = requests.get(ruled.url("/posts") + '?orderBy="owner"&equalTo="alice"', headers=alice)
    assert (r.status_code, r.json()) == (200, {"p1": {"owner": "alice"}})
    assert requests.get(ruled.url("/posts") + '?orderBy="owner"&equalTo="bob"', headers=alice).status_code == 401
    assert requests.get(ruled.url("/posts"), headers=alice).status_code == 401


@pytest.mark.parametrize("case", ["expired", "aud", "iss", "signature", "none", "tampered", "garbage", "no-sub", "unknown-kid"])
def test_bad_tokens_are_401(ruled, keys, case):
    good = claims("alice")
    if case == "expired":
        token = hs256({**good, "iat": int(time.time()) - 7200, "exp": int(time.time()) - 3600})
    elif case == "aud":
        token = hs256({**good, "aud": "other-project"})
    elif case == "iss":
        token = rs256(keys, {**good, "iss": "https://securetoken.google.com/other-project"})
    elif case == "signature":
        token = hs256(good, secret="a-different-secret-0123456789-0123456789")
    elif case == "none":
        token = jwt.encode(good, None, algorithm="none")
    elif case == "tampered":
        header, _, signature = hs256(good).split(".")
        forged = base64.urlsafe_b64encode(json.dumps({**good, "sub": "bob"}).encode()).rstrip(b"=").decode()
        token = f"{header}.{forged}.{signature}"
    elif case == "garbage":
        token = "not-a-token"
    elif case == "no-sub":
        token = hs256({k: v for k, v in good.items() if k != "sub"})
    else:
        token = rs256(keys, good, kid="kid-unknown")
    r = requests.get(ruled.url("/public"), headers=bearer(token))
    assert r.status_code == 401, (case, r.text)
    assert "error" in r.json()


def test_eddy_token_mints_what_eddyd_accepts(ruled, keys):
    out = run_eddy("token", "--uid", "alice", "--secret-file", str(keys["dir"] / "hs"), "--project-id", PROJECT,
                   "--claims", '{"admin": true}').stdout.decode().strip()
    decoded = jwt.decode(out, HS_SECRET, algorithms=["HS256"], audience=PROJECT)
    assert decoded["sub"] == "alice" and decoded["admin"] is True and decoded["iss"] == ISS
    assert requests.get(ruled.url("/admins_only"), headers=bearer(out)).json() == {"x": 1}
    bad = run_eddy("token", "--uid", "a", "--secret-file", str(keys["dir"] / "hs"), "--claims", '"x"', check=False)
    assert bad.returncode != 0 and b"--claims" in bad.stderr
    # A secret file that cannot be read is named, with the reason in plain words.
    for path, reason in ((keys["dir"] / "missing", b"no such file"), (keys["dir"], b"")):
        bad = run_eddy("token", "--uid", "a", "--secret-file", str(path), check=False)
        assert bad.returncode == 1 and bad.stderr.startswith(b"eddy: --secret-file " + str(path).encode() + b" cannot be read"), bad.stderr
        assert reason in bad.stderr.lower(), bad.stderr


def test_streams_are_checked_at_start_and_cancelled_when_rules_change(ruled):
    alice = bearer(hs256(claims("alice")))
    # Refused before the stream starts, as a denied GET: firebase-admin's listen() raises.
    denied = requests.get(ruled.url("/users/bob"), headers={"Accept": "text/event-stream", **alice}, stream=True, timeout=10)
    assert (denied.status_code, denied.json()) == (401, {"error": "Permission denied"})
    assert denied.headers["Content-Type"].startswith("application/json")
    stream = SSEClient(ruled, "/users/alice", headers=alice)
    try:
        assert stream.response.status == 200
        event, _, data, _ = stream.next_data()
        assert event == "put" and data["data"]["name"] == "Alice"
        doc = json.loads(json.dumps(RULES))
        doc["rules"]["users"]["$uid"][".read"] = False
        assert requests.put(ruled.base_url + "/.settings/rules.json", headers=admin(), data=json.dumps(doc)).status_code == 200
        event, _, data, raw = stream.next_data()
        # Firebase's docs: the data is null; the reason rides in a comment line.
        assert (event, data) == ("cancel", None)
        assert raw == "event: cancel\n: Permission denied\ndata: null\n"
    finally:
        stream.close()
        requests.put(ruled.base_url + "/.settings/rules.json", headers=admin(), data=json.dumps(RULES))


def test_an_expiring_token_revokes_its_stream(ruled):
    now = int(time.time())
    token = hs256({**claims("alice"), "exp": now + 2})
    stream = SSEClient(ruled, "/users/alice", headers=bearer(token))
    try:
        assert stream.next_data()[0] == "put"
        event, _, data, raw = stream.next_data(timeout=15)
        # Plain text, not a JSON string: firebase-admin reconnects on exactly this data.
        assert (event, data) == ("auth_revoked", "credential is no longer valid")
        assert raw == "event: auth_revoked\ndata: credential is no longer valid\n", repr(raw)
        assert stream.next()[0] == "closed"
    finally:
        stream.close()


def test_native_connections_authenticate_with_the_same_tokens(ruled):
    client = Native(ruled)
    try:
        client.send(1, 1, {"path": "/users/alice"})
        kind, _, payload = client.recv()
        assert kind == 26 and payload["code"] == "permissionDenied"
        client.send(8, 2, {"token": "forged.token.value"})
        kind, _, payload = client.recv()
        assert kind == 26 and payload["code"] == "unauthenticated"
        client.send(8, 3, {"token": hs256(claims("alice"))})
        kind, _, payload = client.recv()
        assert kind == 20 and payload["value"]["uid"] == "alice" and payload["value"]["admin"] is False
        client.send(1, 4, {"path": "/users/alice"})
        kind, _, payload = client.recv()
        assert kind == 20 and payload["value"]["name"] == "Alice"
        client.send(3, 5, {"op": "set", "path": "/users/bob/name", "value": "x"})
        kind, _, payload = client.recv()
        assert kind == 26 and payload["code"] == "permissionDenied"
        client.send(4, 10, {"path": "/users/alice"})
        kinds = [client.recv()[0] for _ in range(2)]
        assert kinds == [22, 23], kinds  # subscribed, then the first events
        client.send(8, 6, {"token": ADMIN})
        kind, rid, payload = client.recv()
        assert (kind, rid, payload["code"]) == (26, 10, "authRevoked"), "a new identity ends the old one's subscriptions"
        assert client.recv()[2]["value"]["admin"] is True
        client.send(1, 7, {"path": "/users/bob"})
        assert client.recv()[2]["value"] == {"name": "Bob"}
    finally:
        client.close()


def test_only_the_admin_creates_namespaces(ruled):
    alice = bearer(hs256(claims("alice")))
    r = requests.get(ruled.url("/x", ns="fresh-ns"), headers=alice)
    assert r.status_code == 404 and "only the admin creates namespaces" in r.json()["error"]
    assert requests.put(ruled.url("/x", ns="fresh-ns"), headers=admin(), data="1").status_code == 200
    assert requests.get(ruled.url("/x", ns="fresh-ns"), headers=alice).status_code == 401, "exists now, locked by default"


def test_host_and_cross_origin_checks(ruled):
    r = requests.get(ruled.url("/public"), headers={"Host": "evil.example.com"})
    assert r.status_code == 403 and "--allowed-host" in r.json()["error"]
    assert requests.get(ruled.url("/public"), headers={"Host": "db.example.test"}).status_code == 200
    r = requests.put(ruled.url("/public/c"), headers={"Origin": "https://evil.example.com"}, data="1")
    assert r.status_code == 403 and "cross-origin" in r.json()["error"]
    assert "Access-Control-Allow-Origin" not in r.headers
    r = requests.get(ruled.url("/public"), headers={"Origin": "https://app.example.test"})
    assert r.status_code == 200 and r.headers["Access-Control-Allow-Origin"] == "https://app.example.test"
    r = requests.options(ruled.url("/public"), headers={"Origin": "https://app.example.test", "Access-Control-Request-Method": "PUT"})
    assert r.status_code == 204 and "PUT" in r.headers["Access-Control-Allow-Methods"]
    assert requests.options(ruled.url("/public"), headers={"Origin": "https://evil.example.com"}).status_code == 403


def test_a_rules_error_names_line_and_column_and_keeps_the_old_rules(ruled):
    before = requests.get(ruled.base_url + "/.settings/rules.json", headers=admin()).json()
    text = '{\n  "rules": {\n    "a": {\n      ".read": "auth.uid ==== 1"\n    }\n  }\n}'
    r = requests.put(ruled.base_url + "/.settings/rules.json", headers=admin(), data=text)
    assert r.status_code == 400
    message = r.json()["error"]
    assert message.startswith("line 4, column "), message
    assert ".read" in message
    r = requests.put(ruled.base_url + "/.settings/rules.json", headers=admin(), data='{\n "rules": {\n  "a": }')
    assert r.status_code == 400 and r.json()["error"].startswith("line 3, column"), r.text
    assert requests.get(ruled.base_url + "/.settings/rules.json", headers=admin()).json() == before


def test_a_write_rule_on_newData_above_the_written_location_sees_the_stored_siblings(daemon):
    """Firebase's docs: `newData` is the data as it will be if the write is allowed, so at
    /docs/$id it holds the stored `owner` when only `title` is written (set of a child,
    firebase-admin's update()). The owner may then change the title; another user may not, and
    nobody may hand the document to someone else."""
    from firebase_admin import db
    from firebase_admin.exceptions import UnauthenticatedError

    from conftest import firebase_app

    ns = "fa-newdata"
    rules = {"rules": {"docs": {"$id": {".read": True, ".write": "newData.child('owner').val() === auth.uid"}}}}
    with firebase_app(daemon.port, ns) as admin_app:
        db.reference("/", app=admin_app)._client.request("put", "/.settings/rules.json", json=rules)
        db.reference("/docs/d1", app=admin_app).set({"owner": "alice", "title": "x"})
    with firebase_app(daemon.port, ns, databaseAuthVariableOverride={"uid": "alice"}) as alice:
        db.reference("/docs/d1/title", app=alice).set("y")
        db.reference("/docs/d1", app=alice).update({"title": "z", "tags/a": True})
        with pytest.raises(UnauthenticatedError):
            db.reference("/docs/d1/owner", app=alice).set("bob")
    with firebase_app(daemon.port, ns, databaseAuthVariableOverride={"uid": "bob"}) as bob:
        with pytest.raises(UnauthenticatedError):
            db.reference("/docs/d1/title", app=bob).set("Mallory")
        with pytest.raises(UnauthenticatedError):
            db.reference("/docs/d1", app=bob).update({"title": "Mallory"})
        assert db.reference("/docs/d1", app=bob).get() == {"owner": "alice", "title": "z", "tags": {"a": True}}


def test_a_failed_conditional_write_shows_the_value_only_to_a_reader(daemon):
    """A 412 answers the current value and its ETag (Firebase's conditional requests): a caller
    the rules let write but not read gets Firebase's denial instead (the value stays hidden, as
    from a GET), and nothing is written. A caller who may read gets the 412 as before."""
    rules = {"rules": {"drop": {".write": True, ".read": False}, "open": {".write": True, ".read": True}}}
    owner = bearer("owner")
    assert requests.put(daemon.url("/.settings/rules", ns="cond"), headers=owner, data=json.dumps(rules)).status_code == 200
    for place in ("drop", "open"):
        assert requests.put(daemon.url(f"/{place}", ns="cond"), headers=owner, data='{"secret": "s3"}').status_code == 200
    for tag in ("stale", "null_etag"):
        r = requests.put(daemon.url("/drop", ns="cond"), headers={"if-match": tag}, data='"x"')
        assert r.status_code == 401 and r.json() == {"error": "Permission denied"}, r.text
        assert "s3" not in r.text and "ETag" not in r.headers
        r = requests.delete(daemon.url("/drop", ns="cond"), headers={"if-match": tag})
        assert r.status_code == 401 and "s3" not in r.text, r.text
    assert requests.get(daemon.url("/drop", ns="cond"), headers=owner).json() == {"secret": "s3"}
    r = requests.put(daemon.url("/open", ns="cond"), headers={"if-match": "stale"}, data='"x"')
    assert r.status_code == 412 and r.json() == {"secret": "s3"} and r.headers["ETag"], r.text
    # The write-only caller's matching ETag still writes (the write rule allows it).
    etag = requests.get(daemon.url("/drop", ns="cond"), headers={**owner, "X-Firebase-ETag": "true"}).headers["ETag"]
    assert requests.put(daemon.url("/drop", ns="cond"), headers={"if-match": etag}, data='"x"').status_code == 200
    assert requests.get(daemon.url("/drop", ns="cond"), headers=owner).json() == "x"


def test_an_increment_answers_the_stored_number_only_to_a_reader(daemon):
    """A PUT or PATCH answers the data written, server values resolved; an increment's result
    is the stored number plus n, so a caller that may write but not read gets the values as it
    sent them (and no ETag): `increment: 0` must not read a secret. Its overflow error does not
    name the stored number either."""
    rules = {"rules": {"vault": {".write": True, ".read": False}, "open": {".write": True, ".read": True}}}
    owner = bearer("owner")
    assert requests.put(daemon.url("/.settings/rules", ns="inc"), headers=owner, data=json.dumps(rules)).status_code == 200
    for place in ("vault", "open"):
        assert requests.put(daemon.url(f"/{place}", ns="inc"), headers=owner, data='{"pin": 1234, "big": 1.5e308}').status_code == 200
    zero = {".sv": {"increment": 0}}
    r = requests.put(daemon.url("/vault/pin", ns="inc"), headers={"X-Firebase-ETag": "true"}, data=json.dumps(zero))
    assert r.status_code == 200 and r.json() == zero and "ETag" not in r.headers, (r.text, r.headers)
    r = requests.patch(daemon.url("/vault", ns="inc"), data=json.dumps({"pin": zero}))
    assert r.status_code == 200 and r.json() == {"pin": zero}, r.text
    r = requests.put(daemon.url("/vault/big", ns="inc"), data=json.dumps({".sv": {"increment": 1.5e308}}))
    assert r.status_code == 400 and "non-finite" in r.json()["error"] and "1.5e+308" not in r.text.replace("increment by 1.5e+308", ""), r.text
    assert requests.get(daemon.url("/vault", ns="inc"), headers=owner).json() == {"pin": 1234, "big": 1.5e308}
    # A reader gets the resolved value, as before.
    r = requests.put(daemon.url("/open/pin", ns="inc"), headers={"X-Firebase-ETag": "true"}, data=json.dumps({".sv": {"increment": 1}}))
    assert r.status_code == 200 and r.json() == 1235 and r.headers["ETag"], r.text
    r = requests.patch(daemon.url("/open", ns="inc"), data=json.dumps({"pin": {".sv": {"increment": 1}}}))
    assert r.status_code == 200 and r.json() == {"pin": 1236}, r.text


def test_a_denied_query_says_nothing_of_the_indexes(daemon):
    """A query's index error names the rules' `.indexOn` entries (which only the admin reads in
    a secured set-up): a caller denied the read gets Firebase's denial whatever it orders by."""
    rules = {"rules": {"priv": {".read": False, ".indexOn": ["x"]}, "pub": {".read": True, ".indexOn": ["x"]}}}
    owner = bearer("owner")
    assert requests.put(daemon.url("/.settings/rules", ns="idx"), headers=owner, data=json.dumps(rules)).status_code == 200
    requests.put(daemon.url("/", ns="idx"), headers=owner, data='{"priv": {"a": {"x": 1}}, "pub": {"a": {"x": 1}}}').raise_for_status()
    for order in ('"x"', '"y"'):
        r = requests.get(daemon.url("/priv", ns="idx", orderBy=order))
        assert (r.status_code, r.json()) == (401, {"error": "Permission denied"}), (order, r.text)
    r = requests.get(daemon.url("/pub", ns="idx", orderBy='"y"'))
    assert r.status_code == 400 and "Index not defined" in r.json()["error"], r.text


def unsigned_token(uid):
    """An unsigned token, as the Auth emulator makes (eddyd's emulator mode reads them)."""
    part = lambda d: base64.urlsafe_b64encode(json.dumps(d).encode()).rstrip(b"=").decode()
    return part({"alg": "none", "typ": "JWT"}) + "." + part({"sub": uid, "user_id": uid}) + "."


def test_a_reader_that_loses_access_through_the_data_hears_nothing_more(daemon):
    """Read rules that depend on the data (membership) can take a reader's access away without a
    rules change. Its stream and native subscription are cancelled ("Permission denied") instead
    of hearing the next change; the log is not replayed to it from an old id (Last-Event-ID,
    since), so what was written while it could not read never reaches it; and a tail of the
    change log there is for the admin."""
    ns = "members"
    owner = bearer("owner")
    rules = {"rules": {"rooms": {"$r": {".read": "root.child('members').child($r).child(auth.uid).exists()"}}}}
    assert requests.put(daemon.url("/.settings/rules", ns=ns), headers=owner, data=json.dumps(rules)).status_code == 200
    requests.put(daemon.url("/", ns=ns), headers=owner, data=json.dumps({"members": {"r1": {"mallory": True}}, "rooms": {"r1": {"m1": "hello"}}})).raise_for_status()
    mallory = bearer(unsigned_token("mallory"))
    stream = SSEClient(daemon, "/rooms/r1", query=f"ns={ns}", headers=mallory)
    client = Native(daemon)
    try:
        event, first_id, data, _ = stream.next_data()
        assert (event, data) == ("put", {"path": "/", "data": {"m1": "hello"}})
        client.send(8, 1, {"token": unsigned_token("mallory")})
        assert client.recv()[0] == 20
        client.send(4, 2, {"ns": ns, "path": "/rooms/r1"})
        assert [client.recv()[0] for _ in range(2)] == [22, 23]
        # A tail there: the read rule depends on the data, so the log is the admin's.
        client.send(7, 3, {"ns": ns, "path": "/rooms/r1"})
        kind, rid, payload = client.recv()
        assert (kind, rid, payload["code"]) == (26, 3, "permissionDenied") and "admin" in payload["message"], payload
        # Removed from the room, then a message: the stream and the subscription end instead.
        requests.delete(daemon.url("/members/r1/mallory", ns=ns), headers=owner).raise_for_status()
        requests.put(daemon.url("/rooms/r1/m2", ns=ns), headers=owner, data='"secret after removal"').raise_for_status()
        event, _, data, raw = stream.next_data()
        assert (event, data) == ("cancel", None) and "secret" not in raw, raw
        kind, rid, payload = client.recv()
        assert kind == 23 and rid == 2 and "secret" not in json.dumps(payload), payload
        assert payload["events"][0]["kind"] == "cancel", payload
    finally:
        stream.close()
        client.close()
    # Back in the room: resuming from the old id starts from the current value (no replay).
    requests.put(daemon.url("/members/r1/mallory", ns=ns), headers=owner, data="true").raise_for_status()
    resumed = SSEClient(daemon, "/rooms/r1", query=f"ns={ns}", headers={**mallory, "Last-Event-ID": first_id})
    try:
        event, _, data, _ = resumed.next_data()
        assert (event, data) == ("put", {"path": "/", "data": {"m1": "hello", "m2": "secret after removal"}})
    finally:
        resumed.close()
    client = Native(daemon)
    try:
        client.send(8, 1, {"token": unsigned_token("mallory")})
        assert client.recv()[0] == 20
        client.send(4, 2, {"ns": ns, "path": "/rooms/r1", "since": first_id})
        kind, rid, payload = client.recv()
        assert (kind, rid, payload["code"]) == (26, 2, "notFound") and "without since" in payload["message"], payload
    finally:
        client.close()


def test_a_tail_ends_when_its_reader_loses_access(daemon):
    """A non-admin tail is checked again before every frame: a rules change, or the connection
    dropping its credential, ends it with Permission denied instead of sending the next change."""
    ns = "tailing"
    owner = bearer("owner")
    open_rules = {"rules": {"feed": {".read": "auth != null"}}}
    assert requests.put(daemon.url("/.settings/rules", ns=ns), headers=owner, data=json.dumps(open_rules)).status_code == 200
    requests.put(daemon.url("/feed/a", ns=ns), headers=owner, data="1").raise_for_status()
    for revoke in ("rules", "credential"):
        client = Native(daemon)
        try:
            client.send(8, 1, {"token": unsigned_token("mallory")})
            assert client.recv()[0] == 20
            client.send(7, 2, {"ns": ns, "path": "/feed"})
            kind, rid, _ = client.recv()
            assert (kind, rid) == (27, 2)  # tailing
            assert client.recv()[0] == 28  # the history so far
            if revoke == "rules":
                closed = {"rules": {"feed": {".read": "auth.uid === 'owner1'"}}}
                assert requests.put(daemon.url("/.settings/rules", ns=ns), headers=owner, data=json.dumps(closed)).status_code == 200
            else:
                client.send(8, 3, {"token": None})
                kind, rid, _ = client.recv()
                assert (kind, rid) == (20, 3), (kind, rid)
            requests.put(daemon.url("/feed/x", ns=ns), headers=owner, data=json.dumps(f"after {revoke} revocation")).raise_for_status()
            kind, rid, payload = client.recv()
            assert (kind, rid, payload["code"]) == (26, 2, "permissionDenied") and "revocation" not in json.dumps(payload), payload
        finally:
            client.close()
            assert requests.put(daemon.url("/.settings/rules", ns=ns), headers=owner, data=json.dumps(open_rules)).status_code == 200


def test_emulator_mode_reads_the_provider_of_an_unsigned_token(daemon):
    """As the emulator reads the Auth emulator's unsigned tokens: `auth.provider` is the token's
    firebase.sign_in_provider in the rules reference's names (`google.com` is `google`; custom
    without one), as for a verified token."""

    def unsigned(claims):
        part = lambda d: base64.urlsafe_b64encode(json.dumps(d).encode()).rstrip(b"=").decode()
        return part({"alg": "none", "typ": "JWT"}) + "." + part(claims) + "."

    rules = {"rules": {"p": {".read": "auth.provider == 'google'"}, "c": {".read": "auth.provider == 'custom'"}}}
    assert requests.put(daemon.url("/.settings/rules"), headers=bearer("owner"), data=json.dumps(rules)).status_code == 200
    google = bearer(unsigned({"sub": "alice", "firebase": {"sign_in_provider": "google.com"}}))
    custom = bearer(unsigned({"sub": "bob"}))
    assert requests.get(daemon.url("/p"), headers=google).status_code == 200
    assert requests.get(daemon.url("/c"), headers=google).status_code == 401
    assert requests.get(daemon.url("/p"), headers=custom).status_code == 401
    assert requests.get(daemon.url("/c"), headers=custom).status_code == 200
    anonymous = bearer(unsigned({"sub": "carol", "firebase": {"sign_in_provider": "anonymous"}}))
    rules = {"rules": {"a": {".read": "auth.provider === 'anonymous'"}}}
    assert requests.put(daemon.url("/.settings/rules"), headers=bearer("owner"), data=json.dumps(rules)).status_code == 200
    assert requests.get(daemon.url("/a"), headers=anonymous).status_code == 200
    assert requests.get(daemon.url("/a"), headers=google).status_code == 401


def test_configured_auth_allows_a_public_listener(daemon_factory, keys):
    d = daemon_factory("--http", "0.0.0.0:0", "--admin-token-file", str(keys["dir"] / "admin"))
    assert requests.get(d.url("/x")).status_code == 401
    assert requests.get(d.url("/x"), headers=admin()).status_code == 200


def test_token_keys_without_an_admin_secret_keep_owner_and_say_so(daemon_factory, keys):
    """Token keys on loopback without --admin-token-file: tokens are verified and new rules are
    locked, `Bearer owner` stays the admin (issue 13: firebase-admin in emulator mode), and the
    start-up log warns that a reverse proxy would hand that on."""
    d = daemon_factory("--jwt-secret-file", str(keys["dir"] / "hs"))
    assert requests.get(d.url("/x")).status_code == 401, "locked by default"
    assert requests.get(d.url("/x"), headers=bearer("owner")).status_code == 200
    assert "without --admin-token-file the Firebase emulator's conventions stay" in open(d.log_path).read()
    quiet = daemon_factory("--jwt-secret-file", str(keys["dir"] / "hs"), "--admin-token-file", str(keys["dir"] / "admin"))
    assert requests.get(quiet.url("/x"), headers=bearer("owner")).status_code == 401
    assert "emulator's conventions stay" not in open(quiet.log_path).read()


def test_firebase_admin_rules_with_auth_variable_override(daemon):
    """firebase-admin in emulator mode, unchanged: the admin app sets the rules (Bearer owner);
    apps with databaseAuthVariableOverride are held to them as that `auth`; None is
    unauthenticated."""
    from firebase_admin import db
    from firebase_admin.exceptions import UnauthenticatedError

    from conftest import firebase_app

    ns = "fa-rules"
    rules = {"rules": {"users": {"$uid": {".read": "auth != null && auth.uid === $uid", ".write": "auth.uid === $uid"}},
                       "open": {".read": True}}}
    with firebase_app(daemon.port, ns) as admin_app:
        db.reference("/", app=admin_app)._client.request("put", "/.settings/rules.json", json=rules)
        db.reference("/users/bob", app=admin_app).set({"name": "Bob"})
        db.reference("/open", app=admin_app).set(1)
    with firebase_app(daemon.port, ns, databaseAuthVariableOverride={"uid": "alice"}) as alice:
        db.reference("/users/alice", app=alice).set({"name": "Alice"})
        assert db.reference("/users/alice", app=alice).get() == {"name": "Alice"}
        with pytest.raises(UnauthenticatedError) as denied:
            db.reference("/users/bob", app=alice).get()
        assert str(denied.value) == "Permission denied"
        with pytest.raises(UnauthenticatedError):
            db.reference("/users/bob", app=alice).listen(lambda event: None)
        with pytest.raises(UnauthenticatedError):
            db.reference("/users/bob", app=alice).set({"name": "Mallory"})
        with pytest.raises(UnauthenticatedError):
            db.reference("/users/bob", app=alice).update({"name": "Mallory"})
    with firebase_app(daemon.port, ns, databaseAuthVariableOverride=None) as anonymous:
        assert db.reference("/open", app=anonymous).get() == 1
        with pytest.raises(UnauthenticatedError):
            db.reference("/users/alice", app=anonymous).get()
    with firebase_app(daemon.port, ns) as admin_app:
        assert db.reference("/users/bob", app=admin_app).get() == {"name": "Bob"}, "nothing of the denied writes applied"
    # Only the admin may override: a plain request with the parameter is refused.
    r = requests.get(daemon.url("/open", ns=ns, auth_variable_override='{"uid": "x"}'))
    assert r.status_code == 401
