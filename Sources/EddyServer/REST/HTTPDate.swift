// The `Date` header's value for answers written outside Hummingbird (`RESTWriteAtOnceHandler`),
// in the form Hummingbird's own answers carry.

import Foundation
import Synchronization

/// The `Date` header's value (RFC 9110 §5.6.7, IMF-fixdate), made once a second.
enum HTTPDate {
    private static let cached = Mutex<(second: Int, text: String)>((-1, ""))

    static func now() -> String {
        var time = time_t(0)
        Foundation.time(&time)
        let second = Int(time)
        if let text = Self.cached.withLock({ $0.second == second ? $0.text : nil }) { return text }
        var parts = tm()
        gmtime_r(&time, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let text =
            "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
        Self.cached.withLock { $0 = (second, text) }
        return text
    }
}
