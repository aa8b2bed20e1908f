// A log entry as change-data-capture records (`eddy tail`): one record per changed location,
// `{"id", "path", "op", "before", "after"}`, where `before` is what the location held before
// the entry (from its before-image) and `after` what it holds after it (`null`: removed). The
// records of one entry come in path order (a multi-path update's changes have no order).
//
// Under a path filter, a change at or below the path is kept as it is; a change above it (which
// replaced the path's whole subtree) is narrowed to the path itself, and dropped when it left
// the path as it was.

import EddyModel

extension LogEntry {
    public func changeRecords(under filter: Path? = nil) -> [Value] {
        var images: [Path: Value] = [:]
        for image in self.before { images[image.path] = image.value }
        var records: [(path: String, record: Value)] = []
        for change in self.changes {
            var path = self.location.appending(change.path)
            var before = images[path] ?? .null
            var after = change.value
            if let filter, !filter.isAncestorOrSelf(of: path) {
                guard path.isAncestorOrSelf(of: filter) else { continue }
                let inside = Path(validatedKeys: Array(filter.keys[path.depth...]))
                before = before.child(at: inside)
                after = after.child(at: inside)
                if before == after { continue }
                path = filter
            }
            records.append(
                (
                    path.description,
                    .object([
                        "id": .string(self.id.rawValue), "path": .string(path.description), "op": .string(self.kind.name), "before": before,
                        "after": after,
                    ])
                ))
        }
        return records.sorted { $0.path < $1.path }.map(\.record)
    }
}
