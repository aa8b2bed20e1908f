// libFuzzer target: path and key parsing (every URL and frame path). Invariants: no input traps;
// an accepted path prints as a string that parses to the same path.

import EddyModel

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPath(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    guard let path = try? Path(text) else { return 0 }
    guard let again = try? Path(path.description) else { fatalError("\(path) does not parse again") }
    precondition(again == path, "\(path) round-trips to \(again)")
    for key in path.keys { _ = Key.compare(key, path.keys[0]) }
    return 0
}
