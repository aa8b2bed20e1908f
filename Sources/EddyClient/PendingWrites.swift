// The writes this client made that the server has not answered yet, in the order they were
// made: what every view shows on top of the server's data, so a write raises its events at
// once (Firebase's latency compensation, "local events first").
//
// A write joins the list when it is made. A refused write leaves it when the server answers:
// the views then raise the events that take it back. An accepted write is marked with its log
// id and stays shown only by views still catching up (subscribed again after a lost
// connection, their first batch not in yet, and not past that log id); it leaves the list once
// no such view needs it. A live view needs no more: eddyd hands a write's events to every
// listener before it acknowledges the write, so the view's server copy already holds it.
//
// Writes are shown in export form, priorities included, as the views hold the server's data
// (`Value.setExport`: a `<path>/.priority` put sets the node's priority).
//
// Server values (`ServerValue.timestamp()`, `increment`) are resolved when the write is made,
// the way Firebase's clients estimate them: the client's clock, and the number the views show
// plus the delta. A resolved write is idempotent, so it shows the same on top of server data
// that already holds it. The server's own values replace the estimates when its events arrive.

import EddyModel
import Foundation
import Synchronization

struct PendingWrite: Sendable {
    let id: UInt64
    /// Where the write was made (every put is at or below it).
    let location: Path
    /// The write as puts at absolute paths, in order: one for a set or remove, one per child
    /// path for an update.
    let puts: [Put]
    /// The client's clock when the write was made, in milliseconds since the Unix epoch.
    let timeMilliseconds: Double
    /// Change-set observers that do not hear this write (`write(withoutNotifying:)`).
    let silenced: Set<ObjectIdentifier>
    /// Whether a server value was estimated (the server's own value then differs from what was
    /// shown, so the views look again when the write is answered).
    var estimated = false
    /// The log id the server committed it as; nil while unanswered.
    var acknowledged: String? = nil
    /// Acknowledged on another connection than the events (HTTP): shown until the view's
    /// stream passes `acknowledged`, or until it has been quiet for `streamedGraceSeconds`
    /// without and the view's server copy holds the write's values already (the write changed
    /// nothing it shows); at most `streamedHoldMaxSeconds` after the answer.
    var streamedSince: Date? = nil

    static let streamedGraceSeconds = 2.0
    /// How long a view keeps showing an answered write whose values its server copy lacks
    /// while its stream stays quiet: a starved process reads its stream late, and the write's
    /// events are on their way (eddyd hands them to every stream before it answers).
    static let streamedHoldMaxSeconds = 30.0

    struct Put: Sendable {
        let path: Path
        let value: Value
    }
}

final class PendingWrites: Sendable {
    private struct State {
        /// Writes made and not yet answered (or still needed by a view), by id.
        var byID: [UInt64: PendingWrite] = [:]
        /// Their ids in the order made; ids of removed writes are skipped and compacted away.
        var order: [UInt64] = []
        var acknowledged = 0
    }

    /// Bounded by the connection's queue of unanswered writes (`ClientConnection.writesWaitingMax`)
    /// plus the acknowledged writes a catching-up view still needs.
    private let state = Mutex(State())

    func add(_ write: PendingWrite) {
        self.state.withLock { state in
            state.byID[write.id] = write
            state.order.append(write.id)
        }
    }

    /// Puts `write` where the waiting write `id` was (in its place in the order), and drops
    /// that one: a transaction's write takes the place of its offline run's, so the runs of
    /// later transactions stay on top of it. Added last when `id` is gone.
    func replace(_ id: UInt64, with write: PendingWrite) {
        self.state.withLock { state in
            state.byID[write.id] = write
            guard state.byID.removeValue(forKey: id) != nil, let index = state.order.firstIndex(of: id) else {
                state.order.append(write.id)
                return
            }
            state.order[index] = write.id
        }
    }

    /// Marks a write accepted; returns how many acknowledged writes the list holds.
    @discardableResult
    func acknowledge(_ id: UInt64, logID: String, streamed: Bool) -> Int {
        self.state.withLock { state in
            guard state.byID[id] != nil else { return state.acknowledged }
            state.byID[id]!.acknowledged = logID
            if streamed { state.byID[id]!.streamedSince = Date() }
            state.acknowledged += 1
            return state.acknowledged
        }
    }

    /// Drops the acknowledged writes `needed` says no view needs any more; returns them.
    @discardableResult
    func prune(_ needed: (PendingWrite) -> Bool) -> [PendingWrite] {
        let acknowledged = self.state.withLock { $0.byID.values.filter { $0.acknowledged != nil } }
        let unneeded = acknowledged.filter { !needed($0) }
        guard !unneeded.isEmpty else { return [] }
        return self.state.withLock { state in
            var removed: [PendingWrite] = []
            for write in unneeded {
                guard let gone = state.byID.removeValue(forKey: write.id) else { continue }
                state.acknowledged -= 1
                removed.append(gone)
            }
            Self.compact(&state)
            return removed
        }
    }

    /// The waiting write `id` as it is now (acknowledged or not), nil when gone.
    func write(_ id: UInt64) -> PendingWrite? {
        self.state.withLock { $0.byID[id] }
    }

    func remove(_ id: UInt64) {
        self.state.withLock { state in
            guard let write = state.byID.removeValue(forKey: id) else { return }
            if write.acknowledged != nil { state.acknowledged -= 1 }
            Self.compact(&state)
        }
    }

    /// Drops removed ids from `order` once they are half of it (amortized O(1) per removal).
    private static func compact(_ state: inout State) {
        if state.byID.isEmpty {
            state.order.removeAll(keepingCapacity: true)
        } else if state.order.count > 64 && state.order.count > 2 * state.byID.count {
            state.order.removeAll { state.byID[$0] == nil }
        }
    }

    /// The value at `path` that the waiting writes alone determine: from the newest one that
    /// sets `path` or an ancestor whole, with the later ones on top; nil when none does (the
    /// server's data is needed). Firebase resolves server values against this when no view
    /// holds the server's data yet (`setValue(5)` then `increment(1)` right away shows 6).
    /// `unansweredOnly`: only the writes the server has not answered yet, as Firebase's write
    /// tree holds them; an answered write kept for views still catching up (`PendingWrite.acknowledged`)
    /// is the server's data, which an offline read must not take from here (a later answered
    /// write at the location may already have gone, leaving it stale).
    func completeValue(at path: Path, unansweredOnly: Bool = false) -> Value? {
        var writes = self.touching(path)
        if unansweredOnly { writes.removeAll { $0.acknowledged != nil } }
        guard
            let last = writes.lastIndex(where: { write in write.puts.contains { $0.path.isAncestorOrSelf(of: path) } })
        else { return nil }
        return PendingWrites.overlay(.null, at: path, writes: Array(writes[last...]))
    }

    /// The waiting writes that touch `location` (at, above or below it), oldest first.
    func touching(_ location: Path) -> [PendingWrite] {
        self.state.withLock { state in
            guard !state.byID.isEmpty else { return [] }
            return state.order.compactMap { id in
                guard let write = state.byID[id] else { return nil }
                return write.location.overlaps(location) ? write : nil
            }
        }
    }

    var isEmpty: Bool { self.state.withLock { $0.byID.isEmpty } }

    /// `value` (the data at `location`) with `writes` applied in order.
    static func overlay(_ value: Value, at location: Path, writes: [PendingWrite]) -> Value {
        var result = value
        for write in writes {
            for put in write.puts {
                if location.isAncestorOrSelf(of: put.path) {
                    let relative = Path(validatedKeys: Array(put.path.keys.dropFirst(location.depth)))
                    let resolved = self.resolve(put.value, existing: result.child(at: relative), now: write.timeMilliseconds)
                    result.setExport(resolved, at: relative)
                } else if put.path.isAncestorOrSelf(of: location) {
                    let relative = Path(validatedKeys: Array(location.keys.dropFirst(put.path.depth)))
                    let existing = Value.null.setting(result, at: relative)
                    result = self.resolve(put.value, existing: existing, now: write.timeMilliseconds).child(at: relative)
                }
            }
        }
        return result
    }

    /// Whether `value` holds a server-value placeholder (`{".sv": ...}`) anywhere.
    static func holdsServerValue(_ value: Value) -> Bool {
        guard case .object(let children) = value else { return false }
        if children[WriteValidator.serverValueKey] != nil { return true }
        return children.values.contains { self.holdsServerValue($0) }
    }

    /// `value` with its server-value placeholders replaced by the client's estimate.
    static func resolve(_ value: Value, existing: Value, now: Double) -> Value {
        guard case .object(let children) = value else { return value }
        if let marker = children[".sv"], children.count == 1 {
            switch marker {
            case .string("timestamp"):
                return .number(now)
            case .object(let operation):
                if let delta = operation["increment"], delta.isNumber {
                    return existing.withoutPriorities.adding(delta) ?? delta
                }
                return value
            default:
                return value
            }
        }
        var resolved: [String: Value] = [:]
        for (key, child) in children { resolved[key] = self.resolve(child, existing: existing[key], now: now) }
        return Value.object(resolved).normalized()
    }
}
