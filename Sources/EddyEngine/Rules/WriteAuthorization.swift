// The write-rule check of one operation: `.write`/`.validate` for every path it changes, with
// `data`/`root` the tree before it and `newData` that tree with its changes on top (server values
// resolved as they will be stored). Shared by the committer, which checks in its group through
// the batch, and `Engine.checkWrite`, which checks against the committed tree and writes nothing
// (onDisconnect registrations). A multi-path update is allowed only if every path is, each
// checked against the tree the whole update makes (Firebase's semantics).

import EddyModel

enum WriteAuthorization {
    /// Stands in for a push's key when it is checked before the committer makes it (20
    /// characters of the push id alphabet; no rule can tell it from a real one unless it names
    /// the wildcard that captures it, which `SecurityRules.pushKeyIsIrrelevant` looks for).
    static let placeholderPushKey = "-placeholder-push-id"

    /// Throws Firebase's "Permission denied" unless `rules` let `access` make `operation` on the
    /// tree `read` answers; `pushedKey` names a push's child.
    static func check(
        _ operation: WriteOperation, _ access: Access, rules: SecurityRules, nowMilliseconds now: UInt64, pushedKey: String,
        read: @escaping (Path) throws(EddyError) -> Value
    ) throws(EddyError) {
        let before = RuleTree(reading: { path in try read(path) })
        func resolved(_ value: Value, at path: Path) throws(EddyError) -> Value {
            guard TreeWriter.containsServerValue(value) else { return value }
            return try TreeWriter.resolve(value, old: try read(path), now: now, path: path)
        }
        var changes: [(path: Path, value: Value)] = []
        switch operation {
        case .set(let path, let value): changes = [(path, try resolved(value, at: path))]
        case .remove(let path): changes = [(path, .null)]
        case .push(let path, let value):
            let child = path.appending(pushedKey)
            changes = [(child, try resolved(value, at: child))]
        case .update(let path, let list):
            for change in list {
                let location = path.appending(change.path)
                changes.append((location, try resolved(change.value, at: location)))
            }
        }
        let after = RuleTree(base: before, writing: changes)
        let context = RuleContext(auth: access.auth, now: Double(now), tree: before, newTree: after)
        for change in changes where !rules.canWrite(change.path, context) {
            throw Engine.permissionDenied
        }
    }
}
