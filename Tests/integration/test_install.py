"""`make install` / `make uninstall` and the systemd units they install (ops/).

Every install goes into a temporary DESTDIR, so nothing here touches the machine: with DESTDIR
set, the Makefile never runs systemd-sysusers, systemd-tmpfiles or systemctl. The binaries are
the built ones ($EDDYD and $EDDY, via EDDY_BIN_DIR), so no build runs.

How the units are verified offline, with `systemd-analyze --root=<DESTDIR> verify --man=no
/<unitdir>/<unit>...` (systemd 252; works without systemd as PID 1 and without root):
- `--root` makes verify look for ExecStart binaries inside the install tree, so the units are
  checked exactly as installed (ExecStart=/usr/local/bin/eddyd must exist under DESTDIR).
- The tree is not a whole OS, so the test adds two stand-ins verify asks for: an executable
  /bin/kill (ExecReload) and an empty sysinit.target (every service's default dependency).
- verify exits 0 even after "Unknown key" or "Failed to parse" warnings, so the test asserts
  that it prints nothing at all.
- verify does not resolve User=eddy. The user comes from sysusers.d, so the test checks that
  file with `systemd-sysusers --root=<DESTDIR>` instead (and, as root, that
  `systemd-tmpfiles --root=<DESTDIR> --create` makes /var/backups/eddy 0700 for that user).
"""

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from conftest import EDDY, EDDYD, REPO

UNITS = ["eddyd.service", "eddyd-follower.service", "eddy-backup.service", "eddy-backup.timer"]
SERVICES = [u for u in UNITS if u.endswith(".service")]
UNIT_DIR = "/usr/lib/systemd/system"  # passed explicitly except in the layout test


@pytest.fixture(scope="module")
def bin_dir(tmp_path_factory):
    """EDDY_BIN_DIR: the directory of $EDDYD, or symlinks when $EDDY lives elsewhere."""
    for path in (EDDYD, EDDY):
        if not os.access(path, os.X_OK):
            pytest.fail(f"{path} is not an executable; build it or set $EDDYD / $EDDY")
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    if Path(EDDYD).parent == Path(EDDY).parent and Path(EDDYD).name == "eddyd" and Path(EDDY).name == "eddy":
        return Path(EDDYD).parent
    links = tmp_path_factory.mktemp("bin")
    (links / "eddyd").symlink_to(EDDYD)
    (links / "eddy").symlink_to(EDDY)
    return links


def make(target, destdir, bin_dir=None, **variables):
    args = ["make", "-C", str(REPO), "--no-print-directory", target, f"DESTDIR={destdir}"]
    if bin_dir is not None:
        args.append(f"EDDY_BIN_DIR={bin_dir}")
    args += [f"{k}={v}" for k, v in variables.items()]
    done = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def mode(path):
    return stat.S_IMODE(path.stat().st_mode)


def files_under(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() or p.is_symlink())


def default_unit_dir():
    """What the Makefile picks when SYSTEMDUNITDIR is not given."""
    try:
        answer = subprocess.run(["pkg-config", "--variable=systemdsystemunitdir", "systemd"],
                                capture_output=True, text=True).stdout.strip()
    except FileNotFoundError:
        answer = ""
    return answer or "/lib/systemd/system"


def test_install_puts_every_file_in_place_with_prefix_usr(tmp_path, bin_dir):
    root = tmp_path / "root"
    out = make("install", root, bin_dir, PREFIX="/usr")
    unit_dir = default_unit_dir().lstrip("/")

    expected = sorted(
        ["usr/bin/eddyd", "usr/bin/eddy", "etc/eddy/eddyd.toml",
         "usr/lib/sysusers.d/eddy.conf", "usr/lib/tmpfiles.d/eddy.conf"]
        + [f"{unit_dir}/{u}" for u in UNITS])
    assert files_under(root) == expected, out

    for name, source in (("eddyd", EDDYD), ("eddy", EDDY)):
        installed = root / "usr/bin" / name
        assert mode(installed) == 0o755
        assert installed.stat().st_size == Path(source).stat().st_size
    for relative in ["etc/eddy/eddyd.toml", "usr/lib/sysusers.d/eddy.conf", "usr/lib/tmpfiles.d/eddy.conf"]:
        assert mode(root / relative) == 0o644, relative
    assert (root / "etc/eddy/eddyd.toml").read_text() == (REPO / "ops/eddyd.toml").read_text()
    assert (root / "usr/lib/sysusers.d/eddy.conf").read_text() == (REPO / "ops/eddy.sysusers").read_text()

    for unit in UNITS:
        path = root / unit_dir / unit
        assert mode(path) == 0o644, unit
        text = path.read_text()
        assert "/usr/local/bin" not in text, f"{unit} still names /usr/local/bin"
        # Nothing but the binary directory changed.
        assert text == (REPO / "ops" / unit).read_text().replace("/usr/local/bin/", "/usr/bin/")
    execs = {u: [l for l in (root / unit_dir / u).read_text().splitlines() if l.startswith("ExecStart=")] for u in SERVICES}
    assert execs["eddyd.service"] == ["ExecStart=/usr/bin/eddyd serve --config /etc/eddy/eddyd.toml"]
    assert execs["eddyd-follower.service"][0].startswith("ExecStart=/usr/bin/eddyd follow ")
    assert execs["eddy-backup.service"] == ["ExecStart=/usr/bin/eddy backup --socket /run/eddy/eddyd.sock --to /var/backups/eddy"]
    # A DESTDIR install is for a package: it runs nothing on this system, it says what to run.
    assert f"installed into {root}; on the target, run:" in out
    assert "systemd-sysusers /usr/lib/sysusers.d/eddy.conf" not in out


def test_second_install_keeps_the_operators_config(tmp_path, bin_dir):
    root = tmp_path / "root"
    make("install", root, bin_dir, SYSTEMDUNITDIR=UNIT_DIR)
    config = root / "etc/eddy/eddyd.toml"
    edited = config.read_text().replace('log-level = "info"', 'log-level = "debug"') + "# edited by the operator\n"
    config.write_text(edited)
    config.chmod(0o640)
    unit = root / UNIT_DIR.lstrip("/") / "eddyd.service"
    unit.write_text("stale\n")

    out = make("install", root, bin_dir, SYSTEMDUNITDIR=UNIT_DIR)

    assert config.read_text() == edited
    assert mode(config) == 0o640
    assert f"kept {root}/etc/eddy/eddyd.toml" in out
    # Units are ours, not the operator's: they are replaced (overrides go in drop-ins).
    assert unit.read_text() == (REPO / "ops/eddyd.service").read_text()


def test_systemd_analyze_verify_is_clean_on_the_installed_units(tmp_path, bin_dir):
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed (apt-get install systemd); units not verified")
    root = tmp_path / "root"
    make("install", root, bin_dir, SYSTEMDUNITDIR=UNIT_DIR)
    # Stand-ins for what a real root has and verify asks for (see the module docstring).
    (root / "bin").mkdir()
    (root / "bin/kill").write_text("#!/bin/sh\nexit 0\n")
    (root / "bin/kill").chmod(0o755)
    (root / "etc/systemd/system").mkdir(parents=True)
    (root / "etc/systemd/system/sysinit.target").write_text("[Unit]\nDescription=stand-in\n")

    units = [f"{UNIT_DIR}/{u}" for u in UNITS]
    done = subprocess.run([analyze, f"--root={root}", "verify", "--man=no", *units],
                          capture_output=True, text=True, timeout=60)
    output = (done.stdout + done.stderr).strip()
    assert done.returncode == 0 and output == "", f"systemd-analyze verify (exit {done.returncode}):\n{output}"

    # The check is real: a missing binary is reported.
    (root / "usr/local/bin/eddy").unlink()
    done = subprocess.run([analyze, f"--root={root}", "verify", "--man=no", f"{UNIT_DIR}/eddy-backup.service"],
                          capture_output=True, text=True, timeout=60)
    assert "/usr/local/bin/eddy is not executable" in done.stdout + done.stderr

    sysusers = shutil.which("systemd-sysusers")
    if sysusers is None or os.geteuid() != 0:
        return  # the sysusers.d and tmpfiles.d lines need root to apply, even into a root dir
    subprocess.run([sysusers, f"--root={root}"], check=True, capture_output=True, timeout=60)
    passwd = [l.split(":") for l in (root / "etc/passwd").read_text().splitlines()]
    eddy = [p for p in passwd if p[0] == "eddy"]
    assert len(eddy) == 1 and eddy[0][5] == "/var/lib/eddy", passwd
    tmpfiles = shutil.which("systemd-tmpfiles")
    if tmpfiles is not None:
        subprocess.run([tmpfiles, f"--root={root}", "--create"], check=True, capture_output=True, timeout=60)
        backups = root / "var/backups/eddy"
        assert mode(backups) == 0o700 and backups.stat().st_uid == int(eddy[0][2])


def test_uninstall_removes_what_install_added_but_keeps_config(tmp_path, bin_dir):
    root = tmp_path / "root"
    variables = {"PREFIX": "/usr", "SYSTEMDUNITDIR": UNIT_DIR}
    make("install", root, bin_dir, **variables)
    (root / "var/lib/eddy").mkdir(parents=True)
    (root / "var/lib/eddy/CURRENT").write_text("data\n")

    out = make("uninstall", root, **variables)

    assert files_under(root) == ["etc/eddy/eddyd.toml", "var/lib/eddy/CURRENT"], out
    assert "kept" in out and "eddyd.toml" in out
    # Uninstalling twice is harmless.
    make("uninstall", root, **variables)
