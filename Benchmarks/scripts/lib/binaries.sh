# Shared by every script here (sourced after `cd` to the repository root, not run): which
# build configuration a script runs, where its binaries are, and how it builds them.
#   EDDY_BENCH_CONFIG  release (the default; figures are only ever taken from release builds)
#                      or debug (scripts/smoke.sh, inside `make test`, which has built debug
#                      eddyd and eddy already: it checks that every script still runs).
#   EDDY_SKIP_BUILD=1  use the binaries as they are; a missing one stops the script.
# Sets: bench_config, eddy_bin (the main package's products), profile_bin (the Benchmarks
# package's products). Both packages build into the main package's .build: the Benchmarks
# package depends on the main one by path, so sharing the build directory reuses every object
# the main build made (NIO, BoringSSL, the Eddy targets) and compiles only what is the
# Benchmarks package's own (async-http-client, package-benchmark): 76 s instead of 233 s for
# its debug products on 2 cores. package-benchmark's plugin (engine-bench.sh's release run)
# still builds under Benchmarks/.build.

bench_config=${EDDY_BENCH_CONFIG:-release}
case "$bench_config" in
    release | debug) ;;
    *)
        echo "EDDY_BENCH_CONFIG must be release or debug, not '$bench_config'" >&2
        exit 2
        ;;
esac
eddy_bin=.build/$bench_config
profile_bin=.build/$bench_config

# quiet_build COMMAND...: runs a build, prints its last line; on failure its last 30 lines,
# and the script stops.
quiet_build() {
    local log
    log=$(mktemp "${TMPDIR:-/tmp}/eddy-bench-build.XXXXXX")
    if ! "$@" > "$log" 2>&1; then
        tail -30 "$log" >&2
        rm -f "$log"
        echo "build failed: $*" >&2
        exit 1
    fi
    tail -1 "$log"
    rm -f "$log"
}

# build_eddy PRODUCT...: builds the main package's products (eddyd, eddy) in $bench_config,
# unless EDDY_SKIP_BUILD=1; then checks that each binary is there.
build_eddy() {
    local product
    if [ -z "${EDDY_SKIP_BUILD:-}" ]; then
        for product in "$@"; do quiet_build swift build -c "$bench_config" --product "$product"; done
    fi
    for product in "$@"; do require_binary "$eddy_bin/$product"; done
}

# build_profile PRODUCT...: the same for the Benchmarks package's products (the profiles), built
# into the main package's .build (see above). More than one product builds the whole package in
# one invocation: its products share most of the graph, and one build keeps every core busy.
build_profile() {
    local product scratch
    scratch="$(pwd)/.build"
    if [ -z "${EDDY_SKIP_BUILD:-}" ]; then
        if [ $# -gt 1 ]; then
            (cd Benchmarks && quiet_build swift build -c "$bench_config" --scratch-path "$scratch")
        else
            (cd Benchmarks && quiet_build swift build -c "$bench_config" --scratch-path "$scratch" --product "$1")
        fi
    fi
    for product in "$@"; do require_binary "$profile_bin/$product"; done
}

# require_binary PATH: stops the script when PATH is not an executable.
require_binary() {
    [ -x "$1" ] || {
        echo "$1 is missing: build it (or run without EDDY_SKIP_BUILD=1)" >&2
        exit 1
    }
}

# require_tool COMMAND PACKAGE: installs PACKAGE with apt-get when COMMAND is missing and we are
# root; otherwise stops the script with the command to run.
require_tool() {
    command -v "$1" > /dev/null && return 0
    if [ "$(id -u)" = 0 ]; then
        echo "== install $2"
        apt-get install -y -qq "$2" > /dev/null 2>&1 ||
            { apt-get update > /dev/null 2>&1 && apt-get install -y -qq "$2" > /dev/null 2>&1; } || true
    fi
    command -v "$1" > /dev/null || {
        echo "$1 is missing: install it (sudo apt-get install -y $2) and rerun" >&2
        exit 1
    }
}
