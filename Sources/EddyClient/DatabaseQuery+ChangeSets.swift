// Realm-style notifications on a location or query: `observe(keyPaths:on:_:)` with a
// `NotificationToken`, the same on an actor, and as an async sequence (`changes(keyPaths:)`).
// They share the view (and the server subscription) of every other observer of the query.

import Dispatch
import Foundation

extension DatabaseQuery {
    /// Calls `block` with `.initial(results)` once the children are known, then with
    /// `.update(results, deletions:insertions:modifications:)` after each change, or
    /// `.error` if the server refuses the query. `keyPaths` ("title", "metrics/views", or Realm's
    /// dotted "metrics.views") limit which child fields count as a modification; insertions and
    /// deletions always count; nil or empty: every change counts.
    /// `queue` is where `block` runs (the database's callback queue, main by default, when
    /// nil). Keep the token: releasing it, or `invalidate()`, stops the notifications.
    public func observe(
        keyPaths: [String]? = nil, on queue: DispatchQueue? = nil, _ block: @escaping (DatabaseCollectionChange) -> Void
    ) -> NotificationToken {
        let box = UncheckedSendable(block)
        return self.observeChanges(keyPaths: keyPaths, queue: queue) { box.value($0) }
    }

    /// As `observe(keyPaths:on:_:)`, with `block` isolated to `actor`: change sets arrive in
    /// order. If the actor falls more than `eventsBufferedMax` change sets behind, the ones that
    /// do not fit are coalesced into one `.update` (as Realm coalesces notifications).
    public func observe<A: Actor>(
        keyPaths: [String]? = nil, on actor: A, _ block: @escaping @Sendable (isolated A, DatabaseCollectionChange) -> Void
    ) async -> NotificationToken {
        let (stream, continuation) = AsyncStream.makeStream(
            of: DatabaseCollectionChange.self, bufferingPolicy: .bufferingOldest(Self.eventsBufferedMax))
        // Checked on the actor before each delivery: change sets still buffered, or waiting
        // for the busy actor, when the token is invalidated (even from inside `block`) are
        // dropped, as Realm promises.
        let live = Synchronized(true)
        // The token the caller holds is the observer's own, so `write(withoutNotifying:)` with
        // it silences this observer.
        let token = NotificationToken()
        token.onInvalidate { live.value = false }
        let coalescer = ChangeSetCoalescer(keyPaths: self.joinChangeSetKeyPaths(keyPaths, token: token)) { change in
            if case .dropped = continuation.yield(change) { return false }
            return true  // taken, or the stream is over (nothing more to offer)
        }
        self.observeChanges(keyPaths: keyPaths, queue: nil, token: token) { change in coalescer.offer(change) }
        let task = Task {
            for await change in stream {
                guard live.value else { break }
                await Self.deliver(change, on: actor, while: live, to: block)
            }
        }
        token.onInvalidate {
            continuation.finish()
            task.cancel()
        }
        return token
    }

    /// Runs `block` on `actor` unless the token was invalidated meanwhile.
    private static func deliver<A: Actor>(
        _ change: DatabaseCollectionChange, on actor: isolated A, while live: Synchronized<Bool>,
        to block: @Sendable (isolated A, DatabaseCollectionChange) -> Void
    ) {
        guard live.value else { return }
        block(actor, change)
    }

    /// The change sets as an async sequence; ending the loop removes the observer. A consumer
    /// more than `eventsBufferedMax` change sets behind gets the ones that did not fit coalesced
    /// into one `.update` (as Realm coalesces notifications); a refused query ends it with the error.
    public func changes(keyPaths: [String]? = nil) -> AsyncThrowingStream<DatabaseCollectionChange, any Error> {
        AsyncThrowingStream(bufferingPolicy: .bufferingOldest(Self.eventsBufferedMax)) { continuation in
            let token = NotificationToken()
            let coalescer = ChangeSetCoalescer(keyPaths: self.joinChangeSetKeyPaths(keyPaths, token: token)) { change in
                if case .dropped = continuation.yield(change) { return false }
                return true  // taken, or the stream is over (nothing more to offer)
            }
            self.observeChanges(keyPaths: keyPaths, queue: nil, token: token) { change in
                if case .error(let error) = change {
                    continuation.finish(throwing: error)
                    return
                }
                coalescer.offer(change)
            }
            continuation.onTermination = { _ in token.invalidate() }
        }
    }

    /// `hearsEveryChange`: the observer's `keyPaths` join the query's union (so they widen
    /// what the other tokens hear only by themselves), but its own change sets count every
    /// field (`LiveResults`, whose results must always be the newest).
    @discardableResult
    func observeChanges(
        keyPaths: [String]?, queue: DispatchQueue?, token: NotificationToken = NotificationToken(), hearsEveryChange: Bool = false,
        _ block: @escaping @Sendable (DatabaseCollectionChange) -> Void
    ) -> NotificationToken {
        let database = self.database
        let group = self.joinChangeSetKeyPaths(keyPaths, token: token)
        let member = ObjectIdentifier(token)
        // An empty group has no filter.
        let filter = hearsEveryChange ? ChangeSetKeyPathGroup() : group
        let observer = ChangeSetObserver(keyPaths: filter, queue: queue, requeue: { database.deliver($0) }, block: block)
        let handle = self.database.nextHandle()
        let registration = QueryView.Registration(
            handle: handle, eventType: .value, once: false,
            block: UncheckedSendable({ snapshot, _ in observer.received(snapshot, silently: false) }),
            cancel: UncheckedSendable({ error in observer.failed(error) }),
            token: ObjectIdentifier(token),
            silent: UncheckedSendable({ snapshot, _ in observer.received(snapshot, silently: true) }))
        token.onInvalidate {
            observer.stop()
            database.leaveChangeSetKeyPaths(group, of: self, member: member)
            database.removeObserver(handle)
        }
        database.observe(self, registration)
        return token
    }

    /// The key-path group of this query's view with `token`'s observer in it (joining again
    /// answers the same group: a group with a member is never dropped).
    private func joinChangeSetKeyPaths(_ keyPaths: [String]?, token: NotificationToken) -> ChangeSetKeyPathGroup {
        self.database.joinChangeSetKeyPaths(of: self, member: ObjectIdentifier(token), keyPaths: ChangeSetObserver.parseKeyPaths(keyPaths))
    }
}
