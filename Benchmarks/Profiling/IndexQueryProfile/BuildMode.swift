// `build` mode: the online index build rate. Loads the data set once without any index, then
// per round declares the index (`setRules`) and times until `waitForIndexes` returns, checks
// that the index is ready and holds every child, and drops it again (`setRules` without the
// declaration) for the next round. The rate is children indexed per second of that span, which
// includes the durable catalog change and the committer's chunked build.

import EddyEngine
import EddyModel
import Foundation

func runBuildMode(_ arguments: Arguments) async throws {
    let data = DataSet(count: arguments.count, seed: arguments.seed)
    let directory = try arguments.data ?? temporaryDirectory("eddy-index-build")
    let engine = try await openLoaded(directory, data)
    defer {
        engine.close()
        if arguments.data == nil { try? FileManager.default.removeItem(atPath: directory) }
    }
    _ = try await engine.setRules(rulesDocument([]))
    try await engine.waitForIndexes(timeoutSeconds: 3600)

    var rates: [Double] = []
    for round in 0..<arguments.rounds {
        let time = try await elapsed {
            _ = try await engine.setRules(rulesDocument(arguments.indexOn))
            try await engine.waitForIndexes(timeoutSeconds: 3600)
        }
        let status = engine.indexStatus()
        guard status.count == arguments.indexOn.count, status.allSatisfy({ $0.state == .ready }) else {
            throw BenchmarkFailure("after waitForIndexes the indexes are not all ready: \(status.map(\.json))")
        }
        if let short = status.first(where: { $0.indexedCount != data.count }) {
            // indexedCount counts children with the child present; every child has every field
            // the build mode indexes, so anything else is a lost entry.
            throw BenchmarkFailure("index \(short.on) holds \(short.indexedCount) children, not \(data.count)")
        }
        let rate = Double(data.count) / time
        rates.append(rate)
        print(
            "round \(round) build on \(arguments.indexOn.joined(separator: ",")): \(format(time, 2)) s"
                + "  \(Int(rate).formatted().leftPad(11)) children/s")
        // Untimed: the compaction that follows the build, before the index is dropped.
        try await waitForIndexesSettled(engine)
        _ = try await engine.setRules(rulesDocument([]))
        try await engine.waitForIndexes(timeoutSeconds: 3600)
    }
    let rate = median(rates)
    print(
        "eddy build n=\(data.count) on \(arguments.indexOn.joined(separator: ",")): median \(Int(rate).formatted()) children/s"
            + " over \(arguments.rounds) rounds (target >= 200,000: \(rate >= 200_000 ? "met" : "MISSED"))")
    printJSON(
        .object([
            "driver": .string("eddy"), "mode": .string("build"), "n": .number(Double(data.count)),
            "on": .string(arguments.indexOn.joined(separator: ",")),
            "rates": .object(
                Dictionary(
                    uniqueKeysWithValues: rates.enumerated().map { (String($0.offset), Value.number($0.element)) })),
            "median_children_per_s": .number(rate),
        ]))
}

struct BenchmarkFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
