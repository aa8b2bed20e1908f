// One change a log entry made (absolute path, resolved value, what was there before), and the
// rule that turns an entry's changes into the `ValueChange`s a listener at a location sees, as
// Firebase's REST streaming sends them (docs: "Retrieving Data", section "Streaming from the
// REST API"):
//
// - a change at or above the location: `put "/"` with the location's new value;
// - a set, push or remove below it: `put` at the written path, relative to the location;
// - an update below it: one `patch` per parent of the updated paths, holding only the updated
//   children (one patch when they share a parent, as a PATCH's direct keys do; several, in
//   path order, when a multi-path update reaches different parents);
// - a change beside it, or one that leaves the value as it was: nothing.
// The cost is that of the change, never that of the location's value.

import EddyLog
import EddyModel

struct AppliedChange {
    var path: Path
    var value: Value
    var before: Value
}

extension AppliedChange {
    /// What a listener at `location` sees of one entry's `changes` (disjoint paths, as every
    /// entry's are); `merge`: the entry is an update.
    static func valueChanges(at location: Path, of changes: [AppliedChange], merge: Bool) -> [ValueChange] {
        var puts: [ValueChange] = []
        var patches: [Path: [String: Value]] = [:]
        for change in changes {
            if change.path.isAncestorOrSelf(of: location) {
                let inside = Path(validatedKeys: Array(location.keys[change.path.depth...]))
                let new = change.value.child(at: inside)
                // No other change of the entry can be at or below the location.
                return new == change.before.child(at: inside) ? [] : [.put(path: .root, value: new)]
            }
            guard location.isAncestorOrSelf(of: change.path), change.value != change.before else { continue }
            let relative = Path(validatedKeys: Array(change.path.keys[location.depth...]))
            if merge, let parent = relative.parent, let key = relative.lastKey {
                patches[parent, default: [:]][key] = change.value
            } else {
                puts.append(.put(path: relative, value: change.value))
            }
        }
        guard !patches.isEmpty else { return puts }
        let parents = patches.keys.sorted { Self.precedes($0, $1) }
        return puts + parents.map { .patch(path: $0, children: patches[$0]!) }
    }

    /// Firebase key order, key by key; a path before its descendants.
    private static func precedes(_ a: Path, _ b: Path) -> Bool {
        for (x, y) in zip(a.keys, b.keys) where x != y { return Key.compare(x, y) < 0 }
        return a.depth < b.depth
    }
}

extension LogEntry {
    /// What a listener at `location` hears of this entry (see `AppliedChange`): for callers that
    /// replay the log themselves (`Engine.listen(..., replaySince: false)`).
    public func valueChanges(at location: Path) -> [ValueChange] {
        AppliedChange.valueChanges(at: location, of: self.appliedChanges, merge: self.kind == .update)
    }

    /// The same in export form (`Value+Priority.swift`), a priority-only change heard as a
    /// change of `<node>/.priority`: for exporting listeners. Each change's before-images come
    /// in order, its own first; the `<ancestor>/.priority` ones after it are priorities it
    /// dropped from ancestors it emptied, heard as their removal right after it, as live
    /// (`EventRouter.droppedPriorities`). (A dropped priority whose image is followed at once by
    /// a write of that very priority is taken for that write's own image: the write decides
    /// the priority either way.)
    public func exportValueChanges(at location: Path) -> [ValueChange] {
        var changes: [AppliedChange] = []
        var k = 0
        for (i, change) in self.changes.enumerated() {
            let path = self.location.appending(change.path)
            var before = Value.null
            if k < self.before.count, self.before[k].path == path {
                before = self.before[k].value
                k += 1
            }
            changes.append(AppliedChange(path: path, value: change.value, before: before))
            let next = i + 1 < self.changes.count ? self.location.appending(self.changes[i + 1].path) : nil
            while k < self.before.count, self.before[k].path != next {
                let image = self.before[k]
                if image.path.lastKey == Value.priorityKey { changes.append(AppliedChange(path: image.path, value: .null, before: image.value)) }
                k += 1
            }
        }
        return AppliedChange.valueChanges(at: location, of: changes, merge: self.kind == .update)
    }

    /// The entry's changes with their before-images (a location the entry did not record an
    /// image for held nothing).
    var appliedChanges: [AppliedChange] {
        var images: [Path: Value] = [:]
        for image in self.before { images[image.path] = image.value }
        // Listeners hear values without priorities (see `Committer`'s `changed(path:written:...)`).
        return self.changes.compactMap { change in
            let path = self.location.appending(change.path)
            guard path.lastKey != Value.priorityKey else { return nil }
            return AppliedChange(path: path, value: change.value.withoutPriorities, before: (images[path] ?? .null).withoutPriorities)
        }
    }
}
