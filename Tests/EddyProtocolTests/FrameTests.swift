// Frames round-trip through the decoder whatever the chunking; oversized lengths, unknown
// versions and kinds are protocol errors.

import EddyProtocol
import Testing

@Suite struct FrameTests {
    @Test func framesRoundTripInAnyChunking() throws {
        let frames = (0..<50).map { i in
            Frame(kind: i % 2 == 0 ? .get : .events, requestID: UInt64(i) * 1_000_003, payload: Array("{\"n\":\(i)}".utf8))
        }
        let bytes = frames.flatMap { $0.encoded() }
        for chunk in [1, 3, 7, 64, bytes.count] {
            var decoder = FrameDecoder()
            var decoded: [Frame] = []
            var offset = 0
            while offset < bytes.count {
                decoder.append(bytes[offset..<min(offset + chunk, bytes.count)])
                offset += chunk
                while let frame = try decoder.next() { decoded.append(frame) }
            }
            #expect(decoded == frames, "chunk \(chunk)")
        }
    }

    @Test func malformedStreamsAreRefused() {
        var oversized = FrameDecoder()
        oversized.append([0x7F, 0xFF, 0xFF, 0xFF])
        #expect(throws: ProtocolError.self) { try oversized.next() }
        var version = FrameDecoder()
        version.append([0, 0, 0, 10, 9, 1, 0, 0, 0, 0, 0, 0, 0, 1])
        #expect(throws: ProtocolError.self) { try version.next() }
        var kind = FrameDecoder()
        kind.append([0, 0, 0, 10, 1, 99, 0, 0, 0, 0, 0, 0, 0, 1])
        #expect(throws: ProtocolError.self) { try kind.next() }
    }

    /// A server reads frames of at most 16 MiB; a client or follower reads a server's of up to
    /// 1 GiB (what REST wrote, with before-images, travels back in them).
    @Test func theBoundIsTheReadersByDirection() throws {
        let events = Frame(kind: .events, requestID: 3, payload: [UInt8](repeating: UInt8(ascii: " "), count: Frame.bytesMax))
        let bytes = events.encoded()
        var server = FrameDecoder()
        server.append(bytes)
        #expect(throws: ProtocolError.self) { try server.next() }
        var client = FrameDecoder(lengthMax: Frame.fromServerBytesMax)
        client.append(bytes)
        #expect(try client.next() == events)
        var beyond = FrameDecoder(lengthMax: Frame.fromServerBytesMax)
        let length = UInt32(Frame.fromServerBytesMax + 1)
        beyond.append([UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)])
        #expect(throws: ProtocolError.self) { try beyond.next() }
    }

    @Test func aTLSRecordIsNamedAsSuch() {
        // A plain follower's first read from a TLS replication listener: an alert record.
        var alert = FrameDecoder()
        alert.append([0x15, 0x03, 0x01, 0x00, 0x02, 0x02, 0x46])
        do {
            _ = try alert.next()
            Issue.record("a TLS record decoded as a frame")
        } catch {
            #expect(error.message.contains("the peer speaks TLS"), "\(error.message)")
        }
    }
}
