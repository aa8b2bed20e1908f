// One run of a transaction: read the data with its ETag, call the update block on the
// callback queue, write the result only while the ETag is unchanged (`ifMatch`), and start
// over on a conflict, at most `retriesMax` times, as Firebase retries. Made offline (or while
// the connection is down), it waits for the connection and then runs, as Firebase queues
// transactions; its block runs only then (Firebase's runs first on the cached value).

import EddyModel
import EddyProtocol
import Foundation
import Synchronization

final class TransactionRun: Sendable {
    static let retriesMax = 25

    typealias Outcome = Result<(Bool, DataSnapshot), DatabaseError>

    private let ref: DatabaseReference
    private let update: UncheckedSendable<(MutableData) -> TransactionResult>
    private let completion: @Sendable (Outcome) -> Void
    private let attempts = Mutex(0)
    /// Whether the written value raises local events before the server answers.
    private let localEvents: Bool

    init(
        ref: DatabaseReference, localEvents: Bool = true, update: @escaping (MutableData) -> TransactionResult,
        completion: @escaping @Sendable (Outcome) -> Void
    ) {
        self.ref = ref
        self.localEvents = localEvents
        self.update = UncheckedSendable(update)
        self.completion = completion
    }

    func start() {
        let attempt = self.attempts.withLock { attempts -> Int in
            attempts += 1
            return attempts
        }
        guard attempt <= Self.retriesMax + 1 else {
            self.completion(.failure(DatabaseError(.maxRetries, "the transaction at \(self.ref.path) lost to other writes \(Self.retriesMax) times")))
            return
        }
        self.ref.database.connection.request(.get, .object(["path": .string(self.ref.path.description), "etag": .bool(true)])) { result in
            switch result {
            case .failure(let error) where error.code == .disconnected:
                self.waitForConnection(error)
            case .failure(let error):
                self.completion(.failure(error))
            case .success(let answer):
                guard case .string(let etag) = answer.payload["etag"] else {
                    self.completion(.failure(DatabaseError(.unknownError, "the server did not send the ETag a transaction needs")))
                    return
                }
                let current = answer.payload["value"].normalized()
                self.ref.database.deliver { self.decide(current: current, etag: etag) }
            }
        }
    }

    /// No connection: starts again once there is one (this attempt does not count).
    private func waitForConnection(_ error: DatabaseError) {
        self.attempts.withLock { $0 -= 1 }
        let database = self.ref.database
        // After a short pause: a connection that reports itself up and fails again is not
        // retried in a tight loop.
        let waiting = database.info.whenConnected { [self] in
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(50)) { self.start() }
        }
        guard waiting else {
            self.completion(.failure(error))
            return
        }
        // Not offline: a request makes the connection come back even when nothing else waits.
        database.connection.request(.status, .object([:])) { _ in }
    }

    /// On the callback queue: runs the block, then writes or stops.
    private func decide(current: Value, etag: String) {
        let data = MutableData(value: current)
        let result = self.update.value(data)
        if let error = data.root.error {
            self.completion(.failure(error))
            return
        }
        guard let written = result.data else {
            self.completion(.success((false, DataSnapshot(ref: self.ref, value: current))))
            return
        }
        let newValue = written.root.value
        let foundation = FoundationValue.foundation(newValue)
        self.ref.submit("set", newValue.isNull ? nil : foundation, ifMatch: etag, localEvents: self.localEvents) { outcome in
            switch outcome {
            case .success:
                self.completion(.success((true, DataSnapshot(ref: self.ref, value: newValue))))
            case .failure(let error) where error.code == .dataStale:
                self.start()
            case .failure(let error):
                self.completion(.failure(error))
            }
        }
    }
}
