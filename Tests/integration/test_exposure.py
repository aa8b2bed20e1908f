"""Safe by default (issue 13 §1 and §3): eddyd refuses to listen beyond loopback while it has
no authentication, unless told `--insecure-no-auth` (then it says so loudly), and keeps its data
directory private: 0700, files 0600, sockets 0660; an existing directory open to others is
reported at start."""

import os
import stat
import subprocess

import pytest
import requests

from conftest import EDDYD


@pytest.mark.parametrize("option", ["--http", "--native-listen", "--replication-listen"])
def test_a_non_loopback_listener_without_authentication_is_refused(tmp_path, option):
    data = tmp_path / "data"
    args = [EDDYD, "serve", "--data", str(data), "--http", "127.0.0.1:0", option, "0.0.0.0:0"]
    result = subprocess.run(args, capture_output=True, timeout=60)
    assert result.returncode == 1, result
    message = result.stderr.decode()
    assert f"{option} 0.0.0.0" in message and "--insecure-no-auth" in message, message
    assert not data.exists(), "nothing is made for a refused start"


def test_loopback_addresses_start(daemon_factory):
    daemon = daemon_factory("--native-listen", "localhost:0")
    assert requests.get(daemon.url("/"), timeout=10).status_code == 200


def test_insecure_no_auth_starts_and_says_so_loudly(daemon_factory):
    daemon = daemon_factory("--http", "0.0.0.0:0", "--insecure-no-auth")
    port = daemon.port
    assert requests.put(f"http://127.0.0.1:{port}/x.json", json=1, timeout=10).status_code == 200
    log = open(daemon.log_path).read()
    assert "WITHOUT AUTHENTICATION" in log and "0.0.0.0" in log


def test_the_data_directory_and_its_files_are_private(daemon_factory):
    daemon = daemon_factory()
    for i in range(20):
        assert requests.put(daemon.url(f"/items/{i}"), json={"n": i}, timeout=10).status_code == 200
    data = daemon.data_dir
    assert stat.S_IMODE(os.stat(data).st_mode) == 0o700
    seen = 0
    for directory, subdirectories, files in os.walk(data):
        for name in subdirectories:
            mode = stat.S_IMODE(os.stat(os.path.join(directory, name)).st_mode)
            assert mode & 0o077 == 0, f"{directory}/{name} is {oct(mode)}"
        for name in files:
            path = os.path.join(directory, name)
            info = os.stat(path)
            mode = stat.S_IMODE(info.st_mode)
            if stat.S_ISSOCK(info.st_mode):
                assert mode == 0o660, f"socket {path} is {oct(mode)}"
            else:
                assert mode & 0o077 == 0, f"{path} is {oct(mode)}"
                seen += 1
    assert seen >= 5, "RocksDB's files were checked"


def test_an_existing_data_directory_open_to_others_is_reported(daemon_factory, tmp_path):
    data = tmp_path / "shared"
    data.mkdir()
    os.chmod(data, 0o755)
    daemon = daemon_factory(data_dir=data)
    assert requests.get(daemon.url("/"), timeout=10).status_code == 200
    log = open(daemon.log_path).read()
    assert "open to other users" in log and "chmod 700" in log and "755" in log
