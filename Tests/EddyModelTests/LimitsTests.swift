// The relationships between limits that Swift cannot check at compile time (TigerBeetle's
// constants.zig), plus the values Firebase fixes.

import EddyModel
import Testing

@Suite struct LimitsTests {
    @Test func firebaseLimits() {
        #expect(Limits.pathDepthMax == 32)
        #expect(Limits.keyBytesMax == 768)
        #expect(Limits.stringBytesMax == 10 * 1024 * 1024)
    }

    @Test func relationships() {
        #expect(Limits.requestBytesDefault <= Limits.requestBytesMax)
        #expect(Limits.stringBytesMax < Limits.requestBytesDefault)
        #expect(Limits.commitGroupCountMax <= Limits.commitQueueCountMax)
        // The parser must accept anything deep enough to be written.
        #expect(Limits.jsonDepthMax >= Limits.pathDepthMax)
        // One maximal string fits in one group commit.
        #expect(Limits.stringBytesMax <= Limits.commitGroupBytesMax)
        // Tree-key segments store a key's length in 16 bits.
        #expect(Limits.keyBytesMax <= Int(UInt16.max))
        // Namespace names are directory names (NAME_MAX is 255 bytes).
        #expect(Limits.namespaceBytesMax <= 255)
    }

    @Test func allPositive() {
        let limits = [
            Limits.pathDepthMax, Limits.keyBytesMax, Limits.stringBytesMax, Limits.jsonDepthMax,
            Limits.requestBytesDefault, Limits.requestBytesMax, Limits.commitQueueCountMax, Limits.commitGroupCountMax,
            Limits.commitGroupBytesMax, Limits.updatePathsCountMax, Limits.logReadCountMax, Limits.namespacesOpenMax,
            Limits.namespaceBytesMax,
        ]
        #expect(limits.allSatisfy { $0 > 0 })
    }
}
