// Comparing secrets (the admin secret, the replication secret) in time that does not depend on
// where they first differ, so a caller cannot find a secret byte by byte from response times.

public enum ConstantTime {
    /// Whether `a` and `b` hold the same bytes; takes as long for any `a` of a given length.
    public static func equal(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8)
        let y = Array(b.utf8)
        var difference = UInt8(x.count == y.count ? 0 : 1)
        for i in 0..<max(x.count, y.count) { difference |= (i < x.count ? x[i] : 0) ^ (i < y.count ? y[i] : 0) }
        return difference == 0
    }
}
