// `RESTResponder.credential`: the token of `Authorization: Bearer <token>`, as Firebase's REST
// clients send it (scheme case-insensitive, surrounding blanks ignored), and nil for anything else.

import HTTPTypes
import Testing

@testable import EddyServer

@Suite struct BearerCredentialTests {
    private func credential(_ header: String?) -> String? {
        var fields = HTTPFields()
        if let header { fields[.authorization] = header }
        return RESTResponder.credential(fields)
    }

    @Test func readsTheTokenOfABearerHeader() {
        #expect(self.credential("Bearer abc.def.ghi") == "abc.def.ghi")
        #expect(self.credential("bearer owner") == "owner")
        #expect(self.credential("BEARER  spaced \t") == "spaced")
    }

    @Test func ignoresOtherSchemesAndEmptyTokens() {
        #expect(self.credential(nil) == nil)
        #expect(self.credential("Basic dXNlcjpwYXNz") == nil)
        #expect(self.credential("Bearer") == nil)
        #expect(self.credential("Bearer   ") == nil)
        #expect(self.credential("Bearerx token") == nil)
        #expect(self.credential("Bear token") == nil)
    }
}
