// Expectations shared by the test targets: a call must throw an `EddyError` with a given code
// whose message names what the user needs (key, path, limit). Test-only: linked into test
// targets, never into the executables.

import EddyModel
import Testing

/// Runs `body`, expects it to throw an `EddyError` with `code` whose message contains every
/// fragment, and returns the error for further checks.
@discardableResult
public func expectEddyError(
    _ code: EddyError.Code,
    mentioning fragments: [String] = [],
    _ comment: String = "",
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> Void
) async -> EddyError? {
    do {
        try await body()
    } catch let error as EddyError {
        #expect(error.code == code, "wrong code for: \(error.message) \(comment)", sourceLocation: sourceLocation)
        for fragment in fragments {
            #expect(
                error.message.contains(fragment), "message \"\(error.message)\" should mention \"\(fragment)\" \(comment)",
                sourceLocation: sourceLocation)
        }
        return error
    } catch {
        Issue.record("expected EddyError(\(code)), got \(error) \(comment)", sourceLocation: sourceLocation)
        return nil
    }
    Issue.record("expected EddyError(\(code)), nothing was thrown \(comment)", sourceLocation: sourceLocation)
    return nil
}

/// Synchronous variant for blocking APIs (codec, data directory).
@discardableResult
public func expectEddyErrorSync(
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
