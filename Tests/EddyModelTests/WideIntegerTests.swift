// 64-bit integers stay exact (Firebase keeps longs): JSON in and out, leaf records, value order
// against Doubles, and increments (exact while they fit, Doubles on overflow, as Firebase's).

import EddyModel
import EddyTesting
import Testing

@Suite struct WideIntegerTests {
    @Test(arguments: [
        "9007199254740993", "-9007199254740993", "9223372036854775807", "-9223372036854775807", "12345678901234567",
        "1234567890123456789",
    ])
    func integersBeyondDoublesRoundTripAsWideIntegers(_ text: String) throws {
        let value = try JSONParser.parse(text)
        guard case .wideInteger(let n) = value else {
            Issue.record("\(text) parsed as \(value)")
            return
        }
        #expect(String(n) == text)
        #expect(JSONWriter.string(value) == text)
        #expect(try LeafEncoding.decode(LeafEncoding.encode(value)) == value)
    }

    @Test(arguments: [
        ("9007199254740992", "9007199254740992"), ("-9223372036854775808", "-9223372036854775808"),
        ("1152921504606846976", "1152921504606846976"), ("1.152921504606846976e18", "1152921504606846976"),
        ("100000000000000000000", "1e+20"), ("18446744073709551615", "1.8446744073709552e+19"), ("1e300", "1e+300"), ("2.5", "2.5"),
    ])
    func integersADoubleHoldsStayNumbers(_ text: String, _ written: String) throws {
        let value = try JSONParser.parse(text)
        guard case .number = value else {
            Issue.record("\(text) parsed as \(value)")
            return
        }
        #expect(JSONWriter.string(value) == written)
        #expect(try JSONParser.parse(JSONWriter.string(value)) == value)
    }

    @Test func eachIntegerHasOneForm() throws {
        #expect(Value.integer(9_007_199_254_740_992) == .number(9_007_199_254_740_992))
        #expect(Value.integer(1 << 62) == .number(Double(1 << 62)))
        #expect(Value.integer(Int64.min) == .number(-9_223_372_036_854_775_808))
        #expect(Value.integer(9_007_199_254_740_993) == .wideInteger(9_007_199_254_740_993))
        #expect(Value.integer(Int64.max) == .wideInteger(Int64.max))
        #expect(try JSONParser.parse("9007199254740993") != JSONParser.parse("9007199254740992"))
        #expect(try JSONParser.parse("{\"a\":9007199254740993}") == JSONParser.parse("{ \"a\" : 9007199254740993 }"))
        // A leaf record of tag 5 holding what a number record holds is corrupt (two forms).
        let record: [UInt8] = [0x05, 1, 0, 0, 0, 0, 0, 0, 0]
        expectEddyErrorSync(.corruption, mentioning: ["wide integer"]) { _ = try LeafEncoding.decode(record) }
        #expect(Value.wideInteger(5).isNumber && Value.wideInteger(5).isPriority)
    }

    @Test func wideIntegersOrderExactlyAmongNumbers() {
        let twoTo53 = 9_007_199_254_740_992.0
        let ordered: [Value] = [
            .number(-.greatestFiniteMagnitude), .number(-9_223_372_036_854_775_808), .integer(Int64.min + 1),
            .integer(-9_007_199_254_740_993), .number(-twoTo53), .number(-1.5), .number(0), .number(twoTo53),
            .integer(9_007_199_254_740_993), .number(twoTo53 + 2), .integer(9_007_199_254_740_995), .integer(Int64.max - 1),
            .integer(Int64.max), .number(9_223_372_036_854_775_808), .number(1e300), .string(""),
        ]
        for (i, a) in ordered.enumerated() {
            for (j, b) in ordered.enumerated() {
                let expected = i < j ? -1 : (i > j ? 1 : 0)
                #expect(ValueOrder.compare(a, b) == expected, "\(a) vs \(b)")
            }
        }
    }

    @Test func indexKeysOrderWideIntegersExactlyAndDecodeThem() throws {
        let twoTo53 = 9_007_199_254_740_992.0
        let ordered: [Value] = [
            .integer(Int64.min + 1), .integer(-9_007_199_254_740_993), .number(-twoTo53), .number(twoTo53),
            .integer(9_007_199_254_740_993), .number(twoTo53 + 2), .integer(9_007_199_254_740_995), .number(twoTo53 + 4),
            .integer(Int64.max - 1), .integer(Int64.max), .number(9_223_372_036_854_775_808),
        ]
        var previous: [UInt8]? = nil
        for value in ordered {
            for key in ["1", "a"] {
                var bytes = SortValueEncoding.encode(value)
                let length = bytes.count
                PathKeyEncoding.appendSegment(key, to: &bytes)
                if let previous { #expect(previous.lexicographicallyPrecedes(bytes), "\(value) \(key)") }
                previous = bytes
                #expect(try SortValueEncoding.length(bytes[...]) == length)
                var rest = bytes[...]
                #expect(try SortValueEncoding.decode(&rest) == value)
                #expect(try PathKeyEncoding.decodeSegment(&rest) == key)
            }
        }
    }

    @Test func incrementsAreExactWhileTheyFitAndDoublesBeyond() {
        #expect(Value.number(9_007_199_254_740_992).adding(.number(1)) == .wideInteger(9_007_199_254_740_993))
        #expect(Value.wideInteger(Int64.max - 1).adding(.number(1)) == .wideInteger(Int64.max))
        #expect(Value.wideInteger(Int64.max).adding(.number(1)) == .number(9_223_372_036_854_775_808))
        #expect(Value.wideInteger(9_007_199_254_740_993).adding(.number(0.5)) == .number(Double(9_007_199_254_740_993 as Int64) + 0.5))
        #expect(Value.number(1.5).adding(.number(1)) == .number(2.5))
        #expect(Value.string("a").adding(.number(1)) == nil)
        #expect(Value.number(1).adding(.null) == nil)
    }

    @Test func randomIntegersKeepEveryDigitAndTheirOrder() throws {
        let seed = SeededGenerator.seedFromEnvironment()
        print("WideIntegerTests.randomIntegersKeepEveryDigitAndTheirOrder seed \(seed) (EDDY_SEED to repeat)")
        var g = SeededGenerator(seed: seed)
        for iteration in 0..<2000 {
            let a = Int64(bitPattern: g.next()) >> Int64(g.int(in: 0..<64))
            let b = Int64(bitPattern: g.next()) >> Int64(g.int(in: 0..<64))
            let (va, vb) = (Value.integer(a), Value.integer(b))
            #expect(try JSONParser.parse(String(a)) == va, "seed \(seed) iteration \(iteration)")
            #expect(JSONWriter.string(va) == String(a), "seed \(seed) iteration \(iteration)")
            #expect(try LeafEncoding.decode(LeafEncoding.encode(va)) == va, "seed \(seed) iteration \(iteration)")
            #expect(ValueOrder.compare(va, vb) == (a < b ? -1 : (a > b ? 1 : 0)), "seed \(seed) iteration \(iteration): \(a) vs \(b)")
            #expect(va.exactInt64 == a)
        }
    }
}
