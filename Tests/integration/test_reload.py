"""SIGHUP (`systemctl reload eddyd`), while serving and without dropping an open stream: eddyd
rereads its --config file and applies the log level, reapplies its rules file, puts a renewed TLS
certificate in use for new connections, and takes a rotated admin secret. Each broken part (a
config file that no longer parses, a bad rules document, a key that does not match its
certificate) changes nothing of its own and leaves the rest applied."""

import datetime
import ipaddress
import json
import os
import signal
import socket
import ssl
import time

import requests
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from test_sse import SSEClient
from test_tls import make_ca


def wait_for_log(daemon, text, timeout=20):
    deadline = time.monotonic() + timeout
    while text not in open(daemon.log_path).read():
        assert time.monotonic() < deadline, f"{text!r} not in the log: {daemon.log_tail(2000)}"
        time.sleep(0.05)


def test_sighup_rereads_the_log_level_and_keeps_connections(daemon_factory, tmp_path):
    config = tmp_path / "eddyd.toml"
    config.write_text('[serve]\nlog-level = "info"\n')
    daemon = daemon_factory("--config", str(config))
    stream = SSEClient(daemon, "/live")
    try:
        assert stream.next_data()[0] == "put"
        config.write_text('[serve]\nlog-level = "debug"\n')
        os.kill(daemon.process.pid, signal.SIGHUP)
        wait_for_log(daemon, "info -> debug")
        # Still serving, and the stream opened before the reload still delivers.
        assert requests.put(daemon.url("/live/a"), data="1").status_code == 200
        event, _, data, _ = stream.next_data()
        assert event == "put" and data == {"path": "/a", "data": 1}
        # A config file that no longer parses: nothing changes, the daemon runs on.
        config.write_text('[serve]\nlog-level = "loud"\n')
        os.kill(daemon.process.pid, signal.SIGHUP)
        wait_for_log(daemon, "config file not applied")
        assert daemon.running
        assert requests.get(daemon.url("/live")).json() == {"a": 1}
    finally:
        stream.close()


def test_sighup_without_a_config_file_changes_nothing(daemon):
    os.kill(daemon.process.pid, signal.SIGHUP)
    wait_for_log(daemon, "no --config file, rules file, TLS or credential files to reread")
    assert daemon.running and requests.get(daemon.url("/")).status_code == 200


def sighup(daemon, expect_in_log, count_before=None):
    """Sends SIGHUP and waits until `expect_in_log` appears once more than before."""
    before = open(daemon.log_path).read().count(expect_in_log)
    os.kill(daemon.process.pid, signal.SIGHUP)
    deadline = time.monotonic() + 20
    while open(daemon.log_path).read().count(expect_in_log) <= before:
        assert time.monotonic() < deadline, f"{expect_in_log!r} not logged again: {daemon.log_tail(2000)}"
        time.sleep(0.05)


def rules_url(daemon):
    return daemon.base_url + "/.settings/rules.json"


def test_sighup_applies_the_rules_file(daemon_factory, tmp_path):
    rules = tmp_path / "rules.json"
    first = {"rules": {".read": True, ".write": True, "items": {".indexOn": ["n"]}}}
    rules.write_text(json.dumps(first))
    daemon = daemon_factory("--rules-file", str(rules))
    assert requests.get(rules_url(daemon)).json() == first
    second = {"rules": {".read": True, ".write": "newData.exists() || data.exists()", "items": {".indexOn": ["n", "m"]}}}
    rules.write_text(json.dumps(second))
    sighup(daemon, "rules set from the rules file")
    assert requests.get(rules_url(daemon)).json() == second
    # A bad document: refused with its reason, the rules in force stay.
    rules.write_text(json.dumps({"rules": {".nope": True}}))
    sighup(daemon, "rules file not applied")
    assert "unknown rule .nope" in daemon.log_tail(3000)
    assert requests.get(rules_url(daemon)).json() == second
    # A restart with an unchanged file writes nothing.
    rules.write_text(json.dumps(second))
    daemon.restart()
    assert requests.get(rules_url(daemon)).json() == second
    assert open(daemon.log_path).read().count("rules set from the rules file") == 2


def leaf_certificate(ca_key, ca, name):
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .issuer_name(ca.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    return cert.public_bytes(pem), key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


def presented_name(port, ca_file):
    context = ssl.create_default_context(cafile=str(ca_file))
    with socket.create_connection(("127.0.0.1", port)) as raw, context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        subject = dict(item[0] for item in tls.getpeercert()["subject"])
        return subject["commonName"]


def test_sighup_renews_the_tls_certificate_and_the_admin_secret(daemon_factory, tmp_path):
    ca_key, ca = make_ca("reload CA")
    (tmp_path / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert, key = leaf_certificate(ca_key, ca, "first")
    (tmp_path / "cert.pem").write_bytes(cert)
    (tmp_path / "key.pem").write_bytes(key)
    admin = tmp_path / "admin"
    admin.write_text("first-admin-secret-0123456789")
    daemon = daemon_factory(
        "--tls-cert-file", str(tmp_path / "cert.pem"), "--tls-key-file", str(tmp_path / "key.pem"), "--admin-token-file", str(admin))
    port = daemon.port
    assert presented_name(port, tmp_path / "ca.pem") == "first"
    ca_file = str(tmp_path / "ca.pem")
    url = f"https://127.0.0.1:{port}/x.json"
    session = requests.Session()  # keeps its connection open across the reload
    assert session.put(url, data="1", headers={"Authorization": "Bearer first-admin-secret-0123456789"}, verify=ca_file).status_code == 200

    cert, key = leaf_certificate(ca_key, ca, "second")
    (tmp_path / "cert.pem").write_bytes(cert)
    (tmp_path / "key.pem").write_bytes(key)
    admin.write_text("second-admin-secret-0123456789")
    sighup(daemon, "reread the credential files")
    assert presented_name(port, tmp_path / "ca.pem") == "second"
    assert requests.get(url, headers={"Authorization": "Bearer first-admin-secret-0123456789"}, verify=ca_file).status_code == 401
    r = session.get(url, headers={"Authorization": "Bearer second-admin-secret-0123456789"}, verify=ca_file)
    assert r.status_code == 200 and r.json() == 1

    # A key that does not belong to the certificate: refused, the pair in force stays.
    _, other_key = leaf_certificate(ca_key, ca, "third")
    (tmp_path / "key.pem").write_bytes(other_key)
    sighup(daemon, "TLS files not applied")
    assert presented_name(port, tmp_path / "ca.pem") == "second"
    assert daemon.running


def test_sighup_revokes_open_streams_whose_credential_no_longer_verifies(daemon_factory, tmp_path):
    """Firebase sends `auth_revoked` "when the supplied auth parameter is no longer valid": a
    rotated admin secret or token secret (SIGHUP) revokes the event streams and native
    connections opened with the old one, within a keep-alive period; streams whose credential
    still verifies, and unauthenticated ones, go on."""
    import jwt

    from test_native import Native, SUBSCRIBE, SUBSCRIBED, EVENTS, GET, ERROR

    admin, hs = tmp_path / "admin", tmp_path / "hs"
    admin.write_text("first-admin-secret-0123456789")
    hs.write_text("first-hs256-secret-0123456789abcdef")
    daemon = daemon_factory("--admin-token-file", str(admin), "--jwt-secret-file", str(hs), "--project-id", "proj",
                            "--sse-keep-alive-seconds", "1")
    rules = {"rules": {".read": True, ".write": "auth != null"}}
    assert requests.put(rules_url(daemon), data=json.dumps(rules),
                        headers={"Authorization": "Bearer first-admin-secret-0123456789"}).status_code == 200
    now = int(time.time())
    claims = {"sub": "alice", "aud": "proj", "iss": "https://securetoken.google.com/proj", "iat": now, "exp": now + 3600}
    alice = jwt.encode(claims, "first-hs256-secret-0123456789abcdef", algorithm="HS256", headers={"kid": "eddy-hs256"})

    as_admin = SSEClient(daemon, "/live", headers={"Authorization": "Bearer first-admin-secret-0123456789"})
    as_alice = SSEClient(daemon, "/live", query="auth=" + alice)
    anonymous = SSEClient(daemon, "/live")
    native = Native(daemon)
    native.send(8, 1, {"token": alice})  # auth
    assert native.recv()[1] == 1
    native.send(SUBSCRIBE, 2, {"path": "/live"})
    assert native.recv()[0] == SUBSCRIBED
    for stream in (as_admin, as_alice, anonymous):
        assert stream.next_data()[0] == "put"
    try:
        # Only the admin secret changes: the token stream and the native connection go on.
        admin.write_text("second-admin-secret-0123456789")
        sighup(daemon, "reread the credential files")
        event, _, data, _ = as_admin.next_data(timeout=15)
        assert event == "auth_revoked" and data == "credential is no longer valid", (event, data)
        assert as_admin.next(timeout=15)[0] == "closed"
        assert requests.put(daemon.url("/live/a"), data="1", headers={"Authorization": "Bearer second-admin-secret-0123456789"}).status_code == 200
        for stream in (as_alice, anonymous):
            assert stream.next_data()[:3:2] == ("put", {"path": "/a", "data": 1})
        kind, rid, _ = native.recv()
        assert (kind, rid) == (EVENTS, 2), "the native subscription still delivers"
        # The token secret changes: alice's stream and native connection are revoked.
        hs.write_text("second-hs256-secret-0123456789abcdef")
        sighup(daemon, "reread the credential files")
        event, _, data, _ = as_alice.next_data(timeout=15)
        assert event == "auth_revoked", (event, data)
        kind, rid, payload = native.recv()
        while kind == EVENTS:  # the events of /live/a may come in more than one frame
            kind, rid, payload = native.recv()
        assert (kind, rid, payload.get("code")) == (ERROR, 2, "authRevoked"), (kind, payload)
        assert "no longer valid" in payload["message"]
        native.send(GET, 3, {"path": "/live"})
        kind, rid, payload = native.recv()
        assert (kind, rid, payload["code"]) == (ERROR, 3, "unauthenticated"), payload
        # The unauthenticated stream is untouched.
        assert requests.put(daemon.url("/live/b"), data="2", headers={"Authorization": "Bearer second-admin-secret-0123456789"}).status_code == 200
        assert anonymous.next_data()[:3:2] == ("put", {"path": "/b", "data": 2})
    finally:
        for stream in (as_admin, as_alice, anonymous):
            stream.close()
        native.close()
