"""The kill -9 loop of the reliability suite (issue 11): N cycles (`EDDY_KILL_CYCLES`, 5 inside
`make test`, 50 in `make test-reliability`) of concurrent writers over HTTP and the native
socket, against a leader (durability sync) with indexes declared and a follower attached. Each
cycle SIGKILLs the leader at a random moment of the writes (and, one cycle in three, the
follower too); then, with the leader down, `eddy verify` must be clean; after the restart every
acknowledged write is served (pushes exactly, counters at least at their last acknowledged
value and never beyond the last attempted one, nothing that was never sent), the indexed
queries agree with the tree, and the follower, caught up, has the leader's digest (tree, index
entries and log). Seeded (`EDDY_SEED`); thread interleavings are not reproducible."""

import json
import os
import random
import socket
import struct
import threading
import time

import requests

from conftest import follower_of, put_rules, run_eddy, wait_for_indexes
from test_native import WRITE, WRITTEN

CYCLES = int(os.environ.get("EDDY_KILL_CYCLES", "5"))
HTTP_WRITERS = 3
NATIVE_WRITERS = 3


class Gate:
    """Writers pass while open; `close()` returns once every writer is parked at the gate."""

    def __init__(self, writers):
        self.open_event = threading.Event()
        self.open_event.set()
        self.parked = threading.Semaphore(0)
        self.writers = writers

    def passage(self, stop):
        if self.open_event.is_set():
            return
        self.parked.release()
        while not self.open_event.wait(0.05):
            if stop.is_set():
                return

    def close(self):
        self.open_event.clear()
        for _ in range(self.writers):
            assert self.parked.acquire(timeout=60), "a writer did not park at the gate"

    def open(self):
        self.open_event.set()


class Writer(threading.Thread):
    """Pushes {writer, seq, payload} to /pushes and counts /counters/<name> up; records what it
    attempted and, only after an acknowledgement, what was acknowledged."""

    def __init__(self, name, seed, stop, gate):
        super().__init__(name=name, daemon=True)
        self.rng = random.Random(f"{seed}/{name}")
        self.stop_event, self.gate = stop, gate
        self.acked_pushes = {}  # push name -> value
        self.attempted_pushes = {}  # seq -> value
        self.last_acked_counter = 0
        self.last_attempted_counter = 0
        self.acked = 0
        self.failed = 0
        self.error = None

    def run(self):
        try:
            seq = 0
            while not self.stop_event.is_set():
                self.gate.passage(self.stop_event)
                if self.stop_event.is_set():
                    break
                if self.rng.random() < 0.6:
                    seq += 1
                    value = {"writer": self.name, "seq": seq, "payload": "%08x" % self.rng.getrandbits(32)}
                    self.attempted_pushes[seq] = value
                    name = self.push(value)
                    if name is not None:
                        self.acked_pushes[name] = value
                        self.acked += 1
                else:
                    counter = self.last_attempted_counter + 1
                    self.last_attempted_counter = counter
                    if self.set_counter(counter):
                        self.last_acked_counter = counter
                        self.acked += 1
        except BaseException as e:  # reported by the test
            self.error = e


class HTTPWriter(Writer):
    def __init__(self, leader, *args):
        super().__init__(*args)
        self.leader = leader
        self.session = requests.Session()

    def request(self, method, path, value):
        try:
            r = self.session.request(method, f"{self.leader.base_url}{path}", data=json.dumps(value), timeout=(2, 10))
        except requests.RequestException:
            self.session = requests.Session()
            self.failed += 1
            time.sleep(0.02)
            return None
        if r.status_code != 200:
            self.failed += 1
            return None
        return r.json()

    def push(self, value):
        answer = self.request("POST", "/pushes.json", value)
        return answer and answer["name"]

    def set_counter(self, counter):
        # A multi-path update, so updates are crashed mid-flight too.
        return self.request("PATCH", "/counters.json", {self.name: counter, f"seen/{self.name}": True}) is not None


class NativeWriter(Writer):
    def __init__(self, leader, *args):
        super().__init__(*args)
        self.leader = leader
        self.sock = None
        self.buf = b""
        self.request_id = 0

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(10)
        self.sock.connect(os.path.join(self.leader.data_dir, "eddyd.sock"))
        self.buf = b""

    def write(self, payload):
        """The `written` answer, or None when the write failed or its answer was lost."""
        try:
            if self.sock is None:
                self.connect()
            self.request_id += 1
            body = json.dumps(payload).encode()
            self.sock.sendall(struct.pack(">IBBQ", 10 + len(body), 2, WRITE, self.request_id) + body)
            while True:
                if len(self.buf) >= 4:
                    (n,) = struct.unpack(">I", self.buf[:4])
                    if len(self.buf) >= 4 + n:
                        _, kind, rid = struct.unpack(">BBQ", self.buf[4:14])
                        answer = json.loads(self.buf[14 : 4 + n])
                        self.buf = self.buf[4 + n :]
                        assert rid == self.request_id, (rid, self.request_id)
                        if kind != WRITTEN:
                            self.failed += 1
                            return None
                        return answer
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise ConnectionError("closed")
                self.buf += chunk
        except OSError:
            if self.sock is not None:
                self.sock.close()
            self.sock = None
            self.failed += 1
            time.sleep(0.02)
            return None

    def push(self, value):
        answer = self.write({"op": "push", "path": "/pushes", "value": value})
        return answer and answer["name"]

    def set_counter(self, counter):
        return self.write({"op": "set", "path": f"/counters/{self.name}", "value": counter}) is not None


def digest(daemon):
    return json.loads(run_eddy("digest", "--data", daemon.data_dir).stdout)


def last_log_id(daemon):
    return requests.get(daemon.base_url + "/.status.json", timeout=10).json()["last"]


def wait_caught_up(leader, follower, timeout=60):
    last = last_log_id(leader)
    deadline = time.monotonic() + timeout
    while True:
        applied = requests.get(follower.base_url + "/.settings/followers.json", timeout=10).json()["applied"]
        if applied == last:
            return last
        assert time.monotonic() < deadline, f"the follower did not reach {last}: {applied}; {follower.log_tail(1500)}"
        time.sleep(0.05)


def check_served(leader, writers, cycle):
    pushes = requests.get(leader.url("/pushes"), timeout=60).json() or {}
    counters = requests.get(leader.url("/counters"), timeout=60).json() or {}
    attempted = {(w.name, seq): value for w in writers for seq, value in w.attempted_pushes.items()}
    for name, value in pushes.items():
        assert attempted.get((value.get("writer"), value.get("seq"))) == value, f"cycle {cycle}: {name}={value} was never sent"
    assert len({(v["writer"], v["seq"]) for v in pushes.values()}) == len(pushes), f"cycle {cycle}: a push applied twice"
    for w in writers:
        for name, value in w.acked_pushes.items():
            assert pushes.get(name) == value, f"cycle {cycle}: acknowledged push {name} of {w.name} lost: {pushes.get(name)}"
        on_disk = counters.get(w.name)
        if w.last_acked_counter:
            assert on_disk is not None and w.last_acked_counter <= on_disk <= w.last_attempted_counter, (
                f"cycle {cycle}: {w.name} counter {on_disk}, acknowledged {w.last_acked_counter}, attempted {w.last_attempted_counter}"
            )
    # The indexes serve exactly what the tree holds.
    for w in writers[:2]:
        by_writer = requests.get(leader.url("/pushes", orderBy='"writer"', equalTo=json.dumps(w.name)), timeout=60).json() or {}
        assert by_writer == {k: v for k, v in pushes.items() if v["writer"] == w.name}, f"cycle {cycle}: index on writer"
    first = requests.get(leader.url("/pushes", orderBy='"seq"', limitToFirst=5), timeout=60).json() or {}
    expected = sorted(pushes.items(), key=lambda kv: (kv[1]["seq"], kv[0]))[:5]
    assert first == dict(expected), f"cycle {cycle}: index on seq"
    return len(pushes)


def test_kill_loop_with_http_and_native_writers_indexes_and_a_follower(daemon_factory):
    seed = int(os.environ.get("EDDY_SEED") or random.SystemRandom().randrange(1 << 31))
    print(f"\nkill loop: {CYCLES} cycles, seed {seed} (replay with EDDY_SEED={seed})")
    rng = random.Random(seed)
    leader = daemon_factory("--durability", "sync")
    put_rules(leader, {"rules": {"pushes": {".indexOn": ["writer", "seq"]}}})
    wait_for_indexes(leader)
    follower = follower_of(daemon_factory, leader)
    stop = threading.Event()
    gate = Gate(HTTP_WRITERS + NATIVE_WRITERS)
    writers = [HTTPWriter(leader, f"h{i}", seed, stop, gate) for i in range(HTTP_WRITERS)]
    writers += [NativeWriter(leader, f"n{i}", seed, stop, gate) for i in range(NATIVE_WRITERS)]
    for w in writers:
        w.start()
    acked_per_cycle, follower_kills = [], 0
    try:
        for cycle in range(1, CYCLES + 1):
            acked_before = sum(w.acked for w in writers)
            stretch = rng.uniform(0.3, 1.5)
            kill_follower_at = rng.uniform(0, stretch) if rng.random() < 1 / 3 else None
            started = time.monotonic()
            if kill_follower_at is not None:
                time.sleep(kill_follower_at)
                follower.kill()
                follower_kills += 1
            time.sleep(max(0.0, stretch - (time.monotonic() - started)))
            leader.kill()
            gate.close()  # writers park after their in-flight request failed
            acked_per_cycle.append(sum(w.acked for w in writers) - acked_before)
            verify = run_eddy("verify", "--data", leader.data_dir, check=False)
            assert verify.returncode == 0, f"cycle {cycle}: eddy verify after kill -9: {verify.stdout!r} {verify.stderr!r}"
            leader_digest = digest(leader)
            leader.start()
            if not follower.running:
                follower.start()
            check_served(leader, writers, cycle)
            wait_caught_up(leader, follower)
            follower.stop()
            follower_digest = digest(follower)
            assert follower_digest == leader_digest, f"cycle {cycle}: follower {follower_digest} != leader {leader_digest}"
            follower.start()
            gate.open()
    finally:
        stop.set()
        gate.open()
        for w in writers:
            w.join(timeout=30)
    for w in writers:
        assert w.error is None, f"{w.name}: {w.error!r}"
    total_acked = sum(w.acked for w in writers)
    served = check_served(leader, writers, "final")
    print(
        f"kill loop: {CYCLES} leader kills, {follower_kills} follower kills, {total_acked} acknowledged writes"
        f" ({served} pushes), lost 0; acknowledged per cycle {acked_per_cycle}; refused or cut {sum(w.failed for w in writers)}"
    )
    assert all(n > 0 for n in acked_per_cycle), f"a cycle acknowledged no write: {acked_per_cycle}"
