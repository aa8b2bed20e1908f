// Push IDs / log IDs (FIREBASE_REFERENCE §5): format, timestamp prefix, strict increase within a
// millisecond, across clock steps back and after a seed ID, carry, and injected randomness.

import EddyModel
import EddyTesting
import Testing

@Suite struct PushIDGeneratorTests {
    static let alphabet = "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz"
    static let now: UInt64 = 1_700_000_000_000

    static func isWellFormed(_ id: LogID) -> Bool {
        id.rawValue.count == 20 && id.rawValue.allSatisfy { Self.alphabet.contains($0) }
    }

    @Test func alphabetIsInASCIIOrder() {
        #expect(PushIDGenerator.alphabet == Array(Self.alphabet.utf8))
        #expect(PushIDGenerator.alphabet.sorted() == PushIDGenerator.alphabet)
        #expect(Set(PushIDGenerator.alphabet).count == 64)
        for (i, byte) in PushIDGenerator.alphabet.enumerated() {
            #expect(PushIDGenerator.digitValue(byte) == i)
        }
        #expect(PushIDGenerator.digitValue(UInt8(ascii: ".")) == nil)
        #expect(PushIDGenerator.digitValue(0xFF) == nil)
    }

    @Test func idsAre20AlphabetCharactersWithTheTimestampFirst() {
        var generator = PushIDGenerator(random: SeededGenerator(seed: 1))
        for offset: UInt64 in 0..<100 {
            let id = generator.next(nowMilliseconds: Self.now + offset * 7919)
            #expect(Self.isWellFormed(id), "\(id)")
            #expect(id.timestampMilliseconds == Self.now + offset * 7919)
            #expect(LogID(id.rawValue) == id)
        }
    }

    @Test func timestampMatchesFirebasesExample() {
        // The REST docs' example push ID "-INOQPH-aV_psbk3ZXEX" was made at 1331866477696 ms.
        #expect(LogID("-INOQPH-aV_psbk3ZXEX")?.timestampMilliseconds == 1_331_866_477_696)
        var generator = PushIDGenerator(random: SeededGenerator(seed: 2))
        #expect(generator.next(nowMilliseconds: 1_331_866_477_696).rawValue.hasPrefix("-INOQPH-"))
        var zero = PushIDGenerator(random: SeededGenerator(seed: 2))
        #expect(zero.next(nowMilliseconds: 0).rawValue.hasPrefix("--------"))
        var one = PushIDGenerator(random: SeededGenerator(seed: 2))
        #expect(one.next(nowMilliseconds: 65).rawValue.hasPrefix("------00"))
        var last = PushIDGenerator(random: SeededGenerator(seed: 2))
        #expect(last.next(nowMilliseconds: (1 << 48) - 1).rawValue.hasPrefix("zzzzzzzz"))
    }

    @Test func injectedRandomnessIsDeterministic() {
        var a = PushIDGenerator(random: SeededGenerator(seed: 42))
        var b = PushIDGenerator(random: SeededGenerator(seed: 42))
        var c = PushIDGenerator(random: SeededGenerator(seed: 43))
        let idsA = (0..<10).map { a.next(nowMilliseconds: Self.now + UInt64($0)) }
        let idsB = (0..<10).map { b.next(nowMilliseconds: Self.now + UInt64($0)) }
        let idsC = (0..<10).map { c.next(nowMilliseconds: Self.now + UInt64($0)) }
        #expect(idsA == idsB)
        #expect(idsA != idsC)
    }

    @Test func strictlyIncreasingWithinAMillisecond() {
        var generator = PushIDGenerator(random: SeededGenerator(seed: 3))
        var previous = generator.next(nowMilliseconds: Self.now)
        for _ in 0..<5000 {
            let id = generator.next(nowMilliseconds: Self.now)
            #expect(previous < id, "\(previous) then \(id)")
            #expect(id.timestampMilliseconds == Self.now)
            previous = id
        }
    }

    @Test func sameMillisecondIncrementsTheRandomPartByOne() {
        var generator = PushIDGenerator(after: LogID("-INOQPH-aV_psbk3ZXEX")!, random: SeededGenerator(seed: 4))
        #expect(generator.next(nowMilliseconds: 1_331_866_477_696).rawValue == "-INOQPH-aV_psbk3ZXEY")
        #expect(generator.next(nowMilliseconds: 1_331_866_477_696).rawValue == "-INOQPH-aV_psbk3ZXEZ")
        #expect(generator.next(nowMilliseconds: 1_331_866_477_696).rawValue == "-INOQPH-aV_psbk3ZXE_")
        #expect(generator.next(nowMilliseconds: 1_331_866_477_696).rawValue == "-INOQPH-aV_psbk3ZXEa")
    }

    @Test func increasingWhenTheClockStepsBack() {
        var generator = PushIDGenerator(random: SeededGenerator(seed: 5))
        let first = generator.next(nowMilliseconds: Self.now)
        let second = generator.next(nowMilliseconds: Self.now - 60_000)
        let third = generator.next(nowMilliseconds: Self.now - 1)
        #expect(first < second)
        #expect(second < third)
        // The IDs keep the latest timestamp seen rather than going back in time.
        #expect(second.timestampMilliseconds == Self.now)
        #expect(third.timestampMilliseconds == Self.now)
        let fourth = generator.next(nowMilliseconds: Self.now + 1)
        #expect(third < fourth)
        #expect(fourth.timestampMilliseconds == Self.now + 1)
    }

    @Test func seededAfterAnExistingIDYieldsGreaterIDs() throws {
        var seedGenerator = PushIDGenerator(random: SeededGenerator(seed: 6))
        let existing = seedGenerator.next(nowMilliseconds: Self.now)
        for now in [Self.now - 86_400_000, Self.now - 1, Self.now, Self.now + 1] {
            var generator = PushIDGenerator(after: existing, random: SeededGenerator(seed: 7))
            let id = generator.next(nowMilliseconds: now)
            #expect(existing < id, "now \(now): \(existing) then \(id)")
            #expect(id.timestampMilliseconds == max(now, Self.now))
            #expect(id < generator.next(nowMilliseconds: now))
        }
    }

    @Test func carryWhenTheRandomPartIsAllZ() throws {
        let full = try #require(LogID("-INOQPH-zzzzzzzzzzzz"))
        var generator = PushIDGenerator(after: full, random: SeededGenerator(seed: 8))
        let next = generator.next(nowMilliseconds: full.timestampMilliseconds)
        #expect(next.rawValue == "-INOQPH0------------")
        #expect(full < next)
        #expect(next.timestampMilliseconds == full.timestampMilliseconds + 1)
        #expect(generator.next(nowMilliseconds: full.timestampMilliseconds).rawValue == "-INOQPH0-----------0")

        let partial = try #require(LogID("-INOQPH-abczzzzzzzzz"))
        var generator2 = PushIDGenerator(after: partial, random: SeededGenerator(seed: 8))
        #expect(generator2.next(nowMilliseconds: 0).rawValue == "-INOQPH-abd---------")
    }

    @Test func randomClockWalksStayStrictlyIncreasing() {
        let seed = SeededGenerator.seedFromEnvironment()
        var g = SeededGenerator(seed: seed)
        var generator = PushIDGenerator(random: SeededGenerator(seed: seed &+ 1))
        var now = Self.now
        var previous: LogID?
        var latest: UInt64 = 0
        for _ in 0..<propertyIterations {
            switch g.int(in: 0..<4) {
            case 0: now += UInt64(g.int(in: 1...1000))
            case 1: now -= UInt64(g.int(in: 1...1000))
            default: break
            }
            let id = generator.next(nowMilliseconds: now)
            latest = max(latest, now)
            #expect(Self.isWellFormed(id), Comment("seed \(seed): \(id)"))
            if let previous {
                #expect(previous < id, Comment("seed \(seed): \(previous) then \(id)"))
                if !(previous < id) { return }
            }
            #expect(id.timestampMilliseconds >= latest, Comment("seed \(seed)"))
            previous = id
        }
    }

    @Test(arguments: ["", "-INOQPH-aV_psbk3ZXE", "-INOQPH-aV_psbk3ZXEXX", "-INOQPH-aV_psbk3ZX.X", "-INOQPH-aV_psbk3ZXE\u{E9}"])
    func logIDRejectsMalformedStrings(text: String) {
        #expect(LogID(text) == nil)
    }

    @Test func logIDOrderIsByteOrder() throws {
        let ids = ["--------------------", "-------------------0", "0-------------------", "A-------------------",
                   "_-------------------", "a-------------------", "zzzzzzzzzzzzzzzzzzzz"]
        let parsed = try ids.map { try #require(LogID($0)) }
        #expect(parsed.sorted() == parsed)
        #expect(parsed.reversed().sorted() == parsed)
    }

    @Test func timestampBeyond48BitsStopsTheProcess() async {
        await #expect(processExitsWith: .failure) {
            var generator = PushIDGenerator(random: SeededGenerator(seed: 1))
            _ = generator.next(nowMilliseconds: 1 << 48)
        }
    }
}
