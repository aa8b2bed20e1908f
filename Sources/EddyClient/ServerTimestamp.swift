// Firebase's `@ServerTimestamp` property wrapper for an `Optional<Date>` field of a Codable
// model: a nil field is written as `ServerValue.timestamp()`, which the server replaces with
// its time; a date is written, and read back, as milliseconds since the Unix epoch.

import Foundation

@propertyWrapper
public struct ServerTimestamp: Codable, Equatable, Hashable, Sendable {
    var value: Date?

    public init(wrappedValue value: Date?) {
        self.value = value
    }

    public var wrappedValue: Date? {
        get { self.value }
        set { self.value = newValue }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self.value = nil
        } else {
            let milliseconds = try container.decode(Int.self)
            self.value = Date(timeIntervalSince1970: TimeInterval(milliseconds) / 1000)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let value = self.value {
            try container.encode(Int(value.timeIntervalSince1970 * 1000))
        } else {
            try container.encode([".sv": "timestamp"])
        }
    }
}
