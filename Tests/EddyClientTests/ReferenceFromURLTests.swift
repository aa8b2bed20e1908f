// Which URLs `reference(fromURL:)` takes without checking them against the instance: as in
// Firebase's SDKs (FRepoInfo isCustomHost), those of a host outside Firebase's own domains.

@testable import EddyClient
import Testing

struct ReferenceFromURLTests {
    @Test func aHostOutsideFirebasesDomainsIsNotChecked() {
        #expect(Database.pathOfCustomHostURL("http://127.0.0.1:9000/a/b") == "/a/b")
        #expect(Database.pathOfCustomHostURL("http://localhost:9000") == "")
        #expect(Database.pathOfCustomHostURL("http://[::1]:9000/x") == "/x")
        #expect(Database.pathOfCustomHostURL("eddy://a:9001,b:9001/x") == "/x")
        // A regional database's domain is not one of the two (as in Firebase).
        #expect(Database.pathOfCustomHostURL("https://foo.europe-west1.firebasedatabase.app/x") == "/x")
    }

    @Test func firebasesDomainsAndSocketsAreChecked() {
        #expect(Database.pathOfCustomHostURL("https://other.firebaseio.com/a") == nil)
        #expect(Database.pathOfCustomHostURL("https://other.firebaseio.com:443/a") == nil)
        #expect(Database.pathOfCustomHostURL("https://demo.firebaseio-demo.com/a") == nil)
        #expect(Database.pathOfCustomHostURL("eddy+unix:///tmp/eddyd.sock/a") == nil)
        #expect(Database.pathOfCustomHostURL("not a url") == nil)
        #expect(Database.pathOfCustomHostURL("http:///a") == nil)
    }
}
