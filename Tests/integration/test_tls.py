"""TLS on every TCP listener with a certificate signed by a CA made here: HTTPS answers and
verifies against the CA, the native protocol over TCP speaks TLS, a follower verifies its
leader's certificate against the configured CA and follows, and with the wrong CA it fails closed
(no data, the error logged); a plain client gets nothing readable."""

import datetime
import ipaddress
import json
import os
import socket
import ssl
import struct
import subprocess
import time

import pytest
import requests
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from conftest import EDDYD
from test_replication import status, wait_caught_up


def make_ca(name):
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return key, cert


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    root = tmp_path_factory.mktemp("pki")
    ca_key, ca = make_ca("eddy test CA")
    _, other_ca = make_ca("another CA")
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "eddyd")]))
        .issuer_name(ca.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    (root / "ca.pem").write_bytes(ca.public_bytes(pem))
    (root / "other-ca.pem").write_bytes(other_ca.public_bytes(pem))
    (root / "cert.pem").write_bytes(cert.public_bytes(pem))
    (root / "key.pem").write_bytes(key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return root


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tls_args(pki):
    return ["--tls-cert-file", str(pki / "cert.pem"), "--tls-key-file", str(pki / "key.pem")]


def test_https_and_native_tls(daemon_factory, pki, monkeypatch):
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(pki / "ca.pem"))
    d = daemon_factory("--native-listen", "127.0.0.1:0", *tls_args(pki))
    assert d.base_url.startswith("https://")
    assert requests.put(d.url("/t"), data='{"a": 1}', verify=str(pki / "ca.pem")).status_code == 200
    assert requests.get(d.url("/t"), verify=str(pki / "ca.pem")).json() == {"a": 1}
    with pytest.raises(requests.exceptions.SSLError):
        requests.get(d.url("/t"), verify=str(pki / "other-ca.pem"))
    with pytest.raises(requests.exceptions.ConnectionError):
        requests.get(d.url("/t").replace("https://", "http://"), timeout=5)
    host, port = d.native_tcp.rsplit(":", 1)
    context = ssl.create_default_context(cafile=str(pki / "ca.pem"))
    with socket.create_connection((host, int(port)), timeout=10) as raw, context.wrap_socket(raw, server_hostname="127.0.0.1") as s:
        body = json.dumps({"path": "/t"}).encode()
        s.sendall(struct.pack(">IBBQ", 10 + len(body), 2, 1, 9) + body)
        data = b""
        while len(data) < 4 or len(data) < 4 + struct.unpack(">I", data[:4])[0]:
            data += s.recv(65536)
        assert data[5] == 20 and json.loads(data[14:])["value"] == {"a": 1}
    # A refused head over HTTPS: answered, then the connection ends (its output closes after the
    # answer and the rest the client sends is dropped; test_http_limits.py has the plain case).
    with socket.create_connection(("127.0.0.1", d.port), timeout=10) as raw, context.wrap_socket(raw, server_hostname="127.0.0.1") as s:
        s.sendall(b"BREW /t.json HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 400 Bad Request") and b"unknown method" in answer, answer[:300]


def test_a_follower_verifies_its_leader_over_tls(daemon_factory, pki, monkeypatch, tmp_path):
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(pki / "ca.pem"))  # the leader's HTTP is HTTPS too
    port = free_port()
    leader = daemon_factory("--replication-listen", f"127.0.0.1:{port}", *tls_args(pki))
    ca = str(pki / "ca.pem")
    for i in range(50):
        requests.put(leader.url(f"/r/{i}"), data=str(i), verify=ca)
    follower = daemon_factory("--leader", f"127.0.0.1:{port}", "--tls-ca-file", ca, command="follow")
    wait_caught_up(leader, follower)
    assert requests.get(follower.url("/r/49")).json() == 49
    # The wrong CA fails closed: the follower's start stops at the TLS handshake, naming it, and
    # nothing was replicated.
    bad = subprocess.run(
        [EDDYD, "follow", "--leader", f"127.0.0.1:{port}", "--tls-ca-file", str(pki / "other-ca.pem"),
         "--data", str(tmp_path / "bad"), "--http", "127.0.0.1:0"], capture_output=True, timeout=60)
    log = bad.stderr.decode("utf-8", "replace")
    assert bad.returncode != 0 and "CERTIFICATE_VERIFY_FAILED" in log, log[-2000:]
    assert not (tmp_path / "bad" / "default").exists() or not any((tmp_path / "bad" / "default").glob("*.sst"))
    # A plain follower (no CA) against the TLS listener gets nothing it can read.
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(struct.pack(">IBBQ", 12, 2, 40, 0) + b"{}")
        try:
            reply = s.recv(4096)
        except (ConnectionResetError, socket.timeout):
            reply = b""
        assert b"welcome" not in reply and b"databaseID" not in reply
