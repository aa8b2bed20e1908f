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
        read: @escaping (Path) throws(EddyError) -> Value, readPriority: ((Path) throws -> Value)? = nil
    ) throws(EddyError) {
        let before = RuleTree(reading: { path in try read(path) }, readingPriority: readPriority)
        // Rules see data without priorities (`val()`, `$wildcards`), and `getPriority()` the
        // export form's (`exported`); a `<path>/.priority` write is a write at the path that
        // leaves its data as it is.
        var exported: [(path: Path, value: Value)] = []
        func resolved(_ value: Value, at path: Path) throws(EddyError) -> Value {
            let full = TreeWriter.containsServerValue(value) ? try TreeWriter.resolve(value, old: try read(path), now: now, path: path) : value
            if full.holdsPriorities { exported.append((path, full)) }
            return full.withoutPriorities
        }
        func change(_ path: Path, _ value: Value) throws(EddyError) -> (path: Path, value: Value) {
            if path.lastKey == Value.priorityKey, let node = path.parent {
                exported.append((path, WriteValidator.serverValue(value) == .timestamp ? .number(Double(now)) : value))
                return (node, try read(node))
            }
            return (path, try resolved(value, at: path))
        }
        var changes: [(path: Path, value: Value)] = []
        switch operation {
        case .set(let path, let value): changes = [try change(path, value)]
        case .remove(let path): changes = [try change(path, .null)]
        case .push(let path, let value):
            let child = path.appending(pushedKey)
            changes = [(child, try resolved(value, at: child))]
        case .update(let path, let list):
            for item in list { changes.append(try change(path.appending(item.path), item.value)) }
        }
        let after = RuleTree(base: before, writing: changes, exported: exported)
        let context = RuleContext(auth: access.auth, now: Double(now), tree: before, newTree: after)
        for change in changes where !rules.canWrite(change.path, context) {
            throw Engine.permissionDenied
        }
    }
}
