"""A full data volume (issue 11, item 3): below `--disk-reserve-bytes` free, writes are refused
with `507 Insufficient Storage` naming the reserve, before RocksDB is touched; nothing refused
is applied, every acknowledged write stays readable, reads keep working, the daemon keeps
running, and writes resume by themselves once space is freed; start-up on a full volume opens
read-only (reads work, writes get 507 saying so, `/.status` reports the state) and a restart after freeing space writes again. Runs on a small tmpfs, so it needs root; skipped with a message otherwise."""

import base64
import os
import subprocess
import threading

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


def status(daemon):
    return requests.get(daemon.url("/.status")).json()


def next_event(lines):
    """The next SSE event's (name, data); keep-alives are skipped."""
    event, data = None, None
    for line in lines:
        if line.startswith("event: "):
            event = line[7:]
        elif line.startswith("data: "):
            data = line[6:]
        elif line == "" and event is not None:
            if event != "keep-alive":
                return event, data
            event, data = None, None
    raise AssertionError("the stream ended")


def fill_concurrently(daemon, writers=4):
    """Writers fill the volume at once until each is refused; returns ({key: value} acknowledged,
    the refusals). 64 KiB of incompressible data per write: far more in all than the volume."""
    acknowledged, refusals, lock = {}, [], threading.Lock()

    def writer(w):
        session = requests.Session()
        for i in range(400):
            key, value = f"w{w}k{i}", base64.b64encode(os.urandom(48 * 1024)).decode()
            r = session.put(daemon.url(f"/fill/{key}"), data=f'"{value}"')
            with lock:
                if r.status_code == 200:
                    acknowledged[key] = value
                    continue
                refusals.append(r)
            return

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return acknowledged, refusals


def test_a_full_volume_refuses_writes_with_507_and_they_resume_when_space_is_freed(small_volume, tmp_path):
    ballast = small_volume / "ballast"  # what an operator deletes to free space
    ballast.write_bytes(b"\0" * (4 << 20))
    daemon = Daemon(small_volume / "data", args=["--disk-reserve-bytes", str(6 << 20)], log_path=tmp_path / "eddyd.log")
    daemon.start()
    try:
        session = requests.Session()
        assert status(daemon)["state"] == "writable" and status(daemon)["writable"] is True
        acknowledged, refusals = fill_concurrently(daemon)
        assert len(refusals) == 4, "every writer reached the reserve"
        for refused in refusals:
            assert refused.status_code == 507, (refused.status_code, refused.text)
            message = refused.json()["error"]
            assert "(--disk-reserve-bytes)" in message and "resume by themselves" in message, message
        # Another program takes the volume below the reserve: now even the smallest write is refused.
        volume = os.statvfs(small_volume)
        available = volume.f_bavail * volume.f_frsize
        if available >= 5 << 20:
            (small_volume / "other-program").write_bytes(b"\0" * (available - (5 << 20)))
        r = session.put(daemon.url("/small"), data="1")
        assert r.status_code == 507, "below the reserve every write is refused"
        assert "below the reserve of 6291456 (--disk-reserve-bytes)" in r.json()["error"]
        assert session.get(daemon.url("/small")).json() is None, "nothing of a refused write is applied"
        for key, value in list(acknowledged.items())[-5:]:
            assert session.get(daemon.url(f"/fill/{key}")).json() == value, "reads keep working"
        query = session.get(daemon.url("/fill", orderBy='"$key"', limitToFirst=2))
        assert query.status_code == 200 and len(query.json()) == 2, "queries keep working"
        reported = status(daemon)
        assert reported["state"] == "diskFull" and reported["writable"] is False, reported
        assert "--disk-reserve-bytes" in reported["reason"] and reported["diskReserveBytes"] == 6 << 20
        # A live stream opened on the full volume hears the first write once space is back.
        stream = session.get(daemon.url("/after"), headers={"Accept": "text/event-stream"}, stream=True, timeout=10)
        assert stream.status_code == 200
        lines = stream.iter_lines(decode_unicode=True)
        assert next_event(lines) == ("put", '{"path":"/","data":null}')
        assert daemon.running, "a full volume must not stop eddyd"
        # Space freed on the volume: writes resume by themselves, no restart.
        ballast.unlink()
        if (small_volume / "other-program").exists():
            (small_volume / "other-program").unlink()
        r = requests.put(daemon.url("/after"), data="1")
        assert r.status_code == 200, r.text
        assert next_event(lines) == ("put", '{"path":"/","data":1}')
        stream.close()
        assert status(daemon)["state"] == "writable"
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
        reported = status(daemon)
        assert reported["state"] == "readOnly" and reported["writable"] is False, reported
        assert "started read-only" in reported["reason"]
        daemon.stop()
        assert "opened read-only: the data volume is full" in open(tmp_path / "eddyd.log").read()
        # A read-only start stays read-only; after space is freed, a restart writes again.
        filler.unlink()
        daemon.start()
        assert requests.put(daemon.url("/new"), data="1").status_code == 200
        assert requests.get(daemon.url("/kept")).json() == "v"
        assert status(daemon)["state"] == "writable"
    finally:
        if daemon.running:
            daemon.stop()
