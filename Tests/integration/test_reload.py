"""SIGHUP (`systemctl reload eddyd`): eddyd rereads its --config file and applies the log level
while serving, without dropping an open stream; a broken config file changes nothing."""

import os
import signal
import time

import requests

from test_sse import SSEClient


def wait_for_log(daemon, text, timeout=20):
    deadline = time.monotonic() + timeout
    while text not in open(daemon.log_path).read():
        assert time.monotonic() < deadline, f"{text!r} not in the log: {daemon.log_tail(2000)}"
        time.sleep(0.05)


def test_sighup_rereads_the_log_level_and_keeps_connections(daemon_factory, tmp_path):
    config = tmp_path / "eddyd.toml"
    config.write_text('[serve]\nlog-level = "info"\n')
    daemon = daemon_factory("--config", str(config))
    stream = SSEClient(daemon, "/live")
    try:
        assert stream.next_data()[0] == "put"
        config.write_text('[serve]\nlog-level = "debug"\n')
        os.kill(daemon.process.pid, signal.SIGHUP)
        wait_for_log(daemon, "info -> debug")
        # Still serving, and the stream opened before the reload still delivers.
        assert requests.put(daemon.url("/live/a"), data="1").status_code == 200
        event, _, data, _ = stream.next_data()
        assert event == "put" and data == {"path": "/a", "data": 1}
        # A config file that no longer parses: nothing changes, the daemon runs on.
        config.write_text('[serve]\nlog-level = "loud"\n')
        os.kill(daemon.process.pid, signal.SIGHUP)
        wait_for_log(daemon, "config file not applied")
        assert daemon.running
        assert requests.get(daemon.url("/live")).json() == {"a": 1}
    finally:
        stream.close()


def test_sighup_without_a_config_file_changes_nothing(daemon):
    os.kill(daemon.process.pid, signal.SIGHUP)
    wait_for_log(daemon, "no --config file")
    assert daemon.running and requests.get(daemon.url("/")).status_code == 200
