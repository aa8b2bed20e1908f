// libFuzzer target: the stored log entry decoder (`LogEntryCodec`), which a follower runs on
// every entry its leader sends and `eddy log`/`verify` run on the disk. Invariants: no input
// traps; what decodes encodes back to bytes that decode to the same entry. The checksum would
// stop nearly every mutation at the door, so each input is tried twice: as is, and with its
// last four bytes replaced by the right CRC-32C, which lets the fuzzer reach the fields.

import EddyModel

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzLogEntry(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    check(bytes)
    if size >= 4 {
        var fixed = Array(bytes.dropLast(4))
        let crc = CRC32C.checksum(fixed)
        for shift in stride(from: 0, to: 32, by: 8) { fixed.append(UInt8(truncatingIfNeeded: crc >> UInt32(shift))) }
        check(fixed)
    }
    return 0
}

private func check(_ bytes: [UInt8]) {
    let id = LogID("-NzzzzzzzzzzzzzzzzzA")!
    guard let entry = try? LogEntryCodec.decode(id: id, bytes) else { return }
    let encoded = LogEntryCodec.encode(entry)
    guard let again = try? LogEntryCodec.decode(id: id, encoded) else { fatalError("a re-encoded entry does not decode") }
    precondition(again == entry, "log entries do not round-trip")
}
