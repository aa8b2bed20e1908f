// EddyTesting's SpawnedProcess (how tests start eddyd): a child gets standard input, output and
// error and no other descriptor of the test process. A client socket a child inherited stayed
// open after the client closed it, so its server never saw the connection end (a Presence test
// whose onDisconnect writes never ran while another suite started its eddyd).

import EddyTesting
import Foundation
import Testing

@Suite struct SpawnedProcessTests {
    @Test func aChildHoldsNoDescriptorOfTheParentBeyondItsStandardOnes() throws {
        var pipeEnds: [Int32] = [-1, -1]
        #expect(pipe(&pipeEnds) == 0)  // not close-on-exec, as NIO's sockets are not
        defer { for fd in pipeEnds { close(fd) } }
        // `ls` lists its own descriptors: 0-2, and the one it reads the directory with.
        let child = try SpawnedProcess("/bin/ls", ["/proc/self/fd"])
        let listed = String(decoding: child.output.readDataToEndOfFile(), as: UTF8.self).split(separator: "\n").compactMap { Int32($0) }
        #expect(child.wait() == 0)
        #expect(!listed.contains(pipeEnds[0]) && !listed.contains(pipeEnds[1]), "the child holds \(listed); the parent's pipe is \(pipeEnds)")
        #expect(listed.filter { $0 > 2 }.count <= 1, "\(listed)")
    }
}
