"""Firebase's onDisconnect over REST and SSE (the emulator set-up): a client opens eddyd's
onDisconnect connection (`GET /.ondisconnect.json` as an event stream), registers writes on it
(`POST /.ondisconnect/<id>.json`), and eddyd makes them when the connection ends, however it ends:
a client process killed with its socket open, a socket closed, eddyd stopping. Registrations are
validated at once and bounded; the rules are checked when a write runs, for the identity that
registered it."""

import base64
import json
import os
import signal
import socket
import subprocess
import sys
import time

import requests


def unsigned(claims):
    """An unsigned token, as the Auth emulator makes (eddyd's emulator mode reads them)."""
    part = lambda d: base64.urlsafe_b64encode(json.dumps(d).encode()).rstrip(b"=").decode()
    return part({"alg": "none", "typ": "JWT"}) + "." + part(claims) + "."


class Connection:
    """An onDisconnect connection on a plain socket: the id from the answer's header and from
    its first event."""

    def __init__(self, daemon, ns=None):
        self.sock = socket.create_connection(("127.0.0.1", daemon.port), timeout=10)
        query = f"?ns={ns}" if ns else ""
        self.sock.sendall(f"GET /.ondisconnect.json{query} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n".encode())
        received = b""
        # The first event, inside the chunked answer: "event: connection", "data: {...}", a blank line.
        while b"data: " not in received or b"\n\n" not in received.split(b"data: ", 1)[1]:
            chunk = self.sock.recv(4096)
            assert chunk, received
            received += chunk
        head, _, body = received.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200"), head
        headers = dict(line.split(": ", 1) for line in head.decode().split("\r\n")[1:])
        self.id = headers["X-Eddy-Connection"]
        assert b"event: connection" in body and json.dumps({"id": self.id}).replace(" ", "").encode() in body, body

    def close(self):
        self.sock.close()


def register(daemon, connection_id, payload, ns=None, headers=None):
    params = {"ns": ns} if ns else {}
    return requests.post(daemon.base_url + f"/.ondisconnect/{connection_id}.json", params=params, data=json.dumps(payload), headers=headers)


def wait_for(daemon, path, expected, seconds=20):
    deadline = time.monotonic() + seconds
    while (got := requests.get(daemon.url(path)).json()) != expected:
        assert time.monotonic() < deadline, (path, got, daemon.log_tail(2000))
        time.sleep(0.05)


def test_writes_run_in_order_when_the_client_process_is_killed(daemon):
    requests.put(daemon.url("/presence"), data=json.dumps({"a": "online", "b": "here", "c": "keep", "locked": "x"})).raise_for_status()
    # /presence/locked may be written until /lockdown exists; /presence/never not at all.
    write_rule = "$k != 'never' && ($k != 'locked' || !root.child('lockdown').exists())"
    requests.put(daemon.base_url + "/.settings/rules.json", data=json.dumps(
        {"rules": {".read": True, "presence": {"$k": {".write": write_rule}}}})).raise_for_status()
    # The connection belongs to a separate process that dies with its socket open.
    script = f"""
import socket, sys, time
s = socket.create_connection(("127.0.0.1", {daemon.port}))
s.sendall(b"GET /.ondisconnect.json HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nAccept: text/event-stream\\r\\n\\r\\n")
seen = b""
while b"\\r\\n\\r\\n" not in seen: seen += s.recv(4096)
for line in seen.split(b"\\r\\n"):
    if line.lower().startswith(b"x-eddy-connection:"): print(line.split(b":", 1)[1].strip().decode(), flush=True)
time.sleep(600)
"""
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        connection_id = child.stdout.readline().strip()
        assert len(connection_id) == 32, connection_id
        answers = [
            register(daemon, connection_id, {"op": "set", "path": "/presence/a", "value": "offline"}),
            register(daemon, connection_id, {"op": "remove", "path": "/presence/b"}),
            register(daemon, connection_id, {"op": "update", "path": "/presence", "value": {"seen": {".sv": "timestamp"}, "n": 1}}),
            register(daemon, connection_id, {"op": "set", "path": "/presence/c", "value": "changed"}),
            register(daemon, connection_id, {"op": "set", "path": "/presence/locked", "value": "denied when it runs"}),
            register(daemon, connection_id, {"op": "set", "path": "/presence/a", "value": "offline at last"}),
        ]
        assert [(r.status_code, r.json()) for r in answers] == [(200, None)] * 6
        cancel = register(daemon, connection_id, {"op": "cancel", "path": "/presence/c"})
        assert (cancel.status_code, cancel.json()) == (200, {"cancelled": 1})
        bad = register(daemon, connection_id, {"op": "set", "path": "/presence/bad", "value": {"a.b": 1}})
        assert bad.status_code == 400 and '"a.b"' in bad.json()["error"]
        push = register(daemon, connection_id, {"op": "push", "path": "/presence", "value": 1})
        assert push.status_code == 400 and "push" in push.json()["error"]
        # Firebase checks an onDisconnect write's rules when it is registered.
        never = register(daemon, connection_id, {"op": "set", "path": "/presence/never", "value": "denied when registered"})
        assert never.status_code == 401 and never.json() == {"error": "Permission denied"}, never.text
        # Registered, not run; now the rules deny /presence/locked.
        assert requests.get(daemon.url("/presence/a")).json() == "online"
        requests.put(daemon.url("/lockdown"), headers={"Authorization": "Bearer owner"}, data="true").raise_for_status()
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    # The rules refuse the one write of the whole list (/presence/locked), so its parts are made
    # one at a time in path order: /presence/seen is the last of them.
    deadline = time.monotonic() + 20
    while "seen" not in (after := requests.get(daemon.url("/presence")).json()):
        assert time.monotonic() < deadline, (after, daemon.log_tail(2000))
        time.sleep(0.05)
    assert after["a"] == "offline at last"
    assert "b" not in after and after["c"] == "keep" and after["n"] == 1 and "bad" not in after
    assert abs(after["seen"] / 1000 - time.time()) < 60
    assert after["locked"] == "x", "the rules are checked when the write runs"
    assert "never" not in after
    assert "an onDisconnect write was not made" in daemon.log_tail(4000)
    # The connection is gone: nothing more registers on it.
    late = register(daemon, connection_id, {"op": "set", "path": "/presence/a", "value": 1})
    assert late.status_code == 404 and connection_id in late.json()["error"]


def test_a_closed_socket_ends_the_connection_and_namespaces_are_kept(daemon):
    connection = Connection(daemon, ns="team-a")
    assert register(daemon, connection.id, {"op": "set", "path": "/who", "value": "gone"}, ns="team-a").status_code == 200
    connection.close()
    deadline = time.monotonic() + 20
    while requests.get(daemon.url("/who", ns="team-a")).json() != "gone":
        assert time.monotonic() < deadline, daemon.log_tail(2000)
        time.sleep(0.05)
    assert requests.get(daemon.url("/who")).json() is None, "written in the namespace it was registered for"


def test_the_rules_are_checked_for_the_identity_that_registered(daemon):
    rules = {"rules": {".read": True, "status": {"$uid": {".write": "$uid === auth.uid"}}}}
    assert requests.put(daemon.base_url + "/.settings/rules.json", headers={"Authorization": "Bearer owner"}, data=json.dumps(rules)).status_code == 200
    alice = {"Authorization": "Bearer " + unsigned({"sub": "alice", "user_id": "alice"})}
    connection = Connection(daemon)
    # Checked at registration (Firebase tells the client at once) for the registering identity...
    bob = register(daemon, connection.id, {"op": "set", "path": "/status/bob", "value": "offline"}, headers=alice)
    assert bob.status_code == 401 and bob.json() == {"error": "Permission denied"}, bob.text
    # ...and run with it: the connection itself carries no identity, so an anonymous run would be denied.
    assert register(daemon, connection.id, {"op": "set", "path": "/status/alice", "value": "offline"}, headers=alice).status_code == 200
    connection.close()
    wait_for(daemon, "/status/alice", "offline")
    assert requests.get(daemon.url("/status/bob")).json() is None


def test_registrations_are_validated_and_bounded(daemon):
    connection = Connection(daemon)
    url = daemon.base_url + f"/.ondisconnect/{connection.id}.json"
    assert requests.get(daemon.base_url + "/.ondisconnect.json").status_code == 400, "a plain GET opens nothing"
    assert requests.put(url, data="{}").status_code == 405
    assert requests.post(url, data="").status_code == 400
    assert requests.post(url, data="[1]").status_code == 400
    assert requests.post(url, data=json.dumps({"op": "set", "path": "/a/.b", "value": 1})).status_code == 400
    unknown = register(daemon, "0" * 32, {"op": "set", "path": "/a", "value": 1})
    assert unknown.status_code == 404
    with requests.Session() as session:
        for i in range(1000):
            r = session.post(url, data=json.dumps({"op": "set", "path": f"/bounded/{i}", "value": i}))
            assert r.status_code == 200, r.text
        over = session.post(url, data=json.dumps({"op": "set", "path": "/bounded/x", "value": 1}))
        assert over.status_code == 400 and "onDisconnectCountMax" in over.json()["error"]
        cancelled = session.post(url, data=json.dumps({"op": "cancel", "path": "/bounded"}))
        assert cancelled.json() == {"cancelled": 1000}
    connection.close()
    time.sleep(0.5)
    assert requests.get(daemon.url("/bounded")).json() is None, "cancelled writes do not run"


def test_writes_run_when_eddyd_stops(daemon):
    connection = Connection(daemon)
    assert register(daemon, connection.id, {"op": "set", "path": "/stopped", "value": "ran"}).status_code == 200
    daemon.stop()
    daemon.start()
    assert requests.get(daemon.url("/stopped")).json() == "ran", daemon.log_tail(2000)
    connection.close()
