#!/usr/bin/env bash
# Builds the libFuzzer targets in Fuzz/Targets (each against EddyModel and EddyProtocol compiled
# with -sanitize=fuzzer into .build/fuzz) and runs each for RUNS executions, starting from its
# seed corpus in Fuzz/Corpus/<target> (new inputs go to .build/fuzz/corpus-<target>, not into the
# repository). A crash, trap or timeout fails the script and leaves the input as
# .build/fuzz/crash-*; replay it with `.build/fuzz/fuzz-<target> <file>`.
#   Fuzz/fuzz.sh [RUNS=1000000] [TARGET...]
# `make fuzz` runs the full count; `make test` runs a short one (FUZZ_RUNS).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-1000000}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then targets=(json path query rules regex frame entries logentry); fi
# Sources a target compiles in beside the libraries (files of modules that link RocksDB or zstd,
# which the fuzz build leaves out).
extra_sources() {
    case "$1" in
        logentry) echo Sources/EddyLog/LogEntry.swift Sources/EddyLog/LogEntryCodec.swift ;;
    esac
}
out=.build/fuzz
mkdir -p "$out"
flags=(-O -sanitize=fuzzer -parse-as-library -enable-testing)
# The libraries are rebuilt when a source is newer than them.
if [ ! -f "$out/libEddyModel.a" ] || [ -n "$(find Sources/EddyModel -newer "$out/libEddyModel.a" -name '*.swift' | head -1)" ]; then
    echo "fuzz: building EddyModel"
    swiftc "${flags[@]}" -module-name EddyModel -emit-library -static -emit-module \
        -emit-module-path "$out/EddyModel.swiftmodule" $(find Sources/EddyModel -name '*.swift' | sort) -o "$out/libEddyModel.a"
    rm -f "$out/libEddyProtocol.a"
fi
if [ ! -f "$out/libEddyProtocol.a" ] || [ -n "$(find Sources/EddyProtocol -newer "$out/libEddyProtocol.a" -name '*.swift' | head -1)" ]; then
    echo "fuzz: building EddyProtocol"
    swiftc "${flags[@]}" -module-name EddyProtocol -emit-library -static -emit-module -I "$out" \
        -emit-module-path "$out/EddyProtocol.swiftmodule" Sources/EddyProtocol/*.swift -o "$out/libEddyProtocol.a"
fi
status=0
for target in "${targets[@]}"; do
    binary="$out/fuzz-$target"
    read -r -a extra <<<"$(extra_sources "$target")"
    stale=0
    for source in "Fuzz/Targets/$target.swift" "$out/libEddyProtocol.a" "${extra[@]}"; do
        [ "$source" -nt "$binary" ] && stale=1
    done
    if [ ! -x "$binary" ] || [ $stale = 1 ]; then
        swiftc "${flags[@]}" -I "$out" "Fuzz/Targets/$target.swift" "${extra[@]}" "$out/libEddyProtocol.a" "$out/libEddyModel.a" -o "$binary"
    fi
    mkdir -p "$out/corpus-$target"
    if ! "$binary" -runs="$runs" -max_len=4096 -timeout=10 -artifact_prefix="$out/" -print_final_stats=1 \
        "$out/corpus-$target" "Fuzz/Corpus/$target" >"$out/$target.log" 2>&1; then
        echo "fuzz: $target FAILED; see $out/$target.log and the crash-* file it names" >&2
        tail -20 "$out/$target.log" >&2
        status=1
        continue
    fi
    executed=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$out/$target.log" | grep -o '[0-9]*$')
    seconds=$(grep -o 'Done [0-9]* runs in [0-9]* second' "$out/$target.log" | grep -o 'in [0-9]*' | grep -o '[0-9]*')
    echo "fuzz: $target: ${executed:-?} executions in ${seconds:-?} s, 0 crashes"
done
exit $status
