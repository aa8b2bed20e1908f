"""The `eddy` CLI against a running daemon over its native socket: get, query, set, update, push
and remove round-trip with what HTTP clients see, the admin token once credentials are
configured (rules apply otherwise), and offline work when no daemon answers."""

import json

import requests

from conftest import run_eddy


def eddy(daemon, *args, check=True):
    return run_eddy(*args, "--data", daemon.data_dir, check=check)


def out(result):
    return json.loads(result.stdout)


def test_data_commands_round_trip_through_the_daemon(daemon):
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


def test_offline_when_no_daemon_answers(daemon_factory):
    daemon = daemon_factory()
    requests.put(daemon.url("/kept"), data="5")
    daemon.stop()
    # The socket file may be left behind; nothing answers on it: the CLI works offline.
    assert out(eddy(daemon, "get", "/kept")) == 5
    eddy(daemon, "set", "/offline", "true")
    daemon.start()
    assert requests.get(daemon.url("/offline")).json() is True
