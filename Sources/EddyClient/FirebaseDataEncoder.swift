// Firebase's `Database.Encoder` (FirebaseSharedSwift's `FirebaseDataEncoder`): turns an
// `Encodable` value into the Foundation values `setValue` takes (NSNull, NSNumber, String,
// [String: Any], [Any]), with the same options and defaults as Firebase's: dates
// `.deferredToDate` (seconds since 2001 as a number), data `.base64`, non-finite floats
// `.throw`, keys as declared. `DatabaseReference.setValue(from:encoder:completion:)` uses it.
//
// The value is encoded by Foundation's JSONEncoder with the matching strategies and read back
// as Foundation values (JSONSerialization: arrays stay arrays, empty ones too, as Firebase's
// encoder makes them); a nil optional property is left out, as Firebase's encoder does.
// `.blob` (binary data passed through) has nothing to pass to: Eddy stores JSON, so it throws.

import EddyModel
import Foundation

extension Database {
    public typealias Encoder = FirebaseDataEncoder
    public typealias Decoder = FirebaseDataDecoder
}

open class FirebaseDataEncoder {
    public enum DateEncodingStrategy {
        /// `Date`'s own encoding: seconds since 2001-01-01 as a number. The default.
        case deferredToDate
        case secondsSince1970
        case millisecondsSince1970
        case iso8601
        case formatted(DateFormatter)
        case custom((Date, any Swift.Encoder) throws -> Void)
    }

    public enum DataEncodingStrategy {
        case deferredToData
        /// A Base64 string. The default.
        case base64
        /// Firebase passes the bytes through; Eddy stores JSON only, so encoding throws.
        case blob
        case custom((Data, any Swift.Encoder) throws -> Void)
    }

    public enum NonConformingFloatEncodingStrategy {
        case `throw`
        case convertToString(positiveInfinity: String, negativeInfinity: String, nan: String)
    }

    public enum KeyEncodingStrategy {
        case useDefaultKeys
        case convertToSnakeCase
        case custom((_ codingPath: [any CodingKey]) -> any CodingKey)
    }

    open var dateEncodingStrategy: DateEncodingStrategy = .deferredToDate
    open var dataEncodingStrategy: DataEncodingStrategy = .base64
    open var nonConformingFloatEncodingStrategy: NonConformingFloatEncodingStrategy = .throw
    open var keyEncodingStrategy: KeyEncodingStrategy = .useDefaultKeys
    open var userInfo: [CodingUserInfoKey: Any] = [:]

    public init() {}

    /// The value as Foundation values (NSNull for a nil optional at the top).
    open func encode<T: Encodable>(_ value: T) throws -> sending Any {
        let json = try self.jsonEncoder().encode(value)
        // Read back as Foundation values, as Firebase's encoder makes them: arrays stay arrays
        // (an empty one too) and dictionaries stay dictionaries, whatever their keys look like.
        do {
            return try JSONSerialization.jsonObject(with: json, options: [.fragmentsAllowed])
        } catch {
            throw EncodingError.invalidValue(
                value, EncodingError.Context(codingPath: [], debugDescription: "the encoded \(T.self) is not a database value: \(error)"))
        }
    }

    func jsonEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        switch self.dateEncodingStrategy {
        case .deferredToDate: encoder.dateEncodingStrategy = .deferredToDate
        case .secondsSince1970: encoder.dateEncodingStrategy = .secondsSince1970
        case .millisecondsSince1970: encoder.dateEncodingStrategy = .millisecondsSince1970
        case .iso8601: encoder.dateEncodingStrategy = .iso8601
        case .formatted(let formatter): encoder.dateEncodingStrategy = .formatted(formatter)
        case .custom(let closure):
            let box = UncheckedSendable(closure)
            encoder.dateEncodingStrategy = .custom { date, encoder in try box.value(date, encoder) }
        }
        switch self.dataEncodingStrategy {
        case .deferredToData: encoder.dataEncodingStrategy = .deferredToData
        case .base64: encoder.dataEncodingStrategy = .base64
        case .blob:
            encoder.dataEncodingStrategy = .custom { data, encoder in
                throw EncodingError.invalidValue(
                    data,
                    EncodingError.Context(
                        codingPath: encoder.codingPath,
                        debugDescription: "dataEncodingStrategy .blob: Eddy stores JSON values, not bytes; use .base64"))
            }
        case .custom(let closure):
            let box = UncheckedSendable(closure)
            encoder.dataEncodingStrategy = .custom { data, encoder in try box.value(data, encoder) }
        }
        switch self.nonConformingFloatEncodingStrategy {
        case .throw: encoder.nonConformingFloatEncodingStrategy = .throw
        case .convertToString(let positive, let negative, let nan):
            encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: positive, negativeInfinity: negative, nan: nan)
        }
        switch self.keyEncodingStrategy {
        case .useDefaultKeys: encoder.keyEncodingStrategy = .useDefaultKeys
        case .convertToSnakeCase: encoder.keyEncodingStrategy = .convertToSnakeCase
        case .custom(let closure):
            let box = UncheckedSendable(closure)
            encoder.keyEncodingStrategy = .custom { path in box.value(path) }
        }
        // Foundation's userInfo holds `any Sendable`, which has the representation of `Any` (a
        // marker protocol); Firebase's API takes `Any`, and the values are only handed back to
        // the caller's own Codable code on this thread.
        encoder.userInfo = unsafeBitCast(self.userInfo, to: type(of: encoder.userInfo))
        return encoder
    }
}

extension DatabaseReference {
    /// Encodes `value` (see `Database.Encoder`) and writes it here, replacing what is there, as
    /// `setValue` does. Throws when the value cannot be encoded (nothing is written); write
    /// errors reach `completion`.
    public func setValue<T: Encodable>(
        from value: T, encoder: Database.Encoder = Database.Encoder(), completion: (@Sendable ((any Error)?) -> Void)? = nil
    ) throws {
        let encoded = try encoder.encode(value)
        if let completion {
            self.setValue(encoded, withCompletionBlock: { error, _ in completion(error) })
        } else {
            self.setValue(encoded)
        }
    }
}
