"""Shared fixtures for the Eddy integration tests: real `eddyd` processes on free ports in
temporary directories, and the offline `eddy` CLI.

Binaries: `$EDDYD` / `$EDDY`, else `<repo>/.build/debug/eddyd` / `<repo>/.build/debug/eddy`
(build them with `swift build --product eddyd --product eddy`).
"""

import json
import os
import queue
import re
import signal
import socket
import subprocess
import threading
import time
import urllib.parse
import uuid
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EDDYD = os.environ.get("EDDYD") or str(REPO / ".build" / "debug" / "eddyd")
EDDY = os.environ.get("EDDY") or str(REPO / ".build" / "debug" / "eddy")

READY_TIMEOUT = 30.0
STOP_TIMEOUT = 30.0
LISTENING = re.compile(r"eddyd: listening on (https?://\S+?:(\d+))\b")
NATIVE_TCP = re.compile(r"eddyd: native protocol on tcp://(\S+)")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: long-running test (still run by default)")


class Daemon:
    """One `eddyd serve` process over a data directory. `restart()` reuses the directory; the
    port may change on every start (it binds port 0), so read `base_url` after each start."""

    def __init__(self, data_dir, args=(), log_path=None, command="serve"):
        self.data_dir = str(data_dir)
        self.args = list(args)
        self.command = command
        self.log_path = str(log_path or (Path(self.data_dir).parent / (Path(self.data_dir).name + ".eddyd.log")))
        self.process = None
        self.base_url = None
        self.port = None
        self.native_tcp = None  # HOST:PORT with --native-listen
        self.starts = 0

    # -- lifecycle -------------------------------------------------------------------------

    def start(self):
        assert self.process is None or self.process.poll() is not None, "daemon already running"
        if not os.access(EDDYD, os.X_OK):
            pytest.fail(f"eddyd binary not found at {EDDYD}; build it or set $EDDYD")
        log = open(self.log_path, "ab")
        log.write(f"\n==== start #{self.starts + 1}: {self.args}\n".encode())
        log.flush()
        cmd = [EDDYD, self.command, "--data", self.data_dir, "--http", "127.0.0.1:0", *self.args]
        self.process = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL)
        log.close()
        self.starts += 1
        lines = queue.Queue()

        def pump(stream):
            for raw in iter(stream.readline, b""):
                lines.put(raw.decode("utf-8", "replace"))
            lines.put(None)

        threading.Thread(target=pump, args=(self.process.stdout,), daemon=True).start()
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.kill()
                pytest.fail(f"eddyd did not print its listening line within {READY_TIMEOUT} s; log: {self.log_tail()}")
            try:
                line = lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                code = self.process.wait()
                self.process = None
                pytest.fail(f"eddyd exited with {code} before listening; log: {self.log_tail()}")
            native = NATIVE_TCP.search(line)
            if native:
                self.native_tcp = native.group(1)
            match = LISTENING.search(line)
            if match:
                self.base_url = match.group(1)
                self.port = int(match.group(2))
                return self

    @property
    def running(self):
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout=STOP_TIMEOUT):
        """SIGTERM, wait, and assert a clean exit (status 0)."""
        assert self.process is not None, "daemon not started"
        self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            pytest.fail(f"eddyd did not exit within {timeout} s of SIGTERM; log: {self.log_tail()}")
        self.process = None
        assert code == 0, f"eddyd exited with {code} after SIGTERM; log: {self.log_tail()}"

    def kill(self):
        """SIGKILL: no drain, no cleanup (a crash)."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        self.process = None

    def restart(self):
        if self.running:
            self.stop()
        return self.start()

    def log_tail(self, size=4000):
        try:
            with open(self.log_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - size))
                return f.read().decode("utf-8", "replace")
        except OSError:
            return "(no log)"

    # -- helpers ---------------------------------------------------------------------------

    def url(self, path, **params):
        """`/a/b` -> `http://host:port/a/b.json?params` (path used as given, not encoded)."""
        path = "/" + path.strip("/")
        url = self.base_url + (path if path != "/" else "") + ("/.json" if path == "/" else ".json")
        if params:
            url += "?" + urllib.parse.urlencode(params)
        return url


class DaemonFactory:
    def __init__(self, tmp_path_factory):
        self.tmp_path_factory = tmp_path_factory
        self.daemons = []

    def __call__(self, *args, data_dir=None, start=True, command="serve"):
        if data_dir is None:
            data_dir = self.tmp_path_factory.mktemp("eddy") / "data"
        daemon = Daemon(data_dir, args, command=command)
        self.daemons.append(daemon)
        if start:
            daemon.start()
        return daemon

    def cleanup(self):
        for daemon in self.daemons:
            daemon.kill()


@pytest.fixture
def daemon_factory(tmp_path_factory):
    """Starts daemons with custom flags: `daemon_factory("--durability", "none")`."""
    factory = DaemonFactory(tmp_path_factory)
    yield factory
    factory.cleanup()


def follower_of(factory, leader, *args, name=None, start=True):
    """An `eddyd follow` of `leader` (a Daemon) in a new data directory."""
    extra = ["--name", name] if name else []
    return factory("--leader", os.path.join(leader.data_dir, "replication.sock"), *extra, *args, start=start, command="follow")


@pytest.fixture
def daemon(daemon_factory):
    """A fresh daemon (default flags) for one test."""
    return daemon_factory()


@pytest.fixture(scope="module")
def module_daemon_factory(tmp_path_factory):
    factory = DaemonFactory(tmp_path_factory)
    yield factory
    factory.cleanup()


@pytest.fixture(scope="module")
def module_daemon(module_daemon_factory):
    """One daemon shared by a test module (tests use distinct paths)."""
    return module_daemon_factory()


def conversation(daemon, raw, timeout=15):
    """Sends `raw` on one HTTP connection to `daemon` and reads until the server closes it (or
    `timeout`): for requests no HTTP library would send (pipelined, broken, HTTP/1.0)."""
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=timeout) as s:
        s.sendall(raw)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return data
            data += chunk


def pause_process(pid, timeout=5.0):
    """SIGSTOP `pid` and return once every thread of it is stopped (state T in
    /proc/PID/task/*/stat). kill() only queues the signal: one thread starts the group stop when
    it next runs, and on a loaded machine the others can go on for milliseconds meanwhile (and
    answer what was sent right after kill())."""
    os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = []
        try:
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/stat") as stat:
                    states.append(stat.read().rsplit(")", 1)[1].split()[0])
        except (FileNotFoundError, ProcessLookupError, IndexError):
            states = []
        if states and all(state == "T" for state in states):
            return
        time.sleep(0.001)
    raise AssertionError(f"process {pid} did not stop within {timeout} s of SIGSTOP")


# -- the offline CLI ------------------------------------------------------------------------


def run_eddy(*args, check=True, timeout=120):
    if not os.access(EDDY, os.X_OK):
        pytest.fail(f"eddy binary not found at {EDDY}; build it or set $EDDY")
    result = subprocess.run([EDDY, *map(str, args)], capture_output=True, timeout=timeout)
    if check:
        assert result.returncode == 0, (
            f"eddy {' '.join(map(str, args))} exited {result.returncode}: "
            f"{result.stderr.decode('utf-8', 'replace')}{result.stdout.decode('utf-8', 'replace')[-2000:]}"
        )
    return result


def eddy_log(data_dir, ns=None):
    """`eddy log` entries as dicts, oldest first."""
    args = ["log", "--data", data_dir] + (["--ns", ns] if ns else [])
    out = run_eddy(*args).stdout.decode("utf-8")
    return [json.loads(line) for line in out.splitlines() if line.strip()]


EMULATOR_ENV = "FIREBASE_DATABASE_EMULATOR_HOST"


@contextmanager
def firebase_app(port, ns, name_prefix="eddy", **options):
    """A firebase-admin app in emulator mode talking to the eddyd on `port`, namespace `ns`
    (`options`: more app options, e.g. databaseAuthVariableOverride)."""
    import firebase_admin
    from firebase_admin import db

    old = os.environ.get(EMULATOR_ENV)
    os.environ[EMULATOR_ENV] = f"127.0.0.1:{port}"
    app = firebase_admin.initialize_app(
        None, {"databaseURL": f"https://{ns}.firebaseio.com", **options}, name=f"{name_prefix}-{uuid.uuid4().hex}"
    )
    try:
        db.reference("/", app=app)  # the database service reads the environment variable now
        yield app
    finally:
        firebase_admin.delete_app(app)
        if old is None:
            os.environ.pop(EMULATOR_ENV, None)
        else:
            os.environ[EMULATOR_ENV] = old


# -- rules and indexes ----------------------------------------------------------------------


def settings_url(daemon, name, ns=None):
    """`http://host:port/.settings/<name>.json[?ns=NS]`."""
    return daemon.base_url + f"/.settings/{name}.json" + (f"?ns={ns}" if ns else "")


def open_access(document):
    """`document` with `".read": true, ".write": true` at the root unless it sets either there: the
    tests that declare indexes keep the database open to their unauthenticated requests (rules are
    enforced; a document of `.indexOn` alone denies every non-admin read, as in Firebase)."""
    rules = document.get("rules") if isinstance(document, dict) else None
    if not isinstance(rules, dict) or ".read" in rules or ".write" in rules:
        return document
    return {**document, "rules": {".read": True, ".write": True, **rules}}


def put_rules(daemon, document, ns=None, session=None):
    """PUT /.settings/rules.json (with `open_access`); asserts the 200 `{"status":"ok"}`."""
    import requests

    document = open_access(document)
    r = (session or requests).put(settings_url(daemon, "rules", ns), data=json.dumps(document), timeout=60)
    assert r.status_code == 200, (r.status_code, r.text)
    assert r.json() == {"status": "ok"}, r.text
    return r


def index_status(daemon, ns=None, session=None):
    """GET /.settings/indexes.json -> the list of index objects."""
    import requests

    r = (session or requests).get(settings_url(daemon, "indexes", ns), timeout=30)
    assert r.status_code == 200, (r.status_code, r.text)
    body = r.json()
    assert isinstance(body, dict) and list(body) == ["indexes"] and isinstance(body["indexes"], list), body
    return body["indexes"]


def wait_for_indexes(daemon, ns=None, timeout=60.0, session=None):
    """Polls /.settings/indexes.json until no index is building; returns the final list."""
    deadline = time.monotonic() + timeout
    while True:
        indexes = index_status(daemon, ns, session)
        if all(i.get("state") == "ready" for i in indexes):
            return indexes
        if time.monotonic() > deadline:
            pytest.fail(f"indexes still building after {timeout} s: {indexes}")
        time.sleep(0.05)
