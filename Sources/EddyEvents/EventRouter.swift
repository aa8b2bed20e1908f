// Target EddyEvents: live events: this router, the trie of listener locations, each listener's
// window and the child events it yields. The engine reaches it through what it declares
// `package` (and its public event types); it reads the committer's open group only through
// `EventGroupReads` and committed state through the database. Invariant: events go out after
// their entry is durable, in log order, each tagged with its entry's id (the committer's sync
// pipeline runs the `Delivery`s this router produces).
//
// Live events, computed by the committer as it applies each change (so every read sees exactly
// the state after that change) and delivered after the entry is durable, in log order, with the
// acknowledgements (`SyncTicket.deliveries`).
//
// Per write: the first time a change touches a window its result is remembered; at the end
// of the write the difference between that and the current result is the entry's events. A
// write that fails restores every touched result. Windows are found through `ListenerTrie`,
// so a change costs nothing for listeners elsewhere. Identical listens (not resumed ones) share
// one window (`ListenerWindow.canShare`), so 100 subscribers of one query cost one result and
// one event computation per entry. A plain window whose members hear only value changes keeps
// no result: the write's own changes (`AppliedChange`) are its events, so a stream at the root
// of a large database pays for each change, not for the child it lands in. Listeners in export
// form (`ListenerSpec.exportsPriorities`) hear the same changes with their priorities, and the
// `<node>/.priority` changes nobody else hears; their windows read children with the priority
// records under them. Owned by the committer thread.

import EddyIndexes
import EddyLog
import EddyModel
import EddyStorage
import EddyTree

package final class EventRouter {
    private var windows: [ListenerWindow.ID: ListenerWindow] = [:]
    /// Each listener's window.
    private var listeners: [ListenerID: ListenerWindow.ID] = [:]
    /// Listeners that are not the admin's, with whom they act for and the query they named (nil
    /// for a plain listen; the rules' `query` variable tells them apart even when they share a
    /// window): a rules change checks them again (`cancelListenersNoLongerReadable`). `recheck`:
    /// their read rules depend on the data or the time, so they are checked again each time they
    /// are about to hear a change (`endWrite`).
    private var clientAccess: [ListenerID: (access: Access, query: Query?, recheck: Bool)] = [:]
    /// How many listeners of `clientAccess` have `recheck` (none: `endWrite` checks nothing).
    private var recheckCount = 0
    /// Windows by location, to find one to share.
    private var windowsAt: [Path: [ListenerWindow.ID]] = [:]
    private let trie = ListenerTrie()
    private var nextListenerID: UInt64 = 1
    private var nextWindowID: UInt64 = 1
    /// Results as they were before the current write touched them.
    private var touched: [ListenerWindow.ID: ListenerWindow.Snapshot] = [:]
    /// The current write's changes, in the order applied, and whether it is an update.
    private var writeChanges: [AppliedChange] = []
    /// The same in export form, with the `<node>/.priority` changes, for exporting windows.
    private var writeExportChanges: [AppliedChange] = []
    private var writeIsUpdate = false
    /// Events of the current group, in log order.
    private(set) var deliveries: [Delivery] = []
    /// The group's batches for windows that `coalescesEntries`, handed over after `deliveries`
    /// (at the end of the group), in the order they were opened. A window's newest batch
    /// (`openBatchIndex`) takes the next entry's events when they go to the same listeners
    /// (the same silenced set); otherwise the window starts a new one, so each of its listeners
    /// still gets every entry in log order.
    private var coalescedBatches: [(silenced: Set<ListenerID>, outputs: [ListenerOutput], events: [ChildEvent])] = []
    private var openBatchIndex: [ListenerWindow.ID: Int] = [:]

    /// Committed state, read between groups.
    let database: Database
    /// The open group's state, read inside a group.
    let group: any EventGroupReads

    package init(database: Database, group: any EventGroupReads) {
        self.database = database
        self.group = group
    }

    package var isEmpty: Bool { self.windows.isEmpty }

    // MARK: Listeners (between groups)

    /// Registers a listener: it joins a window with the same listen, or gets a new one loaded
    /// from the committed state (after `newest`). Returns its id and what to hand it first: the
    /// attach batch, or with `spec.since` the events of the entries after `since`.
    package func add(_ spec: ListenerSpec, newest: LogID?) throws(EddyError) -> (id: ListenerID, first: [Delivery]) {
        if let since = spec.since {
            guard let newest, !(newest < since) else {
                throw EddyError(
                    .invalidArgument, "cannot resume after log id \(since): it is newer than every entry (\(newest?.rawValue ?? "none"))")
            }
            if let pruned = try MetaKeys.readLogPrunedThrough(in: self.database), since < pruned {
                throw EddyError(
                    .notFound, "cannot resume after log id \(since): the log was pruned through \(pruned); listen again without resuming")
            }
        }
        let id = ListenerID(rawValue: self.nextListenerID)
        if let shared = self.windowsAt[spec.location]?.lazy.compactMap({ self.windows[$0] }).first(where: { $0.canShare(spec) }) {
            let current = shared.keepsResult ? nil : try self.readForAttach(spec.location, export: spec.exportsPriorities, newest: newest)
            self.nextListenerID += 1
            shared.addMember(id, spec.output)
            self.listeners[id] = shared.id
            self.setClientAccess(id, spec)
            return (id, [shared.initialDelivery(to: spec.output, current: current)])
        }
        let window = try self.load(spec)
        var first: [Delivery] = []
        if let since = spec.since {
            first =
                !spec.replaysSince
                ? []
                : window.keepsResult
                ? try self.replay(window, after: since, upTo: newest!, to: spec.output)
                : try self.replayChanges(window, after: since, upTo: newest!, to: spec.output)
        } else {
            let current = window.keepsResult ? nil : try self.readForAttach(spec.location, export: spec.exportsPriorities, newest: newest)
            first = [window.initialDelivery(to: spec.output, current: current)]
        }
        self.nextListenerID += 1
        self.nextWindowID += 1
        window.addMember(id, spec.output)
        self.listeners[id] = window.id
        self.setClientAccess(id, spec)
        self.windows[window.id] = window
        self.windowsAt[spec.location, default: []].append(window.id)
        self.trie.add(window.id, at: spec.location)
        return (id, first)
    }

    /// The events of the entries after `since` up to `newest` for `window` (whose result is
    /// the state after `newest`): the state at `since` is the current one with the before-images
    /// of those entries undone, newest first; the entries are then replayed one by one. Ends
    /// with the window at the state after `newest` again.
    private func replay(
        _ window: ListenerWindow, after since: LogID, upTo newest: LogID, to output: ListenerOutput
    ) throws(EddyError) -> [Delivery] {
        let location = window.location
        let tree = self.database.makeIterator(self.database.columnFamily(ColumnFamilies.tree))
        var state = Value.null.setting(try TreeReader.readSubtree(tree, prefix: PathKeyEncoding.encode(location)).value, at: location)
        let entries = try self.readEntries(after: since, upTo: newest)
        func related(_ path: Path) -> Bool { path.isAncestorOrSelf(of: location) || location.isAncestorOrSelf(of: path) }
        // Entries hold the export form (priorities): applied as the committer writes it, and
        // the window sees the data without priorities, as every listener does.
        for entry in entries.reversed() {
            for image in entry.before.reversed() where related(image.path) { state.setExport(image.value, at: image.path) }
        }
        window.replaceAll(with: Self.windowValue(state.child(at: location), window), priorities: Self.childPriorities(of: state.child(at: location)))
        var deliveries: [Delivery] = []
        for entry in entries {
            let old = window.snapshot
            for change in entry.changes {
                let path = entry.location.appending(change.path)
                if related(path) { state.setExport(change.value, at: path) }
            }
            window.replaceAll(with: Self.windowValue(state.child(at: location), window), priorities: Self.childPriorities(of: state.child(at: location)))
            let entryChanges = window.needsEntryChanges ? Self.valueChanges(of: entry, at: location, window) : nil
            if let delivery = window.delivery(from: old, logID: entry.id, entryChanges: entryChanges, to: output) {
                deliveries.append(delivery)
            }
        }
        return deliveries
    }

    /// The same for a window that keeps no result: each entry's changes as its location sees
    /// them, straight from the log, without rebuilding any state.
    private func replayChanges(
        _ window: ListenerWindow, after since: LogID, upTo newest: LogID, to output: ListenerOutput
    ) throws(EddyError) -> [Delivery] {
        var deliveries: [Delivery] = []
        for entry in try self.readEntries(after: since, upTo: newest) {
            let changes = Self.valueChanges(of: entry, at: window.location, window)
            if let delivery = window.delivery(from: window.snapshot, logID: entry.id, entryChanges: changes, to: output) {
                deliveries.append(delivery)
            }
        }
        return deliveries
    }

    /// What `window` sees of `value` (export form): it, or its data without priorities.
    private static func windowValue(_ value: Value, _ window: ListenerWindow) -> Value {
        window.exportsPriorities ? value : value.withoutPriorities
    }

    /// What `window` at `location` hears of `entry`: its changes, in export form when the window
    /// `exportsPriorities`.
    private static func valueChanges(of entry: LogEntry, at location: Path, _ window: ListenerWindow) -> [ValueChange] {
        window.exportsPriorities ? entry.exportValueChanges(at: location) : entry.valueChanges(at: location)
    }

    /// The priorities of the children of `value` (export form) that have one.
    private static func childPriorities(of value: Value) -> [String: Value] {
        guard case .object(let children) = value else { return [:] }
        var out: [String: Value] = [:]
        for (key, child) in children where key != Value.priorityKey && !child.priority.isNull { out[key] = child.priority }
        return out
    }

    /// The committed log entries after `since` up to `newest`, in order.
    private func readEntries(after since: LogID, upTo newest: LogID) throws(EddyError) -> [LogEntry] {
        var entries: [LogEntry] = []
        let log = self.database.makeIterator(self.database.columnFamily(ColumnFamilies.log))
        log.seek(Array(since.rawValue.utf8))
        if log.isValid, log.key == Array(since.rawValue.utf8) { log.next() }
        while log.isValid {
            let key = String(decoding: log.key, as: UTF8.self)
            guard let id = LogID(key) else { throw EddyError(.corruption, "log key \(key.debugDescription) is not a push ID") }
            if newest < id { break }
            entries.append(try LogEntryCodec.decode(id: id, log.value))
            log.next()
        }
        return entries
    }

    /// The value the last attach read, with what it was read for: the committed state after
    /// `newest` at `location`. Listeners attaching to the same location before another entry
    /// is committed share it: 50 streams opened on a 6.5 MB location read it once on the
    /// committer, not 50 times (which held every write of the namespace for a minute).
    private var lastAttachRead: (location: Path, export: Bool, newest: LogID, value: Value)?

    /// The committed value at `location` for an attach, between groups (`newest`: the last
    /// entry committed).
    private func readForAttach(_ location: Path, export: Bool, newest: LogID?) throws(EddyError) -> Value {
        if let newest, let last = self.lastAttachRead, last.newest == newest, last.export == export, last.location == location {
            return last.value
        }
        let value = try self.readCommitted(location, export: export)
        self.lastAttachRead = newest.map { (location, export, $0, value) }
        return value
    }

    /// The committed value at `location` (between groups); `export`: in export form.
    private func readCommitted(_ location: Path, export: Bool = false) throws(EddyError) -> Value {
        if export, let family = self.database.columnFamilyIfPresent(ColumnFamilies.priority) {
            let snapshot = self.database.makeSnapshot()
            return try PriorityRecords.exportValue(
                tree: self.database.makeIterator(self.database.columnFamily(ColumnFamilies.tree), snapshot: snapshot),
                priorities: self.database.makeIterator(family, snapshot: snapshot), prefix: PathKeyEncoding.encode(location))
        }
        let tree = self.database.makeIterator(self.database.columnFamily(ColumnFamilies.tree))
        return try TreeReader.readSubtree(tree, prefix: PathKeyEncoding.encode(location)).value
    }

    /// `value`, read at `path` without priorities, with the priorities of its nodes (export
    /// form), through the group or from the committed state.
    private func withPriorities(_ value: Value, at path: Path, inGroup: Bool) throws(EddyError) -> Value {
        guard !value.isNull else { return value }
        let iterator: Iterator
        if inGroup {
            guard let grouped = self.group.groupPriorityIteratorIfAny else { return value }
            iterator = grouped
        } else {
            guard let family = self.database.columnFamilyIfPresent(ColumnFamilies.priority) else { return value }
            iterator = self.database.makeIterator(family)
        }
        let prefix = PathKeyEncoding.encode(path)
        let records = try PriorityRecords.records(iterator, under: prefix)
        return records.isEmpty ? value : try PriorityRecords.merging(records, into: value, prefix: prefix)
    }

    /// A new window with its result loaded from the committed state.
    private func load(_ spec: ListenerSpec) throws(EddyError) -> ListenerWindow {
        let window = ListenerWindow(id: ListenerWindow.ID(rawValue: self.nextWindowID), spec: spec)
        let location = spec.location
        if !window.keepsResult { return window }
        if window.isPlain {
            window.replaceAll(with: try self.readCommitted(location, export: window.exportsPriorities))
        } else {
            _ = try self.indexDefinition(for: window, checkReady: true)
            switch window.query.limit {
            case .last(let n): window.load(try self.fetch(window, after: false, edge: nil, count: n, inGroup: false))
            case .first(let n): window.load(try self.fetch(window, after: true, edge: nil, count: n, inGroup: false))
            case nil: window.load(try self.fetch(window, after: true, edge: nil, count: .max, inGroup: false))
            }
        }
        return window
    }

    private func setClientAccess(_ id: ListenerID, _ spec: ListenerSpec) {
        guard !spec.access.isAdmin else { return }
        self.clientAccess[id] = (spec.access, spec.query, spec.recheckRead)
        if spec.recheckRead { self.recheckCount += 1 }
    }

    private func forgetClientAccess(_ id: ListenerID) {
        if self.clientAccess.removeValue(forKey: id)?.recheck == true { self.recheckCount -= 1 }
    }

    /// Listeners attached now.
    package var listenerCount: Int { self.listeners.count }

    package func remove(_ id: ListenerID) -> Bool {
        self.forgetClientAccess(id)
        guard let windowID = self.listeners.removeValue(forKey: id), let window = self.windows[windowID] else { return false }
        _ = window.removeMember(id)
        if window.members.isEmpty { self.drop(window) }
        return true
    }

    /// Forgets a window and its members.
    private func drop(_ window: ListenerWindow) {
        for member in window.members {
            self.listeners.removeValue(forKey: member.id)
            self.forgetClientAccess(member.id)
        }
        self.windows.removeValue(forKey: window.id)
        self.windowsAt[window.location]?.removeAll { $0 == window.id }
        if self.windowsAt[window.location]?.isEmpty == true { self.windowsAt.removeValue(forKey: window.location) }
        self.trie.remove(window.id, at: window.location)
    }

    /// After an index catalog change: listeners whose order no longer has an index are removed
    /// and told so (Firebase cancels such a listen). Returns their cancel deliveries.
    package func cancelListenersWithoutIndex() -> [Delivery] {
        var deliveries: [Delivery] = []
        for window in Array(self.windows.values) where window.query.order != .key && window.query.order != .priority {
            let on: Rules.IndexDeclaration.On = window.query.order == .value ? .value : .child(window.query.childPath!)
            let indexed = self.group.indexDefinitions.contains { $0.declaration.on == on && $0.declaration.matches(window.location) }
            guard !indexed else { continue }
            deliveries.append(
                window.cancelDelivery(
                    "the index \".indexOn\": \"\(window.query.indexOnName ?? "")\" for path \"\(window.location)\" was removed from the rules; this listen ended"
                ))
            self.drop(window)
        }
        return deliveries
    }

    /// After a rules change: the listeners of clients that may no longer read what they listen to
    /// are removed and told "Permission denied" (Firebase cancels such a listen). Returns their
    /// cancel deliveries. `recheck` says whose reads now depend on the data or the time.
    package func cancelListenersNoLongerReadable(
        _ canRead: (Path, Query?, Access) -> Bool, recheck: (Path) -> Bool
    ) -> [Delivery] {
        var deliveries: [Delivery] = []
        for (id, client) in self.clientAccess {
            guard let windowID = self.listeners[id], let window = self.windows[windowID] else { continue }
            let dependent = recheck(window.location)
            if dependent != client.recheck {
                self.clientAccess[id]?.recheck = dependent
                self.recheckCount += dependent ? 1 : -1
            }
            guard !canRead(window.location, client.query, client.access) else { continue }
            if let member = window.members.first(where: { $0.id == id }) {
                deliveries.append(ListenerWindow.cancelDelivery("Permission denied", to: [member.output]))
            }
            _ = self.remove(id)
        }
        return deliveries
    }

    /// Removes the listeners at exactly `location` (not those below it).
    package func removeAll(at location: Path) -> Bool {
        let windows = (self.windowsAt[location] ?? []).compactMap { self.windows[$0] }
        for window in windows { self.drop(window) }
        return !windows.isEmpty
    }

    // MARK: Writes (inside a group)

    /// After a writer applied a change (export form: `Value+Priority.swift`): `written`
    /// (resolved) at `path`, where `before` was; `update`: the change is part of an update (its
    /// listeners hear a patch). A `<node>/.priority` change leaves every value as it was: it
    /// moves the node in windows ordered by priority and reaches exporting windows only.
    package func changed(path: Path, written: Value, before: Value, update: Bool) throws(EddyError) {
        self.writeExportChanges.append(AppliedChange(path: path, value: written, before: before))
        self.writeIsUpdate = update
        if path.lastKey == Value.priorityKey, let node = path.parent {
            try self.priorityChanged(node: node)
            return
        }
        try self.changed(path: path, value: written.withoutPriorities, before: before.withoutPriorities, exportValue: written)
    }

    /// The before-images a change appended after its own (`images`, from `TreeWriter.apply`):
    /// those at `<ancestor>/.priority` are priorities the change dropped from the ancestors it
    /// emptied, which exporting windows hear as removals of those priorities (in the order
    /// applied, so an ancestor filled again later in the same update keeps none, as stored).
    package func droppedPriorities(_ images: ArraySlice<LogEntry.BeforeImage>, update: Bool) throws(EddyError) {
        for image in images where image.path.lastKey == Value.priorityKey {
            try self.changed(path: image.path, written: .null, before: image.value, update: update)
        }
    }

    /// The data change of `changed(path:written:...)`: `value` and `before` without
    /// priorities, `exportValue` with them.
    private func changed(path: Path, value: Value, before: Value, exportValue: Value) throws(EddyError) {
        self.writeChanges.append(AppliedChange(path: path, value: value, before: before))
        // Listeners at one location share the read of the changed child.
        var childReads: [Path: Value] = [:]
        for id in self.trie.touched(by: path) {
            guard let window = self.windows[id] else { continue }
            if self.touched[id] == nil { self.touched[id] = window.snapshot }
            guard window.keepsResult else { continue }
            if path.isAncestorOrSelf(of: window.location) {
                let inside = Path(validatedKeys: Array(window.location.keys[path.depth...]))
                window.replaceAll(
                    with: window.exportsPriorities ? exportValue.child(at: inside) : value.child(at: inside),
                    priorities: window.ordersByPriority ? try self.childPriorities(of: window.location, inGroup: true) : [:])
                continue
            }
            try self.updateChild(path.keys[window.location.depth], of: window, reads: &childReads)
        }
    }

    /// Re-reads child `key` of `window` through the group (value, and priority for a window in
    /// priority order) and updates the window; `reads` shares the value among windows.
    private func updateChild(_ key: String, of window: ListenerWindow, reads: inout [Path: Value]) throws(EddyError) {
        let childPath = window.location.appending(key)
        let child: Value
        if let read = reads[childPath] {
            child = read
        } else {
            child = try TreeReader.readSubtree(self.group.groupIterator, prefix: PathKeyEncoding.encode(childPath)).value
            reads[childPath] = child
        }
        var priority = Value.null
        if window.ordersByPriority, let iterator = self.group.groupPriorityIteratorIfAny {
            priority = try PriorityRecords.priority(iterator, at: PathKeyEncoding.encode(childPath))
        }
        let seen = window.exportsPriorities ? try self.withPriorities(child, at: childPath, inGroup: true) : child
        try window.update(child: key, to: seen, priority: priority) { after, edge, count throws(EddyError) in
            try self.fetch(window, after: after, edge: edge, count: count, inGroup: true)
        }
    }

    /// After a change set the priority of the node at `node` (its data as it was): windows in
    /// priority order at its parent move it; exporting windows at or above it hear it (their
    /// result holds it below their location; a plain one hears the change). Nothing else does
    /// (listeners hear data).
    private func priorityChanged(node: Path) throws(EddyError) {
        var reads: [Path: Value] = [:]
        for id in self.trie.touched(by: node) {
            guard let window = self.windows[id] else { continue }
            let below = window.location.isAncestorOrSelf(of: node) && window.location != node
            if window.exportsPriorities, window.location.isAncestorOrSelf(of: node) {
                if self.touched[id] == nil { self.touched[id] = window.snapshot }
                if window.keepsResult, below { try self.updateChild(node.keys[window.location.depth], of: window, reads: &reads) }
                continue
            }
            guard window.ordersByPriority, window.keepsResult, window.location == node.parent, let key = node.lastKey else { continue }
            if self.touched[id] == nil { self.touched[id] = window.snapshot }
            try self.updateChild(key, of: window, reads: &reads)
        }
    }

    /// The priorities of the children of `location` that have one, through the group or from
    /// the committed state.
    private func childPriorities(of location: Path, inGroup: Bool) throws(EddyError) -> [String: Value] {
        let iterator: Iterator
        if inGroup {
            guard let grouped = self.group.groupPriorityIteratorIfAny else { return [:] }
            iterator = grouped
        } else {
            guard let family = self.database.columnFamilyIfPresent(ColumnFamilies.priority) else { return [:] }
            iterator = self.database.makeIterator(family)
        }
        let prefix = PathKeyEncoding.encode(location)
        var out: [String: Value] = [:]
        for record in try PriorityRecords.records(iterator, under: prefix) where record.key.count > prefix.count {
            var rest = record.key[prefix.count...]
            let key = try PathKeyEncoding.decodeSegment(&rest)
            if rest.isEmpty { out[key] = record.priority }  // a child's own, not a descendant's
        }
        return out
    }

    /// The current write committed as `logID`: its events join the group's deliveries, except
    /// for the `silenced` listeners (whose results still follow the write).
    /// `canRead` (as the write left the tree) is asked for the listeners whose reads depend on
    /// the data or the time: one that may no longer read is removed and told so (Firebase
    /// cancels a listen whose permission is lost) instead of hearing the change.
    package func endWrite(logID: LogID, silenced: Set<ListenerID>, canRead: (Path, Query?, Access) -> Bool) {
        self.lastAttachRead = nil  // the state it was read from is gone; its memory goes too
        for (id, old) in self.touchedInEventOrder() {
            guard let window = self.windows[id] else { continue }
            if self.recheckCount > 0 {
                for member in window.members {
                    guard let client = self.clientAccess[member.id], client.recheck else { continue }
                    guard !canRead(window.location, client.query, client.access) else { continue }
                    self.deliveries.append(ListenerWindow.cancelDelivery("Permission denied", to: [member.output]))
                    _ = self.remove(member.id)
                }
                guard self.windows[id] != nil else { continue }
            }
            let entryChanges =
                window.needsEntryChanges
                ? AppliedChange.valueChanges(
                    at: window.location, of: window.exportsPriorities ? self.writeExportChanges : self.writeChanges, merge: self.writeIsUpdate)
                : nil
            if window.coalescesEntries {
                guard let batch = window.eventsBatch(from: old, logID: logID, entryChanges: entryChanges, silenced: silenced) else { continue }
                if let open = self.openBatchIndex[id], self.coalescedBatches[open].silenced == silenced {
                    self.coalescedBatches[open].events += batch.events
                } else {
                    self.openBatchIndex[id] = self.coalescedBatches.count
                    self.coalescedBatches.append((silenced, batch.outputs, batch.events))
                }
                continue
            }
            guard let delivery = window.delivery(from: old, logID: logID, entryChanges: entryChanges, silenced: silenced) else { continue }
            self.deliveries.append(delivery)
        }
        self.touched.removeAll(keepingCapacity: true)
        self.writeChanges.removeAll(keepingCapacity: true)
        self.writeExportChanges.removeAll(keepingCapacity: true)
    }

    /// The windows the current write touched, in the order Firebase raises one change's events
    /// across locations (`Path.raisesEventsBefore`: `/t/a`'s and `/t/d`'s before `/t`'s), so a
    /// connection listening at several of them receives the events in that order; windows at
    /// one location in the order they were made.
    private func touchedInEventOrder() -> [(ListenerWindow.ID, ListenerWindow.Snapshot)] {
        let touched = Array(self.touched)
        guard touched.count > 1 else { return touched }
        return touched.sorted { a, b in
            guard let first = self.windows[a.0]?.location, let second = self.windows[b.0]?.location, first != second else {
                return a.0.rawValue < b.0.rawValue
            }
            return first.raisesEventsBefore(second)
        }
    }

    /// The current write failed: every result it touched is restored.
    package func abortWrite() {
        for (id, old) in self.touched { self.windows[id]?.restore(old) }
        self.touched.removeAll(keepingCapacity: true)
        self.writeChanges.removeAll(keepingCapacity: true)
        self.writeExportChanges.removeAll(keepingCapacity: true)
    }

    /// The group's deliveries: one per entry and listener window, then the coalesced batches
    /// (every member of a window gets the very same array).
    package func takeDeliveries() -> [Delivery] {
        for (_, outputs, events) in self.coalescedBatches {
            self.deliveries.append { @Sendable in
                for case .events(let sink) in outputs { sink(events) }
            }
        }
        self.coalescedBatches.removeAll(keepingCapacity: true)
        self.openBatchIndex.removeAll(keepingCapacity: true)
        defer { self.deliveries.removeAll(keepingCapacity: true) }
        return self.deliveries
    }

    // MARK: Reads next to a window

    private func indexDefinition(for window: ListenerWindow, checkReady: Bool) throws(EddyError) -> IndexDefinition? {
        let on: Rules.IndexDeclaration.On
        switch window.query.order {
        case .key, .priority: return nil
        case .value: on = .value
        case .child(let path): on = .child(path)
        }
        let candidates = self.group.indexDefinitions.filter { $0.declaration.on == on && $0.declaration.matches(window.location) }
        if let ready = candidates.first(where: \.isReady) { return ready }
        guard checkReady else { return nil }
        if !candidates.isEmpty {
            throw EddyError(.unavailable, "the index \".indexOn\": \"\(window.query.indexOnName ?? "")\" for path \"\(window.location)\" is still building; listen again when it is ready")
        }
        throw EddyError(
            .invalidArgument,
            "Index not defined, add \".indexOn\": \"\(window.query.indexOnName ?? "")\", for path \"\(window.location)\", to the rules")
    }

    /// Up to `count` entries of the window's result beyond `edge` (see `ListenerWindow.Fetch`),
    /// read through the batch inside a group and from the database between groups; in export
    /// form for an exporting window.
    private func fetch(
        _ window: ListenerWindow, after: Bool, edge: ListenerWindow.Entry?, count: Int, inGroup: Bool
    ) throws(EddyError) -> [ListenerWindow.Entry] {
        var entries = try self.fetchData(window, after: after, edge: edge, count: count, inGroup: inGroup)
        if window.exportsPriorities {
            for i in entries.indices {
                entries[i].value = try self.withPriorities(entries[i].value, at: window.location.appending(entries[i].key), inGroup: inGroup)
            }
        }
        return entries
    }

    private func fetchData(
        _ window: ListenerWindow, after: Bool, edge: ListenerWindow.Entry?, count: Int, inGroup: Bool
    ) throws(EddyError) -> [ListenerWindow.Entry] {
        var query = window.query
        query.limit = after ? .first(count) : .last(count)
        if let edge {
            let bound =
                window.query.order == .key
                ? Query.Bound(value: .string(edge.key), inclusive: false)
                : Query.Bound(value: edge.sort, key: edge.key, inclusive: false)
            if after { query.start = bound } else { query.end = bound }
        }
        let location = PathKeyEncoding.encode(window.location)
        let tree = inGroup ? self.group.groupIterator : self.database.makeIterator(self.database.columnFamily(ColumnFamilies.tree))
        let result: Value
        if let definition = try self.indexDefinition(for: window, checkReady: false) {
            let index =
                inGroup
                ? self.group.makeGroupIndexIterator() : self.database.makeIterator(self.database.columnFamily(ColumnFamilies.index))
            result = try IndexQueryReader(definition: definition, index: index, makeTree: { tree }, location: location, query: query).read()
        } else if window.query.order == .key {
            result = try KeyQueryReader(iterator: tree, location: location, query: query).read()
        } else if window.query.order == .priority {
            let priorities = try self.childPriorities(of: window.location, inGroup: inGroup)
            guard priorities.isEmpty else {
                // Children with priorities: select from the whole location (priorities have no index).
                let scratch = ListenerWindow(
                    id: window.id, spec: ListenerSpec(location: window.location, query: query, keyPaths: nil, output: .events({ _ in })))
                scratch.replaceAll(with: try TreeReader.readSubtree(tree, prefix: location).value, priorities: priorities)
                return scratch.entries
            }
            // Every priority is null: the key query that selects the same (the edge bound, a
            // null with the edge's key, becomes a key bound), or nothing.
            guard let keyQuery = query.keyQueryForNullPriorities else { return [] }
            result = try KeyQueryReader(iterator: tree, location: location, query: keyQuery).read()
        } else {
            // The index went away (dropped while listening): select from the whole location.
            let all = try TreeReader.readSubtree(tree, prefix: location).value
            let scratch = ListenerWindow(
                id: window.id, spec: ListenerSpec(location: window.location, query: query, keyPaths: nil, output: .events({ _ in })))
            scratch.replaceAll(with: all)
            return scratch.entries
        }
        guard case .object(let children) = result else { return [] }
        var entries = children.map { ListenerWindow.Entry(key: $0.key, sort: window.sortValue(of: $0.value), value: $0.value) }
        entries.sort(by: window.less)
        return entries
    }
}
