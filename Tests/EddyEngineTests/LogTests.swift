// The operation log: one entry per accepted write, strictly increasing ids (also across restarts
// with a clock that stepped back), paging, resolved values and before-images in the entries,
// and the on-disk codec (round trip; any flipped byte is `corruption`).

import EddyEngine
import EddyModel
import EddyTesting
import Testing

@Suite struct LogTests {
    @Test func everyWriteIsExactlyOneEntry() async throws {
        try await withEngine { engine in
            #expect(try engine.lastLogID() == nil)
            #expect(try engine.readLogEntries(after: nil, limit: 10).isEmpty)
            var ids: [LogID] = []
            func check(_ id: LogID, _ what: String) throws {
                ids.append(id)
                #expect(try engine.lastLogID() == id, "\(what)")
                #expect(try engine.logCount() == ids.count, "\(what) adds exactly one entry")
            }
            try check(try #require(try await engine.set(p("/a"), json(#"{"x":1,"y":[1,2,3]}"#)).committed).logID, "set")
            try check(
                try await engine.update(
                    p("/a"), [.init(path: p("x"), value: .null), .init(path: p("z"), value: .number(1)), .init(path: p("w/v"), value: .number(2))]
                ).logID, "update of 3 paths")
            try check(try await engine.push(p("/list"), json(#"{"deep":{"er":true}}"#)).logID, "push")
            try check(try #require(try await engine.remove(p("/a")).committed).logID, "remove")
            try check(try #require(try await engine.remove(p("/absent")).committed).logID, "remove of nothing")
            try check(try #require(try await engine.set(p("/b"), .null).committed).logID, "set null on nothing")
            try check(try await engine.update(p("/c"), []).logID, "empty update")
            let entries = try engine.readLogEntries(after: nil, limit: 100)
            #expect(entries.map(\.id) == ids)
            #expect(entries.map(\.kind) == [.set, .update, .push, .remove, .remove, .set, .update])
            #expect(zip(ids, ids.dropFirst()).allSatisfy { $0 < $1 }, "ids strictly increase")
            #expect(zip(ids, ids.dropFirst()).allSatisfy { $0.rawValue < $1.rawValue }, "as strings too")
            #expect(try engine.verify().logEntryCount == ids.count)
        }
    }

    @Test func paging() async throws {
        try await withEngine { engine in
            var written: [LogID] = []
            for i in 0..<25 { written.append(try await engine.push(p("/l"), .number(Double(i))).logID) }
            #expect(try engine.readLogEntries(after: nil, limit: 100).map(\.id) == written)
            var paged: [LogID] = []
            var after: LogID? = nil
            var pages = 0
            while true {
                let page = try engine.readLogEntries(after: after, limit: 10)
                #expect(page.count <= 10)
                guard let last = page.last else { break }
                paged += page.map(\.id)
                after = last.id
                pages += 1
            }
            #expect(paged == written)
            #expect(pages == 3)
            #expect(try engine.readLogEntries(after: written[9], limit: 3).map(\.id) == Array(written[10..<13]))
            #expect(try engine.readLogEntries(after: nil, limit: 0).isEmpty)
            #expect(try engine.readLogEntries(after: nil, limit: -5).isEmpty)
            #expect(try engine.readLogEntries(after: written.last!, limit: 10).isEmpty)
            // `after` need not be an existing id: entries strictly greater come back.
            let between = try #require(LogID(String(written[4].rawValue.dropLast()) + "-"))
            let fromBetween = try engine.readLogEntries(after: between, limit: 100).map(\.id)
            #expect(fromBetween == written.filter { $0 > between })
            let beforeAll = try #require(LogID(String(repeating: "-", count: 20)))
            #expect(try engine.readLogEntries(after: beforeAll, limit: 100).map(\.id) == written)
            // The async variant agrees.
            #expect(try await engine.logEntries(after: written[20], limit: 100).map(\.id) == Array(written[21...]))
            // Counting (a follower's lag in entries): strictly after, capped.
            #expect(try engine.countLogEntries(after: nil, countMax: 100) == 25)
            #expect(try engine.countLogEntries(after: written[9], countMax: 100) == 15)
            #expect(try engine.countLogEntries(after: written[9], countMax: 4) == 4)
            #expect(try engine.countLogEntries(after: between, countMax: 100) == written.filter { $0 > between }.count)
            #expect(try engine.countLogEntries(after: written.last!, countMax: 100) == 0)
        }
    }

    @Test func entriesHoldResolvedValuesAndBeforeImages() async throws {
        let clock = ManualClock(1_600_000_000_000)
        try await withEngine(clock: clock) { engine in
            _ = try await engine.set(p("/a"), json(#"{"n":1,"s":"old"}"#))
            clock.advance(by: 1000)
            let set = try #require(
                try await engine.set(p("/a"), json(#"{"n":{".sv":{"increment":2}},"t":{".sv":"timestamp"},"k":null}"#)).committed)
            let setEntry = try #require(try engine.readLogEntries(after: nil, limit: 10).last)
            #expect(setEntry.id == set.logID)
            #expect(setEntry.kind == .set)
            #expect(setEntry.location == p("/a"))
            #expect(setEntry.timestampMilliseconds == 1_600_000_001_000)
            #expect(setEntry.changes == [.init(path: .root, value: json(#"{"n":3,"t":1600000001000}"#))])
            #expect(setEntry.before == [.init(path: p("/a"), value: json(#"{"n":1,"s":"old"}"#))])

            let update = try await engine.update(
                p("/a"), [.init(path: p("n"), value: json(#"{".sv":{"increment":-3}}"#)), .init(path: p("x/y"), value: .string("new"))])
            let updateEntry = try #require(try engine.readLogEntries(after: set.logID, limit: 10).first)
            #expect(updateEntry.id == update.logID)
            #expect(updateEntry.kind == .update)
            #expect(updateEntry.location == p("/a"))
            #expect(updateEntry.changes == [.init(path: p("n"), value: .number(0)), .init(path: p("x/y"), value: .string("new"))])
            #expect(updateEntry.before == [.init(path: p("/a/n"), value: .number(3)), .init(path: p("/a/x/y"), value: .null)])

            let push = try await engine.push(p("/a/list"), json(#"{"at":{".sv":"timestamp"}}"#))
            let pushEntry = try #require(try engine.readLogEntries(after: update.logID, limit: 10).first)
            #expect(pushEntry.kind == .push)
            #expect(pushEntry.location == p("/a/list"))
            #expect(pushEntry.changes == [.init(path: Path(validatedKeys: [push.pushedKey!]), value: json(#"{"at":1600000001000}"#))])
            #expect(pushEntry.before == [.init(path: p("/a/list").appending(push.pushedKey!), value: .null)])

            _ = try await engine.set(p("/a/n"), .number(8))
            _ = try await engine.set(p("/a/n/below"), .bool(true))
            let belowEntry = try #require(try engine.readLogEntries(after: nil, limit: 100).last)
            #expect(belowEntry.changes == [.init(path: .root, value: .bool(true))])
            #expect(belowEntry.before.count == 2)
            #expect(belowEntry.before.contains(.init(path: p("/a/n/below"), value: .null)))
            #expect(belowEntry.before.contains(.init(path: p("/a/n"), value: .number(8))), "the replaced primitive ancestor")

            let all = try await engine.get(p("/a"))
            _ = try await engine.remove(p("/a"))
            let removeEntry = try #require(try engine.readLogEntries(after: nil, limit: 100).last)
            #expect(removeEntry.kind == .remove)
            #expect(removeEntry.changes == [.init(path: .root, value: .null)])
            #expect(removeEntry.before == [.init(path: p("/a"), value: all)])

            // The JSON form `eddy log` prints.
            let printed = removeEntry.json
            #expect(printed["kind"] == .string("remove"))
            #expect(printed["path"] == .string("/a"))
            #expect(printed["id"] == .string(removeEntry.id.rawValue))
            #expect(printed["before"]["/a"] == all)
        }
    }

    @Test func idsKeepIncreasingAcrossRestartsWhenTheClockStepsBack() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let t: UInt64 = 1_700_000_100_000
        let clock = ManualClock(t)
        var engine = try Engine.open(directory: directory.path, options: EngineOptions(durability: .sync), clock: clock, logger: quietLogger)
        var ids: [LogID] = []
        for i in 0..<3 { ids.append(try #require(try await engine.set(p("/k/\(i)"), .number(Double(i))).committed).logID) }
        let databaseID = engine.databaseID
        engine.close()

        clock.set(t - 10_000)
        engine = try Engine.open(directory: directory.path, options: EngineOptions(durability: .sync), clock: clock, logger: quietLogger)
        #expect(engine.databaseID == databaseID, "the database id is fixed at creation")
        #expect(try engine.lastLogID() == ids.last)
        for i in 3..<6 {
            let id = try #require(try await engine.set(p("/k/\(i)"), .number(Double(i))).committed).logID
            #expect(id > ids.last!, "id \(id) after a clock step back must follow \(ids.last!)")
            ids.append(id)
        }
        let pushed = try await engine.push(p("/list"), .bool(true))
        #expect(pushed.logID > ids.last!)
        ids.append(pushed.logID)
        engine.close()

        // Once more, with the clock far in the past, and then in the future again.
        clock.set(1)
        engine = try Engine.open(directory: directory.path, options: EngineOptions(durability: .sync), clock: clock, logger: quietLogger)
        ids.append(try #require(try await engine.set(p("/k/old"), .number(0)).committed).logID)
        clock.set(t + 60_000)
        ids.append(try #require(try await engine.set(p("/k/new"), .number(0)).committed).logID)
        #expect(ids.last!.timestampMilliseconds == t + 60_000, "a clock ahead of the log is used again")
        #expect(zip(ids, ids.dropFirst()).allSatisfy { $0 < $1 }, "\(ids)")
        #expect(try engine.readLogEntries(after: nil, limit: 100).map(\.id) == ids)
        let report = try engine.verify()
        #expect(report.isHealthy, "\(report)")
        engine.close()
    }

    @Test func idsKeepIncreasingWhenTheClockStepsBackWhileRunning() async throws {
        let clock = ManualClock(1_700_000_500_000)
        try await withEngine(clock: clock) { engine in
            var ids: [LogID] = []
            for step: Int64 in [0, -5_000, 0, -1, +3, -86_400_000, +86_500_000, 0] {
                clock.set(UInt64(Int64(clock.nowMilliseconds()) + step))
                ids.append(try await engine.push(p("/l"), .number(Double(step))).logID)
                ids.append(try #require(try await engine.set(p("/t"), json(#"{".sv":"timestamp"}"#)).committed).logID)
                // The timestamp server value is the clock's time, even when it went back.
                #expect(try await engine.get(p("/t")) == .number(Double(clock.nowMilliseconds())))
            }
            #expect(zip(ids, ids.dropFirst()).allSatisfy { $0 < $1 }, "\(ids)")
            let entries = try engine.readLogEntries(after: nil, limit: 100)
            #expect(entries.map(\.id) == ids)
            // The push keys under /l sort in write order too.
            let list = try await engine.getShallow(p("/l"))
            guard case .object(let children) = list else {
                Issue.record("expected children, got \(list)")
                return
            }
            #expect(children.keys.sorted() == ids.enumerated().filter { $0.offset % 2 == 0 }.map(\.element.rawValue))
        }
    }

    // MARK: codec

    static let sampleEntries: [LogEntry] = [
        LogEntry(
            id: LogID("-NabcdefGHIJKLMN_xyz")!, kind: .set, timestampMilliseconds: 1_700_000_000_123, location: p("/users/ada"),
            changes: [.init(path: .root, value: json(#"{"name":"Ada","tags":["x","y"],"n":-0.5,"big":1.7976931348623157e308}"#))],
            before: [.init(path: p("/users/ada"), value: .null)]),
        LogEntry(
            id: LogID("0000000000000000000z")!, kind: .update, timestampMilliseconds: 0, location: .root,
            changes: [
                .init(path: p("a/é"), value: .string("line\nbreak \"quoted\" \u{0}\u{1F600}")),
                .init(path: p("-1/01/😀"), value: .null), .init(path: p("\u{E000}"), value: .bool(false)),
            ],
            before: [
                .init(path: p("/a/é"), value: .number(3)), .init(path: p("/a"), value: .string("was a primitive")),
                .init(path: p("/-1/01/😀"), value: json(#"{"deep":{"er":[1,2,3]}}"#)),
                .init(path: p("/\u{E000}"), value: .null),
            ]),
        LogEntry(
            id: LogID("zzzzzzzzzzzzzzzzzzzz")!, kind: .push, timestampMilliseconds: UInt64(1) << 47, location: p("/list"),
            changes: [.init(path: p("zzzzzzzzzzzzzzzzzzzz"), value: .number(.leastNonzeroMagnitude))],
            before: [.init(path: p("/list/zzzzzzzzzzzzzzzzzzzz"), value: .null)]),
        LogEntry(
            id: LogID("-------------------0")!, kind: .remove, timestampMilliseconds: 42, location: p("/x"),
            changes: [.init(path: .root, value: .null)], before: [.init(path: p("/x"), value: .number(2_147_483_648))]),
        LogEntry(id: LogID("-------------------1")!, kind: .update, timestampMilliseconds: 42, location: p("/x"), changes: [], before: []),
        LogEntry(
            id: LogID("-------------------2")!, kind: .set, timestampMilliseconds: 43, location: p("/t"),
            changes: [.init(path: .root, value: .bool(true))], before: [.init(path: p("/t"), value: .null)], term: UInt64.max),
    ]

    @Test(arguments: sampleEntries)
    func codecRoundTrip(_ entry: LogEntry) throws {
        let bytes = LogEntryCodec.encode(entry)
        #expect(bytes.first == LogEntryCodec.formatVersion)
        let decoded = try LogEntryCodec.decode(id: entry.id, bytes)
        #expect(decoded == entry)
        #expect(LogEntryCodec.encode(decoded) == bytes, "the encoding is deterministic")
    }

    @Test(arguments: sampleEntries)
    func everyFlippedByteIsCorruption(_ entry: LogEntry) {
        let bytes = LogEntryCodec.encode(entry)
        for index in bytes.indices {
            for mask: UInt8 in [0x01, 0x80, 0xFF] {
                var damaged = bytes
                damaged[index] ^= mask
                expectEddyErrorSync(.corruption, mentioning: [entry.id.rawValue]) {
                    _ = try LogEntryCodec.decode(id: entry.id, damaged)
                }
            }
        }
    }

    @Test func truncatedOrExtendedEntriesAreCorruption() {
        let entry = Self.sampleEntries[1]
        let bytes = LogEntryCodec.encode(entry)
        for length in [0, 1, 4, 13, bytes.count / 2, bytes.count - 1] {
            expectEddyErrorSync(.corruption, mentioning: ["log entry", entry.id.rawValue]) {
                _ = try LogEntryCodec.decode(id: entry.id, Array(bytes.prefix(length)))
            }
        }
        expectEddyErrorSync(.corruption) { _ = try LogEntryCodec.decode(id: entry.id, bytes + [0]) }
        expectEddyErrorSync(.corruption) { _ = try LogEntryCodec.decode(id: entry.id, [UInt8](repeating: 0, count: 64)) }
    }

    @Test func aVersionOneEntryDecodesWithTermZero() throws {
        // Version 1 is version 2 without the term varint (byte 10, after kind and timestamp).
        let entry = Self.sampleEntries[0]
        #expect(entry.term == 0)
        var body = Array(LogEntryCodec.encode(entry).dropLast(4))
        #expect(body[10] == 0, "term 0 is one zero byte")
        body.remove(at: 10)
        body[0] = 1
        let crc = CRC32C.checksum(body)
        let decoded = try LogEntryCodec.decode(id: entry.id, body + (0..<4).map { UInt8(truncatingIfNeeded: crc >> UInt32(8 * $0)) })
        #expect(decoded == entry)
    }

    @Test func aValidChecksumOverBadFieldsIsStillCorruption() {
        // Re-sign damaged bodies so only the field checks can catch them.
        func signed(_ body: [UInt8]) -> [UInt8] {
            let crc = CRC32C.checksum(body)
            return body + (0..<4).map { UInt8(truncatingIfNeeded: crc >> UInt32(8 * $0)) }
        }
        let entry = Self.sampleEntries[0]
        let body = Array(LogEntryCodec.encode(entry).dropLast(4))
        var badVersion = body
        badVersion[0] = LogEntryCodec.formatVersion + 1
        expectEddyErrorSync(.corruption, mentioning: ["version"]) { _ = try LogEntryCodec.decode(id: entry.id, signed(badVersion)) }
        var badKind = body
        badKind[1] = 9
        expectEddyErrorSync(.corruption, mentioning: ["kind"]) { _ = try LogEntryCodec.decode(id: entry.id, signed(badKind)) }
        expectEddyErrorSync(.corruption) { _ = try LogEntryCodec.decode(id: entry.id, signed(Array(body.dropLast()))) }
        expectEddyErrorSync(.corruption) { _ = try LogEntryCodec.decode(id: entry.id, signed(body + [0])) }
    }
}

@Suite struct LogEntrySizeTests {
    /// A write whose entry (its value and the before-image of what it replaces) would exceed
    /// `logEntryBytesMax` is refused whole: nothing applied, nothing logged. With the default
    /// bound (1 GiB) every entry fits one replication frame.
    @Test func aWriteWhoseEntryWouldBeTooLargeIsRefusedWhole() async throws {
        let directory = TemporaryDirectory("log-entry-size")
        defer { directory.remove() }
        var options = EngineOptions(durability: .none)
        options.logEntryBytesMax = 4096
        let engine = try Engine.open(directory: directory.path, options: options, logger: quietLogger)
        defer { engine.close() }
        let first = Value.object(["text": .string(String(repeating: "a", count: 1500))])
        let second = Value.object(["text": .string(String(repeating: "b", count: 1500))])
        let third = Value.object(["text": .string(String(repeating: "c", count: 1500))])
        _ = try await engine.set(p("/doc"), first)
        _ = try await engine.update(p("/"), [.init(path: p("doc2"), value: second)])
        let last = try engine.lastLogID()
        // Replacing both at once logs the new values and both before-images: about 6 KB.
        let refused = await #expect(throws: EddyError.self) {
            try await engine.update(p("/"), [.init(path: p("doc"), value: third), .init(path: p("doc2"), value: third)])
        }
        #expect(refused?.code == .limitExceeded, "\(String(describing: refused))")
        #expect(refused?.message.contains("logEntryBytesMax (4096)") == true, "\(String(describing: refused))")
        #expect(try await engine.get(p("/doc")) == first)
        #expect(try await engine.get(p("/doc2")) == second)
        #expect(try engine.lastLogID() == last, "nothing logged")
        // In parts it goes through, and the engine is whole.
        _ = try await engine.set(p("/doc"), third)
        _ = try await engine.set(p("/doc2"), third)
        #expect(try await engine.get(p("/doc2")) == third)
        #expect(try engine.verify().logEntryCount == 4)
    }
}
