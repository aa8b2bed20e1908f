// Firebase's `Database.Decoder` (FirebaseSharedSwift's `FirebaseDataDecoder`): builds a
// `Decodable` value from a snapshot's Foundation values, with the same options and defaults
// as Firebase's (see FirebaseDataEncoder). `DataSnapshot.data(as:decoder:)` uses it: a location
// without data decodes as nil into an Optional and throws `DecodingError.valueNotFound`
// otherwise.
//
// The value is written as JSON and decoded by Foundation's JSONDecoder with the matching
// strategies: Foundation values as they are (JSONSerialization), a snapshot's data as Firebase
// renders it (arrays by its rule). `.blob` throws (Eddy stores no bytes).

import EddyModel
import Foundation

open class FirebaseDataDecoder {
    public enum DateDecodingStrategy {
        case deferredToDate
        case secondsSince1970
        case millisecondsSince1970
        case iso8601
        case formatted(DateFormatter)
        case custom((_ decoder: any Swift.Decoder) throws -> Date)
    }

    public enum DataDecodingStrategy {
        case deferredToData
        case base64
        case blob
        case custom((_ decoder: any Swift.Decoder) throws -> Data)
    }

    public enum NonConformingFloatDecodingStrategy {
        case `throw`
        case convertFromString(positiveInfinity: String, negativeInfinity: String, nan: String)
    }

    public enum KeyDecodingStrategy {
        case useDefaultKeys
        case convertFromSnakeCase
        case custom((_ codingPath: [any CodingKey]) -> any CodingKey)
    }

    open var dateDecodingStrategy: DateDecodingStrategy = .deferredToDate
    open var dataDecodingStrategy: DataDecodingStrategy = .base64
    open var nonConformingFloatDecodingStrategy: NonConformingFloatDecodingStrategy = .throw
    open var keyDecodingStrategy: KeyDecodingStrategy = .useDefaultKeys
    open var userInfo: [CodingUserInfoKey: Any] = [:]

    public init() {}

    /// A `T` from Foundation values (what `DataSnapshot.value` holds; NSNull for no data).
    open func decode<T: Decodable>(_ type: T.Type, from structure: Any) throws -> T {
        // Foundation values are read as they are, as Firebase's decoder reads them: an array is
        // a JSON array (an empty one too), a dictionary keyed "0", "1" stays an object.
        if JSONSerialization.isValidJSONObject([structure]),
            let json = try? JSONSerialization.data(withJSONObject: structure, options: [.fragmentsAllowed])
        {
            return try self.jsonDecoder().decode(T.self, from: json)
        }
        let value: Value
        do {
            value = try FoundationValue.value(structure, path: "/")
        } catch {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(codingPath: [], debugDescription: "not a database value: \(error.message)"))
        }
        return try self.decode(type, from: value)
    }

    func decode<T: Decodable>(_ type: T.Type, from value: Value) throws -> T {
        try self.jsonDecoder().decode(T.self, from: Data(JSONWriter.bytes(value)))
    }

    func jsonDecoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        switch self.dateDecodingStrategy {
        case .deferredToDate: decoder.dateDecodingStrategy = .deferredToDate
        case .secondsSince1970: decoder.dateDecodingStrategy = .secondsSince1970
        case .millisecondsSince1970: decoder.dateDecodingStrategy = .millisecondsSince1970
        case .iso8601: decoder.dateDecodingStrategy = .iso8601
        case .formatted(let formatter): decoder.dateDecodingStrategy = .formatted(formatter)
        case .custom(let closure):
            let box = UncheckedSendable(closure)
            decoder.dateDecodingStrategy = .custom { decoder in try box.value(decoder) }
        }
        switch self.dataDecodingStrategy {
        case .deferredToData: decoder.dataDecodingStrategy = .deferredToData
        case .base64: decoder.dataDecodingStrategy = .base64
        case .blob:
            decoder.dataDecodingStrategy = .custom { decoder in
                throw DecodingError.dataCorrupted(
                    DecodingError.Context(
                        codingPath: decoder.codingPath, debugDescription: "dataDecodingStrategy .blob: Eddy stores JSON values, not bytes; use .base64"))
            }
        case .custom(let closure):
            let box = UncheckedSendable(closure)
            decoder.dataDecodingStrategy = .custom { decoder in try box.value(decoder) }
        }
        switch self.nonConformingFloatDecodingStrategy {
        case .throw: decoder.nonConformingFloatDecodingStrategy = .throw
        case .convertFromString(let positive, let negative, let nan):
            decoder.nonConformingFloatDecodingStrategy = .convertFromString(positiveInfinity: positive, negativeInfinity: negative, nan: nan)
        }
        switch self.keyDecodingStrategy {
        case .useDefaultKeys: decoder.keyDecodingStrategy = .useDefaultKeys
        case .convertFromSnakeCase: decoder.keyDecodingStrategy = .convertFromSnakeCase
        case .custom(let closure):
            let box = UncheckedSendable(closure)
            decoder.keyDecodingStrategy = .custom { path in box.value(path) }
        }
        // Foundation's userInfo holds `any Sendable`, which has the representation of `Any` (a
        // marker protocol); Firebase's API takes `Any`, and the values are only handed back to
        // the caller's own Codable code on this thread.
        decoder.userInfo = unsafeBitCast(self.userInfo, to: type(of: decoder.userInfo))
        return decoder
    }
}

extension DataSnapshot {
    /// The snapshot's value as a `T` (see `Database.Decoder`). Throws
    /// `DecodingError.valueNotFound` when there is no data and `T` is not an Optional.
    public func data<T: Decodable>(as type: T.Type, decoder: Database.Decoder = Database.Decoder()) throws -> T {
        try decoder.decode(T.self, from: self.data.withoutPriorities)
    }
}
