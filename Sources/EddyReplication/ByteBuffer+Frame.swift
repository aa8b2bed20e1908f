// Writes a native-protocol frame straight into a NIO buffer (the layout is `Frame.encoded()`'s:
// u32be length, u8 version, u8 kind, u64be request id, payload), without an intermediate array.
// Used by the native server and the log server.

import EddyProtocol
import NIOCore

extension ByteBuffer {
    /// A buffer from `allocator` holding exactly `frame`.
    public static func frame(_ frame: Frame, allocator: ByteBufferAllocator) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: 4 + Frame.headerBytes + frame.payload.count)
        buffer.writeFrame(frame)
        return buffer
    }

    public mutating func writeFrame(_ frame: Frame) {
        self.writeInteger(UInt32(Frame.headerBytes + frame.payload.count))
        self.writeInteger(Frame.version)
        self.writeInteger(frame.kind.rawValue)
        self.writeInteger(frame.requestID)
        self.writeBytes(frame.payload)
    }
}
