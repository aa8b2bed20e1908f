// Bytewise order of encoded keys (tree paths, index entries): the order RocksDB keeps them in.
// Encodings are self-delimiting, so this is also key order. One helper for every caller.

import Glibc

/// Negative, zero or positive as `a` sorts before, equal to or after `b`.
package func compareBytes(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
    let n = min(a.count, b.count)
    let order = n == 0 ? 0 : memcmp(a.baseAddress!, b.baseAddress!, n)
    if order != 0 { return order < 0 ? -1 : 1 }
    return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
}

package func compareBytes(_ a: UnsafeRawBufferPointer, _ b: [UInt8]) -> Int {
    b.withUnsafeBytes { compareBytes(a, $0) }
}

package func compareBytes(_ a: ArraySlice<UInt8>, _ b: ArraySlice<UInt8>) -> Int {
    a.withUnsafeBytes { a in b.withUnsafeBytes { compareBytes(a, $0) } }
}

package func compareBytes(_ a: [UInt8], _ b: [UInt8]) -> Int {
    a.withUnsafeBytes { a in b.withUnsafeBytes { compareBytes(a, $0) } }
}
