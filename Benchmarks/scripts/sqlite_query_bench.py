#!/usr/bin/env python3
"""The SQLite side of the index query benchmark (issue 3): the same children and the same query
bounds as Benchmarks/Profiling/IndexQueryProfile (query mode), in SQLite (WAL) through the
Python standard library's sqlite3 module.

Data and bounds come from the formula in Profiling/IndexQueryProfile/DataSet.swift, repeated
here; both print the same `data digest` line for the same N and seed, so a drift in either copy
shows before any timing. Table `items(key TEXT PRIMARY KEY, value TEXT)` holds each child as
compact JSON; an expression index on (json_extract(value,'$.score'), key) serves the queries,
which select (key, value) rows ordered as Firebase orders them: by score, then key.

  range.first100  score BETWEEN x AND x+span ORDER BY score, key LIMIT 100      (startAt/endAt/limitToFirst)
  range.last100   same, ORDER BY score DESC, key DESC LIMIT 100                (limitToLast)
  equal           score = v ORDER BY key (= score, key)                       (equalTo)
  key.first100    key >= k ORDER BY key LIMIT 100                             (orderByKey reference)

Only execute + fetchall is timed; the result digest (rows, sum of scores, sum of groups) is
computed after the clock stops, from the JSON, and must equal Eddy's.

Usage:
  sqlite_query_bench.py [--n N] [--db FILE] [--seed S] [--iterations I] [--warmup W]
                        [--span S] [--explain] [--digest-only] [--load-only]
--db reuses FILE when it already holds the data set (checked by the last key and row count);
without it a temporary file is used and deleted.
"""

import argparse
import json
import math
import os
import sqlite3
import sys
import tempfile
import time

MASK = (1 << 64) - 1
ALPHABET = "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz"
SCORE_RANGE = 1_000_000
TIMESTAMP_BASE = 1_700_000_000_000


def mix(x):
    z = (x + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


class DataSet:
    def __init__(self, count, seed):
        self.count = count
        self.base = (seed * 0x9E3779B97F4A7C15) & MASK

    def hash(self, tag, i):
        return mix(self.base ^ (tag << 56) ^ i)

    def key(self, i):
        t = TIMESTAMP_BASE + i
        head = []
        for _ in range(8):
            head.append(ALPHABET[t % 64])
            t //= 64
        low = self.hash(2, i)
        high = self.hash(4, i)
        tail = [ALPHABET[(low >> (6 * d)) & 63] for d in range(10)]
        tail += [ALPHABET[(high >> (6 * d)) & 63] for d in range(2)]
        return "".join(reversed(head)) + "".join(tail)

    def score(self, i):
        return self.hash(1, i) % SCORE_RANGE

    def child_json(self, i):
        # Same members as Eddy's child; member order does not matter to either side.
        return json.dumps({"score": self.score(i), "name": "item-%d" % i, "group": i % 100}, separators=(",", ":"))

    def range(self, j, span):
        x = self.hash(3, j) % (SCORE_RANGE - span)
        return x, x + span

    def equal_score(self, j):
        return self.score(self.hash(5, j) % self.count)

    def start_key(self, j):
        return self.key(self.hash(6, j) % self.count)

    def digest(self):
        total = sum(self.score(i) for i in range(self.count))
        return "n=%d first=%s last=%s scoreSum=%d" % (self.count, self.key(0), self.key(self.count - 1), total)


SCORE = "json_extract(value,'$.score')"
QUERIES = [
    ("range.first100",
     f"SELECT key, value FROM items WHERE {SCORE} >= ? AND {SCORE} <= ? ORDER BY {SCORE}, key LIMIT 100",
     lambda data, j, span: data.range(j, span)),
    ("range.last100",
     f"SELECT key, value FROM items WHERE {SCORE} >= ? AND {SCORE} <= ? ORDER BY {SCORE} DESC, key DESC LIMIT 100",
     lambda data, j, span: data.range(j, span)),
    ("equal",
     # ORDER BY key alone: with the score fixed it is the same order, and SQLite then walks the
     # index instead of sorting in a temporary b-tree (which it does for ORDER BY score, key).
     f"SELECT key, value FROM items WHERE {SCORE} = ? ORDER BY key",
     lambda data, j, span: (data.equal_score(j),)),
    ("key.first100",
     "SELECT key, value FROM items WHERE key >= ? ORDER BY key LIMIT 100",
     lambda data, j, span: (data.start_key(j),)),
]


def holds(connection, data):
    try:
        (rows,) = connection.execute("SELECT count(*) FROM items").fetchone()
        last = connection.execute("SELECT value FROM items WHERE key = ?", (data.key(data.count - 1),)).fetchone()
    except sqlite3.OperationalError:
        return False
    return rows == data.count and last is not None and last[0] == data.child_json(data.count - 1)


def load(connection, data):
    connection.executescript(
        "DROP TABLE IF EXISTS items;"
        "CREATE TABLE items(key TEXT PRIMARY KEY, value TEXT NOT NULL);")
    start = time.perf_counter()
    with connection:
        batch = 10_000
        for first in range(0, data.count, batch):
            connection.executemany(
                "INSERT INTO items(key, value) VALUES (?, ?)",
                [(data.key(i), data.child_json(i)) for i in range(first, min(data.count, first + batch))])
    loaded = time.perf_counter()
    with connection:
        connection.execute(f"CREATE INDEX items_score ON items({SCORE}, key)")
    connection.execute("ANALYZE")
    indexed = time.perf_counter()
    return loaded - start, indexed - loaded


def percentile(sorted_samples, fraction):
    """Nearest rank, as the Swift driver computes it."""
    rank = math.ceil(fraction * len(sorted_samples)) - 1
    return sorted_samples[max(0, min(len(sorted_samples) - 1, rank))]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--db")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--iterations", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--span", type=int, default=10_000)
    parser.add_argument("--explain", action="store_true", help="print each query's plan")
    parser.add_argument("--digest-only", action="store_true", help="print the data digest and exit")
    parser.add_argument("--load-only", action="store_true", help="load (or check) --db and exit")
    args = parser.parse_args()

    data = DataSet(args.n, args.seed)
    print("sqlite data digest " + data.digest())
    if args.digest_only:
        return

    path = args.db or os.path.join(tempfile.mkdtemp(prefix="eddy-sqlite-"), "items.db")
    connection = sqlite3.connect(path, isolation_level="DEFERRED")
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=NORMAL")
    # A page cache big enough for the table and index (~150 MB at 1M rows), so SQLite, like
    # RocksDB with its block cache and the OS page cache, answers from memory.
    connection.execute("PRAGMA cache_size=-262144")
    connection.execute("PRAGMA mmap_size=1073741824")
    try:
        if holds(connection, data):
            print("reusing %s: %d rows" % (path, data.count))
        else:
            load_s, index_s = load(connection, data)
            print("loaded %d rows in %.2f s (%d rows/s); CREATE INDEX in %.2f s (%d rows/s)"
                  % (data.count, load_s, data.count / load_s, index_s, data.count / index_s))
        if not args.load_only:
            run(connection, data, args)
    finally:
        connection.close()
        if not args.db:
            for suffix in ("", "-wal", "-shm"):
                if os.path.exists(path + suffix):
                    os.remove(path + suffix)
            os.rmdir(os.path.dirname(path))


def run(connection, data, args):
    if args.explain:
        for name, sql, bounds in QUERIES:
            plan = connection.execute("EXPLAIN QUERY PLAN " + sql, bounds(data, 0, args.span)).fetchall()
            print("plan %-16s %s" % (name, " | ".join(row[-1] for row in plan)))
    statements = [(name, sql, bounds) for name, sql, bounds in QUERIES]
    for j in range(args.iterations, args.iterations + args.warmup):
        for _, sql, bounds in statements:
            connection.execute(sql, bounds(data, j, args.span)).fetchall()

    samples = {name: [] for name, _, _ in statements}
    digests = {name: [0, 0, 0] for name, _, _ in statements}
    clock = time.perf_counter_ns
    for j in range(args.iterations):
        for name, sql, bounds in statements:
            parameters = bounds(data, j, args.span)
            start = clock()
            rows = connection.execute(sql, parameters).fetchall()
            samples[name].append((clock() - start) / 1000.0)
            digest = digests[name]
            for _, value in rows:
                child = json.loads(value)
                digest[0] += 1
                digest[1] += child["score"]
                digest[2] += child["group"]

    print("sqlite query n=%d iterations=%d span=%d (python sqlite3 %s, execute+fetchall)"
          % (data.count, args.iterations, args.span, sqlite3.sqlite_version))
    report = {}
    for name, _, _ in statements:
        ordered = sorted(samples[name])
        p50, p99 = percentile(ordered, 0.5), percentile(ordered, 0.99)
        rows, score_sum, group_sum = digests[name]
        print("  %-16s p50 %9.1f us  p99 %9.1f us  rows/query %6.1f" % (name, p50, p99, rows / args.iterations))
        report[name] = {"p50_us": p50, "p99_us": p99, "rows": rows, "score_sum": score_sum, "group_sum": group_sum}
    print(json.dumps({"driver": "sqlite", "mode": "query", "n": data.count, "iterations": args.iterations,
                      "span": args.span, "queries": report}, separators=(",", ":")))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
