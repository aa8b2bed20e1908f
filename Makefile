# Eddy: `make run` builds and starts the daemon on the embedded default (data in ./data,
# HTTP on 127.0.0.1:9000); `make test` runs the whole suite. Both install missing system
# packages first (as root with apt-get; otherwise they print the command to run).

SWIFT ?= swift
PYTHON ?= python3
VENV ?= .build/pyenv
SYSTEM_PACKAGES = librocksdb-dev libzstd-dev pkg-config

.PHONY: run test build build-debug deps test-swift test-integration test-fuzz fuzz test-reliability bench clean-data

run: deps build
	./.build/release/eddyd serve

build: deps
	$(SWIFT) build -c release --product eddyd
	$(SWIFT) build -c release --product eddy

build-debug: deps
	$(SWIFT) build --product eddyd
	$(SWIFT) build --product eddy

test: deps build-debug test-fuzz test-swift test-integration

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

test-integration: $(VENV)/.installed
	EDDYD=$(CURDIR)/.build/debug/eddyd EDDY=$(CURDIR)/.build/debug/eddy \
		$(VENV)/bin/python -m pytest -q Tests/integration

$(VENV)/.installed: Tests/integration/requirements.txt
	@$(PYTHON) -c 'import venv, ensurepip' 2>/dev/null || $(MAKE) --no-print-directory python-venv
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -r Tests/integration/requirements.txt
	touch $@

python-venv:
	@if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq python3-venv python3-pip; \
	else echo "python3 venv support is missing; run: sudo apt-get install -y python3-venv python3-pip" >&2; exit 1; fi

# Installs the system libraries when missing (as root), or says exactly what to run.
deps:
	@missing=""; \
	for p in $(SYSTEM_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ]; then \
			echo "installing:$$missing"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
		else \
			echo "missing system packages:$$missing" >&2; \
			echo "run: sudo apt-get install -y$$missing" >&2; exit 1; \
		fi; \
	fi

bench: deps
	./Benchmarks/scripts/engine-bench.sh

clean-data:
	rm -rf ./data
