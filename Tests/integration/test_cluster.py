"""Clusters (`eddyd serve --cluster NAME --etcd URL`): a real etcd from Debian's etcd-server and
three eddyd nodes on loopback. The leader is elected through etcd; the others follow it and
redirect writes to it (307); when it is killed, the most up-to-date follower takes over; the
killed node rejoins as a follower and converges. With --sync-followers 1 no acknowledged write
is lost, every acknowledged write's log entry carries the term of the node that acknowledged it
(one node per term), and SSE subscribers that reconnect to any node with `Last-Event-ID` see
no gap and no duplicate. A leader cut off from etcd stops taking writes within its lease TTL.

`make test` installs etcd-server as root; without it these tests are skipped, saying how to
install it. EDDY_FAILOVER_CYCLES (default 3) sets the kill -9 cycles and EDDY_FAILOVER_WRITERS (default
16) the concurrent writers; the issue's long run is 20 cycles under 64 writers.
"""

import http.client
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import threading
import time

import pytest
import requests
from conftest import EDDY, eddy_log, pause_process

ETCD = shutil.which("etcd")
pytestmark = pytest.mark.skipif(
    ETCD is None, reason="etcd is not installed: sudo apt-get install -y etcd-server (make test does it as root)"
)
TTL_SECONDS = 2
CYCLES = int(os.environ.get("EDDY_FAILOVER_CYCLES", "3"))
WRITERS = int(os.environ.get("EDDY_FAILOVER_WRITERS", "16"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Etcd:
    def __init__(self, directory):
        self.client = f"http://127.0.0.1:{free_port()}"
        peer = f"http://127.0.0.1:{free_port()}"
        self.log = open(os.path.join(directory, "etcd.log"), "wb")
        self.process = subprocess.Popen(
            [ETCD, "--name", "t", "--data-dir", os.path.join(directory, "etcd"), "--listen-client-urls", self.client,
             "--advertise-client-urls", self.client, "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
             "--initial-cluster", f"t={peer}", "--logger", "zap", "--log-outputs", "stderr"],
            stdout=subprocess.DEVNULL, stderr=self.log)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if requests.get(self.client + "/health", timeout=1).json().get("health") == "true":
                    return
            except requests.RequestException:
                pass
            time.sleep(0.05)
        raise AssertionError("etcd did not start")

    def pause(self):
        pause_process(self.process.pid)

    def resume(self):
        self.process.send_signal(signal.SIGCONT)

    def stop(self):
        self.resume()
        self.process.kill()
        self.process.wait()
        self.log.close()


@pytest.fixture
def etcd(tmp_path):
    server = Etcd(str(tmp_path))
    yield server
    server.stop()


def node_args(etcd, name, port, *extra):
    return ["--http", f"127.0.0.1:{port}", "--cluster", "c", "--etcd", etcd.client, "--node-id", name, *extra]


def role(node):
    try:
        return requests.get(node.base_url + "/.settings/followers.json", timeout=2).json().get("role")
    except (requests.RequestException, ValueError):
        return None


def applied(node):
    """The node's newest applied entry ("" when none), None while it cannot answer (a node
    changing roles restarts its listeners)."""
    try:
        return requests.get(node.base_url + "/.settings/followers.json", timeout=5).json().get("applied") or ""
    except (requests.RequestException, ValueError):
        return None


def wait_for(condition, seconds=30, what="condition"):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"{what} not reached within {seconds} s")


def leader_of(nodes):
    leaders = [n for n in nodes if n.running and role(n) == "leader"]
    return leaders[0] if len(leaders) == 1 else None


def start_cluster(daemon_factory, etcd, *extra, ttl=TTL_SECONDS):
    nodes = []
    for name in ("n1", "n2", "n3"):
        port = free_port()
        node = daemon_factory(*node_args(etcd, name, port, "--lease-ttl-seconds", str(ttl), *extra))
        node.name = name
        nodes.append(node)
    wait_for(lambda: leader_of(nodes), what="one leader")
    for node in nodes:
        wait_for(lambda: role(node) in ("leader", "follower"), what=f"{node.name} in a role")
    return nodes


def test_followers_redirect_writes_to_the_elected_leader(daemon_factory, etcd):
    nodes = start_cluster(daemon_factory, etcd)
    leader = leader_of(nodes)
    for node in nodes:
        answer = requests.put(node.url("/where"), json={"from": node.name}, allow_redirects=False, timeout=10)
        if node is leader:
            assert answer.status_code == 200, answer.text
        else:
            assert answer.status_code == 307, answer.text
            assert answer.headers["Location"] == leader.url("/where")
        # A Firebase REST client follows the redirect with the same method and body.
        followed = requests.put(node.url("/where"), json={"from": node.name}, timeout=10)
        assert followed.status_code == 200, followed.text
        assert followed.json() == {"from": node.name}
    wait_for(lambda: all(requests.get(n.url("/where"), timeout=5).json() == {"from": "n3"} for n in nodes),
             what="the last write on every node")

    # eddy cluster status reads etcd: the leader (the lease holder), its term, every live node.
    def status_now():
        return json.loads(subprocess.run([EDDY, "cluster", "status", "--etcd", etcd.client, "--cluster", "c"], check=True,
                                         capture_output=True, text=True).stdout)

    # Each node's record (republished every tick) names the term of its newest entry: the
    # writes above, made in the leader's term; and, once caught up, no lag. (A record published
    # while a node applied the last writes can have the term and a lag: wait for both.)
    status = wait_for(
        lambda: (lambda s: s if all(v["term"] == s["leader"]["term"] and v["lagMilliseconds"] == 0 for v in s["nodes"].values()) else None)(
            status_now()),
        what="every node's newest entry in the leader's term, without lag")
    assert all(v["lagMilliseconds"] == 0 for v in status["nodes"].values())
    assert status["leader"]["node"] == leader.name
    assert status["leader"]["term"] > 0
    assert sorted(status["nodes"]) == ["n1", "n2", "n3"]
    assert [n for n, v in status["nodes"].items() if v["role"] == "leader"] == [leader.name]
    assert all(v["http"] == f"http://127.0.0.1:{node.port}" for node in nodes for n, v in status["nodes"].items() if n == node.name)


def test_a_leader_stopped_with_sigterm_hands_over_without_waiting_for_its_ttl(daemon_factory, etcd):
    # A lease far longer than the wait below: only the revoked lease explains a takeover.
    nodes = start_cluster(daemon_factory, etcd, ttl=60)
    leader = leader_of(nodes)
    assert requests.post(leader.url("/handover"), json=1, timeout=10).status_code == 200
    leader.stop()  # SIGTERM; asserts a clean exit
    stopped_at = time.monotonic()
    survivors = [n for n in nodes if n is not leader]
    new_leader = wait_for(lambda: leader_of(survivors), seconds=30, what="a new leader after SIGTERM")
    assert time.monotonic() - stopped_at < 30, "the takeover waited for the lease to expire"
    assert requests.post(new_leader.url("/handover"), json=2, timeout=10).status_code == 200
    assert len(requests.get(new_leader.url("/handover"), timeout=10).json()) == 2


def test_a_leader_cut_off_from_etcd_stops_taking_writes_within_its_ttl(daemon_factory, etcd):
    nodes = start_cluster(daemon_factory, etcd)
    leader = leader_of(nodes)
    assert requests.post(leader.url("/fenced"), json=1, timeout=10).status_code == 200
    etcd.pause()
    try:
        time.sleep(TTL_SECONDS + 0.2)
        answer = requests.post(leader.url("/fenced"), json=2, timeout=10)
        assert answer.status_code == 403, f"a leader that cannot prove its lease took a write: {answer.status_code} {answer.text}"
        assert "lease" in answer.json()["error"]
    finally:
        etcd.resume()
    # Once etcd is back a leader is elected again and takes writes (a node changing role
    # restarts its listeners meanwhile).
    def accepted():
        for node in nodes:
            try:
                if requests.post(node.url("/fenced"), json=3, timeout=10).status_code == 200:
                    return True
            except requests.RequestException:
                pass
        return False

    wait_for(accepted, what="writes after etcd came back")
    assert all(n.running for n in nodes), "a node exited"


class Writers:
    """Threads that POST to any running node (following redirects) and record what was
    acknowledged: {push id: value}, and which node acknowledged it: {push id: node name}."""

    def __init__(self, nodes, count):
        self.nodes = nodes
        self.acked = {}
        self.acked_by = {}
        self.first_ack_by = {}  # node name -> monotonic time of its first acknowledgement
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self.run, args=(i,), daemon=True) for i in range(count)]
        self.sequence = 0

    def run(self, index):
        session = requests.Session()
        while not self.stopping.is_set():
            with self.lock:
                self.sequence += 1
                value = {"w": index, "n": self.sequence}
            running = [n for n in self.nodes if n.running]
            if not running:
                time.sleep(0.05)
                continue
            node = running[self.sequence % len(running)]
            try:
                answer = session.post(node.url("/log"), json=value, timeout=10)
            except requests.RequestException:
                time.sleep(0.02)
                continue
            if answer.status_code == 200:
                port = int(answer.url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])
                by = next(n.name for n in self.nodes if n.port == port)
                with self.lock:
                    self.acked[answer.json()["name"]] = value
                    self.acked_by[answer.json()["name"]] = by
                    self.first_ack_by.setdefault(by, time.monotonic())
            else:
                time.sleep(0.02)

    def count(self):
        with self.lock:
            return len(self.acked)

    def __enter__(self):
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=30)


class Subscriber:
    """An EventSource-like client of `/log`: it streams from a random running node and, when the
    stream ends (its node killed, or changing role), reconnects to another with
    `Last-Event-ID: <last id seen>`. It keeps the view the events build, and counts a child
    added twice between two full puts (a duplicate) and the full puts after the first (a resume
    the node could not answer from its log: the id was never replicated or the node lags)."""

    def __init__(self, nodes):
        self.nodes = nodes
        self.view = {}
        self.last_id = None
        self.duplicates = []
        self.resumed = 0
        self.full_puts = 0
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        seen = set()
        while not self.stopping.is_set():
            running = [n for n in self.nodes if n.running]
            if not running:
                time.sleep(0.05)
                continue
            node = random.choice(running)
            headers = {"Accept": "text/event-stream"}
            if self.last_id:
                headers["Last-Event-ID"] = self.last_id
            try:
                conn = http.client.HTTPConnection("127.0.0.1", node.port, timeout=5)
                conn.request("GET", "/log.json", headers=headers)
                response = conn.getresponse()
                if response.status != 200:
                    conn.close()
                    time.sleep(0.05)
                    continue
                fields = {}
                first = True
                while not self.stopping.is_set():
                    line = response.readline()
                    if not line:
                        break
                    text = line.decode("utf-8").rstrip("\n")
                    if text:
                        key, _, value = text.partition(": ")
                        fields[key] = value
                        continue
                    event = fields.get("event")
                    if event in ("put", "patch"):
                        data = json.loads(fields["data"])
                        with self.lock:
                            if event == "put" and data["path"] == "/":
                                if self.last_id is not None:
                                    self.full_puts += 1
                                self.view = dict(data["data"] or {})
                                seen = set(self.view)
                            else:
                                base = data["path"].strip("/")
                                changes = {base: data["data"]} if event == "put" else {
                                    (base + "/" + k).strip("/"): v for k, v in data["data"].items()}
                                for key, value in changes.items():
                                    assert "/" not in key, f"an event below a child: {key}"
                                    if value is None:
                                        self.view.pop(key, None)
                                    else:
                                        if key in seen:
                                            self.duplicates.append(key)
                                        seen.add(key)
                                        self.view[key] = value
                            if first and "Last-Event-ID" in headers and not (event == "put" and data["path"] == "/"):
                                self.resumed += 1
                            first = False
                            if fields.get("id"):
                                self.last_id = fields["id"]
                    fields = {}
                conn.close()
            except (OSError, http.client.HTTPException, ValueError):
                time.sleep(0.05)

    def snapshot(self):
        with self.lock:
            return dict(self.view)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        self.thread.join(timeout=30)


def test_kill_the_leader_under_writers_loses_no_acknowledged_write(daemon_factory, etcd):
    nodes = start_cluster(daemon_factory, etcd, "--sync-followers", "1", "--sync-followers-timeout-ms", "10000")
    takeovers = []
    rejoins = []
    subscribers = [Subscriber(nodes), Subscriber(nodes)]
    for subscriber in subscribers:
        subscriber.__enter__()
    with Writers(nodes, WRITERS) as writers:
        for cycle in range(CYCLES):
            wait_for(lambda: leader_of(nodes), what="a leader")
            before = writers.count()
            wait_for(lambda: writers.count() >= before + 50, what="writes acknowledged before the kill")
            leader = leader_of(nodes)
            leader.kill()
            killed_at = time.monotonic()
            with writers.lock:
                writers.first_ack_by.clear()

            def first_ack_elsewhere():
                with writers.lock:
                    return min((t for by, t in writers.first_ack_by.items() if by != leader.name), default=None)

            acked_at = wait_for(first_ack_elsewhere, what=f"a write acknowledged after killing {leader.name} (cycle {cycle + 1})")
            takeovers.append(acked_at - killed_at)
            new_leader = wait_for(lambda: leader_of(nodes), what="the new leader")
            target = requests.get(new_leader.base_url + "/.settings/followers.json", timeout=5).json()["last"]
            restarted_at = time.monotonic()
            leader.start()  # rejoins as a follower
            wait_for(lambda: role(leader) == "follower", what=f"{leader.name} rejoining as a follower")
            wait_for(lambda: (applied(leader) or "") >= target,
                     what=f"{leader.name} catching up")
            rejoins.append(time.monotonic() - restarted_at)
        acked = dict(writers.acked)
        acked_by = dict(writers.acked_by)
    print(f"failover cycles {CYCLES}, {WRITERS} writers: kill to first acknowledged write p50 "
          f"{sorted(takeovers)[len(takeovers) // 2]:.2f} s, max {max(takeovers):.2f} s; restart of the killed node to caught up "
          f"(with the new leader's last entry at its restart) p50 {sorted(rejoins)[len(rejoins) // 2]:.2f} s, max {max(rejoins):.2f} s; "
          f"{len(acked)} acknowledged writes")

    leader = wait_for(lambda: leader_of(nodes), what="a leader at the end")
    last = requests.get(leader.base_url + "/.settings/followers.json", timeout=5).json()["last"]
    # (The leader answers no "applied": its own newest entry is `last`.)
    wait_for(lambda: all(n is leader or applied(n) == last for n in nodes), what="every node caught up")
    stored = requests.get(leader.url("/log"), timeout=30).json()
    missing = [key for key, value in acked.items() if stored.get(key) != value]
    assert not missing, f"{len(missing)} acknowledged writes lost, e.g. {missing[:5]}"
    for node in nodes:
        assert requests.get(node.url("/log"), timeout=30).json() == stored, f"{node.name} differs from the leader"

    # Subscribers: once caught up, each view is the stored list, built without a duplicate.
    for number, subscriber in enumerate(subscribers):
        wait_for(lambda: subscriber.snapshot() == stored, what=f"subscriber {number} caught up")
        subscriber.__exit__()
        assert not subscriber.duplicates, f"subscriber {number} saw children added twice: {subscriber.duplicates[:5]}"
    print(f"subscribers: {[s.resumed for s in subscribers]} resumes from Last-Event-ID, "
          f"{[s.full_puts for s in subscribers]} fell back to a full put")
    assert sum(s.resumed for s in subscribers) > 0, "no subscriber resumed after a failover"

    # Fencing by term: every acknowledged write's entry carries the term of the node that
    # acknowledged it, and no term has two nodes (terms are etcd revisions: unique per election).
    leader.stop()
    terms = {e["id"]: e["term"] for e in eddy_log(leader.data_dir) if e["path"] == "/log"}
    nodes_by_term = {}
    for key in acked:
        assert terms[key] > 0, f"acknowledged write {key} has no term"
        nodes_by_term.setdefault(terms[key], set()).add(acked_by[key])
    shared = {term: names for term, names in nodes_by_term.items() if len(names) > 1}
    assert not shared, f"two nodes acknowledged writes in the same term: {shared}"
    assert len(nodes_by_term) >= CYCLES + 1, f"expected a new term per failover: {sorted(nodes_by_term)}"
    ids = sorted(terms)
    assert [terms[i] for i in ids] == sorted(terms[i] for i in ids), "terms go back along the log"


def test_a_deposed_leader_discards_only_its_unreplicated_entries_and_keeps_them_for_the_operator(daemon_factory, etcd):
    # No --sync-followers: with the followers paused, the leader acknowledges writes the
    # followers never get (beyond what the sockets buffer). Killed then, it is deposed; when it
    # comes back it must undo exactly the writes the new leader does not have, keep them in a
    # side file, log their range, and resume from the common entry (no snapshot).
    nodes = start_cluster(daemon_factory, etcd)
    leader = leader_of(nodes)
    followers = [n for n in nodes if n is not leader]
    for number in range(5):
        assert requests.post(leader.url("/items"), json={"before": number}, timeout=10).status_code == 200
    last = requests.get(leader.base_url + "/.settings/followers.json", timeout=5).json()["last"]
    wait_for(lambda: all(applied(f) == last
                         for f in followers), what="followers caught up")
    for follower in followers:
        pause_process(follower.process.pid)
    written = []
    try:
        padding = "x" * 60_000  # 64 writes of ~60 KB: more than the replication sockets buffer
        for number in range(64):
            answer = requests.post(leader.url("/items"), json={"unreplicated": number, "pad": padding}, timeout=10)
            assert answer.status_code == 200, answer.text
            written.append(answer.json()["name"])
        leader.kill()
    finally:
        for follower in followers:
            follower.process.send_signal(signal.SIGCONT)
    new_leader = wait_for(lambda: leader_of(followers), what="a new leader")
    answer = requests.post(new_leader.url("/items"), json={"after": 1}, timeout=10)
    assert answer.status_code == 200, answer.text
    kept = answer.json()["name"]
    expected = requests.get(new_leader.url("/items"), timeout=10).json()
    assert kept in expected
    lost = [key for key in written if key not in expected]
    assert lost, "every write reached a follower: the test did not produce a deposed leader's own entries"
    assert lost == written[len(written) - len(lost):], "the new leader's history is not a prefix of the old one's"

    leader.start()
    wait_for(lambda: role(leader) == "follower", what="the deposed leader rejoining as a follower")
    wait_for(lambda: requests.get(leader.url("/items"), timeout=10).json() == expected, what="the deposed leader converging")

    # Exactly the entries the new leader lacks, in a side file; the database was not set aside.
    aside = os.path.join(leader.data_dir, "discarded")
    files = sorted(os.listdir(aside))
    assert len(files) == 1 and files[0].startswith("default-") and files[0].endswith(".jsonl"), files
    with open(os.path.join(aside, files[0])) as f:
        discarded = [json.loads(line) for line in f]
    assert [e["id"] for e in discarded] == lost
    assert all(e["path"] == "/items" and e["term"] > 0 for e in discarded)
    log = leader.log_tail(200000)
    assert "discarded" in log and lost[0] in log and lost[-1] in log
    assert "bootstrapped from a snapshot" not in log
    # The winner named the leader it replaced and what that one last reported having.
    won = [line for line in new_leader.log_tail(200000).splitlines() if "won the election" in line]
    assert won and "previous_leader" in won[-1] and leader.name in won[-1], won


def test_sigterm_ends_a_node_that_has_no_run_yet(tmp_path):
    # etcd cannot be reached: no leader, so the node has no run open (no listeners). SIGTERM
    # must still end it, promptly and cleanly (a run's service group is not there to trap it).
    data = tmp_path / "data"
    log = open(tmp_path / "eddyd.log", "wb")
    process = subprocess.Popen(
        [os.environ.get("EDDYD", "eddyd"), "serve", "--data", str(data), "--http", f"127.0.0.1:{free_port()}", "--cluster", "c",
         "--etcd", f"http://127.0.0.1:{free_port()}", "--node-id", "lonely", "--lease-ttl-seconds", "2"],
        stdout=subprocess.DEVNULL, stderr=log)
    try:
        deadline = time.monotonic() + 30
        while b"etcd unreachable" not in (tmp_path / "eddyd.log").read_bytes():
            assert process.poll() is None, "the node exited by itself"
            assert time.monotonic() < deadline, "the node never tried etcd"
            time.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=15) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        log.close()
