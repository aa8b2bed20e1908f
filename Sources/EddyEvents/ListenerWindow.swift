// One listen's view: its location, its query (a plain listener sees every child in key order
// and the location's whole value), and its current result in query order. Listeners with the
// same location, query, key paths and kind of output share one window (its `members`): the
// result is kept and the events computed once per entry, and every member's sink receives the
// same batch. The committer updates
// it change by change, at the moment each change is applied, so reads through the write batch
// see exactly the state after that change:
// - a change at or above the location replaces the whole result (from the change's value);
// - a change inside one child updates that child: out of the result, back in at its new sort
//   position when inside the bounds; a limit window that overflows drops its far end, one that
//   runs short is refilled with one read past its far end (`fetch`), never by a rescan.
// A window in priority order sorts by its children's priorities, which the router reads and
// passes (values hold none); a priority change moves a child with its data as it was. An
// exporting window (`ListenerSpec.exportsPriorities`) holds its children in export form
// instead, priorities included, so a priority change is a change of the child.
// Invariant: `entries` is exactly the query's result, in query order, unless the window keeps
// no result (`keepsResult` false: a plain window whose members hear only value changes; its
// events come from the entry's changes alone, see `AppliedChange`).
// Events are the difference between the result before and after a log entry (`events(from:)`),
// in Firebase's order; see EddyTesting/ReferenceEvents.swift for the rules. A value event that
// carries changes takes them from the entry (plain windows) or from the children that entered,
// left or changed (query windows).

import EddyModel

final class ListenerWindow {
    struct ID: Hashable {
        let rawValue: UInt64
    }

    struct Entry: Equatable {
        var key: String
        var sort: Value
        var value: Value
    }

    /// The result as it was at some point, to derive events from.
    struct Snapshot {
        var entries: [Entry]
        var primitive: Value?
    }

    let id: ID
    let location: Path
    let query: Query
    let isPlain: Bool
    let deliversChangeSets: Bool
    let selection: EventSelection
    /// Its members take the consecutive entries of a group in one batch (`ListenerSpec`).
    let coalescesEntries: Bool
    /// False for a plain window whose members hear only value changes: it holds no entries,
    /// and a change costs what the change holds, whatever the size of the location.
    let keepsResult: Bool
    /// Only changes at these paths inside a child notify (nil: any change).
    let keyPaths: [Path]?
    /// Its values are in export form (`ListenerSpec.exportsPriorities`): entries hold their
    /// priorities, a plain window's primitive may be `{".value": v, ".priority": p}`.
    let exportsPriorities: Bool
    /// The listeners that hear this window, in the order they attached.
    private(set) var members: [(id: ListenerID, output: ListenerOutput)] = []
    private(set) var entries: [Entry] = []
    /// A plain listener whose location holds a primitive sees it here (and no children).
    private(set) var primitive: Value? = nil

    /// A window for `spec`, with no members yet.
    init(id: ID, spec: ListenerSpec) {
        self.id = id
        self.location = spec.location
        self.query = spec.query ?? Query(order: .key)
        self.isPlain = spec.query == nil
        self.deliversChangeSets = spec.output.isChangeSets
        self.keyPaths = spec.keyPaths
        self.selection = spec.selection
        self.coalescesEntries = spec.coalescesEntries && !spec.output.isChangeSets
        self.exportsPriorities = spec.exportsPriorities
        self.keepsResult = !(spec.query == nil && !spec.output.isChangeSets && !spec.selection.childEvents && spec.selection.valueChanges)
    }

    /// Whether a listener for `spec` hears exactly what this window's members hear.
    func canShare(_ spec: ListenerSpec) -> Bool {
        spec.since == nil && spec.location == self.location && spec.query == (self.isPlain ? nil : self.query)
            && spec.keyPaths == self.keyPaths && spec.output.isChangeSets == self.deliversChangeSets
            && (self.deliversChangeSets || spec.selection == self.selection)
            && (spec.coalescesEntries && !spec.output.isChangeSets) == self.coalescesEntries
            && spec.exportsPriorities == self.exportsPriorities
    }

    /// Whether the value events of this window carry the entry's own changes (so the router
    /// must compute them): a plain window that hears value changes.
    var needsEntryChanges: Bool { self.isPlain && !self.deliversChangeSets && self.selection.valueChanges }

    func addMember(_ id: ListenerID, _ output: ListenerOutput) { self.members.append((id, output)) }

    /// Removes a member; false when it was not one.
    func removeMember(_ id: ListenerID) -> Bool {
        guard let i = self.members.firstIndex(where: { $0.id == id }) else { return false }
        self.members.remove(at: i)
        return true
    }

    var snapshot: Snapshot { Snapshot(entries: self.entries, primitive: self.primitive) }

    func restore(_ snapshot: Snapshot) {
        self.entries = snapshot.entries
        self.primitive = snapshot.primitive
    }

    /// Reads up to `count` result entries next to the window (`after`: past its last entry, or
    /// from the start bound when nil; else before its first entry, or from the end bound),
    /// inside the bounds, in query order.
    typealias Fetch = (_ after: Bool, _ edge: Entry?, _ count: Int) throws(EddyError) -> [Entry]

    // MARK: Changes

    /// Sets the result as read from storage (already the query's result, in order).
    func load(_ entries: [Entry]) {
        self.primitive = nil
        self.entries = entries
    }

    /// A window in priority order sorts its children by their priorities, which their values
    /// (data without priorities) do not hold: its callers pass them.
    var ordersByPriority: Bool { self.query.order == .priority }

    /// The value at the location became `value` (a change at or above it); `priorities`: its
    /// children's, for a window in priority order (absent: none).
    func replaceAll(with value: Value, priorities: [String: Value] = [:]) {
        self.primitive = nil
        guard case .object(var children) = value, children[Value.wrappedValueKey] == nil else {
            if self.isPlain, !value.isNull { self.primitive = value }
            self.entries = []
            return
        }
        // An exporting window's result is its children (a plain one's own priority is heard
        // only as a change: `AppliedChange`).
        children.removeValue(forKey: Value.priorityKey)
        var all = children.map {
            Entry(
                key: $0.key, sort: self.sortValue(of: $0.value, priority: priorities[$0.key] ?? (self.exportsPriorities ? $0.value.priority : .null)),
                value: $0.value)
        }
            .filter(self.inBounds)
        all.sort(by: self.less)
        switch self.query.limit {
        case .first(let n): self.entries = Array(all.prefix(n))
        case .last(let n): self.entries = Array(all.suffix(n))
        case nil: self.entries = all
        }
    }

    /// Child `key` is now `value` (`.null`: gone), with `priority` (for a window in priority
    /// order). The location holds an object afterwards unless the child was its last.
    func update(child key: String, to value: Value, priority: Value = .null, fetch: Fetch) throws(EddyError) {
        self.primitive = nil
        self.entries.removeAll { $0.key == key }
        let entry = Entry(key: key, sort: self.sortValue(of: value, priority: priority), value: value)
        let belongs = !value.isNull && self.inBounds(entry)
        switch self.query.limit {
        case nil:
            if belongs { self.insert(entry) }
        case .first(let n):
            // The result minus this child is still a prefix of the new result: the child goes
            // in when it sorts before its last entry; otherwise the refill below finds it.
            if belongs, let last = self.entries.last, self.less(entry, last) { self.insert(entry) }
            if self.entries.count > n { self.entries.removeLast(self.entries.count - n) }
            if self.entries.count < n {
                self.entries += try fetch(true, self.entries.last, n - self.entries.count)
            }
        case .last(let n):
            if belongs, let first = self.entries.first, self.less(first, entry) { self.insert(entry) }
            if self.entries.count > n { self.entries.removeFirst(self.entries.count - n) }
            if self.entries.count < n {
                self.entries.insert(contentsOf: try fetch(false, self.entries.first, n - self.entries.count), at: 0)
            }
        }
    }

    private func insert(_ entry: Entry) {
        var low = 0
        var high = self.entries.count
        while low < high {
            let mid = (low + high) / 2
            if self.less(self.entries[mid], entry) { low = mid + 1 } else { high = mid }
        }
        self.entries.insert(entry, at: low)
    }

    // MARK: Order and bounds

    /// What a child sorts by: nothing (key order), its priority, its value or its child's.
    func sortValue(of child: Value, priority: Value = .null) -> Value {
        switch self.query.order {
        case .key: return .null
        case .priority: return priority
        case .value: return self.exportsPriorities ? child.withoutPriorities : child
        case .child(let path): return self.exportsPriorities ? child.child(at: path).withoutPriorities : child.child(at: path)
        }
    }

    func less(_ a: Entry, _ b: Entry) -> Bool {
        let c = ValueOrder.compare(a.sort, b.sort)
        return c != 0 ? c < 0 : Key.compare(a.key, b.key) < 0
    }

    func inBounds(_ entry: Entry) -> Bool {
        if let start = self.query.start {
            let c = self.compare(entry, start)
            if start.inclusive ? c < 0 : c <= 0 { return false }
        }
        if let end = self.query.end {
            let c = self.compare(entry, end)
            if end.inclusive ? c > 0 : c >= 0 { return false }
        }
        return true
    }

    private func compare(_ entry: Entry, _ bound: Query.Bound) -> Int {
        if self.query.order == .key, case .string(let key) = bound.value { return Key.compare(entry.key, key) }
        let c = ValueOrder.compare(entry.sort, bound.value)
        if c != 0 { return c }
        switch bound.key {
        case nil: return 0
        case "[MIN_NAME]": return 1
        case "[MAX_NAME]": return -1
        case let key?: return Key.compare(entry.key, key)
        }
    }

    // MARK: Events

    /// The listener's value: the location's whole value (plain), or the selected children.
    var value: Value {
        if let primitive = self.primitive { return primitive }
        return self.entries.isEmpty ? .null : .object(Dictionary(uniqueKeysWithValues: self.entries.map { ($0.key, $0.value) }))
    }

    /// What attaching hands a listener: the current result. A window that keeps no result is
    /// handed the location's `current` value.
    func initialDelivery(to output: ListenerOutput, current: Value? = nil) -> Delivery {
        precondition(self.keepsResult || current != nil, "a window without a result needs the current value to attach")
        switch output {
        case .events(let sink):
            var events: [ChildEvent] = []
            for (i, entry) in self.entries.enumerated() where self.selection.childEvents {
                events.append(
                    ChildEvent(
                        kind: .childAdded, key: entry.key, previousKey: i == 0 ? nil : self.entries[i - 1].key, value: entry.value, logID: nil))
            }
            events.append(ChildEvent(kind: .value, key: nil, previousKey: nil, value: current ?? self.value, logID: nil))
            let batch = events
            return { sink(batch) }
        case .changeSets(let sink):
            let change = ResultChange(
                kind: .initial, results: self.entries.map { ResultChange.Child(key: $0.key, value: $0.value) }, deletions: [],
                insertions: [], modifications: [], logID: nil)
            return { sink(change) }
        }
    }

    /// Tells every member its listen ended.
    func cancelDelivery(_ reason: String) -> Delivery {
        Self.cancelDelivery(reason, to: self.members.map(\.output))
    }

    static func cancelDelivery(_ reason: String, to outputs: [ListenerOutput]) -> Delivery {
        let event = ChildEvent(kind: .cancel, key: nil, previousKey: nil, value: .string(reason), logID: nil)
        let change = ResultChange(kind: .cancelled, results: [], deletions: [], insertions: [], modifications: [], logID: nil)
        return {
            for output in outputs {
                switch output {
                case .events(let sink): sink([event])
                case .changeSets(let sink): sink(change)
                }
            }
        }
    }

    /// What turns `old` into the current result, computed once and handed to every member
    /// except the `silenced` ones (all receive the same batch); nil when nothing they listen
    /// to changed. `entryChanges`: the entry's changes as this window's location sees them,
    /// when `needsEntryChanges`.
    func delivery(from old: Snapshot, logID: LogID, entryChanges: [ValueChange]?, silenced: Set<ListenerID>) -> Delivery? {
        self.delivery(from: old, logID: logID, entryChanges: entryChanges, to: self.outputs(excluding: silenced))
    }

    /// The members' outputs but the `silenced` ones'.
    private func outputs(excluding silenced: Set<ListenerID>) -> [ListenerOutput] {
        silenced.isEmpty ? self.members.map(\.output) : self.members.filter { !silenced.contains($0.id) }.map(\.output)
    }

    /// For a window that `coalescesEntries`: the events that turn `old` into the current
    /// result and the members that hear them (all but the `silenced`); nil when there are none.
    /// The caller hands them over, possibly joined with the next entries' events.
    func eventsBatch(from old: Snapshot, logID: LogID, entryChanges: [ValueChange]?, silenced: Set<ListenerID>) -> (
        outputs: [ListenerOutput], events: [ChildEvent]
    )? {
        precondition(!self.deliversChangeSets, "change sets are never joined")
        let outputs = self.outputs(excluding: silenced)
        if outputs.isEmpty { return nil }
        let events = self.events(from: old, logID: logID, entryChanges: entryChanges)
        return events.isEmpty ? nil : (outputs, events)
    }

    /// The same for the listener with `output` alone (a resumed listener catching up).
    func delivery(from old: Snapshot, logID: LogID, entryChanges: [ValueChange]?, to output: ListenerOutput) -> Delivery? {
        self.delivery(from: old, logID: logID, entryChanges: entryChanges, to: [output])
    }

    private func delivery(from old: Snapshot, logID: LogID, entryChanges: [ValueChange]?, to outputs: [ListenerOutput]) -> Delivery? {
        if outputs.isEmpty { return nil }
        if self.deliversChangeSets {
            guard let change = self.changeSet(from: old, logID: logID) else { return nil }
            return { @Sendable in
                for case .changeSets(let sink) in outputs { sink(change) }
            }
        }
        let events = self.events(from: old, logID: logID, entryChanges: entryChanges)
        if events.isEmpty { return nil }
        return { @Sendable in
            for case .events(let sink) in outputs { sink(events) }
        }
    }

    /// A child in both results notifies when its sort value changed (it moves: a changed
    /// priority moves it with its data as it was) or, with key paths, when one of them
    /// changed; without key paths, when anything in it changed.
    private func notifies(_ old: Entry, _ new: Entry) -> (moved: Bool, notifies: Bool) {
        let moved = self.query.order != .key && old.sort != new.sort
        guard old.value != new.value else { return (moved, moved) }
        guard let keyPaths = self.keyPaths else { return (moved, true) }
        return (moved, moved || keyPaths.contains { old.value.child(at: $0) != new.value.child(at: $0) })
    }

    /// The events that turn `old` into the current result, in Firebase's order.
    func events(from old: Snapshot, logID: LogID, entryChanges: [ValueChange]? = nil) -> [ChildEvent] {
        // Whole-value events follow the child events, heard or not.
        let childEvents = self.selection.childEvents || !self.selection.valueChanges ? self.childEvents(from: old, logID: logID) : []
        var events = self.selection.childEvents ? childEvents : []
        if self.selection.valueChanges {
            precondition(!self.needsEntryChanges || entryChanges != nil, "a plain window's value changes come from its entry")
            let changes = entryChanges ?? self.resultChanges(from: old)
            if !changes.isEmpty {
                events.append(ChildEvent(kind: .value, key: nil, previousKey: nil, value: .null, logID: logID, changes: changes))
            }
        } else if !childEvents.isEmpty || old.primitive != self.primitive {
            events.append(ChildEvent(kind: .value, key: nil, previousKey: nil, value: self.value, logID: logID))
        }
        return events
    }

    /// The change of a query's result from `old`: the children that left (null), entered or
    /// changed (their whole value); one put, or one patch at the location for several.
    private func resultChanges(from old: Snapshot) -> [ValueChange] {
        var oldValues: [String: Value] = [:]
        for entry in old.entries { oldValues[entry.key] = entry.value }
        var children: [String: Value] = [:]
        var current = Set<String>()
        for entry in self.entries {
            current.insert(entry.key)
            if oldValues[entry.key] != entry.value { children[entry.key] = entry.value }
        }
        for entry in old.entries where !current.contains(entry.key) { children[entry.key] = .null }
        if children.count == 1, let (key, value) = children.first { return [.put(path: Path(validatedKeys: [key]), value: value)] }
        return children.isEmpty ? [] : [.patch(path: .root, children: children)]
    }

    /// Child events from `old` to the current result, in Firebase's order.
    private func childEvents(from old: Snapshot, logID: LogID) -> [ChildEvent] {
        var oldEntries: [String: Entry] = [:]
        for entry in old.entries { oldEntries[entry.key] = entry }
        var newKeys = Set<String>()
        for entry in self.entries { newKeys.insert(entry.key) }
        var events: [ChildEvent] = []
        for entry in old.entries where !newKeys.contains(entry.key) {
            events.append(ChildEvent(kind: .childRemoved, key: entry.key, previousKey: nil, value: entry.value, logID: logID))
        }
        var moved: [ChildEvent] = []
        var changed: [ChildEvent] = []
        for (i, entry) in self.entries.enumerated() {
            let previous = i == 0 ? nil : self.entries[i - 1].key
            guard let oldEntry = oldEntries[entry.key] else {
                events.append(ChildEvent(kind: .childAdded, key: entry.key, previousKey: previous, value: entry.value, logID: logID))
                continue
            }
            let (isMoved, notifies) = self.notifies(oldEntry, entry)
            guard notifies else { continue }
            if isMoved {
                moved.append(ChildEvent(kind: .childMoved, key: entry.key, previousKey: previous, value: entry.value, logID: logID))
            }
            changed.append(ChildEvent(kind: .childChanged, key: entry.key, previousKey: previous, value: entry.value, logID: logID))
        }
        events += moved + changed
        return events
    }

    /// The change set from `old` to the current result; nil when nothing it listens to changed.
    func changeSet(from old: Snapshot, logID: LogID) -> ResultChange? {
        var newIndex: [String: Int] = [:]
        for (j, entry) in self.entries.enumerated() { newIndex[entry.key] = j }
        var oldEntries: [String: Entry] = [:]
        for entry in old.entries { oldEntries[entry.key] = entry }
        var change = ResultChange(
            kind: .update, results: self.entries.map { ResultChange.Child(key: $0.key, value: $0.value) }, deletions: [], insertions: [],
            modifications: [], logID: logID)
        for (i, entry) in old.entries.enumerated() {
            guard let j = newIndex[entry.key] else {
                change.deletions.append(i)
                continue
            }
            if self.notifies(entry, self.entries[j]).moved { change.deletions.append(i) }
        }
        for (j, entry) in self.entries.enumerated() {
            guard let oldEntry = oldEntries[entry.key] else {
                change.insertions.append(j)
                continue
            }
            let (moved, notifies) = self.notifies(oldEntry, entry)
            if moved {
                change.insertions.append(j)
            } else if notifies {
                change.modifications.append(j)
            }
        }
        if change.deletions.isEmpty, change.insertions.isEmpty, change.modifications.isEmpty { return nil }
        return change
    }
}
