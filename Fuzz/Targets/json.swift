// libFuzzer target: the JSON parser (every request body and frame payload goes through it), then
// the write validator on what it accepts. Invariants: no input traps; what parses and validates
// is written back as JSON that parses to the same value.

import EddyModel

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let value = try? JSONParser.parse(bytes) else { return 0 }
    let written = JSONWriter.bytes(value)
    guard let again = try? JSONParser.parse(written) else { fatalError("written JSON does not parse: \(written)") }
    _ = again
    if let valid = try? WriteValidator.validate(value, at: .root) {
        let normalized = try? JSONParser.parse(JSONWriter.bytes(valid))
        precondition(normalized != nil, "a validated value does not round-trip")
    }
    return 0
}
