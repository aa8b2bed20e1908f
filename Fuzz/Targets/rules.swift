// libFuzzer target: the rules document parser (`PUT /.settings/rules.json`). Invariant: no
// input traps; an accepted document's index declarations match paths without trapping.

import EddyModel

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRules(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let document = try? JSONParser.parse(bytes), let rules = try? Rules.parse(document) else { return 0 }
    let probe = Path(validatedKeys: ["users", "u1", "posts"])
    for declaration in rules.indexes { _ = declaration.matches(probe) }
    return 0
}
