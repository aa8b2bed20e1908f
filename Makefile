# Eddy: `make run` builds and starts the daemon on the embedded default (data in ./data,
# HTTP on 127.0.0.1:9000); `make test` runs the whole suite. Both install missing system
# packages first (as root with apt-get; otherwise they print the command to run).

SWIFT ?= swift
PYTHON ?= python3
VENV ?= .build/pyenv
SYSTEM_PACKAGES = librocksdb-dev libzstd-dev pkg-config
# Only the tests use these: etcd for the cluster tests (which are skipped, saying why, without it).
TEST_PACKAGES = etcd-server

.PHONY: run test build build-debug deps test-deps test-swift test-integration test-bench test-fuzz fuzz test-reliability bench clean-data \
	install uninstall

run: deps build
	./.build/release/eddyd serve

build: deps
	$(SWIFT) build -c release --product eddyd
	$(SWIFT) build -c release --product eddy

build-debug: deps
	$(SWIFT) build --product eddyd
	$(SWIFT) build --product eddy

test: deps test-deps build-debug test-fuzz test-swift test-integration test-bench

# Every script under Benchmarks/scripts once, in a short mode on debug builds: they must keep
# running; no figure is asserted (see Benchmarks/scripts/smoke.sh).
test-bench: build-debug
	./Benchmarks/scripts/smoke.sh

# Executions per fuzz target inside `make test` (a smoke run that keeps the targets building);
# `make fuzz` runs 1,000,000 each.
FUZZ_RUNS ?= 20000

test-fuzz:
	./Fuzz/fuzz.sh $(FUZZ_RUNS)

fuzz: deps
	./Fuzz/fuzz.sh 1000000

# The long configuration of the reliability checks, run by hand: the fuzz targets at 1,000,000
# executions each, 100,000 mutated requests against a live daemon, 50 kill -9 cycles, the other
# kill -9 suites, the full volume (as root) and the slow clients; -s shows the figures.
test-reliability: deps build-debug $(VENV)/.installed
	./Fuzz/fuzz.sh 1000000
	EDDY_FUZZ_REQUESTS=100000 EDDY_KILL_CYCLES=50 EDDYD=$(CURDIR)/.build/debug/eddyd EDDY=$(CURDIR)/.build/debug/eddy \
		$(VENV)/bin/python -m pytest -q -s Tests/integration/test_blackbox_fuzz.py Tests/integration/test_kill_loop.py \
		Tests/integration/test_crash.py Tests/integration/test_index_crash.py Tests/integration/test_disk_full.py \
		Tests/integration/test_http_limits.py Tests/integration/test_slow_clients.py

test-swift:
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

# The integration suite runs in PYTEST_WORKERS processes (pytest-xdist), each test file whole in
# one of them so a file's module fixtures and test order stay as written. On the 2-core reference
# machine: 7 minutes in one process, 4.5 in two, 3.3-3.7 in three (its tests wait on daemons more
# than they compute: about 1.6 cores busy). PYTEST_WORKERS=0 runs it in this process.
PYTEST_WORKERS ?= 3

test-integration: $(VENV)/.installed
	EDDYD=$(CURDIR)/.build/debug/eddyd EDDY=$(CURDIR)/.build/debug/eddy \
		$(VENV)/bin/python -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile Tests/integration

$(VENV)/.installed: Tests/integration/requirements.txt
	@$(PYTHON) -c 'import venv, ensurepip' 2>/dev/null || $(MAKE) --no-print-directory python-venv
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -r Tests/integration/requirements.txt
	touch $@

python-venv:
	@if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq python3-venv python3-pip; \
	else echo "python3 venv support is missing; run: sudo apt-get install -y python3-venv python3-pip" >&2; exit 1; fi

# Installs what only the tests need when missing (as root). The service Debian's package starts is
# stopped and disabled again: the tests run their own etcd on free ports. Without root, or when
# the install fails, the tests that need it are skipped and this says what to run.
test-deps:
	@missing=""; \
	for p in $(TEST_PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ] && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null 2>&1 \
			|| { [ "$$(id -u)" = 0 ] && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; }; then \
			echo "installed for the tests:$$missing"; \
			systemctl disable --now etcd >/dev/null 2>&1 || true; \
		else \
			echo "not installed:$$missing; the tests that need it are skipped (run: sudo apt-get install -y$$missing)" >&2; \
		fi; \
	fi

# SwiftPM does not notice a changed module map (Sources/C*/module.modulemap: e.g. how RocksDB is
# linked): objects compiled before keep the link directives they were compiled with, and a binary
# linked from old and new objects would carry RocksDB twice. `.build/modulemaps.cksum` holds the
# maps' checksum; when it differs (or a build tree predates it), the compiled products are removed
# once, here and under Benchmarks/.build (the package checkouts, the Python virtualenv and the
# fuzz build, which links no C library, stay).
MODULEMAP_STAMP = .build/modulemaps.cksum

# Installs the system libraries when missing (as root), or says exactly what to run; then the
# module map check above.
deps:
	@missing=""; \
	for p in $(SYSTEM_PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ]; then \
			echo "installing:$$missing"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
		else \
			echo "missing system packages:$$missing" >&2; \
			echo "run: sudo apt-get install -y$$missing" >&2; exit 1; \
		fi; \
	fi
	@sum=$$(cat Sources/C*/module.modulemap | cksum); \
	if ls -d .build/*-unknown-linux-gnu Benchmarks/.build/*-unknown-linux-gnu 2>/dev/null | grep -q . \
		&& [ "$$(cat $(MODULEMAP_STAMP) 2>/dev/null)" != "$$sum" ]; then \
		echo "a module map changed since the last build: removing the compiled products once (.build/*-unknown-linux-gnu, Benchmarks/.build/*-unknown-linux-gnu)"; \
		rm -rf .build/*-unknown-linux-gnu Benchmarks/.build/*-unknown-linux-gnu; \
	fi; \
	mkdir -p .build && echo "$$sum" > $(MODULEMAP_STAMP)

bench: deps
	./Benchmarks/scripts/engine-bench.sh

clean-data:
	rm -rf ./data

# `sudo make install`: the release binaries, the systemd units, /etc/eddy/eddyd.toml (only when
# missing: an operator's config is never overwritten), the `eddy` user (sysusers.d) and
# /var/backups/eddy (tmpfiles.d); then, on a live systemd host as root, creates the user and
# reloads systemd. Packagers set DESTDIR (nothing is run then); EDDY_BIN_DIR=DIR installs
# the eddyd and eddy already in DIR without building (the tests use .build/debug).
# `sudo make uninstall` removes what install added except the config, the data and the user.
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
SYSCONFDIR ?= /etc
# systemd.pc names the unit directory; without pkg-config or systemd.pc (or with an empty
# answer), the Debian/Ubuntu default.
SYSTEMDUNITDIR ?= $(or $(shell pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null),/lib/systemd/system)
SYSUSERSDIR ?= /usr/lib/sysusers.d
TMPFILESDIR ?= /usr/lib/tmpfiles.d
EDDY_BIN_DIR ?=
INSTALL_BINARIES_FROM = $(or $(EDDY_BIN_DIR),.build/release)
EDDY_UNITS = eddyd.service eddyd-follower.service eddy-backup.service eddy-backup.timer
# On a live systemd host as root, with no DESTDIR: run the system steps here.
SYSTEMD_LIVE = [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && [ -d /run/systemd/system ]

install: $(if $(EDDY_BIN_DIR),,build)
	@for b in eddyd eddy; do \
		[ -x "$(INSTALL_BINARIES_FROM)/$$b" ] || { echo "$(INSTALL_BINARIES_FROM)/$$b is missing: run make build (or set EDDY_BIN_DIR)" >&2; exit 1; }; \
	done
	install -d -m 0755 "$(DESTDIR)$(BINDIR)"
	install -m 0755 "$(INSTALL_BINARIES_FROM)/eddyd" "$(INSTALL_BINARIES_FROM)/eddy" "$(DESTDIR)$(BINDIR)/"
	install -d -m 0755 "$(DESTDIR)$(SYSCONFDIR)/eddy"
	@if [ -e "$(DESTDIR)$(SYSCONFDIR)/eddy/eddyd.toml" ]; then \
		echo "kept $(DESTDIR)$(SYSCONFDIR)/eddy/eddyd.toml (exists; the new sample is ops/eddyd.toml)"; \
	else \
		echo "install -m 0644 ops/eddyd.toml $(DESTDIR)$(SYSCONFDIR)/eddy/eddyd.toml"; \
		install -m 0644 ops/eddyd.toml "$(DESTDIR)$(SYSCONFDIR)/eddy/eddyd.toml"; \
	fi
	install -d -m 0755 "$(DESTDIR)$(SYSTEMDUNITDIR)"
	@# The units name /usr/local/bin and /etc/eddy; point them at BINDIR and SYSCONFDIR.
	@set -e; for u in $(EDDY_UNITS); do \
		echo "install -m 0644 ops/$$u $(DESTDIR)$(SYSTEMDUNITDIR)/$$u"; \
		sed -e 's|/usr/local/bin/|$(BINDIR)/|g' -e 's|/etc/eddy/|$(SYSCONFDIR)/eddy/|g' "ops/$$u" > "$(DESTDIR)$(SYSTEMDUNITDIR)/$$u.tmp"; \
		chmod 0644 "$(DESTDIR)$(SYSTEMDUNITDIR)/$$u.tmp"; \
		mv -f "$(DESTDIR)$(SYSTEMDUNITDIR)/$$u.tmp" "$(DESTDIR)$(SYSTEMDUNITDIR)/$$u"; \
	done
	install -d -m 0755 "$(DESTDIR)$(SYSUSERSDIR)" "$(DESTDIR)$(TMPFILESDIR)"
	install -m 0644 ops/eddy.sysusers "$(DESTDIR)$(SYSUSERSDIR)/eddy.conf"
	install -m 0644 ops/eddy.tmpfiles "$(DESTDIR)$(TMPFILESDIR)/eddy.conf"
	@if $(SYSTEMD_LIVE); then \
		set -e; \
		echo "systemd-sysusers $(SYSUSERSDIR)/eddy.conf"; systemd-sysusers "$(SYSUSERSDIR)/eddy.conf"; \
		echo "systemd-tmpfiles --create $(TMPFILESDIR)/eddy.conf"; systemd-tmpfiles --create "$(TMPFILESDIR)/eddy.conf"; \
		echo "systemctl daemon-reload"; systemctl daemon-reload; \
		echo "installed; next: edit $(SYSCONFDIR)/eddy/eddyd.toml, then systemctl enable --now eddyd"; \
	elif [ -n "$(DESTDIR)" ]; then \
		echo "installed into $(DESTDIR); on the target, run: systemd-sysusers; systemd-tmpfiles --create; systemctl daemon-reload"; \
	else \
		echo "installed; not root on a running systemd, so run: sudo systemd-sysusers $(SYSUSERSDIR)/eddy.conf &&" \
			"sudo systemd-tmpfiles --create $(TMPFILESDIR)/eddy.conf && sudo systemctl daemon-reload"; \
	fi

uninstall:
	@if $(SYSTEMD_LIVE); then \
		echo "systemctl disable --now $(EDDY_UNITS)"; systemctl disable --now $(EDDY_UNITS) || true; \
	fi
	rm -f "$(DESTDIR)$(BINDIR)/eddyd" "$(DESTDIR)$(BINDIR)/eddy"
	rm -f $(foreach u,$(EDDY_UNITS),"$(DESTDIR)$(SYSTEMDUNITDIR)/$(u)")
	rm -f "$(DESTDIR)$(SYSUSERSDIR)/eddy.conf" "$(DESTDIR)$(TMPFILESDIR)/eddy.conf"
	@if $(SYSTEMD_LIVE); then echo "systemctl daemon-reload"; systemctl daemon-reload; fi
	@echo "kept $(DESTDIR)$(SYSCONFDIR)/eddy/eddyd.toml, the data in $(DESTDIR)/var/lib/eddy and" \
		"$(DESTDIR)/var/lib/eddy-follower, the backups in $(DESTDIR)/var/backups/eddy and the eddy user; remove them by hand if you mean to"
