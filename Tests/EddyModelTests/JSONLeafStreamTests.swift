// JSONLeafStream: every leaf of a document in order, whatever the chunk size, with offsets that
// let a reader resume, and errors that name the byte.

import EddyModel
import EddyTesting
import Testing

@Suite struct JSONLeafStreamTests {
    /// The leaves of `text`, read `chunk` bytes at a time.
    private func leaves(_ text: String, chunk: Int) throws -> [(path: [String], value: Value, end: Int)] {
        let bytes = Array(text.utf8)
        var offset = 0
        var stream = JSONLeafStream(chunkBytes: chunk) { buffer in
            let count = min(buffer.count, bytes.count - offset)
            buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes.withUnsafeBytes { $0 }[offset..<(offset + count)]))
            offset += count
            return count
        }
        var found: [(path: [String], value: Value, end: Int)] = []
        try stream.forEachLeaf { path, value, end in
            found.append((path, value, end))
            return true
        }
        return found
    }

    @Test func leavesInDocumentOrderWithArraysAsKeysAndNullsSkipped() throws {
        let text = #" {"a": {"b": 1, "c": "x\"y\u00e9"}, "arr": [true, null, {"d": -2.5e3}], "empty": {}, "n": null} "#
        for chunk in [1, 2, 3, 7, 64, 1 << 20] {
            let found = try self.leaves(text, chunk: chunk)
            #expect(found.map(\.path) == [["a", "b"], ["a", "c"], ["arr", "0"], ["arr", "2", "d"]], "chunk \(chunk)")
            #expect(found.map(\.value) == [.number(1), .string("x\"yé"), .bool(true), .number(-2500)], "chunk \(chunk)")
            // Offsets: right after each leaf's token.
            let bytes = Array(text.utf8)
            #expect(found.map { bytes[$0.end - 1] } == Array("1\"e3".utf8))
        }
    }

    @Test func randomDocumentsRebuildExactly() throws {
        let seed = SeededGenerator.seedFromEnvironment()
        print("JSONLeafStreamTests.randomDocumentsRebuildExactly seed \(seed) (EDDY_SEED to repeat)")
        var g = SeededGenerator(seed: seed)
        for iteration in 0..<300 {
            let value = RandomValues.value(&g, depthMax: 4, widthMax: 5)
            let chunk = Int(g.next() % 9) + 1
            var rebuilt = Value.null
            for leaf in try self.leaves(JSONWriter.string(value, pretty: g.chance(1, in: 2)), chunk: chunk) {
                rebuilt.set(leaf.value, at: Path(validatedKeys: leaf.path))
            }
            #expect(rebuilt == value, "seed \(seed) iteration \(iteration) chunk \(chunk)")
        }
    }

    @Test func errorsNameTheByte() {
        for (text, fragment) in [
            (#"{"a": 1,, }"#, "at byte 8"), (#"{"a" 1}"#, "expected ':'"), (#"{"a": "open"#, "unterminated string"),
            (#"[1, 2"#, "expected ',' or ']'"), ("", "empty"), (#"{"a": 1} x"#, "after the JSON value"), (#"{"a": tru}"#, "byte 6"),
        ] {
            #expect(throws: EddyError.self, "\(text)") { _ = try self.leaves(text, chunk: 3) }
            do {
                _ = try self.leaves(text, chunk: 3)
            } catch let error as EddyError {
                #expect(error.message.contains(fragment), "\(text): \(error.message)")
            } catch {
                Issue.record("\(text): \(error)")
            }
        }
    }
}
