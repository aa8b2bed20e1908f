"""Crash safety (DESIGN "Write path", "Testing"): SIGKILL eddyd (durability sync) while 8
writers push and overwrite counters, restart it, repeat 5 times; afterwards every acknowledged
write is there, nothing is half-applied, `eddy verify` passes and the log is ordered and
complete. Seeded: the seed is printed; `EDDY_SEED=<n>` replays the same kill schedule and
values (thread interleaving is not reproducible)."""

import os
import random
import threading
import time

import pytest
import requests

from conftest import eddy_log, run_eddy

WRITERS = 8
KILLS = 5
FIELDS = ("writer", "seq", "payload")


class Writer(threading.Thread):
    def __init__(self, index, daemon, seed, stop):
        super().__init__(name=f"writer-{index}", daemon=True)
        self.index = index
        self.d = daemon
        self.rng = random.Random(seed * 1000 + index)
        self.stop_event = stop
        self.acked_pushes = {}  # push name -> value, recorded only after a 200
        self.attempted_pushes = {}  # seq -> value, every push ever sent (acked or not)
        self.last_acked_counter = 0
        self.last_attempted_counter = 0
        self.acked_writes = 0
        self.failures = 0
        self.error = None

    def run(self):
        try:
            self.loop()
        except BaseException as e:  # reported by the test
            self.error = e

    def loop(self):
        session = requests.Session()
        seq = 0
        while not self.stop_event.is_set():
            base_url = self.d.base_url
            try:
                if self.rng.random() < 0.5:
                    seq += 1
                    value = {"writer": self.index, "seq": seq, "payload": "p%08x" % self.rng.getrandbits(32) * 3}
                    self.attempted_pushes[seq] = value
                    r = session.post(f"{base_url}/pushes.json", json=value, timeout=(2, 10))
                    if r.status_code == 200:
                        self.acked_pushes[r.json()["name"]] = value
                        self.acked_writes += 1
                    else:
                        self.failures += 1
                else:
                    counter = self.last_attempted_counter + 1  # never reuse a value: on disk it only grows
                    self.last_attempted_counter = counter
                    r = session.put(f"{base_url}/counters/w{self.index}.json", json=counter, timeout=(2, 10))
                    if r.status_code == 200:
                        assert r.json() == counter
                        self.last_acked_counter = counter
                        self.acked_writes += 1
                    else:
                        self.failures += 1
            except (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError):
                # the daemon died under us (or is restarting, or was killed between the answer's
                # head and its body): the write is unacknowledged
                self.failures += 1
                session.close()
                session = requests.Session()
                time.sleep(0.01)
        session.close()


@pytest.mark.slow
def test_sigkill_during_concurrent_writes(daemon_factory):
    seed = int(os.environ.get("EDDY_SEED") or random.SystemRandom().randrange(1 << 31))
    print(f"\ncrash test seed: {seed} (replay with EDDY_SEED={seed})")
    rng = random.Random(seed)
    d = daemon_factory("--durability", "sync")
    stop = threading.Event()
    writers = [Writer(i, d, seed, stop) for i in range(WRITERS)]
    for w in writers:
        w.start()

    acked_per_run = []
    try:
        for run in range(KILLS):
            acked_before = sum(w.acked_writes for w in writers)
            time.sleep(rng.uniform(0.2, 1.5))  # let the writers work; the kill comes at a random moment
            d.kill()
            acked_per_run.append(sum(w.acked_writes for w in writers) - acked_before)
            d.start()
        # a last stretch of writes on the final run
        deadline = time.monotonic() + 0.5
        while time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        for w in writers:
            w.join(timeout=30)
    for w in writers:
        assert w.error is None, f"{w.name}: {w.error!r}"
        assert not w.is_alive()
    print(f"acked writes per killed run: {acked_per_run}; failures: {sum(w.failures for w in writers)}")
    assert all(n > 0 for n in acked_per_run), f"a run acknowledged no write: {acked_per_run}"

    # -- what the restarted daemon serves --------------------------------------------------
    pushes = requests.get(d.url("/pushes"), timeout=30).json() or {}
    counters = requests.get(d.url("/counters"), timeout=30).json() or {}

    attempted_values = {}
    for w in writers:
        for seq, value in w.attempted_pushes.items():
            attempted_values[(w.index, seq)] = value
    for name, value in pushes.items():
        # no half-applied write: all three fields or nothing
        assert isinstance(value, dict) and set(value) == set(FIELDS), (name, value)
        # nothing that was never sent
        assert attempted_values.get((value["writer"], value["seq"])) == value, (name, value)
    assert len({(v["writer"], v["seq"]) for v in pushes.values()}) == len(pushes), "a push was applied twice"

    total_acked = 0
    for w in writers:
        for name, value in w.acked_pushes.items():
            assert pushes.get(name) == value, f"acknowledged push {name} of {w.name} lost or changed: {pushes.get(name)}"
        on_disk = counters.get(f"w{w.index}")
        if w.last_acked_counter == 0:
            assert on_disk is None or 1 <= on_disk <= w.last_attempted_counter
        else:
            assert on_disk is not None, f"{w.name}: acknowledged counter {w.last_acked_counter} lost"
            assert w.last_acked_counter <= on_disk <= w.last_attempted_counter, (
                w.name,
                on_disk,
                w.last_acked_counter,
                w.last_attempted_counter,
            )
        total_acked += w.acked_writes

    # -- offline checks ---------------------------------------------------------------------
    d.stop()
    verify = run_eddy("verify", "--data", d.data_dir)
    assert verify.returncode == 0
    entries = eddy_log(d.data_dir)
    ids = [e["id"] for e in entries]
    assert all(a < b for a, b in zip(ids, ids[1:])), "log ids are not strictly increasing across runs"
    assert len(entries) >= total_acked, (len(entries), total_acked)
    logged_pushes = {}
    last_logged_counter = {}
    for e in entries:
        assert e["kind"] in ("push", "set"), e
        if e["kind"] == "push":
            assert e["path"] == "/pushes"
            (path, value), = e["changes"].items()
            logged_pushes[path.rsplit("/", 1)[1]] = value
        else:
            (path, value), = e["changes"].items()
            assert path == e["path"] and path.startswith("/counters/w")
            last_logged_counter[path.rsplit("/", 1)[1]] = value
    # the log and the tree agree: every push on disk was logged with its value, and the last
    # logged value of each counter is the one on disk
    assert logged_pushes == pushes
    assert last_logged_counter == counters
    for w in writers:
        for name in w.acked_pushes:
            assert name in logged_pushes


@pytest.mark.slow
def test_sigterm_drains_and_keeps_every_acknowledged_write(daemon_factory):
    """A graceful stop under load: SIGTERM while 8 writers push; eddyd exits 0, every
    acknowledged write survives, and every answer was a 200 or a Firebase-shaped 503 (or a
    closed connection), never anything else."""
    d = daemon_factory("--durability", "batched")
    stop = threading.Event()
    odd = []
    acked = {}
    lock = threading.Lock()

    def writer(index):
        with requests.Session() as s:
            seq = 0
            while not stop.is_set():
                seq += 1
                value = {"writer": index, "seq": seq}
                try:
                    r = s.post(f"{d.base_url}/drain.json", json=value, timeout=(2, 10))
                except (requests.ConnectionError, requests.Timeout):
                    time.sleep(0.01)
                    continue
                if r.status_code == 200:
                    with lock:
                        acked[r.json()["name"]] = value
                elif r.status_code == 503:
                    if "error" not in r.json():
                        odd.append((r.status_code, r.text))
                else:
                    odd.append((r.status_code, r.text))

    threads = [threading.Thread(target=writer, args=(i,), daemon=True) for i in range(WRITERS)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 5
    while len(acked) < 200 and time.monotonic() < deadline:
        time.sleep(0.01)
    d.stop()  # SIGTERM while the writers keep going; asserts exit status 0
    stop.set()
    for t in threads:
        t.join(timeout=30)
    assert not odd, odd[:5]
    assert len(acked) >= 1
    run_eddy("verify", "--data", d.data_dir)
    d.start()
    stored = requests.get(d.url("/drain"), timeout=30).json()
    for name, value in acked.items():
        assert stored.get(name) == value, f"acknowledged push {name} lost at graceful shutdown"
