// libFuzzer target: the replication `entries` frame decoder (what a follower reads from its
// leader). Invariants: no input traps; what decodes encodes back to the same bytes.

import EddyProtocol

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzEntries(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let entries = try? ReplicatedEntries.decode(bytes) else { return 0 }
    let encoded = ReplicatedEntries.encode(entries)
    guard let again = try? ReplicatedEntries.decode(encoded) else { fatalError("re-encoded entries do not decode") }
    precondition(again.map(\.id) == entries.map(\.id) && again.map(\.bytes) == entries.map(\.bytes), "entries do not round-trip")
    return 0
}
