// What callers ask the committer to do, and what they get back.

import EddyModel

/// A validated write. Values are normalized and may still contain server values (`.sv`),
/// which the committer resolves.
public enum WriteOperation: Sendable {
    /// Replace the value at a path (`.null` removes).
    case set(Path, Value)
    /// Multi-path update at a location: each relative path is set; none is an ancestor of
    /// another.
    case update(Path, [LogEntry.Change])
    /// Add a child with a new push ID (the entry's log ID) under a path.
    case push(Path, Value)
    /// Remove the value at a path.
    case remove(Path)

    /// The update a PATCH body (or `eddy update`) describes: a non-empty object whose keys are
    /// paths relative to `location` (`"a/b"`), each naming a child. Ancestor conflicts are
    /// checked when the write is validated.
    public static func update(at location: Path, body: Value) throws(EddyError) -> WriteOperation {
        guard case .object(let members) = body, !members.isEmpty else {
            throw EddyError(
                .invalidValue, "an update (PATCH body) must be a non-empty JSON object of paths to values, e.g. {\"a/b\": 1}")
        }
        var changes: [LogEntry.Change] = []
        changes.reserveCapacity(members.count)
        for (key, child) in members {
            var path: Path
            do {
                // A `<path>/.priority` key sets that child's priority (`.priority`: the location's).
                if key == Value.priorityKey || key.hasSuffix("/" + Value.priorityKey) {
                    let node = try Path(String(key.dropLast(Value.priorityKey.utf8.count)))
                    path = Path(validatedKeys: (location.isRoot && node.isRoot) ? [] : node.keys + [Value.priorityKey])
                } else {
                    path = try Path(key)
                }
            } catch {
                throw EddyError(error.code, "update at \(location.abbreviated): \(error.message)")
            }
            guard !path.isRoot else {
                throw EddyError(.invalidKey, "update key \"\(key)\" at \(location.abbreviated) names no child")
            }
            changes.append(.init(path: path, value: child))
        }
        return .update(location, changes)
    }

    /// The path the operation is at (an update's: where its relative paths start).
    public var location: Path {
        switch self {
        case .set(let p, _), .update(let p, _), .push(let p, _), .remove(let p): return p
        }
    }
}

public struct CommittedWrite: Sendable, Equatable {
    /// The log entry that recorded the write.
    public var logID: LogID
    /// For a push: the new child's key (equal to `logID`).
    public var pushedKey: String?
    /// What was written: the resolved value for set/push, the resolved changes as an object
    /// keyed by relative path for update, `.null` for remove.
    public var value: Value
    /// `value` in export form: with the `.priority` members the write set. For a set or push
    /// it is the location's new state, so its ETag is the location's (`ETag`).
    public var exportValue: Value
}

public enum WriteOutcome: Sendable, Equatable {
    case committed(CommittedWrite)
    /// `ifMatch` did not match: nothing was written or logged. `current` is in export form
    /// (`.priority` members), as its ETag covers the priorities.
    case preconditionFailed(current: Value, etag: String)

    /// The committed write; a precondition failure is a programmer error where no `ifMatch`
    /// was given.
    public var committed: CommittedWrite? {
        if case .committed(let c) = self { return c }
        return nil
    }
}
