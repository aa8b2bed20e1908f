// Database URLs read as Firebase's SDKs read them: which URLs `reference(fromURL:)` takes
// without checking them against the instance (FRepoInfo isCustomHost: those of a host outside
// Firebase's own domains), and a URL without a port being secure (FUtilities parseUrl).

@testable import EddyClient
import Testing

struct DatabaseURLTests {
    @Test func aURLWithoutAPortIsSecure() {
        #expect(Database.securedWithoutPort("http://foo.bar.com") == "https://foo.bar.com")
        #expect(Database.securedWithoutPort("HTTP://Foo.bar.com/?ns=x") == "https://Foo.bar.com/?ns=x")
        #expect(Database.securedWithoutPort("http://[::1]") == "https://[::1]")
        #expect(Database.securedWithoutPort("http://127.0.0.1:9000?ns=a") == "http://127.0.0.1:9000?ns=a")
        #expect(Database.securedWithoutPort("http://[::1]:9000") == "http://[::1]:9000")
        #expect(Database.securedWithoutPort("https://foo.bar.com") == "https://foo.bar.com")
        #expect(Database.securedWithoutPort("eddy://a:9001") == "eddy://a:9001")
        // FIRDatabaseTests testDatabaseForAppWithURL: an instance's references show it.
        #expect(Database.database(url: "http://foo-secure.bar.com").reference().url == "https://foo-secure.bar.com")
        #expect(Database.database(url: "http://foo-secure.bar.com") === Database.database(url: "https://foo-secure.bar.com"))
    }

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
