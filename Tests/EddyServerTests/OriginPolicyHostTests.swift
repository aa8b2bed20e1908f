// `OriginPolicy.allowsHost`: the `Host` names a request may carry (DNS rebinding protection), and
// the byte-wise IPv4 check that answers most requests before the general one.

import Testing

@testable import EddyServer

@Suite struct OriginPolicyHostTests {
    private let policy = OriginPolicy(allowedHosts: ["db.example.com"])

    @Test func allowsAddressesLocalhostMachineNamesAndConfiguredNames() {
        for host in [
            "127.0.0.1", "127.0.0.1:9000", "10.0.0.255:80", "0.0.0.0", "001.2.3.4", "[::1]:9000", "localhost:9000", "a.localhost",
            "db", "DB:80", "db.example.com", "DB.Example.com:443",
        ] {
            #expect(self.policy.allowsHost(host), "\(host)")
        }
    }

    @Test func refusesOtherDottedNames() {
        for host in ["evil.example.com", "127.0.0.1.evil.com", "1.2.3.4.5", "1.2.3.256", "1..2.3", "1.2.3", "a.b.c.d:80", "1.2.3.4x"] {
            #expect(!self.policy.allowsHost(host), "\(host)")
        }
    }

    @Test func theByteWiseCheckTakesOnlyIPv4Literals() {
        for host in ["127.0.0.1", "127.0.0.1:9000", "255.255.255.255:65535", "1.2.3.4:"] {
            #expect(OriginPolicy.isIPv4WithPort(host.utf8), "\(host)")
        }
        for host in ["", "1.2.3", "1.2.3.4.5", "1.2.3.256", "1..2.3", ".1.2.3", "1.2.3.4:8a", "1.2.3:80", "localhost", "[::1]:80", "+1.2.3.4"] {
            #expect(!OriginPolicy.isIPv4WithPort(host.utf8), "\(host)")
        }
    }
}
