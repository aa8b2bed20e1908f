// The native protocol's frames (Unix socket; see DESIGN.md "Interfaces"). Version 2:
//
//   frame   = u32be(length of the rest) u8(version = 2) u8(kind) u64be(request id) payload
//   payload = one JSON document (UTF-8), its shape by kind (see `Frame.Kind`)
//
// One connection multiplexes requests: every request carries an id chosen by the client, and
// every answer (and a subscription's event frames) carries the id of the request it belongs to.
// Frames a server reads (requests, a follower's frames) are at most `Frame.bytesMax` (16 MiB,
// Firebase's limit for a write from its SDKs); frames a client or follower reads (answers,
// events, replicated log entries) at most `Frame.fromServerBytesMax` (1 GiB), since they carry
// what REST writes of up to 256 MiB stored, with their before-images. A longer length prefix
// is a protocol error that closes the connection. A version this side does not speak is
// refused with an `error` frame.
//
// Versions: 2 (this one) changed the `events` payload: a live `value` event carries the change
// (`changes`, see `Kind.events`) instead of the whole value, and `subscribe` takes `events`.
// The layout of a frame is unchanged, but a version-1 peer would misread value events, so
// version-1 frames are refused; the replication kinds are unchanged, yet a leader and its
// followers must run the same version too (their frames carry the version byte).
//
// The leader's log server (replication socket) speaks the same frames with the replication
// kinds (40...): see `ReplicationPayloads.swift`. Its hello names a replication protocol version
// of its own (`replicationProtocolVersion`): 2 since log entries carry the leadership term
// (entry format 2), which a protocol 1 follower could not decode; 3 since values keep 64-bit
// integers exact (storage format 5), which a protocol 2 follower would round, diverging from
// its leader; 4 since a follower parks idle namespaces (`watch`, and `written` in heartbeats),
// which a protocol 3 leader would not wake. Either side refuses the other.

public struct Frame: Sendable, Equatable {
    public static let version: UInt8 = 2
    /// The `protocol` of a replication hello this build speaks (see the file comment).
    public static let replicationProtocolVersion = 4
    /// Largest frame a server reads (after the length prefix), 16 MiB: bounds every buffer of
    /// a connection to it. A client's request must fit.
    public static let bytesMax = 16 * 1024 * 1024
    /// Largest frame a client or follower reads from a server, 1 GiB: an answer or event holds
    /// a value of up to Firebase's 256 MB per response (twice in a first `events` frame, which
    /// has the children and the value), and a replicated log entry a 256 MiB REST write and the
    /// before-image of what it replaced.
    public static let fromServerBytesMax = 1 << 30
    /// Bytes before the payload, after the length prefix: version, kind, request id.
    public static let headerBytes = 10

    public enum Kind: UInt8, Sendable {
        // client -> server
        /// `{"path": "/a", "etag": true?}` (answer: `value`, with `"etag"` when asked)
        case get = 1
        /// `{"path": "/a", "query": {"orderBy": "\"s\"", "limitToFirst": "2", ...}}` (REST parameter texts)
        case query = 2
        /// `{"op": "set"|"update"|"push"|"remove", "path": "/a", "value": ..., "silence": [subscription ids],
        /// "ifMatch": "<etag>"?}` (answer: `written`). With `ifMatch` the write applies only while
        /// the location's ETag is that one; otherwise `error` with code `preconditionFailed`,
        /// `"current"` (the value now, in export form: `.priority` members) and `"etag"` (its
        /// ETag, which covers the priorities): a compare-and-set for transactions.
        case write = 3
        /// `{"path": "/a", "query": {...}, "since": "<log id>"?, "events": "all"|"value", "coalesce": bool?}`
        /// (answer: `subscribed`, then `events` frames with this id). `events`: `"all"` (the
        /// default) for child events and value events, `"value"` for value events only (a plain
        /// value subscription then costs the server the size of each change, not of its location).
        /// `coalesce: true`: one live `events` frame may hold the events of several log entries
        /// (entries committed together, in log order, each event naming its entry's `logID`), so a
        /// location written faster than the disk syncs costs a frame per commit group, not per
        /// entry; without it (the default, as before) every live frame holds one entry.
        case subscribe = 4
        /// `{"subscription": <request id of the subscribe>}` (answer: `unsubscribed`)
        case unsubscribe = 5
        /// `{}` (answer: `value` with the replication status: role, followers or leader, lag)
        case status = 6
        /// `{"since": "<log id>"|null, "path": "/a"|null}`: the change log after `since` (from the
        /// oldest entry kept when null), then live (answer: `tailing`, then `changes` frames)
        case tail = 7
        /// `{"token": "<credential>"|null, "authVariableOverride": <json>?}`: who the connection's
        /// later requests act for (answer: `value` with `{"uid": ..., "admin": bool,
        /// "expires": <ms>|null}`, or `error` with code `unauthenticated`). The credential is
        /// what HTTP takes in `Authorization: Bearer`: the admin secret, an ID token, or `owner`
        /// in emulator mode. Added without a version change: an older server refuses the kind.
        case auth = 8
        /// `{}`: an online backup's first step (admin only once credentials are configured):
        /// the daemon writes a consistent checkpoint of every namespace under
        /// `<data>/.checkpoints/<id>/<namespace>` (answer: `value` with `{"id", "directory",
        /// "namespaces": {name: {"directory", "databaseId", "last"}}}`); the caller copies it and
        /// then sends `releaseCheckpoint`. Added without a version change (`eddy backup`).
        case checkpoint = 9
        /// `{"id": "<checkpoint id>"}`: deletes that checkpoint (answer: `value` `{"released": bool}`).
        case releaseCheckpoint = 10
        /// `{"ns": "<name>"?}`: the rules document `{"rules": {...}}` (answer: `value`). The
        /// admin's once credentials are configured. Added without a version change (`eddy rules`).
        case getRules = 11
        /// `{"ns": "<name>"?, "document": {"rules": {...}}}`: validates and replaces the rules
        /// (answer: `value` with `{"indexes": <.indexOn declarations>}`). The admin's, as above.
        case setRules = 12
        /// `{"ns": "<name>"?, "op": "set"|"update"|"remove", "path": "/a", "value": ...}`: a
        /// write the server makes when this connection ends (Firebase's onDisconnect), with the
        /// connection's identity at registration; the rules are checked when it runs (answer:
        /// `value` `{"value": null}` once validated; nothing is written yet). Added without a
        /// version change: an older server refuses the kind.
        case onDisconnect = 13
        /// `{"ns": "<name>"?, "path": "/a"}`: drops this connection's onDisconnect writes at or
        /// below the path (answer: `value` `{"value": {"cancelled": n}}`).
        case cancelDisconnect = 14
        // server -> client
        /// `{"value": ..., "etag": "..."?}`
        case value = 20
        /// `{"logID": "...", "name": "<push id>"?}`
        case written = 21
        /// `{"subscription": id, "liveAfter": "<log id>"|null}`: the first `events` frame holds the
        /// state after liveAfter; later ones, every entry after it.
        case subscribed = 22
        /// `{"events": [{"kind": "child_added", "key": "k", "prev": "j"|null, "value": ..., "logID": "..."|null}]}`.
        /// A `value` event is `{"kind": "value", "value": <the whole value>}` in the first frame
        /// of a subscription (the state after `liveAfter`), and afterwards
        /// `{"kind": "value", "logID": "...", "changes": [{"op": "put", "path": "/a/b", "data": ...},
        /// {"op": "patch", "path": "/a", "data": {"k": ..., "gone": null}}]}`: what the entry
        /// changed, relative to the subscribed location, to apply in order to the value held
        /// (put replaces at the path, null removes; patch puts each child). A query
        /// subscription's changes name the children that entered, left (null) or changed.
        case events = 23
        /// `{"lastDelivered": "<log id>"|null}`: the subscriber fell too far behind; the
        /// connection closes after this frame.
        case behind = 24
        case unsubscribed = 25
        /// `{"code": "invalidPath", "message": "..."}`
        case error = 26
        /// `{"after": "<log id>"|null}`: `changes` frames with this request id follow.
        case tailing = 27
        /// `{"changes": [{"id", "path", "op", "before", "after"}, ...], "last": "<log id>"}`: the
        /// change records of the entries up to `last` (which may have none under the path filter).
        case changes = 28
        // replication, follower -> leader
        /// `{"protocol": 2, "ns": "default", "follower": "<name>", "databaseID": "..."|null, "lastApplied": "<log id>"|null,
        /// "snapshot": true|false, "recent": "<log id>,<log id>,..."}` (`snapshot`: the follower can take a
        /// snapshot when it needs one; `recent`, optional: a sample of its log ids, newest first,
        /// from which an `anotherHistory` refusal picks `commonPoint`).
        /// Protocol 2 (`replicationProtocolVersion`): entries are log entry format 2, with terms.
        case hello = 40
        /// `{"applied": "<log id>"}`: everything up to it is durable on the follower.
        case applied = 45
        /// Protocol 4, on the default namespace's connection only: `{"namespaces": {"<ns>": "<log
        /// id>"|null, ...}}`, namespaces the follower parked (closed their connections while
        /// idle) and the newest entry it applied in each. The leader names each in a heartbeat's
        /// `written` once it has a newer entry, once per watch.
        case watch = 50
        // replication, leader -> follower
        /// `{"databaseID": "...", "leaderLast": "<log id>"|null, "term": n, "rules": {...}}`: entries
        /// follow. `term`: the leader's leadership term (0 outside a cluster).
        case welcome = 41
        /// `{"message": "...", "reason": "..."?, "commonPoint": "<log id>"?}`: the leader will not
        /// serve this follower; the connection closes. Reasons: `snapshotNeeded`,
        /// `anotherHistory`, `unauthenticated`, `busy` (`--replication-connections-max` reached:
        /// try again later).
        case refused = 42
        /// Binary, `ReplicatedEntries`: log entries in order, each with its checksum.
        case entries = 43
        /// `{"leaderLast": "<log id>"|null}`, about once a second when idle. On the default
        /// namespace's connection also `"namespaces": [...]` (every namespace of the leader) when
        /// that list changed, and `"written": [...]` (protocol 4): watched namespaces that have
        /// newer entries (see `watch`).
        case heartbeat = 44
        /// The leader's rules document changed: `{...}` (the whole document).
        case rules = 46
        /// `{"at": "<log id>"|null, "databaseID": "..."}`: a snapshot follows (the follower asked
        /// for one in its hello, and its position is not in the log); then entries after `at`.
        case snapshot = 47
        /// Binary, `SnapshotChunk`: records of the snapshot, compressed, with a checksum.
        case snapshotChunk = 48
        /// `{"records": n}`: the snapshot is complete (n records in all).
        case snapshotEnd = 49
    }

    public var kind: Kind
    public var requestID: UInt64
    public var payload: [UInt8]

    public init(kind: Kind, requestID: UInt64, payload: [UInt8]) {
        self.kind = kind
        self.requestID = requestID
        self.payload = payload
    }

    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(4 + Self.headerBytes + self.payload.count)
        let length = UInt32(Self.headerBytes + self.payload.count)
        for shift in stride(from: 24, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: length >> UInt32(shift))) }
        out.append(Self.version)
        out.append(self.kind.rawValue)
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: self.requestID >> UInt64(shift))) }
        out += self.payload
        return out
    }
}

/// Cuts a byte stream into frames. Bounded: it never holds more than one frame's bytes beyond
/// what it was given.
public struct FrameDecoder: Sendable {
    private var buffer: [UInt8] = []
    private var start = 0
    /// Longest frame accepted (after the length prefix).
    public let lengthMax: Int

    /// `lengthMax`: `Frame.bytesMax` where a server reads, `Frame.fromServerBytesMax` where a
    /// client or follower reads a server's frames.
    public init(lengthMax: Int = Frame.bytesMax) {
        self.lengthMax = lengthMax
    }

    public mutating func append(_ bytes: some Sequence<UInt8>) {
        self.buffer.append(contentsOf: bytes)
    }

    /// Bytes held and not yet returned as frames: a frame still arriving, or frames not taken.
    public var bufferedBytes: Int { self.buffer.count - self.start }

    /// The next complete frame, nil when more bytes are needed. Throws on a malformed stream
    /// (the connection must close): an oversized length, an unknown version or kind.
    public mutating func next() throws(ProtocolError) -> Frame? {
        let available = self.buffer.count - self.start
        guard available >= 4 else { return nil }
        var length = 0
        for i in 0..<4 { length = length << 8 | Int(self.buffer[self.start + i]) }
        guard length >= Frame.headerBytes, length <= self.lengthMax else {
            // A TLS record (handshake 0x16 or alert 0x15, version 3.x): the peer speaks TLS and
            // this side does not (a follower or client without --tls-ca-file), or the reverse.
            let first = self.buffer[self.start], second = self.buffer[self.start + 1]
            if (first == 0x15 || first == 0x16) && second == 0x03 {
                throw ProtocolError(
                    "the peer speaks TLS and this connection does not (a TLS listener: connect with TLS, e.g. --tls-ca-file for a follower)")
            }
            throw ProtocolError("frame length \(length) is outside \(Frame.headerBytes)...\(self.lengthMax) bytes")
        }
        guard available >= 4 + length else { return nil }
        let base = self.start + 4
        guard self.buffer[base] == Frame.version else {
            throw ProtocolError("protocol version \(self.buffer[base]) is not supported; this server speaks version \(Frame.version)")
        }
        guard let kind = Frame.Kind(rawValue: self.buffer[base + 1]) else {
            throw ProtocolError("unknown frame kind \(self.buffer[base + 1])")
        }
        var requestID: UInt64 = 0
        for i in 0..<8 { requestID = requestID << 8 | UInt64(self.buffer[base + 2 + i]) }
        let payload = Array(self.buffer[(base + Frame.headerBytes)..<(base + length)])
        self.start += 4 + length
        if self.start == self.buffer.count {
            self.buffer.removeAll(keepingCapacity: true)
            self.start = 0
        } else if self.start > 64 * 1024, self.start * 2 > self.buffer.count {
            self.buffer.removeFirst(self.start)
            self.start = 0
        }
        return Frame(kind: kind, requestID: requestID, payload: payload)
    }
}

public struct ProtocolError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { self.message }
}
