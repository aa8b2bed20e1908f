"""The `eddy` CLI against a running daemon, over its native socket and over HTTP (`--url`): get,
query, set, update, push, remove and rules round-trip with what HTTP clients see, import and
export go through it, the admin token once credentials are configured (rules apply otherwise),
and offline work when no daemon answers."""

import json
import os
import stat
import threading
import subprocess
import socket
import time

import pytest
import requests

from conftest import EDDY, run_eddy


def eddy(daemon, *args, check=True):
    return run_eddy(*args, "--data", daemon.data_dir, check=check)


def eddy_over(transport, daemon, tmp_path, *args, check=True):
    """`eddy` through the socket (found from --data), or through --url with a --data that holds
    nothing (so nothing can be read or written but through HTTP)."""
    if transport == "socket":
        return eddy(daemon, *args, check=check)
    return run_eddy(*args, "--url", daemon.base_url, "--data", str(tmp_path / "no-such-data"), check=check)


def out(result):
    return json.loads(result.stdout)


@pytest.mark.parametrize("transport", ["socket", "url"])
def test_data_commands_round_trip_through_the_daemon(daemon, tmp_path, transport):
    def eddy(daemon, *args, check=True):
        return eddy_over(transport, daemon, tmp_path, *args, check=check)

    assert out(eddy(daemon, "set", "/users/ada", '{"born": 1815}')) == {"born": 1815}
    name = out(eddy(daemon, "push", "/log", '{"n": 1}'))["name"]
    assert out(eddy(daemon, "update", "/users", '{"ada/died": 1852, "bob": {"born": 1900}}')) == {"ada/died": 1852, "bob": {"born": 1900}}
    # What the CLI wrote, HTTP reads, and the other way round.
    assert requests.get(daemon.url("/")).json() == {
        "users": {"ada": {"born": 1815, "died": 1852}, "bob": {"born": 1900}},
        "log": {name: {"n": 1}},
    }
    requests.put(daemon.url("/users/cy"), data=json.dumps({"born": 1950}))
    assert out(eddy(daemon, "get", "/users/cy")) == {"born": 1950}
    assert out(eddy(daemon, "get", "/", "--shallow")) == {"users": True, "log": True}
    assert out(eddy(daemon, "query", "/users", "--order-by", '"$key"', "--limit-to-last", "2")) == {
        "bob": {"born": 1900}, "cy": {"born": 1950}}
    assert eddy(daemon, "remove", "/users/bob").stdout.strip() == b"null"
    assert requests.get(daemon.url("/users/bob")).json() is None
    # Other namespaces too.
    eddy(daemon, "set", "/k", "7", "--ns", "second")
    assert requests.get(daemon.url("/k", ns="second")).json() == 7
    # Bad input is refused by the daemon with its message; nothing is written.
    r = eddy(daemon, "set", "/bad", '{"a.b": 1}', check=False)
    assert r.returncode == 1 and b"a.b" in r.stderr
    assert requests.get(daemon.url("/bad")).json() is None
    # Keys that need escaping in a URL, and query texts with "+" and quotes.
    eddy(daemon, "set", "/odd/a b?c%d+e&é", '"x y"')
    assert requests.get(daemon.url("/odd")).json() == {"a b?c%d+e&é": "x y"}
    assert out(eddy(daemon, "get", "/odd/a b?c%d+e&é")) == "x y"
    assert out(eddy(daemon, "query", "/odd", "--order-by", '"$key"', "--equal-to", '"a b?c%d+e&é"')) == {"a b?c%d+e&é": "x y"}
    # The rules: read and replaced through the daemon, in force at once.
    document = {"rules": {".read": True, ".write": True, "users": {".indexOn": ["born"]}}}
    (tmp_path / "rules.json").write_text(json.dumps(document))
    assert b"1 .indexOn" in eddy(daemon, "rules", "set", str(tmp_path / "rules.json")).stdout
    assert out(eddy(daemon, "rules", "get")) == document
    assert requests.get(daemon.base_url + "/.settings/rules.json").json() == document
    assert not (tmp_path / "no-such-data").exists()


@pytest.mark.parametrize("transport", ["socket", "url"])
def test_import_and_export_through_the_daemon(daemon, tmp_path, transport):
    data = {"rows": [{"n": i, "s": "v" * 50} for i in range(3000)], "users": {"ada": {"born": 1815}}}
    source = tmp_path / "in.json"
    source.write_text(json.dumps(data))
    eddy_over(transport, daemon, tmp_path, "import", str(source), "--path", "/imported")
    assert requests.get(daemon.url("/imported")).json() == data
    target = tmp_path / "out.json"
    if transport == "url":
        run_eddy("export", "/imported", "--url", daemon.base_url, "--out", str(target))
    else:
        eddy(daemon, "export", "/imported", "--out", str(target))
    exported = json.loads(target.read_text())
    # The local export writes arrays as objects ("0", "1", ...), REST renders them as arrays.
    rows = exported["rows"]
    if isinstance(rows, dict):
        rows = [rows[str(i)] for i in range(len(rows))]
    assert {"rows": rows, "users": exported["users"]} == data


def test_the_admin_token_and_the_rules(daemon_factory, tmp_path):
    admin = tmp_path / "admin"
    admin.write_text("cli-admin-secret-0123456789abcdef")
    daemon = daemon_factory("--admin-token-file", str(admin))
    # Without the token the connection is unauthenticated: the locked default rules refuse.
    r = eddy(daemon, "set", "/x", "1", check=False)
    assert r.returncode == 1 and b"Permission denied" in r.stderr
    eddy(daemon, "set", "/x", "1", "--admin-token-file", str(admin))
    assert out(eddy(daemon, "get", "/x", "--admin-token-file", str(admin))) == 1
    r = eddy(daemon, "get", "/x", "--admin-token-file", str(tmp_path / "missing"), check=False)
    assert r.returncode == 1 and b"cannot be read" in r.stderr
    # The same over HTTP: the admin secret goes as a bearer token.
    r = run_eddy("get", "/x", "--url", daemon.base_url, check=False)
    assert r.returncode == 1 and b"refused (HTTP 401): Permission denied" in r.stderr
    run_eddy("set", "/y", "2", "--url", daemon.base_url, "--admin-token-file", str(admin))
    assert out(run_eddy("get", "/y", "--url", daemon.base_url, "--admin-token-file", str(admin))) == 2
    # The rules are the admin's, over both ways.
    r = eddy(daemon, "rules", "get", check=False)
    assert r.returncode == 1 and b"Permission denied" in r.stderr
    assert "rules" in out(eddy(daemon, "rules", "get", "--admin-token-file", str(admin)))


def test_url_that_answers_nothing_is_an_error_not_offline(tmp_path):
    r = run_eddy("get", "/x", "--url", "http://127.0.0.1:9", "--data", str(tmp_path / "data"), check=False)
    assert r.returncode == 1 and b"cannot reach the daemon at http://127.0.0.1:9" in r.stderr
    r = run_eddy("get", "/x", "--url", "ftp://example", check=False)
    assert r.returncode == 1 and b"--url ftp://example" in r.stderr


def test_offline_when_no_daemon_answers(daemon_factory):
    daemon = daemon_factory()
    requests.put(daemon.url("/kept"), data="5")
    daemon.stop()
    # The socket file may be left behind; nothing answers on it: the CLI works offline.
    assert out(eddy(daemon, "get", "/kept")) == 5
    eddy(daemon, "set", "/offline", "true")
    daemon.start()
    assert requests.get(daemon.url("/offline")).json() is True


def test_offline_commands_refuse_a_daemons_address_and_index_status_asks_it(daemon, tmp_path):
    """Offline commands took --url and --socket and silently opened ./data instead (failing
    with "namespace default does not exist in ./data" and leaving a lock file there).
    `eddy index status --url` asks the running daemon for its indexes' progress."""
    requests.put(daemon.url("/users"), data=json.dumps({"a": {"born": 1}, "b": {"born": 2}}))
    rules = {"rules": {".read": True, ".write": True, "users": {".indexOn": ["born"]}}}
    assert requests.put(daemon.url("/.settings/rules"), data=json.dumps(rules)).status_code == 200
    for _ in range(100):
        lines = [json.loads(line) for line in run_eddy("index", "status", "--url", daemon.base_url).stdout.splitlines()]
        if lines and lines[0]["state"] == "ready":
            break
        time.sleep(0.1)
    assert [(s["location"], s["on"], s["state"], s["indexed"]) for s in lines] == [("/users", "born", "ready", 2)]
    here = tmp_path / "cwd"
    here.mkdir()
    for args in (["log", "--url", daemon.base_url], ["verify", "--socket", daemon.data_dir + "/eddyd.sock"],
                 ["digest", "--url", daemon.base_url], ["index", "build", "--url", daemon.base_url]):
        result = subprocess.run([EDDY, *args], capture_output=True, timeout=60, cwd=here)
        assert result.returncode == 1, (args, result.stderr)
        assert "not a running daemon's --url or --socket" in result.stderr.decode(), (args, result.stderr)
    result = subprocess.run([EDDY, "index", "status", "--socket", daemon.data_dir + "/eddyd.sock"], capture_output=True, timeout=60, cwd=here)
    assert result.returncode == 1 and "--url" in result.stderr.decode()
    assert list(here.iterdir()) == [], "no ./data made as a side effect"


def test_stats_beside_a_running_daemon(daemon):
    for i in range(10):
        requests.post(daemon.url("/s"), data=json.dumps({"i": i}))
    requests.put(daemon.url("/other", ns="second"), data="1")
    rules = {"rules": {".read": True, ".write": True, "s": {".indexOn": "i"}}}
    assert requests.put(daemon.base_url + "/.settings/rules.json", data=json.dumps(rules)).status_code == 200
    lines = [json.loads(line) for line in run_eddy("stats", "--data", daemon.data_dir).stdout.splitlines()]
    by_ns = {line["namespace"]: line for line in lines}
    assert set(by_ns) == {"default", "second"}
    default = by_ns["default"]
    assert default["last"] == requests.get(daemon.base_url + "/.status.json").json()["last"]
    assert default["indexes"] == 1 and default["databaseId"] and default["prunedThrough"] is None
    result = run_eddy("stats", "--data", "/nonexistent-eddy-dir", check=False)
    assert result.returncode == 1 and b"no namespace" in result.stderr


def test_request_log_lines(daemon_factory):
    daemon = daemon_factory("--log-requests")
    assert requests.get(daemon.url("/a", auth="not-in-the-log")).status_code == 200
    requests.put(daemon.url("/a"), data="{bad")
    deadline = time.monotonic() + 10
    while b"eddy.status=400" not in open(daemon.log_path, "rb").read():
        assert time.monotonic() < deadline, daemon.log_tail()
        time.sleep(0.05)
    log = open(daemon.log_path).read()
    assert "request eddy.method=GET eddy.ms=" in log and "eddy.path=/a.json" in log and "eddy.status=200" in log
    assert "not-in-the-log" not in log


def test_request_log_names_a_stalled_body_408(daemon_factory):
    """A body that stops short of its Content-Length is answered 408 (`HTTPTimeoutState`); the
    request's log line says 408 too, not 400 for the body the timeout cut short."""
    daemon = daemon_factory("--log-requests", "--http-body-timeout-seconds", "1")
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=15) as s:
        s.sendall(b"PUT /stalled.json HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n{")
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 408 Request Timeout\r\n"), answer[:200]
    assert answer.count(b"HTTP/1.1") == 1, answer
    deadline = time.monotonic() + 10
    while b"eddy.path=/stalled.json" not in open(daemon.log_path, "rb").read():
        assert time.monotonic() < deadline, daemon.log_tail()
        time.sleep(0.05)
    line = next(l for l in open(daemon.log_path).read().splitlines() if "eddy.path=/stalled.json" in l)
    assert "eddy.status=408" in line, line
    assert requests.get(daemon.url("/stalled")).json() is None


def test_a_socket_that_is_not_the_client_socket_is_an_error_not_a_success(daemon, tmp_path):
    """`eddy set --socket <data>/replication.sock` printed the value and exited 0 with nothing
    written: any answer counted as success. And a --socket nothing listens on fell back to
    working offline on ./data, answering for another database."""
    requests.put(daemon.url("/sock"), data="1")
    result = run_eddy("set", "--socket", f"{daemon.data_dir}/replication.sock", "/sock", "5", check=False)
    assert result.returncode == 1 and b"not an answer" in result.stderr and b"eddyd.sock" in result.stderr, result
    assert requests.get(daemon.url("/sock")).json() == 1
    result = run_eddy("get", "--socket", str(tmp_path / "none.sock"), "/sock", check=False)
    assert result.returncode == 1 and b"no daemon answers on --socket" in result.stderr, result


def test_a_socket_that_never_answers_times_out_naming_the_wait(tmp_path):
    """`eddy` waited for ever on a socket that accepted its request and said nothing (a hung
    daemon, another program's socket). It gives up after EDDY_TIMEOUT_SECONDS (300 by
    default) and says so; `tail` and `watch` wait that long only for their stream to start."""
    path = str(tmp_path / "mute.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    env = dict(os.environ, EDDY_TIMEOUT_SECONDS="1")
    try:
        for args in (["get", "/a"], ["set", "/a", "1"], ["followers"], ["tail"], ["watch", "/a"]):
            started = time.monotonic()
            result = subprocess.run([EDDY, *args, "--socket", path], capture_output=True, timeout=60, env=env)
            waited = time.monotonic() - started
            assert result.returncode == 1 and b"no answer within 1 s" in result.stderr, (args, result)
            assert waited < 30, (args, waited)
    finally:
        listener.close()


def test_export_out_follows_links_writes_devices_and_pipes_and_refuses_directories(daemon, tmp_path):
    """`--out` wrote FILE.partial and renamed it over FILE, which replaced a symbolic link, a
    FIFO, even /dev/full (as root) with a regular file."""
    requests.put(daemon.url("/ex"), data='{"a":1}')
    target = tmp_path / "target.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    eddy(daemon, "export", "/ex", "--out", link)
    assert link.is_symlink() and json.loads(target.read_text()) == {"a": 1}
    eddy(daemon, "export", "/ex", "--out", "/dev/null")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode), "/dev/null is still the device"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(open(fifo).read()))
    reader.start()
    eddy(daemon, "export", "/ex", "--out", fifo)
    reader.join(timeout=30)
    assert json.loads(received[0]) == {"a": 1} and stat.S_ISFIFO(os.lstat(fifo).st_mode)
    (tmp_path / "dir").mkdir()
    result = eddy(daemon, "export", "/ex", "--out", tmp_path / "dir", check=False)
    assert result.returncode == 1 and b"is a directory" in result.stderr, result
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir", "fifo", "link.json", "target.json"], "no .partial left"
