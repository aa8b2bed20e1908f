import EddyEngine
import EddyModel
import Foundation
import Testing

@Suite struct EngineSmokeTests {
    @Test func setGetPushUpdateRemove() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("eddy-smoke-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let engine = try Engine.open(directory: dir, options: EngineOptions(durability: .none))
        defer { engine.close() }
        _ = try await engine.set(try Path("/a/b"), try JSONParser.parse(#"{"x": 1, "y": [true, "s"]}"#))
        #expect(try await engine.get(try Path("/a/b/x")) == .number(1))
        #expect(JSONWriter.string(try await engine.get(try Path("/a"))) == #"{"b":{"x":1,"y":[true,"s"]}}"#)
        let pushed = try await engine.push(try Path("/list"), .string("hello"))
        #expect(try await engine.get(try Path("/list/\(pushed.pushedKey!)")) == .string("hello"))
        _ = try await engine.update(try Path("/a"), [.init(path: try Path("b/x"), value: .number(2)), .init(path: try Path("c"), value: .bool(false))])
        #expect(JSONWriter.string(try await engine.get(try Path("/a"))) == #"{"b":{"x":2,"y":[true,"s"]},"c":false}"#)
        _ = try await engine.set(try Path("/a/b/x/deep"), .number(3))
        #expect(try await engine.get(try Path("/a/b/x")) == .object(["deep": .number(3)]))
        _ = try await engine.set(try Path("/a/b"), .number(7))
        #expect(try await engine.get(try Path("/a/b/x")) == .null)
        #expect(try await engine.getShallow(try Path("/a")) == .object(["b": .bool(true), "c": .bool(true)]))
        _ = try await engine.remove(try Path("/a"))
        #expect(try await engine.get(try Path("/a")) == .null)
        let report = try engine.verify()
        #expect(report.isHealthy, "\(report)")
        #expect(report.logEntryCount == 6)
        let entries = try engine.readLogEntries(after: nil, limit: 100)
        #expect(entries.count == 6)
        #expect(zip(entries, entries.dropFirst()).allSatisfy { $0.id < $1.id })
    }
}

@Suite struct ServerValueOverflowTests {
    /// 1e308 + 1e308 is infinite: the increment is refused, nothing is stored or logged, and
    /// the engine keeps accepting writes (it once stored inf and then failed stop on reading it).
    @Test func anIncrementThatOverflowsIsRefusedAndTheEngineStaysHealthy() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("eddy-overflow-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let engine = try Engine.open(directory: dir, options: EngineOptions(durability: .none))
        defer { engine.close() }
        _ = try await engine.set(try Path("/x"), .number(1e308))
        let before = try engine.lastLogID()
        do {
            _ = try await engine.set(try Path("/x"), try JSONParser.parse(#"{".sv": {"increment": 1e308}}"#))
            Issue.record("an infinite increment was accepted")
        } catch {
            #expect(error.code == .invalidValue)
            #expect(error.message.contains("/x"), "\(error.message)")
        }
        #expect(try engine.lastLogID() == before)
        #expect(try await engine.get(try Path("/x")) == .number(1e308))
        _ = try await engine.set(try Path("/y"), .number(5))
        #expect(engine.failure == nil)
        #expect(try engine.verify().isHealthy)
    }
}
