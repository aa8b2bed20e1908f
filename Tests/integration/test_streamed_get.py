"""Large REST GETs stream (issue 14): an answer larger than 1 MiB goes out chunked, piece by
piece as the client reads, from one snapshot, without the daemon building the value or the body
in memory. Checked against a real eddyd: the framing (chunked above the threshold, Content-Length
below it), the answer equal to what was written (arrays rendered as Firebase does), a reader that
stalls mid-answer while other clients read and write, the snapshot it sees, and the daemon's peak
RSS, which must rise by much less than the answer's size (building it whole costs several times
its size)."""

import json
import socket
import time

import requests

MIB = 1 << 20


def vm_hwm_bytes(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM in /proc status")


def big_children(part, count=4000, size=1000):
    return {f"p{part}-{i:05d}": {"n": i, "text": chr(97 + part) * size, "tags": ["a", "b", i]} for i in range(count)}


def raw_get(daemon, path):
    """Sends a GET on a raw socket and returns it unread (the caller reads as slowly as it likes)."""
    host, port = daemon.base_url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    sock.sendall(f"GET {path}.json HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
    return sock


def read_chunked(sock, initial=b""):
    """Reads one chunked HTTP/1.1 response to its end; returns (head, body)."""
    data = initial
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, rest = data.split(b"\r\n\r\n", 1)
    body = bytearray()
    while True:
        while b"\r\n" not in rest:
            rest += sock.recv(65536)
        size_line, rest = rest.split(b"\r\n", 1)
        size = int(size_line, 16)
        while len(rest) < size + 2:
            more = sock.recv(1 << 20)
            assert more, "the connection ended inside a chunk"
            rest += more
        body += rest[:size]
        rest = rest[size + 2 :]
        if size == 0:
            return head.decode(), bytes(body)


def test_large_get_streams_with_bounded_memory(daemon):
    expected = {}
    for part in range(8):
        children = big_children(part)
        requests.patch(daemon.url("/big"), data=json.dumps(children)).raise_for_status()
        expected.update(children)
    expected_bytes = len(json.dumps(expected))
    assert expected_bytes > 30 * MIB

    time.sleep(0.5)
    before = vm_hwm_bytes(daemon.process.pid)
    response = requests.get(daemon.url("/big"), stream=True)
    assert response.status_code == 200
    assert response.headers.get("Transfer-Encoding") == "chunked"
    assert "Content-Length" not in response.headers
    body = b"".join(response.iter_content(1 << 20))
    rise = vm_hwm_bytes(daemon.process.pid) - before
    print(f"streamed GET of {len(body) / MIB:.1f} MiB: peak RSS rose {rise / MIB:.1f} MiB")
    assert json.loads(body) == expected
    assert rise < len(body) / 2, f"peak RSS rose {rise} bytes for a {len(body)}-byte answer"

    # Pretty answers stream too, and are the same JSON.
    pretty = requests.get(daemon.url("/big", print="pretty"))
    assert pretty.headers.get("Transfer-Encoding") == "chunked"
    assert json.loads(pretty.content) == expected

    # A small answer still has a Content-Length.
    small = requests.get(daemon.url("/big/p0-00001"))
    assert small.headers.get("Content-Length") == str(len(small.content))
    assert small.json() == {"n": 1, "text": "a" * 1000, "tags": ["a", "b", 1]}


def test_a_stalled_reader_sees_its_snapshot_and_blocks_no_one(daemon):
    children = {f"k{i:05d}": "x" * 1000 for i in range(6000)}
    requests.put(daemon.url("/list"), data=json.dumps(children)).raise_for_status()

    sock = raw_get(daemon, "/list")
    first = sock.recv(32 * 1024)
    assert first.startswith(b"HTTP/1.1 200")

    # While it stalls: other clients write and read.
    requests.put(daemon.url("/list/k05999"), data=json.dumps("changed")).raise_for_status()
    requests.delete(daemon.url("/list/k00010")).raise_for_status()
    assert requests.get(daemon.url("/list/k05999")).json() == "changed"
    session = requests.Session()
    for i in range(20):
        session.put(daemon.url(f"/other/{i}"), data=json.dumps(i)).raise_for_status()
    assert len(session.get(daemon.url("/other")).json()) == 20

    head, body = read_chunked(sock, first)
    sock.close()
    assert "transfer-encoding: chunked" in head.lower()
    assert json.loads(body) == children  # as of the moment the GET was answered


def test_arrays_stream_as_firebase_renders_them(daemon):
    # Array-like nodes of more than 1 MiB: rendered as arrays (holes as null), the root too.
    value = {str(i): {"row": [i, i + 1, None, i + 3], "text": "y" * 500} for i in range(0, 6000) if i % 7 != 3}
    requests.put(daemon.url("/rows"), data=json.dumps(value)).raise_for_status()
    response = requests.get(daemon.url("/rows"))
    assert response.headers.get("Transfer-Encoding") == "chunked"
    rows = response.json()
    assert isinstance(rows, list) and len(rows) == 6000
    assert rows[3] is None and rows[10] is None
    assert rows[11] == {"row": [11, 12, None, 14], "text": "y" * 500}
    # The one-snapshot answer of a smaller location is the same as its part of the whole.
    assert rows[12] == requests.get(daemon.url("/rows/12")).json()
