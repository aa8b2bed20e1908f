import EddyEngine
import EddyModel
import Testing

@testable import EddyServer

@Suite struct RESTRequestTests {
    @Test func parsesPathNamespaceAndOptions() throws {
        let request = try RESTRequest(
            method: .get, rawPath: "/users/a%20b/%C3%BCn%C3%AF.json", rawQuery: "ns=fake-project-id&print=pretty&shallow=true&auth=x")
        #expect(request.path.keys == ["users", "a b", "ünï"])
        #expect(request.namespace == "fake-project-id")
        #expect(request.print == .pretty)
        #expect(request.shallow)
    }

    @Test func rootAndDefaultNamespace() throws {
        let request = try RESTRequest(method: .put, rawPath: "/.json", rawQuery: nil)
        #expect(request.path.isRoot)
        #expect(request.namespace == DataDirectory.defaultNamespace)
        #expect(request.print == .normal)
    }

    @Test func timeoutForms() throws {
        #expect(try RESTRequest(method: .get, rawPath: "/a.json", rawQuery: "timeout=250ms").timeout == .milliseconds(250))
        #expect(try RESTRequest(method: .get, rawPath: "/a.json", rawQuery: "timeout=3s").timeout == .seconds(3))
        #expect(try RESTRequest(method: .get, rawPath: "/a.json", rawQuery: "timeout=15min").timeout == .seconds(900))
        for bad in ["15min1", "901s", "0s", "1.5s", "ms", "+3s", "3 s", "3S"] {
            #expect(throws: RESTError.self) { try RESTRequest(method: .get, rawPath: "/a.json", rawQuery: "timeout=\(bad)") }
        }
    }

    @Test func callbackNames() {
        for good in ["cb", "_x", "$", "app.handlers.got_1", "A1$"] { #expect(RESTRequest.isCallbackName(good), "\(good)") }
        for bad in ["", "1a", "a.", ".a", "a..b", "a(1)", "a-b", "a b", "é", String(repeating: "x", count: 257)] {
            #expect(!RESTRequest.isCallbackName(bad), "\(bad)")
        }
    }

    @Test func plusStaysLiteral() throws {
        let request = try RESTRequest(method: .get, rawPath: "/a+b.json", rawQuery: nil)
        #expect(request.path.keys == ["a+b"])
    }

    @Test(arguments: [
        ("/users", nil as String?, 404, "end in .json"),
        ("/a.b.json", nil, 400, "\"a.b\""),
        ("/a%2.json", nil, 400, "percent-encoding"),
        ("/a%FF.json", nil, 400, "UTF-8"),
        ("/a.json", "print=loud", 400, "print=loud"),
        ("/a.json", "shallow=maybe", 400, "shallow=maybe"),
        ("/a.json", "ns=bad!name", 400, "namespace \"bad!name\""),
        ("/a.json", "startAt=1", 400, "orderBy must be defined when other query parameters are defined"),
        ("/a.json", "orderBy=%22$key%22&startAt=1", 400, "Provided key index type is invalid, must be string"),
        ("/a.json", "orderBy=%22$key%22&orderBy=%22a%22", 400, "You can't combine multiple orderBy calls"),
        ("/a.json", "orderBy=%22a%22&startAt=1&equalTo=2", 400, "Starting point was already set"),
        ("/a.json", "orderBy=%22a%22&endAt=1&endBefore=2", 400, "Ending point was already set"),
        ("/a.json", "orderBy=%22a%22&limitToFirst=1&limitToLast=1", 400, "Limit was already set"),
        ("/a.json", "orderBy=%22a%22&limitToFirst=0", 400, "positive integer"),
        ("/a.json", "orderBy=%22$key%22&shallow=true", 400, "shallow=true cannot be combined"),
        ("/a.json", "format=csv", 400, "format=csv"),
    ])
    func refusesWithStatusAndMessage(path: String, query: String?, status: Int, fragment: String) {
        do {
            _ = try RESTRequest(method: .get, rawPath: path, rawQuery: query)
            Issue.record("\(path)?\(query ?? "") was accepted")
        } catch {
            #expect(error.status == status)
            #expect(error.message.contains(fragment), "\(error.message)")
        }
    }

    @Test func queryParametersBecomeAQuery() throws {
        let request = try RESTRequest(
            method: .get, rawPath: "/items.json",
            rawQuery: "endAt=5&limitToFirst=2&orderBy=%22stats/score%22&startAt=2.5,%22k%22&ns=x")
        #expect(
            request.query
                == Query(
                    order: .child(try Path("stats/score")),
                    start: .init(value: .number(2.5), key: "k", inclusive: true),
                    end: .init(value: .number(5), inclusive: true), limit: .first(2)))
        let keyQuery = try RESTRequest(method: .get, rawPath: "/a.json", rawQuery: "orderBy=\"$key\"&equalTo=\"a+b\"")
        #expect(keyQuery.query?.start == .init(value: .string("a+b"), inclusive: true))
        #expect(keyQuery.query?.end == .init(value: .string("a+b"), inclusive: true))
        #expect(throws: RESTError.self) {
            try RESTRequest(method: .put, rawPath: "/a.json", rawQuery: "orderBy=%22$key%22")
        }
    }

    /// A URL of 40,000 segments is refused by its depth, at once: validating each key used to
    /// join the whole path again (quadratic: 100 s of a thread per request).
    @Test func aPathOfManySegmentsIsRefusedByItsDepth() {
        let path = "/" + Array(repeating: "a", count: 40_000).joined(separator: "/") + ".json"
        do {
            _ = try RESTRequest(method: .get, rawPath: path, rawQuery: nil)
            Issue.record("accepted")
        } catch {
            #expect(error.status == 400)
            #expect(error.message.contains("40000 keys deep; pathDepthMax is 32"), "\(error.message)")
        }
    }

    /// A query parameter that is not JSON is named in the error by its first 64 characters.
    @Test func aLongQueryValueIsAbbreviatedInItsError() {
        let raw = String(repeating: "[", count: 100_000)
        do {
            _ = try RESTRequest(method: .get, rawPath: "/a.json", rawQuery: "orderBy=%22$key%22&equalTo=" + raw)
            Issue.record("accepted")
        } catch {
            #expect(error.message.contains("equalTo=" + String(repeating: "[", count: 64) + "… (100000 bytes) is not JSON"), "\(error.message.prefix(300))")
            #expect(error.message.utf8.count < 400)
        }
    }

    @Test func shallowOnlyOnGet() {
        #expect(throws: RESTError.self) { try RESTRequest(method: .put, rawPath: "/a.json", rawQuery: "shallow=true") }
    }

    @Test func patchBodyBecomesChanges() throws {
        guard case .update(_, let changes) = try WriteOperation.update(at: .root, body: try JSONParser.parse(#"{"a/b": 1, "c": null}"#))
        else {
            Issue.record("not an update")
            return
        }
        #expect(Set(changes.map { $0.path.description }) == ["/a/b", "/c"])
        #expect(throws: EddyError.self) { try WriteOperation.update(at: .root, body: .number(1)) }
        #expect(throws: EddyError.self) { try WriteOperation.update(at: .root, body: .object([:])) }
        #expect(throws: EddyError.self) { try WriteOperation.update(at: .root, body: try JSONParser.parse(#"{"a.b": 1}"#)) }
    }

    @Test func errorMappingKeepsInternalsOutOfTheBody() {
        let failure = RESTError(EddyError(.io, "disk /dev/sda exploded"))
        #expect(failure.status == 500)
        #expect(!failure.message.contains("sda"))
        #expect(RESTError(EddyError(.busy, "queue full")).status == 503)
        #expect(RESTError(EddyError(.invalidKey, "bad key")).status == 400)
        #expect(RESTError(EddyError(.preconditionFailed, "stale")).status == 412)
    }
}

@Suite struct StorageFullAnswerTests {
    /// A full data volume is the client-visible `507 Insufficient Storage` with the engine's
    /// message (what happened, what to do), never an opaque 500.
    @Test func insufficientStorageIs507WithItsMessage() {
        let answer = RESTError(EddyError(.insufficientStorage, "the data volume is full (No space left on device) while committing 1 writes"))
        #expect(answer.status == 507)
        #expect(answer.message.contains("No space left on device"))
        let other = RESTError(EddyError(.io, "storage error while reading: IO error: Input/output error"))
        #expect(other.status == 500 && !other.message.contains("Input/output"), "other I/O errors stay internal")
    }
}
