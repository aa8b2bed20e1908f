// One transaction, run as Firebase's clients run it: the update block runs at once on the data
// the client holds for the location (null when no live view holds it, as in Firebase, whose
// block must handle null), its value is shown with local events, and it is sent at once as a
// write that applies only while the location's ETag is that of what the block saw (`ifMatch`,
// Firebase's hash). When it comes back stale, the block runs again on the server's data (read
// with its ETag), at most `attemptsMax` runs in all, as Firebase retries. Made offline, the write
// waits for the connection like any other; a transaction queued behind another on its location
// runs its block at once too, on what the client shows, and is sent in its turn. A write
// on its way when the connection goes fails the transaction with `disconnected`, as in Firebase
// (`ClientConnection`): sent again, it could apply twice.

import EddyModel
import EddyProtocol
import Foundation
import Synchronization

final class TransactionRun: Sendable {
    /// Firebase's kFTransactionMaxRetries, which counts every write sent (the first too): the
    /// block runs at most 25 times against the server's data.
    static let attemptsMax = 25

    typealias Outcome = Result<(Bool, DataSnapshot), DatabaseError>

    private let ref: DatabaseReference
    private let update: UncheckedSendable<(MutableData) -> TransactionResult>
    private let completion: @Sendable (Outcome) -> Void
    private let attempts = Mutex(0)
    /// Whether the written value raises local events before the server answers.
    private let localEvents: Bool

    /// The block's run made while it waited behind an earlier transaction: what it saw, what
    /// it returned, and the local write that shows it; sent by `runFirst`.
    private struct Provisional {
        let input: Value
        let output: Value
        let write: PendingWrite
    }
    /// The provisional run, and whether its block is running now (on the caller's thread, in
    /// `begin`). Its turn coming meanwhile does not run the block a second time, beside it:
    /// `runFirst` leaves the sending to that run, which sends when its block returns.
    private struct ProvisionalSlot {
        var run: Provisional?
        var running = false
        var turnCame = false
    }
    private let provisional = Mutex(ProvisionalSlot())
    /// The local write of a run whose write came back stale: shown until the next run's write
    /// takes its place, or taken back when the transaction ends without one.
    private let staleWrite = Mutex<PendingWrite?>(nil)
    /// Its place in the database's `TransactionQueue`, once queued.
    private let queueID = Mutex<UInt64?>(nil)
    /// Whether it left its queue's wait (`start` ran once).
    private let started = Mutex(false)
    /// Waiting for the connection to come back (nothing of it is on its way).
    private let waitingForConnection = Mutex(false)
    /// Set by a write of this client around its location (`abortBySet`): ends it at its next
    /// step instead of writing or retrying.
    private let abortReason = Mutex<DatabaseError?>(nil)
    /// The outcome was given (exactly once).
    private let completed = Mutex(false)

    init(
        ref: DatabaseReference, localEvents: Bool = true, update: @escaping (MutableData) -> TransactionResult,
        completion: @escaping @Sendable (Outcome) -> Void
    ) {
        self.ref = ref
        self.localEvents = localEvents
        self.update = UncheckedSendable(update)
        self.completion = completion
    }

    /// Queues the transaction behind this client's earlier ones on overlapping locations
    /// (`TransactionQueue`) and runs it when its turn comes.
    func begin() {
        let database = self.ref.database
        let (id, startsNow) = database.transactions.enqueue(at: self.ref.path, start: { self.start() }, abort: { self.abort($0) })
        self.queueID.withLock { $0 = id }
        // As in Firebase, where the block runs before the caller's next write is sent: a
        // `setValue` right after `runTransactionBlock` finds the transaction's write on its way.
        if startsNow {
            self.start(runFirstHere: true)
            return
        }
        // As Firebase's clients do (`startTransactionOnPath` runs every block on the latest
        // state), a transaction waiting behind an earlier one on its location runs its block at
        // once too, online or not, on the data the client shows (the earlier ones' results
        // included), and shows its result; it is sent in its turn, over what its block saw, so
        // it runs again only if the earlier one did not commit what it showed.
        // On the caller's thread, as the first one's, so a call made after this one (another
        // write, `purgeOutstandingWrites`) finds its result shown (FIRDatabaseTests
        // testPurgeWritesCancelsTransactions: value 1, then 2, then both taken back).
        guard self.localEvents, !self.started.withLock({ $0 }), let cached = database.cachedValue(of: self.ref) else { return }
        _ = self.showRun(on: cached)
    }

    /// A setValue, updateChildValues or removeValue of this client at, above or below the
    /// location (Firebase's `set` error), or `purgeOutstandingWrites` (`write_canceled`):
    /// waiting in its queue or for the connection, the transaction ends now; running, at its
    /// next step (a write already on its way keeps its outcome unless it comes back stale).
    private func abort(_ error: DatabaseError) {
        let first = self.abortReason.withLock { reason -> Bool in
            guard reason == nil else { return false }
            reason = error
            return true
        }
        guard first else { return }
        if !self.started.withLock({ $0 }) || self.waitingForConnection.withLock({ $0 }) { _ = self.endIfAborted() }
    }

    /// The abort reason, when a write aborted it: the transaction ends with it (its offline
    /// run's local write taken back).
    private func endIfAborted() -> Bool {
        guard let reason = self.abortReason.withLock({ $0 }) else { return false }
        if let provisional = self.provisional.withLock({ slot in
            defer { slot.run = nil }
            return slot.run
        }) {
            self.ref.database.endLocalWrite(provisional.write, logID: nil)
        }
        self.complete(.failure(reason))
        return true
    }

    /// Ends the transaction: its outcome, then the next one on its location may start.
    private func complete(_ outcome: Outcome) {
        let first = self.completed.withLock { done -> Bool in
            defer { done = true }
            return !done
        }
        guard first else { return }
        if let stale = self.staleWrite.withLock({ stale in
            defer { stale = nil }
            return stale
        }) {
            self.ref.database.endLocalWrite(stale, logID: nil)
        }
        self.completion(outcome)
        if let id = self.queueID.withLock({ $0 }) { self.ref.database.transactions.finished(id) }
    }

    /// Its turn came (or a stale write needs another run). The first run happens on the
    /// caller's thread when `runFirstHere` (`begin`), else on the callback queue.
    private func start(runFirstHere: Bool = false) {
        self.started.withLock { $0 = true }
        self.waitingForConnection.withLock { $0 = false }
        guard !self.completed.withLock({ $0 }), !self.endIfAborted() else { return }
        let attempt = self.attempts.withLock { attempts -> Int in
            attempts += 1
            return attempts
        }
        guard attempt <= Self.attemptsMax else {
            self.complete(.failure(DatabaseError(.maxRetries, "the transaction at \(self.ref.path) lost to other writes \(Self.attemptsMax) times")))
            return
        }
        guard attempt > 1 else {
            if runFirstHere { self.runFirst() } else { self.ref.database.deliver { self.runFirst() } }
            return
        }
        // In export form: the block sees the priorities, and writes them back (the ETag covers them).
        let request: Value = .object(["path": .string(self.ref.path.description), "etag": .bool(true), "priorities": .bool(true)])
        self.ref.database.connection.request(.get, request) { result in
            switch result {
            case .failure(let error) where error.code == .disconnected:
                self.waitForConnection(error)
            case .failure(let error):
                self.complete(.failure(error))
            case .success(let answer):
                guard case .string(let etag) = answer.payload["etag"] else {
                    self.complete(.failure(DatabaseError(.unknownError, "the server did not send the ETag a transaction needs")))
                    return
                }
                let current = answer.payload["value"].normalized()
                self.ref.database.deliver { self.decide(current: current, etag: etag) }
            }
        }
    }

    /// The first run (on the caller's thread from `begin`, else on the callback queue): on what
    /// the client holds (null when nothing holds the location), or the run made while it waited
    /// offline; its write goes at once, with the ETag of the data the block saw.
    private func runFirst() {
        guard !self.completed.withLock({ $0 }), !self.endIfAborted() else { return }
        enum Next {
            case send(Provisional)
            case run
            case leftToTheProvisionalRun
        }
        let next = self.provisional.withLock { slot -> Next in
            if slot.running {
                slot.turnCame = true
                return .leftToTheProvisionalRun
            }
            defer { slot.run = nil }
            return slot.run.map { .send($0) } ?? .run
        }
        if case .leftToTheProvisionalRun = next { return }
        if case .send(let provisional) = next {
            self.write(provisional.output, over: provisional.input, etag: ETag.of(provisional.input), replacing: provisional.write)
            return
        }
        let held = (self.ref.database.cachedValue(of: self.ref) ?? .null).normalized()
        guard let output = self.runBlock(on: held) else { return }
        self.write(output, over: held, etag: ETag.of(held), replacing: nil)
    }

    /// No connection: starts again once there is one (this attempt does not count).
    private func waitForConnection(_ error: DatabaseError) {
        self.attempts.withLock { $0 -= 1 }
        self.waitingForConnection.withLock { $0 = true }
        if self.endIfAborted() { return }  // aborted while its read was failing
        let database = self.ref.database
        // After a short pause: a connection that reports itself up and fails again is not
        // retried in a tight loop.
        let waiting = database.info.whenConnected { [self] in
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(50)) { self.start() }
        }
        guard waiting else {
            self.complete(.failure(error))
            return
        }
        // Not offline: a request makes the connection come back even when nothing else waits.
        database.connection.request(.status, .object([:])) { _ in }
    }

    /// Runs the block on the client's data and shows its value as a local write until the
    /// server's run; false when it did not run or it aborted or failed (the transaction
    /// completed). Its turn may come meanwhile (the earlier transaction completed on another
    /// thread): the block never runs twice at once, so `runFirst` then leaves it to this run,
    /// which sends its result itself when the block returns. The result is shown and kept only
    /// while the transaction has not completed or been aborted, decided under `provisional`'s
    /// lock, which `runFirst` and `endIfAborted` take too (never while the block runs, which
    /// may itself write).
    private func showRun(on cached: Value) -> Bool {
        let runs = self.provisional.withLock { slot -> Bool in
            guard !self.started.withLock({ $0 }), !self.completed.withLock({ $0 }) else { return false }
            slot.running = true
            return true
        }
        guard runs else { return false }
        let output = self.runBlock(on: cached)
        enum After {
            case shown
            case sendNow
            case nothing
        }
        let after = self.provisional.withLock { slot -> After in
            slot.running = false
            let turnCame = slot.turnCame
            slot.turnCame = false
            guard let output, !self.completed.withLock({ $0 }), self.abortReason.withLock({ $0 }) == nil else {
                // `runFirst` ends it (or finds it completed) when its turn came already.
                return turnCame ? .sendNow : .nothing
            }
            let write = self.ref.database.beginLocalWrite(at: self.ref.path, puts: [PendingWrite.Put(path: self.ref.path, value: output)])
            slot.run = Provisional(input: cached, output: output, write: write)
            return turnCame ? .sendNow : .shown
        }
        switch after {
        case .shown: return true
        case .sendNow:
            self.runFirst()
            return output != nil
        case .nothing: return false
        }
    }

    /// Runs the update block on `value`: the value it returns, or nil when it aborted or failed
    /// (the transaction is then completed: not committed, or with the error).
    private func runBlock(on value: Value) -> Value? {
        let data = MutableData(value: value)
        let result = self.update.value(data)
        if let error = data.root.error {
            self.complete(.failure(error))
            return nil
        }
        guard let written = result.data else {
            self.complete(.success((false, DataSnapshot(ref: self.ref, value: value))))
            return nil
        }
        // The value of the node handed back, as Firebase's `[result.update nodeValue]`: the
        // whole data, or a child's (`success(withValue: data.childData(byAppendingPath:))`).
        return written.root.value.child(at: written.path)
    }

    /// On the callback queue, after a stale write: runs the block on the server's data, then
    /// writes or stops.
    private func decide(current: Value, etag: String) {
        if self.endIfAborted() { return }
        guard let output = self.runBlock(on: current) else { return }
        let stale = self.staleWrite.withLock { stale in
            defer { stale = nil }
            return stale
        }
        self.write(output, over: current, etag: etag, replacing: stale)
    }

    /// Sends the block's value as a write that applies only while the location's ETag is
    /// `etag` (that of `input`, what the block saw); a stale answer runs it again.
    private func write(_ newValue: Value, over input: Value, etag: String, replacing: PendingWrite?) {
        // The write takes the place of the offline run's among the waiting writes (so the views
        // do not flash back, and the offline runs of later transactions stay on top); taken back
        // here only when none was made (a harmless no-op otherwise).
        defer { if let replacing { self.ref.database.endLocalWrite(replacing, logID: nil) } }
        let foundation = FoundationValue.foundation(newValue)
        self.ref.submit(
            "set", newValue.isNull ? nil : foundation, ifMatch: etag, localEvents: self.localEvents, replacing: replacing,
            keptWhenStale: { shown in
                self.staleWrite.withLock { $0 = shown }
                self.start()  // ends it instead when a write of this client aborted it
            }
        ) { outcome in
            switch outcome {
            case .success:
                // The committed data: server values as the client estimates them (the writes'
                // answers do not carry the server's), not their placeholders.
                let now = (Date().timeIntervalSince1970 * 1000).rounded()
                let committed = PendingWrites.resolve(newValue, existing: input, now: now)
                self.complete(.success((true, DataSnapshot(ref: self.ref, value: committed))))
            case .failure(let error):
                self.complete(.failure(error))
            }
        }
    }
}
