// A location with an order, bounds and a limit (Firebase's `DatabaseQuery`; a
// `DatabaseReference` is the query with none): observers, one-time reads, and the query
// builders. Builders check each call as Firebase does (`QuerySpec`); an invalid query reports
// Firebase's message as an `invalidQuery` error when it is used.

import EddyModel
import EddyProtocol
import Foundation

public class DatabaseQuery: NSObject, @unchecked Sendable {
    // @unchecked: every stored property is immutable and Sendable.
    /// The database this query belongs to.
    public let database: Database
    let path: Path
    let spec: QuerySpec

    init(database: Database, path: Path, spec: QuerySpec) {
        self.database = database
        self.path = path
        self.spec = spec
        super.init()
    }

    /// The root of `Database.database()`, as Firebase's inherited `init()` compiles (Firebase's
    /// own object is unusable; this one works).
    public override convenience init() {
        self.init(database: Database.database(), path: Path(validatedKeys: []), spec: QuerySpec())
    }

    /// The location's URL, as `FIRDatabaseReference.h` re-declares `description` as a method
    /// (declared here: Swift refuses a method and a property of one name in one class).
    @discardableResult
    public func description() -> String { self.ref.url }

    /// The location of this query.
    public var ref: DatabaseReference { DatabaseReference(database: self.database, path: self.path) }

    // MARK: Observers

    /// Calls `block` with every event of `eventType`, from now until the handle is removed.
    @discardableResult
    public func observe(_ eventType: DataEventType, with block: @escaping (DataSnapshot) -> Void) -> DatabaseHandle {
        self.listen(eventType, once: false, { snapshot, _ in block(snapshot) }, cancel: nil)
    }

    /// As `observe(_:with:)`, with the key of the previous sibling in the query's order (nil
    /// for the first), for child events.
    @discardableResult
    public func observe(_ eventType: DataEventType, andPreviousSiblingKeyWith block: @escaping (DataSnapshot, String?) -> Void)
        -> DatabaseHandle
    {
        self.listen(eventType, once: false, block, cancel: nil)
    }

    /// As `observe(_:with:)`; `cancelBlock` is called if the server refuses or ends it.
    @discardableResult
    public func observe(
        _ eventType: DataEventType, with block: @escaping (DataSnapshot) -> Void, withCancel cancelBlock: ((any Error) -> Void)?
    ) -> DatabaseHandle {
        self.listen(eventType, once: false, { snapshot, _ in block(snapshot) }, cancel: cancelBlock)
    }

    @discardableResult
    public func observe(
        _ eventType: DataEventType, andPreviousSiblingKeyWith block: @escaping (DataSnapshot, String?) -> Void,
        withCancel cancelBlock: ((any Error) -> Void)?
    ) -> DatabaseHandle {
        self.listen(eventType, once: false, block, cancel: cancelBlock)
    }

    /// Calls `block` with the first event of `eventType`, then stops.
    public func observeSingleEvent(of eventType: DataEventType, with block: @escaping (DataSnapshot) -> Void) {
        self.listen(eventType, once: true, { snapshot, _ in block(snapshot) }, cancel: nil)
    }

    public func observeSingleEvent(of eventType: DataEventType, andPreviousSiblingKeyWith block: @escaping (DataSnapshot, String?) -> Void) {
        self.listen(eventType, once: true, block, cancel: nil)
    }

    public func observeSingleEvent(
        of eventType: DataEventType, with block: @escaping (DataSnapshot) -> Void, withCancel cancelBlock: ((any Error) -> Void)?
    ) {
        self.listen(eventType, once: true, { snapshot, _ in block(snapshot) }, cancel: cancelBlock)
    }

    public func observeSingleEvent(
        of eventType: DataEventType, andPreviousSiblingKeyWith block: @escaping (DataSnapshot, String?) -> Void,
        withCancel cancelBlock: ((any Error) -> Void)?
    ) {
        self.listen(eventType, once: true, block, cancel: cancelBlock)
    }

    /// The first event of `eventType`. (An observer that is cancelled instead never returns
    /// here; use `getData()` for a read that can fail.)
    @discardableResult
    public func observeSingleEvent(of eventType: DataEventType) async -> DataSnapshot {
        await self.observeSingleEventAndPreviousSiblingKey(of: eventType).0
    }

    @discardableResult
    public func observeSingleEventAndPreviousSiblingKey(of eventType: DataEventType) async -> (DataSnapshot, String?) {
        await withCheckedContinuation { (continuation: CheckedContinuation<UncheckedSendable<(DataSnapshot, String?)>, Never>) in
            self.listen(eventType, once: true, { snapshot, previous in continuation.resume(returning: UncheckedSendable((snapshot, previous))) }, cancel: nil)
        }.value
    }

    @discardableResult
    private func listen(
        _ eventType: DataEventType, once: Bool, _ block: @escaping QueryView.Block, cancel: QueryView.CancelBlock?
    ) -> DatabaseHandle {
        let handle = self.database.nextHandle()
        self.database.observe(
            self,
            QueryView.Registration(
                handle: handle, eventType: eventType, once: once, block: UncheckedSendable(block), cancel: UncheckedSendable(cancel)))
        return handle
    }

    /// Removes the observer: no event raised after this reaches it. As in Firebase, events raised
    /// before (queued on the callback queue, e.g. the local events of writes made just before)
    /// are still delivered; a single-event observer hears one event at most.
    /// Also as in Firebase, called on a reference (or a query without constraints) it removes an
    /// observer of this location made with any query; called on a query, only one made with that
    /// same query. A handle observing another location (a child's too) stays.
    public func removeObserver(withHandle handle: DatabaseHandle) {
        self.database.removeObserver(handle, through: self)
    }

    /// As Firebase's: on a reference (or a query without constraints), removes every observer
    /// at this location, with any query; on a query, only the observers of that same query.
    /// Never those of its children.
    public func removeAllObservers() {
        self.database.removeObservers(at: self.path, of: self.spec.isDefault ? nil : self)
    }

    /// As in Firebase, the query's data is downloaded and kept up to date while no observer is
    /// attached: a live view, which reads made offline (`getData`, `observeSingleEvent`) are
    /// answered from.
    /// Not reference-counted: one `false` ends it. `removeAllObservers` leaves it alone. Held in
    /// memory only (Eddy's client has no disk cache), and ignored under `.info`.
    public func keepSynced(_ keepSynced: Bool) {
        self.database.keepSynced(self, keepSynced)
    }

    // MARK: One-time reads

    /// The current data (of the query's window), read from the server.
    public func getData(completion block: @escaping (_ error: (any Error)?, _ snapshot: DataSnapshot?) -> Void) {
        let box = UncheckedSendable(block)
        let database = self.database
        self.read { result in
            database.deliver {
                switch result {
                case .success(let snapshot): box.value(nil, snapshot)
                case .failure(let error): box.value(error, nil)
                }
            }
        }
    }

    @discardableResult
    public func getData() async throws -> DataSnapshot {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<DataSnapshot, DatabaseError>, Never>) in
            self.read { continuation.resume(returning: $0) }
        }
        return try result.get()
    }

    private func read(_ completion: @escaping @Sendable (Result<DataSnapshot, DatabaseError>) -> Void) {
        if let error = self.spec.error {
            completion(.failure(DatabaseError(.invalidQuery, error)))
            return
        }
        if InfoView.isInfo(self.path) {
            // The client's own locations: answered here, over every transport.
            completion(.success(DataSnapshot(ref: self.ref, value: self.database.info.current(at: self.path), order: self.spec.effectiveOrder)))
            return
        }
        // In export form, as the views hold data: the snapshot answers `priority`.
        var payload: [String: Value] = ["path": .string(self.path.description), "priorities": .bool(true)]
        let kind: Frame.Kind
        // Only an order: the whole location, as Firebase loads it (a snapshot lists its
        // children in the order).
        if let parameters = self.spec.parameters, !self.spec.loadsAllData {
            payload["query"] = parameters
            kind = .query
        } else {
            kind = .get
        }
        let ref = self.ref
        let spec = self.spec
        let connection = self.database.connection
        let deadline = ContinuousClock.now + Self.readConnectWait
        let request = Value.object(payload)
        @Sendable func attempt() {
            connection.request(kind, request) { result in
                answer(result)
            }
        }
        @Sendable func answer(_ result: Result<(kind: Frame.Kind, payload: Value), DatabaseError>) {
            // Not connected: what a live view holds, as Firebase answers from its cache; with
            // nothing held, the read waits for a connection (goOnline, a reconnect) for
            // `readConnectWait`, as Firebase's iOS SDK does, then fails.
            if case .failure(let error) = result, error.code == .disconnected {
                if let cached = self.database.cachedValue(of: self) {
                    completion(.success(DataSnapshot(ref: ref, value: cached, order: spec.effectiveOrder)))
                    return
                }
                if ContinuousClock.now < deadline {
                    DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(100)) { attempt() }
                    return
                }
            }
            if case .failure(let error) = result, LocalQuery.isMissingIndex(error) {
                // No index on the server: read the location and evaluate the query here.
                connection.request(.get, .object(["path": .string(ref.path.description), "priorities": .bool(true)])) { whole in
                    completion(
                        whole.map { answer in
                            DataSnapshot(ref: ref, value: LocalQuery.object(LocalQuery.window(answer.payload["value"].normalized(), spec)), order: spec.effectiveOrder)
                        })
                }
                return
            }
            if case .success(let answer) = result { self.database.retainRead(of: self, answer.payload["value"].normalized()) }
            completion(result.map { answer in DataSnapshot(ref: ref, value: answer.payload["value"].normalized(), order: spec.effectiveOrder) })
        }
        attempt()
    }

    /// How long a read made without a connection waits for one before it fails with
    /// `disconnected` (Firebase iOS: `kPersistentConnectionGetConnectTimeout`, 3 s).
    static let readConnectWait: Duration = .seconds(3)

    // MARK: Building queries

    private func with(_ spec: QuerySpec) -> DatabaseQuery {
        DatabaseQuery(database: self.database, path: self.path, spec: spec)
    }

    @discardableResult
    public func queryLimited(toFirst limit: UInt) -> DatabaseQuery { self.with(self.spec.limited(limit, first: true)) }

    @discardableResult
    public func queryLimited(toLast limit: UInt) -> DatabaseQuery { self.with(self.spec.limited(limit, first: false)) }

    /// Orders children by the value at `key`, a child path ("metrics/views" allowed).
    @discardableResult
    public func queryOrdered(byChild key: String) -> DatabaseQuery {
        var spec = self.spec
        if ["$key", "$value", "$priority", ".key", ".value", ".priority"].contains(key) {
            if spec.error == nil {
                spec.error = "(queryOrderedByChild:) \(key) is invalid.  Use queryOrderedBy\(key.dropFirst().capitalized): instead."
            }
            return self.with(spec)
        }
        // Firebase's FValidation validPathString: no '.', '#', '$', '[' or ']' anywhere in the path.
        let invalid = key.contains { ".#$[]".contains($0) }
        let path = invalid ? Path(validatedKeys: []) : DatabaseReference.parsePath(key, method: "queryOrderedByChild:")
        if path.isRoot, spec.error == nil {
            spec.error = "(queryOrderedByChild:) Must be a non-empty string and not contain '.' '#' '$' '[' or ']'"
            return self.with(spec)
        }
        return self.with(spec.ordered(.child(path), method: "queryOrderedByChild:"))
    }

    @discardableResult
    public func queryOrderedByKey() -> DatabaseQuery { self.with(self.spec.ordered(.key, method: "queryOrderedByKey")) }

    @discardableResult
    public func queryOrderedByValue() -> DatabaseQuery { self.with(self.spec.ordered(.value, method: "queryOrderedByValue")) }

    /// Orders by the children's priorities: none first, then numbers, then strings, ties by key.
    @discardableResult
    public func queryOrderedByPriority() -> DatabaseQuery { self.with(self.spec.ordered(.priority, method: "queryOrderedByPriority")) }

    @discardableResult
    public func queryStarting(atValue startValue: Any?) -> DatabaseQuery {
        self.with(self.spec.starting(startValue, key: nil, inclusive: true, method: "queryStartingAtValue:"))
    }

    @discardableResult
    public func queryStarting(atValue startValue: Any?, childKey: String?) -> DatabaseQuery {
        self.with(self.spec.starting(startValue, key: childKey, inclusive: true, method: "queryStartingAtValue:childKey:"))
    }

    @discardableResult
    public func queryStarting(afterValue startAfterValue: Any?) -> DatabaseQuery {
        self.with(self.spec.starting(startAfterValue, key: nil, inclusive: false, method: "queryStartingAfterValue:"))
    }

    @discardableResult
    public func queryStarting(afterValue startAfterValue: Any?, childKey: String?) -> DatabaseQuery {
        self.with(self.spec.starting(startAfterValue, key: childKey, inclusive: false, method: "queryStartingAfterValue:childKey:"))
    }

    @discardableResult
    public func queryEnding(atValue endValue: Any?) -> DatabaseQuery {
        self.with(self.spec.ending(endValue, key: nil, inclusive: true, method: "queryEndingAtValue:"))
    }

    @discardableResult
    public func queryEnding(atValue endValue: Any?, childKey: String?) -> DatabaseQuery {
        self.with(self.spec.ending(endValue, key: childKey, inclusive: true, method: "queryEndingAtValue:childKey:"))
    }

    @discardableResult
    public func queryEnding(beforeValue endValue: Any?) -> DatabaseQuery {
        self.with(self.spec.ending(endValue, key: nil, inclusive: false, method: "queryEndingBeforeValue:"))
    }

    @discardableResult
    public func queryEnding(beforeValue endValue: Any?, childKey: String?) -> DatabaseQuery {
        self.with(self.spec.ending(endValue, key: childKey, inclusive: false, method: "queryEndingBeforeValue:childKey:"))
    }

    @discardableResult
    public func queryEqual(toValue value: Any?) -> DatabaseQuery {
        self.with(self.spec.equal(value, key: nil, method: "queryEqualToValue:"))
    }

    @discardableResult
    public func queryEqual(toValue value: Any?, childKey: String?) -> DatabaseQuery {
        self.with(self.spec.equal(value, key: childKey, method: "queryEqualToValue:childKey:"))
    }
}
