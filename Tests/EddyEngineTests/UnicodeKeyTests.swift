// Keys beyond ASCII through the engine: order (Firebase compares UTF-16 code units, so a
// supplementary-plane character sorts before U+E000..U+FFFF), round trips, and a known
// problem with canonically equivalent keys.

import EddyEngine
import EddyModel
import Testing

@Suite struct UnicodeKeyTests {
    @Test func nonASCIIKeysRoundTripInFirebaseOrder() async throws {
        try await withEngine { engine in
            let keys = ["z", "\u{E000}", "😀", "\u{FFFF}", "é", "中", "\u{10FFFF}", "A", "-5", "007", "7"]
            var object: [String: Value] = [:]
            for (i, key) in keys.enumerated() { object[key] = .number(Double(i)) }
            _ = try await engine.set(p("/u"), .object(object))
            #expect(try await engine.get(p("/u")) == .object(object))
            for (i, key) in keys.enumerated() {
                #expect(try await engine.get(p("/u").appending(key)) == .number(Double(i)), "key \(key.debugDescription)")
            }
            // Integer-like keys first by value, then strings in UTF-16 code-unit order:
            // "😀" (U+D83D U+DE00) and U+10FFFF (U+DBFF U+DFFF) sort before U+E000 and U+FFFF.
            let rendered = text(try await engine.get(p("/u")))
            #expect(rendered == #"{"-5":8,"7":10,"007":9,"A":7,"z":0,"é":4,"中":5,"😀":2,"\#u{10FFFF}":6,"\#u{E000}":1,"\#u{FFFF}":3}"#)
            #expect(try engine.verify().isHealthy)
        }
    }

    /// Swift's `String` equality (and so `[String: Value]`) uses canonical equivalence, while
    /// the tree stores keys byte-exactly, as Firebase does. Eddy therefore refuses keys that are
    /// not in NFC: "é" (U+00E9) is accepted, "e" + U+0301 is refused by name and nothing of the
    /// write is applied or logged, so the stored tree and every `Value` agree.
    @Test func decomposedKeysAreRefusedAndComposedOnesStored() async throws {
        try await withEngine { engine in
            let composed = "\u{E9}"
            let decomposed = "e\u{301}"
            #expect(Array(composed.utf8) != Array(decomposed.utf8))
            _ = try await engine.set(Path(validatedKeys: ["k", composed]), .number(1))
            let lastID = try engine.lastLogID()
            for operation in [
                WriteOperation.set(Path(validatedKeys: ["k", decomposed]), .number(2)),
                WriteOperation.set(p("/k"), .object([decomposed: .number(2)])),
            ] {
                do {
                    _ = try await engine.write(operation)
                    Issue.record("a decomposed key was accepted")
                } catch let error as EddyError {
                    #expect(error.code == .invalidKey)
                    #expect(error.message.contains("NFC"), "\(error.message)")
                } catch {
                    Issue.record("unexpected error \(error)")
                }
            }
            #expect(try engine.lastLogID() == lastID)
            #expect(try await engine.get(p("/k")) == .object([composed: .number(1)]))
            #expect(try engine.verify().isHealthy)
        }
    }

    @Test func jsonObjectWithEquivalentKeysIsRefused() {
        #expect(throws: EddyError.self) { try JSONParser.parse("{\"\u{E9}\": 1, \"e\u{301}\": 2}") }
    }
}
