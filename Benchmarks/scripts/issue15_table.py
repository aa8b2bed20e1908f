"""Issue 15's table from the outputs of its harnesses (issue15-figures.sh keeps each in
WORK/NAME.out): finds each figure's summary line, prints the markdown table with the goal, the
figures, the ratio and the verdict of every row, then the date, machine, commit and commands.
A summary line that is missing is an error naming the harness and the line it looked for, so a
harness whose output changed cannot leave a row silently empty."""

import argparse
import os
import re
import sys


def read(work, name):
    with open(os.path.join(work, name + ".out")) as f:
        return f.read()


def find(text, pattern, harness):
    match = re.search(pattern, text, re.MULTILINE)
    if not match:
        sys.exit(f"issue15_table: no line matching {pattern!r} in the output of {harness}")
    return match


def number(text):
    return float(text.replace(",", ""))


def verdict(met):
    return "met" if met else "missed"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("work")
    parser.add_argument("--started", required=True)
    parser.add_argument("--finished", required=True)
    parser.add_argument("--commit", required=True)
    parser.add_argument("--machine", required=True)
    parser.add_argument("--rounds", required=True)
    parser.add_argument("--n", required=True)
    parser.add_argument("--short", action="store_true")
    args = parser.parse_args()
    rows = []

    index = read(args.work, "index")
    for name, label in (("range.first100", "`limitToFirst(100)` on an indexed child"),
                        ("range.last100", "`limitToLast(100)`"), ("equal", "`equalTo`")):
        m = find(index, rf"^\s+{re.escape(name)}\.json\s+([\d.]+)\s+[\d.]+\s+([\d.]+)\s+[\d.]+\s+([\d.]+)x", "index-bench.sh")
        eddy, sqlite, ratio = (float(x) for x in m.groups())
        rows.append((f"{label}, {args.n} children, vs SQLite (p50 of JSON answers)", ">= 3x",
                     f"{eddy:.1f} vs {sqlite:.1f} us", f"{ratio:.2f}x", verdict(ratio >= 3), "index"))
    m = find(index, r"^\s+0 indexes .*64 writers median\s+([\d,]+) pushes/s", "index-bench.sh")
    none = number(m.group(1))
    m = find(index, r"^\s+4 indexes .*64 writers median\s+([\d,]+) pushes/s", "index-bench.sh")
    four = number(m.group(1))
    m = find(index, r"64 writers \(1/throughput\): ([\d.]+)x; per-round median ([\d.]+)x", "index-bench.sh")
    ratio = float(m.group(1))
    rows.append(("4 indexes vs none, 64 writers (1/throughput)", "<= 1.3x", f"{four:,.0f} vs {none:,.0f} pushes/s",
                 f"{ratio:.2f}x (per round {m.group(2)}x)", verdict(ratio <= 1.3), "index"))
    m = find(index, r"eddy build n=\d+ on \w+: median ([\d,]+) children/s", "index-bench.sh")
    rate = number(m.group(1))
    rows.append(("online index build", ">= 200,000 children/s", f"{rate:,.0f} children/s", "", verdict(rate >= 200_000), "index"))

    replication = read(args.work, "replication")
    m = find(replication, r"medians \(writes/s\): 0 followers (\d+),.*--sync-followers 1: (\d+)", "replication-bench.sh")
    alone, synced = (number(x) for x in m.groups())
    m = find(replication, r"--sync-followers 1: ([\d.]+)x the time per write", "replication-bench.sh")
    ratio = float(m.group(1))
    rows.append(("`--sync-followers 1` vs no follower, 64 writers (time per write)", "<= 1.15x",
                 f"{synced:,.0f} vs {alone:,.0f} writes/s", f"{ratio:.2f}x", verdict(ratio <= 1.15), "replication"))

    m = find(read(args.work, "catchup-snapshot"), r"catch-up \(snapshot\) median: (\d+) entries/s", "catchup-bench.sh")
    rate = number(m.group(1))
    rows.append(("catch-up of a new follower (snapshot)", ">= 200,000 entries/s", f"{rate:,.0f} entries/s", "",
                 verdict(rate >= 200_000), "catchup-snapshot"))
    m = find(read(args.work, "catchup-behind"),
             r"far behind, median: (\d+) entries/s by default, (\d+) by replay: ([\d.]+)x", "catchup-bench.sh (behind)")
    rate, replay, ratio = number(m.group(1)), number(m.group(2)), float(m.group(3))
    rows.append(("catch-up of a replica far behind, at its start", ">= 200,000 entries/s",
                 f"{rate:,.0f} vs {replay:,.0f} entries/s by replay", f"{ratio:.2f}x replay", verdict(rate >= 200_000), "catchup-behind"))
    m = find(read(args.work, "catchup-replay"), r"catch-up \(replay\) median: (\d+) entries/s", "catchup-bench.sh (replay)")
    rate = number(m.group(1))
    rows.append(("catch-up by replay (a running follower that fell behind)", "(>= 200,000 entries/s)", f"{rate:,.0f} entries/s", "",
                 verdict(rate >= 200_000), "catchup-replay"))

    peer = read(args.work, "peer")
    m = find(peer, r"^\s*median\s+([\d,]+)\s+([\d,]+)\s+([\d,]+)\s+([\d,]+)", "peer-bench.sh")
    native, redis, http, postgres = (number(x) for x in m.groups())
    for eddy_name, peer_name, eddy, other, goal, label in (
            ("eddy-native", "redis-xadd", native, redis, 1.1, "native durable pushes vs Redis XADD (appendfsync always), 64 clients"),
            ("eddy-http", "postgres", http, postgres, 1.5, "HTTP durable pushes vs PostgreSQL pgbench INSERTs, 64 clients")):
        m = find(peer, rf"{eddy_name}/{peer_name}: writes/s ([\d.]+)x", "peer-bench.sh")
        ratio = float(m.group(1))
        rows.append((label, f">= {goal}x", f"{eddy:,.0f} vs {other:,.0f} writes/s", f"{ratio:.2f}x", verdict(ratio >= goal), "peer"))

    commands = {}
    for harness in ("index", "replication", "catchup-snapshot", "catchup-behind", "catchup-replay", "peer"):
        with open(os.path.join(args.work, harness + ".cmd")) as f:
            commands[harness] = f.read().strip()
    print(f"Issue 15's figures, {args.started}-{args.finished} UTC, commit {args.commit}")
    print(f"Machine: {args.machine}")
    print(f"Command: Benchmarks/scripts/issue15-figures.sh {args.rounds} {args.n}" + (" (SHORT=1: short runs, figures meaningless)" if args.short else ""))
    print()
    print("| figure | goal | result | ratio | verdict | harness |")
    print("|---|---|---|---|---|---|")
    for figure, goal, result, ratio, met, harness in rows:
        print(f"| {figure} | {goal} | {result} | {ratio} | {met} | `{commands[harness]}` |")
    met = sum(1 for row in rows if row[4] == "met")
    print()
    print(f"{met} of {len(rows)} figures met their goals.")


main()
