"""`/metrics` (Prometheus text, parsed with prometheus_client's own parser) and the health probes
on real eddyd processes: counters match the work done (writes by outcome, bytes, commit groups,
queries by kind, SSE subscriptions and events delivered), scrape-time gauges are present, the
admin-only rule once credentials are configured, the credential-free `--metrics` listener, and
`/.health/live` / `/.health/ready` on a leader, a connected follower and a follower whose leader is
gone."""

import json
import socket
import subprocess
import time

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from conftest import EDDYD, follower_of
from test_sse import SSEClient

ADMIN = "metrics-admin-secret-0123456789"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(url, headers=None):
    """{(name, frozenset(labels)): value} of every sample, from the official parser."""
    r = requests.get(url, headers=headers or {})
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    samples = {}
    for family in text_string_to_metric_families(r.text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


def value(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())), 0.0)


def test_counters_follow_the_work_done(daemon):
    # No grant at the root: `locked` refuses writes (a grant above could not be taken back).
    rules = {"rules": {".read": True, "items": {".indexOn": "n", ".write": True}, "locked": {".write": False}}}
    assert requests.put(daemon.base_url + "/.settings/rules.json", data=json.dumps(rules)).status_code == 200
    before = scrape(daemon.base_url + "/metrics")
    body = json.dumps({"n": 1, "name": "x" * 100})
    for _ in range(20):
        assert requests.post(daemon.url("/items"), data=body).status_code == 200
    # A refused write (rules), and an if-match that does not match.
    assert requests.put(daemon.url("/locked/a"), data="1").status_code == 401
    assert requests.put(daemon.url("/items/z"), data="1", headers={"if-match": "nope"}).status_code == 412
    # Refused before reaching the engine: a body that is not JSON, an update with a bad path.
    assert requests.put(daemon.url("/items/y"), data="{not json").status_code == 400
    assert requests.patch(daemon.url("/items"), data=json.dumps({"a/b": 1, "a": 2})).status_code == 400
    assert requests.get(daemon.url("/items", orderBy='"n"', limitToFirst=5)).status_code == 200
    assert requests.get(daemon.url("/items", orderBy='"$key"', limitToFirst=5)).status_code == 200
    after = scrape(daemon.base_url + "/metrics")

    def delta(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("eddy_writes_total", namespace="default", outcome="committed") == 20
    assert delta("eddy_writes_total", namespace="default", outcome="permissionDenied") == 1
    assert delta("eddy_writes_total", namespace="default", outcome="precondition_failed") == 1
    assert delta("eddy_writes_total", namespace="default", outcome="invalidJSON") == 1
    assert delta("eddy_writes_total", namespace="default", outcome="invalidPath") == 1
    assert delta("eddy_write_bytes_total", namespace="default", outcome="committed") >= 20 * 100
    assert delta("eddy_commit_group_writes_sum", namespace="default") == 20
    assert 1 <= delta("eddy_commit_group_writes_count", namespace="default") <= 20
    assert delta("eddy_commit_write_seconds_count", namespace="default") >= 1
    assert delta("eddy_query_seconds_count", namespace="default", kind="indexed") == 1
    assert delta("eddy_query_seconds_count", namespace="default", kind="unindexed") == 1
    # Histogram buckets are cumulative and end at +Inf = count.
    assert value(after, "eddy_commit_write_seconds_bucket", namespace="default", le="+Inf") == value(
        after, "eddy_commit_write_seconds_count", namespace="default")
    # Gauges read at scrape time.
    assert value(after, "eddy_rocksdb_memtable_bytes", namespace="default") > 0
    assert (("eddy_rocksdb_pending_compaction_bytes", frozenset({("namespace", "default")})) in after)
    assert value(after, "eddy_index_builds_in_progress", namespace="default") == 0
    assert value(after, "eddy_log_last_entry_timestamp_seconds", namespace="default") == pytest.approx(time.time(), abs=60)
    assert value(after, "eddy_process_resident_memory_bytes") > 1 << 20
    assert value(after, "eddy_process_open_fds") > 3


def test_subscriptions_and_events_delivered(daemon):
    before = scrape(daemon.base_url + "/metrics")
    stream = SSEClient(daemon, "/feed")
    try:
        assert stream.next_data()[0] == "put"
        for i in range(5):
            assert requests.put(daemon.url(f"/feed/k{i}"), data="1").status_code == 200
        for _ in range(5):
            assert stream.next_data()[0] == "put"
        during = scrape(daemon.base_url + "/metrics")
        assert value(during, "eddy_subscriptions", transport="sse") == value(before, "eddy_subscriptions", transport="sse") + 1
        assert value(during, "eddy_events_delivered_total", transport="sse") - value(before, "eddy_events_delivered_total", transport="sse") == 5
    finally:
        stream.close()
    # The server learns of the closed stream at its FIN (test_sse.py checks that without writes);
    # the writes here would also find it.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        requests.put(daemon.url("/feed/after"), data=str(time.monotonic()))
        if value(scrape(daemon.base_url + "/metrics"), "eddy_subscriptions", transport="sse") == value(before, "eddy_subscriptions", transport="sse"):
            break
        time.sleep(0.05)
    else:
        pytest.fail("the SSE subscription was not counted down after the stream closed")


def test_metrics_are_the_admins_once_auth_is_configured_and_free_on_the_metrics_listener(daemon_factory, tmp_path):
    admin_file = tmp_path / "admin"
    admin_file.write_text(ADMIN)
    port = free_port()
    secured = daemon_factory("--admin-token-file", str(admin_file), "--metrics", f"127.0.0.1:{port}")
    r = requests.get(secured.base_url + "/metrics")
    assert r.status_code == 401 and "admin" in r.json()["error"]
    samples = scrape(secured.base_url + "/metrics", headers={"Authorization": f"Bearer {ADMIN}"})
    assert ("eddy_process_open_fds", frozenset()) in samples
    # The separate listener: figures and probes, no credential, and nothing else.
    samples = scrape(f"http://127.0.0.1:{port}/metrics")
    assert ("eddy_process_open_fds", frozenset()) in samples
    assert requests.get(f"http://127.0.0.1:{port}/.health/ready").json() == {"status": "ready"}
    r = requests.get(f"http://127.0.0.1:{port}/.json")
    assert r.status_code == 404


def test_every_namespace_reads_through_one_block_cache_of_block_cache_bytes(daemon_factory, tmp_path):
    cache_bytes = 8 << 20
    daemon = daemon_factory("--block-cache-bytes", str(cache_bytes))
    # Three namespaces open, each with data read back.
    for ns in ("default", "second", "third"):
        assert requests.put(daemon.url("/items/a", ns=ns), data=json.dumps({"n": 1})).status_code == 200
        assert requests.get(daemon.url("/items", ns=ns)).json() == {"a": {"n": 1}}
    samples = scrape(daemon.base_url + "/metrics")
    # One cache, so one unlabelled figure however many namespaces are open.
    assert value(samples, "eddy_rocksdb_block_cache_capacity_bytes") == cache_bytes
    used = [v for (name, _), v in samples.items() if name == "eddy_rocksdb_block_cache_used_bytes"]
    assert len(used) == 1 and 0 <= used[0] <= cache_bytes
    assert {dict(labels)["namespace"] for (name, labels) in samples if name == "eddy_rocksdb_memtable_bytes"} == {
        "default",
        "second",
        "third",
    }
    # Out of range: refused at start, naming the option and its range.
    for bad in ("0", "1000", str((1 << 40) + 1)):
        result = subprocess.run(
            [EDDYD, "serve", "--data", str(tmp_path / "refused"), "--http", "127.0.0.1:0", "--block-cache-bytes", bad],
            capture_output=True,
            timeout=30,
        )
        assert result.returncode != 0 and f"block-cache-bytes {bad} is out of range".encode() in result.stderr, result.stderr


def test_health_on_a_leader_and_its_follower(daemon_factory):
    leader = daemon_factory()
    assert requests.get(leader.base_url + "/.health/live").json() == {"status": "live"}
    r = requests.get(leader.base_url + "/.health/ready")
    assert r.status_code == 200 and r.json() == {"status": "ready"}
    assert requests.post(leader.base_url + "/.health/ready").status_code == 405

    follower = follower_of(daemon_factory, leader)
    deadline = time.monotonic() + 20
    while requests.get(follower.base_url + "/.health/ready").status_code != 200:
        assert time.monotonic() < deadline, requests.get(follower.base_url + "/.health/ready").text
        time.sleep(0.1)
    leader_figures = scrape(leader.base_url + "/metrics")
    assert value(leader_figures, "eddy_followers_connected") == 1
    # Caught up: lag 0 in entries and seconds, per follower.
    for i in range(5):
        requests.put(leader.url(f"/lag/{i}"), data=str(i)).raise_for_status()
    deadline = time.monotonic() + 20
    while True:
        figures = scrape(leader.base_url + "/metrics")
        lag_entries = [v for (name, _), v in figures.items() if name == "eddy_follower_lag_entries"]
        if lag_entries == [0.0]:
            break
        assert time.monotonic() < deadline, lag_entries
        time.sleep(0.1)
    assert [v for (name, _), v in figures.items() if name == "eddy_follower_lag_seconds"] == [0.0]
    assert value(scrape(follower.base_url + "/metrics"), "eddy_follower_connected") == 1

    # The leader goes away: the follower stays live but is no longer ready, and says why.
    leader.stop()
    deadline = time.monotonic() + 20
    while True:
        r = requests.get(follower.base_url + "/.health/ready")
        if r.status_code == 503:
            break
        assert time.monotonic() < deadline, r.text
        time.sleep(0.1)
    assert r.json()["status"] == "not ready" and "leader" in r.json()["reason"]
    assert requests.get(follower.base_url + "/.health/live").status_code == 200


def test_replication_connections_open_and_refused_at_the_cap(daemon_factory):
    """A leader counts its replication connections and those refused at
    --replication-connections-max, so an operator sees followers turned away."""
    daemon = daemon_factory("--replication-connections-max", "2")
    path = daemon.data_dir + "/replication.sock"
    held = []
    for _ in range(4):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        held.append(s)
    deadline = time.monotonic() + 10
    while True:
        samples = scrape(daemon.base_url + "/metrics")
        if value(samples, "eddy_replication_connections_refused_total") == 2 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert value(samples, "eddy_replication_connections_open") == 2
    assert value(samples, "eddy_replication_connections_refused_total") == 2
    for s in held:
        s.close()
    deadline = time.monotonic() + 10
    while value(scrape(daemon.base_url + "/metrics"), "eddy_replication_connections_open") != 0:
        assert time.monotonic() < deadline, "closed connections still counted"
        time.sleep(0.05)
    # The counter never goes back.
    assert value(scrape(daemon.base_url + "/metrics"), "eddy_replication_connections_refused_total") == 2
