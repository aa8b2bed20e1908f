#!/usr/bin/env bash
# Many native subscriptions and SSE streams opening at once on one large location: time until
# each has its first value, and a write's wait beside them; two eddyd binaries side by side in
# alternating rounds (see attach_bench.py).
#   Benchmarks/scripts/attach-bench.sh BEFORE_EDDYD AFTER_EDDYD [ROUNDS=3] [SUBSCRIBERS=100] [CHILDREN=100000]
# Build each side with `swift build -c release --product eddyd` (a worktree of the older commit
# for BEFORE). Loopback only; each daemon gets a fresh temporary data directory.
set -euo pipefail
if [ $# -lt 2 ]; then
    echo "usage: $0 BEFORE_EDDYD AFTER_EDDYD [ROUNDS] [SUBSCRIBERS] [CHILDREN]" >&2
    exit 2
fi
exec python3 "$(dirname "$0")/attach_bench.py" "$1" "$2" --rounds "${3:-3}" --subscribers "${4:-100}" --children "${5:-100000}"
