"""`eddy import`: a Firebase JSON export streamed into a running daemon (and offline into a
stopped data directory) in atomic batches, compared value by value with the file; bounded memory
(peak RSS of a 16 MiB import no more than that of a tiny one plus 12 MiB: the debug build CI
runs parses slowly, so the size is modest; the 1 GiB run below checks the same at scale); an import killed with
SIGKILL resumes from its progress file and ends equal to the file; refusals. Set EDDY_IMPORT_GIB=1
to import a generated 1 GiB export as well (slow; for the figures in the closing notes)."""

import json
import os
import random
import signal
import subprocess
import time

import pytest
import requests

from conftest import EDDY, run_eddy


def firebase_view(value):
    """What Firebase stores for `value`: arrays as objects keyed "0", "1", ...; no nulls, no empties."""
    if isinstance(value, list):
        value = {str(i): v for i, v in enumerate(value)}
    if isinstance(value, dict):
        kept = {k: firebase_view(v) for k, v in value.items()}
        kept = {k: v for k, v in kept.items() if v is not None}
        return kept or None
    return value


def generate(path, children, text_bytes, seed):
    rng = random.Random(seed)
    # Texts are slices of one random string at random offsets: varied, and fast to make for 1 GiB.
    source = "".join(rng.choice("abcdefgh ") for _ in range(max(1 << 16, 2 * text_bytes)))
    with open(path, "w") as f:
        f.write('{"items": {')
        for i in range(children):
            if i:
                f.write(",")
            start = rng.randrange(len(source) - text_bytes)
            item = {"n": i, "s": source[start:start + text_bytes], "tags": ["x", None, i % 7], "none": None}
            f.write(json.dumps(f"k{i:07d}") + ":" + json.dumps(item))
        f.write('}, "meta": {"exported": "yes", "nested": {"deep": [1, {"a": true}]}}}')


def import_with_peak_rss(args):
    """Runs `eddy import ...`; returns (completed process, peak RSS in bytes)."""
    process = subprocess.Popen([EDDY, "import", *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    peak = 0
    while process.poll() is None:
        try:
            with open(f"/proc/{process.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        peak = max(peak, int(line.split()[1]) * 1024)
        except FileNotFoundError:
            pass
        time.sleep(0.02)
    out, err = process.communicate()
    return subprocess.CompletedProcess(process.args, process.returncode, out, err), peak


def test_import_into_a_running_daemon_equals_the_file_with_bounded_memory(daemon, tmp_path):
    requests.put(daemon.url("/old"), data="1")
    small = tmp_path / "small.json"
    generate(small, 10, 10, seed=1)
    result, small_peak = import_with_peak_rss([small, "--data", daemon.data_dir, "--batch-bytes", 65536])
    assert result.returncode == 0, result.stderr
    big = tmp_path / "big.json"
    generate(big, 1_500, 11_000, seed=2)  # about 16 MiB, mostly long strings
    assert big.stat().st_size > 15 << 20
    result, big_peak = import_with_peak_rss([big, "--data", daemon.data_dir, "--batch-bytes", 65536])
    assert result.returncode == 0, result.stderr
    assert b"imported" in result.stderr and b"values/s" in result.stderr
    assert big_peak - small_peak < 12 << 20, f"peak RSS {big_peak >> 20} MiB for 16 MiB vs {small_peak >> 20} MiB for a tiny file"
    assert firebase_view(requests.get(daemon.url("/")).json()) == firebase_view(json.load(open(big)))  # replaced: /old is gone
    assert not (tmp_path / "big.json.eddy-import-progress").exists()


def test_merge_into_a_path_offline(daemon, tmp_path):
    requests.put(daemon.url("/keep"), data="1")
    requests.put(daemon.url("/into/existing"), data='"x"')
    daemon.stop()
    doc = tmp_path / "doc.json"
    doc.write_text(json.dumps({"a": {"b": [1, 2]}, "c": "d"}))
    run_eddy("import", doc, "--data", daemon.data_dir, "--path", "/into", "--merge")
    daemon.start()
    assert firebase_view(requests.get(daemon.url("/")).json()) == firebase_view({"keep": 1, "into": {"existing": "x", "a": {"b": [1, 2]}, "c": "d"}})


def test_an_interrupted_import_resumes(daemon, tmp_path):
    doc = tmp_path / "doc.json"
    generate(doc, 20_000, 40, seed=3)
    progress = tmp_path / "doc.json.eddy-import-progress"
    process = subprocess.Popen([EDDY, "import", str(doc), "--data", daemon.data_dir, "--batch-bytes", "65536"], stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not progress.exists():
        assert process.poll() is None, process.stderr.read()
        assert time.monotonic() < deadline
        time.sleep(0.01)
    time.sleep(0.3)
    process.send_signal(signal.SIGKILL)
    process.wait()
    saved = json.loads(progress.read_text())
    assert 0 < saved["offset"] < doc.stat().st_size
    result = run_eddy("import", doc, "--data", daemon.data_dir, "--batch-bytes", 65536)
    assert f"resuming at byte {saved['offset']}".encode() in result.stderr or b"resuming at byte" in result.stderr
    assert firebase_view(requests.get(daemon.url("/")).json()) == firebase_view(json.load(open(doc)))
    assert not progress.exists()


def test_a_firebase_export_with_wrapped_values_and_priorities(daemon, tmp_path):
    # `format=export`: `.value` wraps a leaf that has a priority; a null priority is none.
    export = {
        "users": {
            "u1": {"name": {".value": "Ada"}, "age": 36, ".priority": None},
            "u2": {"name": {".value": "Bob", ".priority": 3}, ".priority": "b"},
        },
        "top": {".value": 1},
    }
    doc = tmp_path / "export.json"
    doc.write_text(json.dumps(export))
    # Priorities are imported, and come back in the export form.
    run_eddy("import", doc, "--data", daemon.data_dir, "--path", "/fb")
    assert requests.get(daemon.url("/fb"), params={"format": "export"}).json() == {
        "users": {"u1": {"name": "Ada", "age": 36}, "u2": {"name": {".value": "Bob", ".priority": 3}, ".priority": "b"}},
        "top": 1,
    }
    assert requests.get(daemon.url("/fb/users"), params={"orderBy": '"$priority"', "limitToFirst": "1"}).json() == {
        "u1": {"name": "Ada", "age": 36}}
    # --drop-priorities leaves them out.
    result = run_eddy("import", doc, "--data", daemon.data_dir, "--path", "/fb", "--drop-priorities")
    assert b"left out 2 priorities" in result.stderr, result.stderr
    assert requests.get(daemon.url("/fb")).json() == {
        "users": {"u1": {"name": "Ada", "age": 36}, "u2": {"name": "Bob"}},
        "top": 1,
    }
    assert requests.get(daemon.url("/fb"), params={"format": "export"}).json() == requests.get(daemon.url("/fb")).json()


def test_refusals(daemon, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"a": {"b": 1,, "c": 2}}')
    result = run_eddy("import", bad, "--data", daemon.data_dir, check=False)
    assert result.returncode == 1 and b"invalid JSON at byte 14" in result.stderr
    key = tmp_path / "key.json"
    key.write_text('{"a.b": 1}')
    result = run_eddy("import", key, "--data", daemon.data_dir, check=False)
    assert result.returncode == 1 and b"a.b" in result.stderr
    # A progress file of another import is refused, not guessed at.
    other = tmp_path / "other.json"
    other.write_text('{"x": 1}')
    (tmp_path / "other.json.eddy-import-progress").write_text(json.dumps({"size": 1, "modified": 0, "path": "/", "merge": False, "offset": 1, "values": 1}))
    result = run_eddy("import", other, "--data", daemon.data_dir, check=False)
    assert result.returncode == 1 and b"belongs to another import" in result.stderr
    result = run_eddy("import", tmp_path / "missing.json", "--data", daemon.data_dir, check=False)
    assert result.returncode == 1 and b"missing.json" in result.stderr


def test_a_replacing_import_of_a_file_that_cannot_be_imported_keeps_the_data(daemon, tmp_path):
    """The file is checked whole (JSON, keys, depth) before the location it replaces is removed:
    a file refused halfway used to leave the location removed. Nesting 100,000 deep is refused
    by the limit (it crashed the CLI's parser)."""
    keep = {"precious": 1, "more": {"x": "y"}}
    assert requests.put(daemon.url("/keep"), data=json.dumps(keep)).status_code == 200
    cases = {
        "trunc.json": ('{"a": 1, "b": ', b"invalid JSON at byte 14"),
        "latekey.json": ('{"a": 1, "b": {"c": 2, "d.e": 3}}', b"d.e"),
        "deep.json": ("[" * 100_000, b"nests deeper than 64 levels"),
        "toodeep.json": ('{"k": ' * 40 + "1" + "}" * 40, b"pathDepthMax is 32"),
    }
    for name, (text, message) in cases.items():
        path = tmp_path / name
        path.write_text(text)
        result = run_eddy("import", path, "--data", daemon.data_dir, "--path", "/keep", check=False)
        assert result.returncode == 1 and message in result.stderr, (name, result.stderr[-400:])
        assert b"nothing was imported" in result.stderr or b"invalid JSON" in result.stderr, result.stderr[-400:]
        assert requests.get(daemon.url("/keep")).json() == keep, name
    good = tmp_path / "good.json"
    good.write_text('{"new": true}')
    run_eddy("import", good, "--data", daemon.data_dir, "--path", "/keep")
    assert requests.get(daemon.url("/keep")).json() == {"new": True}


@pytest.mark.skipif(os.environ.get("EDDY_IMPORT_GIB") != "1", reason="set EDDY_IMPORT_GIB=1 to import a generated 1 GiB export")
def test_one_gib_import(daemon, tmp_path):
    doc = tmp_path / "gib.json"
    generate(doc, 1_000_000, 1_050, seed=4)
    assert doc.stat().st_size >= 1 << 30
    started = time.monotonic()
    result, peak = import_with_peak_rss([doc, "--data", daemon.data_dir])
    seconds = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    print(f"1 GiB import: {doc.stat().st_size / 2**20 / seconds:.1f} MiB/s, {4_000_000 / seconds:.0f} values/s, peak RSS {peak >> 20} MiB, {seconds:.0f} s")
    assert peak < 256 << 20


def test_export_streams_while_the_daemon_runs_and_round_trips_through_import(daemon_factory, tmp_path):
    source = daemon_factory()
    doc = tmp_path / "doc.json"
    generate(doc, 3_000, 30, seed=5)
    run_eddy("import", doc, "--data", source.data_dir)
    requests.put(source.url("/odd"), data=json.dumps({"q\"uote": "é", "10": 1, "9": 2, "list": [True, False]}))
    # Exported from the running daemon's directory (a read-only view beside the writer).
    out = tmp_path / "export.json"
    result = run_eddy("export", "--data", source.data_dir, "--out", out)
    assert b"exported / to" in result.stderr and not (tmp_path / "export.json.partial").exists()
    exported = json.load(open(out))
    assert firebase_view(exported) == firebase_view(requests.get(source.url("/")).json())
    # A location, and a primitive.
    assert json.loads(run_eddy("export", "/odd", "--data", source.data_dir).stdout) == {"q\"uote": "é", "10": 1, "9": 2, "list": {"0": True, "1": False}}
    assert json.loads(run_eddy("export", "/odd/10", "--data", source.data_dir).stdout) == 1
    # Into another database: equal.
    target = daemon_factory()
    run_eddy("import", out, "--data", target.data_dir)
    assert requests.get(target.url("/")).json() == requests.get(source.url("/")).json()
