// libFuzzer target: rules' `matches()` regular expressions (`RuleRegex`). The input's first
// byte picks the flags, the text up to the first NUL is the pattern, the rest the string.
// Invariants: no input traps or exhausts the stack; a pattern compiles or is refused with a
// reason; a compiled one answers for any string, the same whether matched once or twice.

import EddyModel

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRegex(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let flags = bytes[0] & 1 == 1 ? "i" : ""
    let rest = bytes[1...]
    let split = rest.firstIndex(of: 0) ?? rest.endIndex
    let pattern = String(decoding: rest[..<split], as: UTF8.self)
    let string = split < rest.endIndex ? String(decoding: rest[(split + 1)...], as: UTF8.self) : ""
    do {
        let regex = try RuleRegex(pattern, flags: flags)
        let first = regex.matches(string)
        if regex.matches(string) != first { fatalError("matches() answered twice differently for /\(pattern)/\(flags)") }
    } catch {
        if error.message.isEmpty { fatalError("a refusal without a reason for /\(pattern)/") }
    }
    return 0
}
