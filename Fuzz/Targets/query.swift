// libFuzzer target: REST query parameters (orderBy, startAt, ..., limitToLast), as
// name=value pairs separated by '&' (already percent-decoded, as the server hands them over).
// Invariant: no input traps; errors are thrown, never crashes.

import EddyModel

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzQuery(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    var parameters = QueryParameters()
    for pair in text.split(separator: "&", omittingEmptySubsequences: true) {
        let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, QueryParameters.names.contains(String(parts[0])) else { continue }
        do throws(EddyError) {
            try parameters.add(String(parts[0]), String(parts[1]))
        } catch {
            return 0
        }
    }
    _ = try? parameters.build()
    return 0
}
