// How long an error message may be. Messages name what was wrong, and often quote it: a
// `since` of 15 MiB came back whole in its error frame and in the log line. A message over
// `bytesMax` keeps its first `headBytes` and last `tailBytes` (where the sentence usually ends:
// "... is not a log id") with a note of how much was left out in between. Cuts fall on Unicode
// scalar boundaries, so the result is valid UTF-8.

public enum ErrorMessageBound {
    public static let bytesMax = 4096
    static let headBytes = 2048
    static let tailBytes = 1024

    /// `message` itself when it is at most `bytesMax` UTF-8 bytes; otherwise its head, a note,
    /// and its tail.
    public static func bounded(_ message: String) -> String {
        let utf8 = message.utf8
        guard utf8.count > Self.bytesMax else { return message }
        let scalars = message.unicodeScalars
        var headEnd = scalars.startIndex
        var headCount = 0
        while headEnd != scalars.endIndex {
            let width = UTF8.width(scalars[headEnd])
            guard headCount + width <= Self.headBytes else { break }
            headCount += width
            headEnd = scalars.index(after: headEnd)
        }
        var tailStart = scalars.endIndex
        var tailCount = 0
        while tailStart != headEnd {
            let previous = scalars.index(before: tailStart)
            let width = UTF8.width(scalars[previous])
            guard tailCount + width <= Self.tailBytes else { break }
            tailCount += width
            tailStart = previous
        }
        let omitted = utf8.count - headCount - tailCount
        return String(scalars[..<headEnd]) + " [... \(omitted) bytes left out ...] " + String(scalars[tailStart...])
    }
}
