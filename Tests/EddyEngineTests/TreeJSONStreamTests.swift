// TreeJSONStream against the value it streams: random trees (array-like nodes with holes, nodes
// that just miss the array rule, integer-like and Unicode keys) read back in chunks as small as
// one byte, compact and pretty, must equal `JSONWriter.bytes(readValue)` byte for byte (answers
// that fit the first chunk are written whole without a cursor; the rest stream). Also: the
// rules are checked when the stream opens, and closing the engine under an open stream ends it
// with `shuttingDown` instead of a use of a closed database.
// Rerun a failure with `EDDY_SEED=<seed>`.

import EddyEngine
import EddyModel
import EddyTesting
import Testing

@Suite struct TreeJSONStreamTests {
    static func randomValue(_ g: inout SeededGenerator, depth: Int = 0) -> Value {
        let kind = g.int(in: 0..<(depth >= 3 ? 2 : 6))
        switch kind {
        case 0, 1: return RandomValues.primitive(&g)
        case 2, 3:
            // Array-like: indexes 0..<n with some holes, sometimes past the 2 × count rule,
            // sometimes with one key that is not an index.
            var children: [String: Value] = [:]
            let n = g.int(in: 1...12)
            for i in 0..<n where g.chance(2, in: 3) { children[String(i)] = Self.randomValue(&g, depth: depth + 1) }
            if g.chance(1, in: 4) { children[String(g.int(in: 10...40))] = .number(1) }
            if g.chance(1, in: 6) { children[g.element(of: ["01", "-1", "x", "1000000000"])] = .bool(true) }
            return Value.object(children).normalized()
        default:
            var children: [String: Value] = [:]
            for _ in 0..<g.int(in: 1...6) { children[RandomValues.key(&g)] = Self.randomValue(&g, depth: depth + 1) }
            return Value.object(children).normalized()
        }
    }

    static func drain(_ engine: Engine, _ path: Path, pretty: Bool, bytesMax: Int) async throws -> [UInt8] {
        let (stream, first) = try await engine.openJSONStream(path, pretty: pretty, access: .admin, firstChunkBytes: bytesMax)
        var out = first
        while let chunk = try await engine.nextChunk(of: stream, bytesMax: bytesMax) {
            #expect(chunk.count >= bytesMax || stream.isFinished)
            out += chunk
        }
        return out
    }

    @Test func chunkedOutputEqualsTheWholeValue() async throws {
        let seed = SeededGenerator.seedFromEnvironment()
        print("TreeJSONStreamTests: EDDY_SEED=\(seed)")
        var g = SeededGenerator(seed: seed)
        try await withEngine { engine in
            for round in 0..<60 {
                let value = Self.randomValue(&g)
                _ = try await engine.set(p("/r"), value)
                for path in [p("/r"), .root, p("/r/0"), p("/r/missing")] {
                    let expected = try engine.readValue(path)
                    for pretty in [false, true] {
                        let bytesMax = g.element(of: [1, 7, 64, 1 << 20])
                        let streamed = try await Self.drain(engine, path, pretty: pretty, bytesMax: bytesMax)
                        #expect(
                            String(decoding: streamed, as: UTF8.self) == JSONWriter.string(expected, pretty: pretty),
                            "seed \(seed) round \(round) path \(path) pretty \(pretty) bytesMax \(bytesMax)")
                    }
                }
            }
            #expect(engine.openStreamCount == 0)
        }
    }

    @Test func aStreamReadsOneSnapshot() async throws {
        try await withEngine { engine in
            var children: [String: Value] = [:]
            for i in 0..<2000 { children["k\(i)"] = .string(String(repeating: "x", count: 100)) }
            _ = try await engine.set(p("/list"), .object(children))
            let (stream, first) = try await engine.openJSONStream(p("/list"), pretty: false, access: .admin, firstChunkBytes: 1000)
            #expect(!stream.isFinished)
            _ = try await engine.set(p("/list/k1999"), .string("changed after the stream opened"))
            _ = try await engine.remove(p("/list/k5"))
            var out = first
            while let chunk = try await engine.nextChunk(of: stream, bytesMax: 1000) { out += chunk }
            #expect(try JSONParser.parse(out) == .object(children))
        }
    }

    @Test func anAnswerThatFitsTheFirstChunkIsWrittenWholeWithoutACursor() async throws {
        try await withEngine { engine in
            var children: [String: Value] = [:]
            for i in 0..<50 { children["k\(i)"] = .number(Double(i)) }
            _ = try await engine.set(p("/list"), .object(children))
            let whole = JSONWriter.bytes(.object(children))
            let (small, first) = try await engine.openJSONStream(p("/list"), pretty: false, access: .admin, firstChunkBytes: whole.count)
            #expect(small.isFinished && first == whole && engine.openStreamCount == 0)
            // Half of it: the answer does not fit, so a cursor on a snapshot streams it.
            let (large, start) = try await engine.openJSONStream(p("/list"), pretty: false, access: .admin, firstChunkBytes: whole.count / 2)
            #expect(!large.isFinished && engine.openStreamCount == 1 && start.count >= whole.count / 2)
            var out = start
            while let chunk = try await engine.nextChunk(of: large, bytesMax: 10) { out += chunk }
            #expect(out == whole && engine.openStreamCount == 0)
        }
    }

    @Test func theRulesAreCheckedWhenTheStreamOpens() async throws {
        try await withEngine { engine in
            _ = try await engine.setRules(json(#"{"rules": {"open": {".read": true}}}"#))
            _ = try await engine.set(p("/open/a"), .number(1))
            _ = try await engine.set(p("/closed/a"), .number(2))
            let (_, first) = try await engine.openJSONStream(p("/open"), pretty: false, access: .unauthenticated, firstChunkBytes: 100)
            #expect(String(decoding: first, as: UTF8.self) == #"{"a":1}"#)
            await expectEddyError(.permissionDenied) {
                _ = try await engine.openJSONStream(p("/closed"), pretty: false, access: .unauthenticated, firstChunkBytes: 100)
            }
        }
    }

    @Test func closingTheEngineEndsAnOpenStream() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let engine = try Engine.open(directory: directory.path, options: EngineOptions(durability: .none), logger: quietLogger)
        var children: [String: Value] = [:]
        for i in 0..<1000 { children["k\(i)"] = .number(Double(i)) }
        _ = try await engine.set(p("/list"), .object(children))
        let (stream, _) = try await engine.openJSONStream(p("/list"), pretty: false, access: .admin, firstChunkBytes: 10)
        #expect(engine.openStreamCount == 1)
        engine.close()
        #expect(engine.openStreamCount == 0)
        do {
            _ = try stream.next(bytesMax: 10)
            Issue.record("a stream of a closed engine must not read")
        } catch {
            #expect(error.code == .shuttingDown)
        }
    }
}
