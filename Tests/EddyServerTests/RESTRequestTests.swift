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
        ("/a.json", "orderBy=%22$key%22", 400, "orderBy"),
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

    @Test func shallowOnlyOnGet() {
        #expect(throws: RESTError.self) { try RESTRequest(method: .put, rawPath: "/a.json", rawQuery: "shallow=true") }
    }

    @Test func patchBodyBecomesChanges() throws {
        let changes = try RESTResponder.changes(try JSONParser.parse(#"{"a/b": 1, "c": null}"#), at: .root)
        #expect(Set(changes.map { $0.path.description }) == ["/a/b", "/c"])
        #expect(throws: RESTError.self) { try RESTResponder.changes(.number(1), at: .root) }
        #expect(throws: RESTError.self) { try RESTResponder.changes(.object([:]), at: .root) }
        #expect(throws: RESTError.self) { try RESTResponder.changes(try JSONParser.parse(#"{"a.b": 1}"#), at: .root) }
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
