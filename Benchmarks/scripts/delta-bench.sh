#!/usr/bin/env bash
# Bytes per event and server CPU per write of live events, two eddyd binaries side by side in
# alternating rounds (see delta_bench.py for the scenarios and figures).
#   Benchmarks/scripts/delta-bench.sh BEFORE_EDDYD AFTER_EDDYD [ROUNDS=3] [WRITES=300] [CHILDREN=100000]
# Build each side with `swift build -c release --product eddyd` (a worktree of the older commit
# for BEFORE). Loopback only; each daemon gets a fresh temporary data directory.
set -euo pipefail
if [ $# -lt 2 ]; then
    echo "usage: $0 BEFORE_EDDYD AFTER_EDDYD [ROUNDS] [WRITES] [CHILDREN]" >&2
    exit 2
fi
exec python3 "$(dirname "$0")/delta_bench.py" "$1" "$2" --rounds "${3:-3}" --writes "${4:-300}" --children "${5:-100000}"
