// `query` mode: the latency of indexed queries on /items, measured in-process with the blocking
// `engine.readQuery` on the calling thread, so the figures are the engine's own cost (seek,
// index scan, child reads, building the result) without thread hops or HTTP.
//
// The four query kinds run interleaved (one of each per iteration) so that drift in the VM's
// CPU or disk speed lands on all of them alike. Only the `readQuery` call is timed; the digest
// of each result (rows, sum of scores, sum of groups) is taken after the clock stops and is
// compared with SQLite's by index-bench.sh: same data, same bounds, so same rows.

import EddyEngine
import EddyModel
import Foundation

struct QueryKind {
    let name: String
    let make: (Int) -> Query
}

func queryKinds(_ data: DataSet, span: Int) -> [QueryKind] {
    let score = try! Path("score")
    func number(_ n: Int) -> Value { .number(Double(n)) }
    return [
        QueryKind(name: "range.first100") { j in
            let (low, high) = data.range(j, span: span)
            return Query(
                order: .child(score), start: .init(value: number(low), inclusive: true),
                end: .init(value: number(high), inclusive: true), limit: .first(100))
        },
        QueryKind(name: "range.last100") { j in
            let (low, high) = data.range(j, span: span)
            return Query(
                order: .child(score), start: .init(value: number(low), inclusive: true),
                end: .init(value: number(high), inclusive: true), limit: .last(100))
        },
        QueryKind(name: "equal") { j in
            let bound = Query.Bound(value: number(data.equalScore(j)), inclusive: true)
            return Query(order: .child(score), start: bound, end: bound)
        },
        QueryKind(name: "key.first100") { j in
            Query(order: .key, start: .init(value: .string(data.startKey(j)), inclusive: true), limit: .first(100))
        },
    ]
}

/// Rows, sum of scores and sum of groups of a query result.
struct ResultDigest {
    var rows = 0
    var scoreSum = 0
    var groupSum = 0

    mutating func add(_ result: Value) {
        guard case .object(let children) = result else { return }
        for child in children.values {
            self.rows += 1
            if case .number(let s) = child["score"] { self.scoreSum += Int(s) }
            if case .number(let g) = child["group"] { self.groupSum += Int(g) }
        }
    }
}

func runQueryMode(_ arguments: Arguments) async throws {
    let data = DataSet(count: arguments.count, seed: arguments.seed)
    print("eddy data digest \(data.digest)")
    let directory = try arguments.data ?? temporaryDirectory("eddy-index-query")
    let engine = try await openLoaded(directory, data)
    defer {
        engine.close()
        if arguments.data == nil { try? FileManager.default.removeItem(atPath: directory) }
    }
    let indexTime = try await elapsed {
        _ = try await engine.setRules(rulesDocument(["score"]))
        try await waitForIndexesSettled(engine)
    }
    print("index on score ready and compacted after \(format(indexTime, 2)) s")

    let kinds = queryKinds(data, span: arguments.span).filter { arguments.queries?.contains($0.name) ?? true }
    guard !kinds.isEmpty else { usage("--queries names none of \(queryKinds(data, span: 1).map(\.name))") }
    // Warm-up bounds come after the measured ones in the sequence, so no measured query hits
    // blocks that exactly its own warm-up touched.
    for j in arguments.iterations..<(arguments.iterations + arguments.warmup) {
        for kind in kinds { _ = try engine.readQuery(items, kind.make(j)) }
    }
    // Two passes over the same bounds: first `readQueryJSON` (the answer as the JSON text REST
    // sends, what SQLite's rows of JSON text compare to), then `readQuery` (the answer decoded
    // into `Value`s). Separate passes, so neither variant runs right after the same query
    // warmed the caches for it (as in SQLite's run, each query runs once per pass). The JSON
    // answer is parsed for its digest after the clock stops.
    var samples = [[Double]](repeating: [], count: kinds.count * 2)
    var digests = [ResultDigest](repeating: ResultDigest(), count: kinds.count * 2)
    for j in 0..<arguments.iterations {
        for (k, kind) in kinds.enumerated() {
            let query = kind.make(j)
            let start = ContinuousClock.now
            let json = try engine.readQueryJSON(items, query)
            samples[kinds.count + k].append(seconds(ContinuousClock.now - start) * 1e6)
            digests[kinds.count + k].add(try JSONParser.parse(json).normalized())
        }
    }
    for j in 0..<arguments.iterations {
        for (k, kind) in kinds.enumerated() {
            let query = kind.make(j)
            let start = ContinuousClock.now
            let result = try engine.readQuery(items, query)
            samples[k].append(seconds(ContinuousClock.now - start) * 1e6)
            digests[k].add(result)
        }
    }
    print("eddy query n=\(data.count) iterations=\(arguments.iterations) span=\(arguments.span) (in-process readQuery / readQueryJSON)")
    var report: [String: Value] = [:]
    let names = kinds.map(\.name) + kinds.map { $0.name + ".json" }
    for (k, name) in names.enumerated() {
        let sorted = samples[k].sorted()
        let p50 = percentile(sorted, 0.5)
        let p99 = percentile(sorted, 0.99)
        let rows = Double(digests[k].rows) / Double(arguments.iterations)
        print(
            "  \(name.padding(toLength: 20, withPad: " ", startingAt: 0)) p50 \(format(p50).leftPad(9)) us"
                + "  p99 \(format(p99).leftPad(9)) us  rows/query \(format(rows).leftPad(6))")
        report[name] = .object([
            "p50_us": .number(p50), "p99_us": .number(p99), "rows": .number(Double(digests[k].rows)),
            "score_sum": .number(Double(digests[k].scoreSum)), "group_sum": .number(Double(digests[k].groupSum)),
        ])
    }
    printJSON(
        .object([
            "driver": .string("eddy"), "mode": .string("query"), "n": .number(Double(data.count)),
            "iterations": .number(Double(arguments.iterations)), "span": .number(Double(arguments.span)),
            "index_seconds": .number(indexTime), "queries": .object(report),
        ]))
}

extension String {
    func leftPad(_ width: Int) -> String {
        self.count >= width ? self : String(repeating: " ", count: width - self.count) + self
    }
}
