// Helpers shared by the EddyModel suites: expecting an `EddyError` with a given code whose
// message names what the user needs (key, path, limit), and the property-test run settings.

import EddyModel
import EddyTesting
import Testing

/// Runs `body`, expects it to throw an `EddyError` with `code` whose message contains every
/// fragment, and returns the error for further checks.
@discardableResult
func expectEddyError(
    _ code: EddyError.Code,
    mentioning fragments: [String] = [],
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> Void
) -> EddyError? {
    do {
        try body()
    } catch let error as EddyError {
        #expect(error.code == code, "wrong code for: \(error.message)", sourceLocation: sourceLocation)
        for fragment in fragments {
            #expect(
                error.message.contains(fragment), "message \"\(error.message)\" should mention \"\(fragment)\"",
                sourceLocation: sourceLocation)
        }
        return error
    } catch {
        Issue.record("expected EddyError(\(code)), got \(error)", sourceLocation: sourceLocation)
        return nil
    }
    Issue.record("expected EddyError(\(code)), nothing was thrown", sourceLocation: sourceLocation)
    return nil
}

/// Iterations of a property test: 2000 by default, `EDDY_EVENTS_MAX` to change it.
let propertyIterations = SeededGenerator.eventsMaxFromEnvironment(default: 2000)

/// -1, 0 or 1.
func sign(_ x: Int) -> Int { x < 0 ? -1 : (x > 0 ? 1 : 0) }

/// Bytewise comparison of two encodings, as RocksDB's default comparator does it.
func compareBytes(_ a: [UInt8], _ b: [UInt8]) -> Int {
    if a == b { return 0 }
    return a.lexicographicallyPrecedes(b) ? -1 : 1
}

/// JavaScript's `<` on strings: UTF-16 code-unit order.
func compareUTF16Reference(_ a: String, _ b: String) -> Int {
    if a.utf16.elementsEqual(b.utf16) { return 0 }
    return a.utf16.lexicographicallyPrecedes(b.utf16) ? -1 : 1
}
