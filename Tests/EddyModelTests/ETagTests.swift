// ETags: FNV-1a 128 over the canonical JSON, `null_etag` for absent data, stable across key
// insertion order, different for different values.

import EddyModel
import EddyTesting
import Testing

@Suite struct ETagTests {
    @Test func absentDataHasTheNullETag() {
        #expect(ETag.of(.null) == "null_etag")
        #expect(ETag.null == "null_etag")
    }

    @Test func fnv1a128TestVectors() {
        // Offset basis for empty input; "a" is the published FNV-1a 128 test vector.
        #expect(ETag.of(canonicalJSON: []) == "6c62272e07bb014262b821756295c58d")
        #expect(ETag.of(canonicalJSON: Array("a".utf8)) == "d228cb696f1a8caf78912b704e4a8964")
    }

    @Test func hashesTheCanonicalJSON() {
        #expect(ETag.of(.object(["a": .number(1)])) == "a930e708924ff78dd36054201cd38dc9")  // {"a":1}
        #expect(ETag.of(.object(["0": .string("a"), "2": .string("c")])) == "46eccfa2c6ca3d43cf372f2b3bbc790e")  // ["a",null,"c"]
        let value = Value.object(["b": .string("x"), "a": .object(["c": .bool(true)])])
        #expect(ETag.of(value) == ETag.of(canonicalJSON: JSONWriter.bytes(value)))
    }

    @Test func isIndependentOfInsertionOrderAndNumberSpelling() throws {
        var forward: [String: Value] = [:]
        var backward: [String: Value] = [:]
        let keys = (0..<50).map { "k\($0)" }
        for key in keys { forward[key] = .string(key) }
        for key in keys.reversed() { backward[key] = .string(key) }
        #expect(ETag.of(.object(forward)) == ETag.of(.object(backward)))
        #expect(ETag.of(try JSONParser.parse("1.0")) == ETag.of(try JSONParser.parse("1")))
        #expect(ETag.of(try JSONParser.parse(#"{"b":1,"a":2}"#)) == ETag.of(try JSONParser.parse(#"{ "a" : 2 , "b" : 1 }"#)))
    }

    @Test func differentValuesHaveDifferentETags() {
        let values: [Value] = [
            .bool(true), .bool(false), .number(0), .number(1), .string("1"), .string(""), .object(["a": .number(1)]),
            .object(["a": .number(2)]), .object(["b": .number(1)]),
        ]
        let tags = values.map(ETag.of)
        #expect(Set(tags).count == values.count)
        for tag in tags {
            #expect(tag.count == 32)
            #expect(tag.allSatisfy { "0123456789abcdef".contains($0) })
        }
    }

    @Test func randomValuesHaveWellFormedDistinctETags() {
        let seed = SeededGenerator.seedFromEnvironment()
        var g = SeededGenerator(seed: seed)
        var byTag: [String: Value] = [:]
        for _ in 0..<propertyIterations {
            let value = RandomValues.value(&g)
            let tag = ETag.of(value)
            if value.isNull { continue }
            #expect(tag.count == 32, Comment("seed \(seed)"))
            if let other = byTag[tag] {
                #expect(other == value, Comment("seed \(seed): \(other) and \(value) share \(tag)"))
            }
            byTag[tag] = value
        }
    }
}
