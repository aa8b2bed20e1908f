// Firebase's REST streaming format (text/event-stream): what each listener batch becomes.
//
//   event: put            data: {"path":"/","data":<value>}     the whole value at a path
//   event: patch          data: {"path":"/","data":{k: v, ...}} children merged (null deletes)
//   event: keep-alive     data: null
//   event: cancel         data: "<reason>"                        the listen ended
// Paths are relative to the listened location. Beyond Firebase, every put/patch caused by a log
// entry carries `id: <log id>` (and the first put the id it is current after), so a client can
// reconnect with `Last-Event-ID`. Lines end in LF; one JSON document per data line.

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

    static func patch(path: String, members: [(key: String, json: [UInt8])], id: LogID?) -> [UInt8] {
        var data: [UInt8] = [UInt8(ascii: "{")]
        for (i, member) in members.enumerated() {
            if i > 0 { data.append(UInt8(ascii: ",")) }
            JSONWriter.writeString(member.key, into: &data)
            data.append(UInt8(ascii: ":"))
            data += member.json
        }
        data.append(UInt8(ascii: "}"))
        return self.frame(event: "patch", id: id, data: self.body(path: path, data: data))
    }

    static let keepAlive = Array("event: keep-alive\ndata: null\n\n".utf8)

    static func cancel(_ reason: String) -> [UInt8] {
        var data: [UInt8] = []
        JSONWriter.writeString(reason, into: &data)
        return self.frame(event: "cancel", id: nil, data: data)
    }

    private static func body(path: String, data: [UInt8]) -> [UInt8] {
        var out = Array(#"{"path":"#.utf8)
        JSONWriter.writeString(path, into: &out)
        out += Array(#","data":"#.utf8)
        out += data
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// One live batch (all events of one log entry): a put of the whole value when it is a
    /// primitive or gone, a put of the one child that changed, or a patch of several.
    static func frames(for events: [ChildEvent]) -> [UInt8] {
        let id = events.first?.logID
        if let value = events.last(where: { $0.kind == .value })?.value, !value.isObject {
            return self.put(path: "/", data: JSONWriter.bytes(value), id: id)
        }
        var members: [(key: String, json: [UInt8])] = []
        for event in events {
            guard let key = event.key else { continue }
            switch event.kind {
            case .childRemoved: members.append((key, Array("null".utf8)))
            case .childAdded, .childChanged: members.append((key, JSONWriter.bytes(event.value)))
            case .childMoved, .value, .cancel: continue
            }
        }
        if members.count == 1 { return self.put(path: "/" + members[0].key, data: members[0].json, id: id) }
        return self.patch(path: "/", members: members, id: id)
    }

    /// The frame of a logged entry for a plain (query-less) listener at `location`: what a
    /// reconnecting client missed. One frame per entry, so its id marks it whole: a put of the
    /// location's new value when the entry wrote at or above it, a put at the one path it wrote
    /// below it, or a patch keyed by relative paths ("a", "b/x") when it wrote several.
    static func frames(replaying entry: LogEntry, at location: Path) -> [UInt8] {
        var members: [(key: String, json: [UInt8])] = []
        for change in entry.changes {
            let path = entry.location.appending(change.path)
            if path.isAncestorOrSelf(of: location) {
                let below = Path(validatedKeys: Array(location.keys[path.depth...]))
                return self.put(path: "/", data: JSONWriter.bytes(change.value.child(at: below)), id: entry.id)
            }
            if location.isAncestorOrSelf(of: path) {
                members.append((path.keys[location.depth...].joined(separator: "/"), JSONWriter.bytes(change.value)))
            }
        }
        if members.isEmpty { return [] }
        if members.count == 1 { return self.put(path: "/" + members[0].key, data: members[0].json, id: entry.id) }
        return self.patch(path: "/", members: members, id: entry.id)
    }
}

extension Value {
    var isObject: Bool {
        if case .object = self { return true }
        return false
    }
}
