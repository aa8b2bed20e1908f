// Firebase's REST streaming format (text/event-stream): what each listener batch becomes. A
// stream's listener hears value changes only (`EventSelection.valueChangesOnly`), so every
// event carries exactly what its write changed (see EddyEvents/AppliedChange.swift):
//
//   event: put            data: {"path":"/a/b","data":<value>}   the value at a path replaced
//   event: patch          data: {"path":"/a","data":{k: v, ...}} children merged (null deletes)
//   event: keep-alive     data: null
//   event: cancel         data: null                              the listen ended; the reason
//                                                                  rides in a comment line
//                                                                  (`: <reason>`) before the data
//   event: auth_revoked   data: credential is no longer valid    (plain text) the token expired
// Paths are relative to the listened location. Beyond Firebase, every put/patch caused by a log
// entry carries `id: <log id>` (and the first put the id it is current after), so a client can
// reconnect with `Last-Event-ID`; the frames of one entry share its id. Lines end in LF; one
// JSON document per data line.

import EddyEngine
import EddyModel

enum SSEFrames {
    static func frame(event: String, id: LogID?, data: [UInt8]) -> [UInt8] {
        var out = Array("event: \(event)\n".utf8)
        if let id { out += Array("id: \(id.rawValue)\n".utf8) }
        out += Array("data: ".utf8)
        out += data
        out += [0x0A, 0x0A]
        return out
    }

    static func put(path: String, data: [UInt8], id: LogID?) -> [UInt8] {
        self.frame(event: "put", id: id, data: self.body(path: path, data: data))
    }

    static let keepAlive = Array("event: keep-alive\ndata: null\n\n".utf8)
    /// The stream's ID token expired: reconnect with a fresh one. The data is plain text, not
    /// JSON: firebase-admin reconnects on exactly `credential is no longer valid`.
    static let authRevoked = Array("event: auth_revoked\ndata: credential is no longer valid\n\n".utf8)

    /// Firebase's REST docs give `cancel` the data `null`, and firebase-admin drops an event
    /// whose data is `null` (any other data reaches the callback, whose `event.data` then fails):
    /// it then sees the stream end and reconnects with `Last-Event-ID`. Eddy's reason (which
    /// names the id to resume after when the stream fell behind) goes in an SSE comment line,
    /// which every SSE parser skips.
    static func cancel(_ reason: String) -> [UInt8] {
        let oneLine = reason.split(whereSeparator: \.isNewline).joined(separator: " ")
        return Array("event: cancel\n: \(oneLine)\ndata: null\n\n".utf8)
    }

    private static func body(path: String, data: [UInt8]) -> [UInt8] {
        var out = Array(#"{"path":"#.utf8)
        JSONWriter.writeString(path, into: &out)
        out += Array(#","data":"#.utf8)
        out += data
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// The frames of one live batch (one log entry): its value event's changes, one frame
    /// each, all with the entry's id. A put is `{"path":"/a/b","data":<value>}`, a patch
    /// `{"path":"/a","data":{<child>:<value>,...}}`.
    static func frames(for events: [ChildEvent]) -> [UInt8] {
        guard let value = events.last(where: { $0.kind == .value }), let changes = value.changes else { return [] }
        return self.frames(for: changes, id: value.logID)
    }

    static func frames(for changes: [ValueChange], id: LogID?) -> [UInt8] {
        var out: [UInt8] = []
        for change in changes {
            var data: [UInt8] = []
            change.writeData(into: &data)
            out += self.frame(event: change.isPatch ? "patch" : "put", id: id, data: self.body(path: change.path.description, data: data))
        }
        return out
    }
}

extension ValueChange {
    var isPatch: Bool {
        if case .patch = self { return true }
        return false
    }
}
