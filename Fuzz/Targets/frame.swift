// libFuzzer target: the native protocol's frame decoder (every byte a client or leader sends),
// fed in two pieces to cover frames split across reads, and each payload through the JSON
// parser. Invariants: no input traps; the decoder never holds more than it was given.

import EddyModel
import EddyProtocol

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFrame(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    var decoder = FrameDecoder()
    let split = bytes.isEmpty ? 0 : Int(bytes[0]) % (bytes.count + 1)
    for piece in [bytes[..<split], bytes[split...]] {
        decoder.append(piece)
        while true {
            guard let frame = try? decoder.next() else { break }
            _ = try? JSONParser.parse(frame.payload)
        }
    }
    return 0
}
