"""A full data volume (issue 11, item 3): below `--disk-reserve-bytes` free, writes are refused
with `507 Insufficient Storage` naming the reserve, before RocksDB is touched; nothing refused
is applied, every acknowledged write stays readable, reads keep working, the daemon keeps
running, and writes resume by themselves once space is freed; start-up on a full volume opens
read-only (reads work, writes get 507 saying so) and a restart after freeing space writes again. Runs on a small tmpfs, so it needs root; skipped with a message otherwise."""

import base64
import os
import subprocess

import pytest
import requests

from conftest import Daemon


@pytest.fixture
def small_volume(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs for the data directory needs root")
    mount = tmp_path / "volume"
    mount.mkdir()
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)], capture_output=True)
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {result.stderr.decode().strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def test_a_full_volume_refuses_writes_with_507_and_they_resume_when_space_is_freed(small_volume, tmp_path):
    ballast = small_volume / "ballast"  # what an operator deletes to free space
    ballast.write_bytes(b"\0" * (4 << 20))
    daemon = Daemon(small_volume / "data", args=["--disk-reserve-bytes", str(6 << 20)], log_path=tmp_path / "eddyd.log")
    daemon.start()
    try:
        session = requests.Session()
        acknowledged = {}
        refused = None
        for i in range(400):  # 400 x 64 KiB of incompressible data: far more than the volume
            value = base64.b64encode(os.urandom(48 * 1024)).decode()
            r = session.put(daemon.url(f"/fill/k{i}"), data=f'"{value}"')
            if r.status_code == 200:
                acknowledged[f"k{i}"] = value
                continue
            refused = r
            break
        assert refused is not None, "the volume never reached the reserve"
        assert refused.status_code == 507, (refused.status_code, refused.text)
        message = refused.json()["error"]
        assert "below the reserve of 6291456 (--disk-reserve-bytes)" in message and "resume by themselves" in message
        r = session.put(daemon.url("/small"), data="1")
        assert r.status_code == 507, "later writes are refused the same way"
        assert session.get(daemon.url("/small")).json() is None, "nothing of a refused write is applied"
        for key, value in list(acknowledged.items())[-5:]:
            assert session.get(daemon.url(f"/fill/{key}")).json() == value, "reads keep working"
        assert daemon.running, "a full volume must not stop eddyd"
        # Space freed on the volume: writes resume by themselves, no restart.
        ballast.unlink()
        r = session.put(daemon.url("/after"), data="1")
        assert r.status_code == 200, r.text
        assert daemon.running
        daemon.stop()
        daemon.start()
        session = requests.Session()
        for key, value in acknowledged.items():
            assert session.get(daemon.url(f"/fill/{key}")).json() == value, f"acknowledged {key} lost"
        assert session.get(daemon.url("/after")).json() == 1
    finally:
        if daemon.running:
            daemon.stop()


def test_start_up_on_a_full_volume_serves_reads_and_refuses_writes(small_volume, tmp_path):
    data = small_volume / "data"
    daemon = Daemon(data, args=["--disk-reserve-bytes", "0"], log_path=tmp_path / "eddyd.log")
    daemon.start()
    assert requests.put(daemon.url("/kept"), data='"v"').status_code == 200
    daemon.stop()
    filler = small_volume / "filler"
    with open(filler, "wb") as f:  # fill the volume to the last block
        try:
            while True:
                f.write(b"\0" * (1 << 20))
                f.flush()
        except OSError:
            pass
    daemon = Daemon(data, args=["--disk-reserve-bytes", str(1 << 20)], log_path=tmp_path / "eddyd.log")
    daemon.start()
    try:
        assert requests.get(daemon.url("/kept")).json() == "v"
        r = requests.put(daemon.url("/new"), data="1")
        assert r.status_code == 507, r.text
        assert "started read-only" in r.json()["error"] and "--disk-reserve-bytes" in r.json()["error"]
        daemon.stop()
        assert "opened read-only: the data volume is full" in open(tmp_path / "eddyd.log").read()
        # A read-only start stays read-only; after space is freed, a restart writes again.
        filler.unlink()
        daemon.start()
        assert requests.put(daemon.url("/new"), data="1").status_code == 200
        assert requests.get(daemon.url("/kept")).json() == "v"
    finally:
        if daemon.running:
            daemon.stop()
