// Helpers shared by the EddyModel suites: the property-test run settings and comparisons.
// (`expectEddyErrorSync` lives in EddyTesting, shared with the engine suites.)

import EddyModel
import EddyTesting
import Testing

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
