"""Replication with a secret: a follower without it (or with a wrong one) is refused and gets
nothing but the `refused` frame; with it, it follows; a forged `applied` frame (an id beyond what
was sent) disconnects that peer and never releases a `--sync-followers` write; a TCP replication
listener beyond loopback needs the secret to start."""

import json
import os
import socket
import struct
import subprocess

import requests

from conftest import EDDYD, follower_of
from test_replication import status, wait_caught_up

SECRET = "replication-secret-0123456789"
HELLO, WELCOME, REFUSED, APPLIED = 40, 41, 42, 45


def frame(kind, payload):
    body = json.dumps(payload).encode()
    return struct.pack(">IBBQ", 10 + len(body), 2, kind, 0) + body


def read_frames(sock, limit=3):
    buf = bytearray()
    frames = []
    sock.settimeout(10)
    while len(frames) < limit:
        chunk = sock.recv(65536)
        if not chunk:
            break
        buf += chunk
        while len(buf) >= 4:
            (n,) = struct.unpack(">I", buf[:4])
            if len(buf) < 4 + n:
                break
            kind = buf[5]
            frames.append((kind, bytes(buf[14 : 4 + n])))
            del buf[: 4 + n]
    return frames


def raw_peer(leader, hello):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(os.path.join(leader.data_dir, "replication.sock"))
    sock.sendall(frame(HELLO, hello))
    return sock


def hello(**extra):
    return {"protocol": 4, "ns": "default", "follower": "peer", "databaseID": None, "lastApplied": None, **extra}


def test_a_peer_without_the_secret_gets_nothing_but_a_refusal(daemon_factory, tmp_path):
    (tmp_path / "secret").write_text(SECRET)
    leader = daemon_factory("--replication-secret-file", str(tmp_path / "secret"))
    requests.put(leader.url("/private"), data='"data"')
    for offered in [None, "wrong-secret-0123456789"]:
        sock = raw_peer(leader, hello(**({} if offered is None else {"secret": offered})))
        frames = read_frames(sock)
        sock.close()
        assert [kind for kind, _ in frames] == [REFUSED], frames
        assert "replication secret" in json.loads(frames[0][1])["message"]
        assert b"data" not in frames[0][1]
    # A follower without the secret never gets the data; one with it follows.
    bad = follower_of(daemon_factory, leader, start=False)
    good = follower_of(daemon_factory, leader, "--replication-secret-file", str(tmp_path / "secret"))
    wait_caught_up(leader, good)
    assert requests.get(good.url("/private")).json() == "data"
    assert len(status(leader)["followers"]) == 1
    bad_run = subprocess.run(
        [EDDYD, "follow", "--leader", os.path.join(leader.data_dir, "replication.sock"), "--data", str(tmp_path / "bad"),
         "--http", "127.0.0.1:0"], capture_output=True, timeout=60)
    assert bad_run.returncode != 0 and b"replication secret" in bad_run.stderr, bad_run.stderr[-2000:]


def test_a_forged_applied_frame_does_not_release_a_sync_write(daemon_factory):
    leader = daemon_factory("--sync-followers", "1", "--sync-followers-timeout-ms", "1500")
    sock = raw_peer(leader, hello())
    kinds = [kind for kind, _ in read_frames(sock, limit=1)]
    assert kinds == [WELCOME]
    # Claim to have applied an entry far in the future, before the write exists.
    sock.sendall(frame(APPLIED, {"applied": "-zzzzzzzzzzzzzzzzzzz"}))
    r = requests.put(leader.url("/s"), data="1")
    assert r.status_code == 503 and "only 0 of the 1 followers" in r.json()["error"], r.text
    assert status(leader)["followers"] == {}, "the forging peer was disconnected"
    sock.close()


def test_tcp_replication_beyond_loopback_needs_the_secret(tmp_path):
    run = subprocess.run(
        [EDDYD, "serve", "--data", str(tmp_path / "d"), "--http", "127.0.0.1:0", "--replication-listen", "0.0.0.0:0",
         "--admin-token-file", "/dev/null"], capture_output=True, timeout=60)
    assert run.returncode != 0 and b"--replication-secret-file" in run.stderr, run.stderr[-2000:]
