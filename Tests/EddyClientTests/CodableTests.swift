// Firebase's Codable support against a real eddyd, written as Firebase's Swift guides write it:
// `setValue(from:)`, `DataSnapshot.data(as:)`, `Database.Encoder`/`Decoder` options and
// `@ServerTimestamp`.

import Dispatch
import EddyClient
import Foundation
import Testing

@Suite(.serialized) struct CodableTests {
    let daemon: DaemonProcess
    let queue = DispatchQueue(label: "eddy.client.codable.tests")

    init() async throws {
        self.daemon = try DaemonProcess()
        try await self.daemon.start()
    }

    func reference(_ path: String) -> DatabaseReference {
        let database = Database.database(url: self.daemon.socketURL)
        database.callbackQueue = self.queue
        return database.reference().child(path)
    }

    /// `setValue(from:encoder:completion:)`, until the server answered.
    func write<T: Encodable>(_ value: T, to ref: DatabaseReference, encoder: Database.Encoder = Database.Encoder()) async throws {
        let written = Recorder<String>()
        try ref.setValue(from: value, encoder: encoder) { error in written.add(error.map { "\($0)" } ?? "ok") }
        #expect(try await written.wait(for: 1) == ["ok"])
    }

    struct Address: Codable, Equatable {
        var city: String
        var zip: Int
    }

    struct User: Codable, Equatable {
        var name: String
        var age: Int
        var score: Double
        var admin: Bool
        var tags: [String]
        var address: Address
        var nickname: String?
        var joined: Date
        @ServerTimestamp var updatedAt: Date?
    }

    @Test func aModelRoundTripsAndTheServerFillsItsTimestamp() async throws {
        let ref = self.reference("codable/users/ada")
        let joined = Date(timeIntervalSinceReferenceDate: 700_000_000.5)
        let ada = User(
            name: "Ada", age: 36, score: 2.5, admin: true, tags: ["x", "y"], address: Address(city: "London", zip: 1815),
            nickname: nil, joined: joined, updatedAt: nil)
        let written = Recorder<String>()
        try ref.setValue(from: ada) { error in written.add(error.map { "\($0)" } ?? "ok") }
        #expect(try await written.wait(for: 1) == ["ok"])

        let snapshot = try await ref.getData()
        let raw = try #require(snapshot.value as? [String: Any])
        #expect(raw["nickname"] == nil, "a nil optional is left out")
        #expect(raw["joined"] as? Double == 700_000_000.5, "dates default to seconds since 2001")
        let stamp = try #require(raw["updatedAt"] as? Double, "the server replaced the placeholder: \(raw)")
        #expect(abs(stamp / 1000 - Date().timeIntervalSince1970) < 60)

        let read = try snapshot.data(as: User.self)
        #expect(read.name == "Ada" && read.age == 36 && read.score == 2.5 && read.admin && read.tags == ["x", "y"])
        #expect(read.address == Address(city: "London", zip: 1815))
        #expect(read.nickname == nil && read.joined == joined)
        let updatedAt = try #require(read.updatedAt)
        #expect(abs(updatedAt.timeIntervalSince1970 - stamp / 1000) < 0.002)

        // A set timestamp is written as milliseconds since 1970 and reads back the same.
        var later = read
        later.updatedAt = Date(timeIntervalSince1970: 1_700_000_000.123)
        try await self.write(later, to: ref)
        let again = try await ref.getData()
        #expect(again.childSnapshot(forPath: "updatedAt").value as? Int == 1_700_000_000_123)
        #expect(try again.data(as: User.self) == later)
    }

    @Test func noDataDecodesAsNilOrThrowsValueNotFound() async throws {
        let snapshot = try await self.reference("codable/absent").getData()
        #expect(try snapshot.data(as: User?.self) == nil)
        do {
            _ = try snapshot.data(as: User.self)
            Issue.record("decoding no data as a non-optional must throw")
        } catch DecodingError.valueNotFound {
        }
        let mismatched = try await {
            let ref = self.reference("codable/mismatch")
            try await ref.setValue(["name": 5])
            return try await ref.getData()
        }()
        #expect(throws: DecodingError.self) { try mismatched.data(as: Address.self) }
    }

    @Test func encoderAndDecoderOptions() async throws {
        struct Event: Codable, Equatable {
            var startTime: Date
            var roomNumber: Int
        }
        let ref = self.reference("codable/events/e1")
        let encoder = Database.Encoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.dateEncodingStrategy = .millisecondsSince1970
        let event = Event(startTime: Date(timeIntervalSince1970: 1_800_000_000), roomNumber: 12)
        try await self.write(event, to: ref, encoder: encoder)
        let snapshot = try await ref.getData()
        #expect(snapshot.childSnapshot(forPath: "start_time").value as? Int == 1_800_000_000_000)
        #expect(snapshot.childSnapshot(forPath: "room_number").value as? Int == 12)
        let decoder = Database.Decoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        decoder.dateDecodingStrategy = .millisecondsSince1970
        #expect(try snapshot.data(as: Event.self, decoder: decoder) == event)
        // The encoder on its own gives what setValue takes; the decoder takes what value holds.
        let encoded = try #require(try encoder.encode(event) as? [String: Any])
        #expect(encoded["room_number"] as? Int == 12)
        #expect(try decoder.decode(Event.self, from: encoded) == event)
    }

    @Test func aValueThatCannotBeEncodedWritesNothing() async throws {
        struct Reading: Codable { var value: Double }
        let ref = self.reference("codable/reading")
        #expect(throws: EncodingError.self) { try ref.setValue(from: Reading(value: .nan)) }
        let blob = Database.Encoder()
        blob.dataEncodingStrategy = .blob
        #expect(throws: EncodingError.self) { try ref.setValue(from: ["bytes": Data([1, 2])], encoder: blob) }
        #expect(!(try await ref.getData().exists()), "nothing of the refused values was written")
        try await self.write(["bytes": Data([1, 2])], to: ref)  // base64 by default
        let snapshot = try await ref.getData()
        #expect(snapshot.value as? [String: String] == ["bytes": "AQI="])
    }

    /// The encoder and decoder on their own work on Foundation values as Firebase's do (its
    /// FirebaseDataEncoderTests compare `encode(x) as? NSDictionary`): an empty array stays an
    /// array, a dictionary stays a dictionary whatever its keys look like, and what the encoder
    /// makes the decoder reads back. (Written to the server, such data takes Firebase's stored
    /// shapes: an empty array is no data, keys "0", "1" read back as an array.)
    @Test func theEncoderAndDecoderKeepFoundationShapes() throws {
        struct Tagged: Codable, Equatable {
            var tags: [String]
            var byRank: [Int: String]
        }
        let model = Tagged(tags: [], byRank: [1: "a", 2: "b"])
        let encoded = try Database.Encoder().encode(model)
        let dictionary = try #require(encoded as? [String: Any])
        #expect((dictionary["tags"] as? [Any])?.isEmpty == true, "\(dictionary)")
        #expect(dictionary["byRank"] as? [String: String] == ["1": "a", "2": "b"], "\(dictionary)")
        #expect(try Database.Decoder().decode(Tagged.self, from: encoded) == model)
        #expect(try Database.Decoder().decode([String].self, from: [String]()) == [])
        #expect(try Database.Encoder().encode(["0": "a", "1": "b"]) as? [String: String] == ["0": "a", "1": "b"])
        #expect(try Database.Encoder().encode(["x", "y"]) as? [String] == ["x", "y"])
        #expect(try Database.Encoder().encode(Int64.max) as? Int64 == Int64.max)
        #expect(try Database.Decoder().decode(Int64.self, from: NSNumber(value: Int64.max)) == Int64.max)
    }
}
