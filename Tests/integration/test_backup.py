"""Online backup and restore against real eddyd processes: `eddy backup` under concurrent writes
(every write acknowledged before the backup began is in it, nothing after its last log id is),
incremental backups that hard-link unchanged SST files, `--list` and `--verify` (which finds a
damaged file), `eddy restore` onto an empty data directory (verifies clean, keeps the database id
and log position), a follower that resumes from a restored leader without a snapshot, and the
refusals: no daemon, a non-empty target, a non-admin once credentials are configured."""

import json
import os
import threading
import time
from pathlib import Path

import requests

from conftest import follower_of, run_eddy
from test_replication import digest_and_verify, status, wait_caught_up

LOG_ID = "X-Eddy-Log-ID"


def backup(daemon, to, *extra, check=True):
    return run_eddy("backup", "--data", daemon.data_dir, "--to", to, *extra, check=check)


def newest(to):
    names = sorted(n for n in os.listdir(to) if not n.startswith("."))
    return Path(to) / names[-1]


def test_backup_under_writes_restores_exactly_up_to_its_last_id(daemon_factory, tmp_path):
    leader = daemon_factory()
    acknowledged = []  # (log id, key)
    stop = threading.Event()

    def writer():
        session = requests.Session()
        i = 0
        while not stop.is_set():
            r = session.post(leader.url("/w"), data=json.dumps({"i": i}))
            assert r.status_code == 200, r.text
            acknowledged.append((r.headers[LOG_ID], r.json()["name"]))
            i += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        time.sleep(0.5)
        before = list(acknowledged)
        result = backup(leader, tmp_path / "backups")
        time.sleep(0.3)
    finally:
        stop.set()
        thread.join()
    assert b"namespace default" in result.stdout
    manifest = json.loads((newest(tmp_path / "backups") / "backup.json").read_text())
    last = manifest["namespaces"]["default"]["last"]
    restored = tmp_path / "restored"
    out = run_eddy("restore", "--from", tmp_path / "backups", "--data", restored).stdout.decode()
    assert "restored" in out and "OK" in out
    tree = json.loads(run_eddy("get", "/w", "--data", restored).stdout)
    keys = set(tree)
    assert before and all(key in keys for _, key in before), "a write acknowledged before the backup is missing"
    assert all((key in keys) == (log_id <= last) for log_id, key in acknowledged), "the restore is not exactly the log up to its last id"
    # Same database, same log position.
    assert json.loads(run_eddy("log", "--data", restored).stdout.splitlines()[-1])["id"] == last


def test_incremental_backups_link_unchanged_files_and_verify(daemon_factory, tmp_path):
    leader = daemon_factory()
    session = requests.Session()
    for i in range(300):
        session.put(leader.url(f"/a/k{i}"), data=json.dumps({"v": "x" * 200}))
    to = tmp_path / "backups"
    backup(leader, to)
    first = newest(to)
    session.put(leader.url("/b"), data="1")
    backup(leader, to)
    second = newest(to)
    assert first != second
    shared = [f for f in os.listdir(first / "default") if f.endswith(".sst") and (second / "default" / f).exists()]
    assert shared, "the second backup shares no SST with the first"
    assert all(os.stat(first / "default" / f).st_ino == os.stat(second / "default" / f).st_ino for f in shared)
    listing = run_eddy("backup", "--list", "--to", to).stdout.decode().splitlines()
    assert [line.split()[0] for line in listing] == [first.name, second.name]
    assert b"verified" in run_eddy("backup", "--verify", "--to", to).stdout
    # A damaged file: --verify says so and exits 3.
    victim = next(f for f in sorted(os.listdir(second / "default")) if f.startswith("MANIFEST"))
    with open(second / "default" / victim, "ab") as f:
        f.write(b"garbage")
    result = run_eddy("backup", "--verify", "--to", to, "--name", second.name, check=False)
    assert result.returncode == 3 and b"PROBLEM" in result.stdout
    # A name is a backup of --to, never a path out of it.
    before = sorted(os.listdir(to)), sorted(os.listdir(os.path.dirname(to)))
    for name in (f"../{os.path.basename(to)}/{second.name}", "nope", ".partial-x"):
        result = run_eddy("backup", "--verify", "--to", to, "--name", name, check=False)
        assert result.returncode == 1 and b"no backup named" in result.stderr, result
    assert (sorted(os.listdir(to)), sorted(os.listdir(os.path.dirname(to)))) == before


def test_a_follower_resumes_from_a_restored_leader(daemon_factory, tmp_path):
    leader = daemon_factory()
    follower = follower_of(daemon_factory, leader)
    for i in range(50):
        requests.post(leader.url("/f"), data=json.dumps({"i": i}))
    wait_caught_up(leader, follower)
    backup(leader, tmp_path / "backups")
    leader.stop()
    follower.stop()
    restored = tmp_path / "restored" / "data"
    run_eddy("restore", "--from", tmp_path / "backups", "--data", restored)
    new_leader = daemon_factory(data_dir=restored)
    assert requests.get(new_leader.base_url + "/.status.json").json()["databaseId"] == json.loads((newest(tmp_path / "backups") / "backup.json").read_text())["namespaces"]["default"]["databaseId"]
    follower.args = ["--leader", os.path.join(new_leader.data_dir, "replication.sock")]
    follower.start()
    for i in range(20):
        requests.post(new_leader.url("/f"), data=json.dumps({"after": i}))
    wait_caught_up(new_leader, follower)
    assert "bootstrapped from a snapshot" not in open(follower.log_path).read()
    new_leader.stop()
    follower.stop()
    assert digest_and_verify(follower) == digest_and_verify(new_leader)


def test_refusals(daemon_factory, tmp_path):
    # No daemon: a clear message naming the socket.
    result = run_eddy("backup", "--data", tmp_path / "nothing", "--to", tmp_path / "b", check=False)
    assert result.returncode == 1 and b"no daemon answers" in result.stderr
    # A non-empty target.
    leader = daemon_factory()
    requests.put(leader.url("/x"), data="1")
    backup(leader, tmp_path / "b")
    result = run_eddy("restore", "--from", tmp_path / "b", "--data", leader.data_dir, check=False)
    assert result.returncode == 1 and b"already exists" in result.stderr
    # Credentials configured: the admin's only.
    admin = tmp_path / "admin"
    admin.write_text("backup-admin-secret-0123456789")
    secured = daemon_factory("--admin-token-file", str(admin))
    result = backup(secured, tmp_path / "c", check=False)
    assert result.returncode == 1 and b"admin" in result.stderr
    backup(secured, tmp_path / "c", "--admin-token-file", admin)
    assert not any(n.startswith(".") for n in os.listdir(tmp_path / "c"))
    # The daemon's checkpoint is gone once the backup is copied.
    assert os.listdir(Path(secured.data_dir) / ".checkpoints") == []


def test_point_in_time_restore_replays_the_log_up_to_a_chosen_id(daemon_factory, tmp_path):
    leader = daemon_factory()
    session = requests.Session()
    early = None
    for i in range(20):
        r = session.put(leader.url(f"/p/k{i}"), data=str(i))
        early = early or r.headers[LOG_ID]
    backup(leader, tmp_path / "backups")
    after = []
    for i in range(30):
        r = session.put(leader.url(f"/p/k{i}"), data=str(100 + i))
        after.append(r.headers[LOG_ID])
    chosen = after[14]  # the 15th write after the backup
    # The leader still runs: its log is read beside it.
    out = run_eddy("restore", "--from", tmp_path / "backups", "--data", tmp_path / "pitr", "--until", chosen, "--log-from", leader.data_dir).stdout
    assert b"replayed 15 log entries" in out and b"OK" in out
    restored = json.loads(run_eddy("get", "/p", "--data", tmp_path / "pitr").stdout)
    assert restored == {f"k{i}": (100 + i if i < 15 else i) for i in range(20)}
    assert json.loads(run_eddy("log", "--data", tmp_path / "pitr").stdout.splitlines()[-1])["id"] == chosen
    # Another database's log is refused; so is --until before the backup.
    other = daemon_factory()
    requests.put(other.url("/x"), data="1")
    result = run_eddy("restore", "--from", tmp_path / "backups", "--data", tmp_path / "pitr2", "--until", chosen, "--log-from", other.data_dir, check=False)
    assert result.returncode == 1 and b"is the log of database" in result.stderr
    result = run_eddy("restore", "--from", tmp_path / "backups", "--data", tmp_path / "pitr3", "--until", early, "--log-from", leader.data_dir, check=False)
    assert result.returncode == 1 and b"restore an older backup" in result.stderr
    # A refused restore leaves nothing behind: the same directory takes a good one next.
    for refused in ("pitr2", "pitr3"):
        assert not (tmp_path / refused / "default").exists(), f"{refused} holds files of a refused restore"
    out = run_eddy("restore", "--from", tmp_path / "backups", "--data", tmp_path / "pitr3", "--until", chosen, "--log-from", leader.data_dir).stdout
    assert b"replayed 15 log entries" in out
