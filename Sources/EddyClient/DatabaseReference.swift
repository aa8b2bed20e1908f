// A location in the tree (Firebase's `DatabaseReference`): navigation, writes with
// completion blocks and `async` variants, push ids made on the client, and transactions
// (read with the ETag, write with `ifMatch`, retry on conflict like Firebase, at most 25
// times).
//
// A write's completion block gets nil once the write is durable on the server, or the
// error (`DatabaseError`) that refused it; nothing of a refused write is applied. Writes of one
// `Database` reach the server, and commit, in the order they were made.

import EddyModel
import EddyProtocol
import Foundation

public final class DatabaseReference: DatabaseQuery, @unchecked Sendable {
    init(database: Database, path: Path) {
        super.init(database: database, path: path, spec: QuerySpec())
    }

    /// The root of `Database.database()` (Firebase's inherited `init()` compiles too).
    public convenience init() {
        self.init(database: Database.database(), path: Path(validatedKeys: []))
    }

    /// Splits "a/b/c" (slashes at either end and doubled ones ignored). Keys are not checked
    /// here: an invalid one is refused by the server with a message naming it.
    static func parsePath(_ text: String, method: String) -> Path {
        Path(validatedKeys: text.split(separator: "/", omittingEmptySubsequences: true).map(String.init))
    }

    // MARK: Navigation

    @discardableResult
    public func child(_ pathString: String) -> DatabaseReference {
        self.child(Self.parsePath(pathString, method: "child:"))
    }

    func child(_ path: Path) -> DatabaseReference {
        DatabaseReference(database: self.database, path: self.path.appending(path))
    }

    /// A child with a new push id: Firebase's format, made here, strictly increasing for this
    /// client, so children made this way sort in the order they were made.
    @discardableResult
    public func childByAutoId() -> DatabaseReference {
        self.child(Path(validatedKeys: [self.database.nextPushID()]))
    }

    public var parent: DatabaseReference? {
        self.path.isRoot ? nil : DatabaseReference(database: self.database, path: Path(validatedKeys: Array(self.path.keys.dropLast())))
    }

    public var root: DatabaseReference { DatabaseReference(database: self.database, path: Path(validatedKeys: [])) }

    /// The last key of the path; nil at the root.
    public var key: String? { self.path.keys.last }

    /// The database URL without its query (`?ns=`), followed by the path with each key
    /// percent-encoded, as Firebase's `url` (`http://127.0.0.1:9000/users/a%20b`).
    public var url: String {
        self.database.locationBase + self.path.keys.map { "/" + Self.percentEncoded($0) }.joined()
    }

    /// A key as it appears in a URL path, as Firebase's `FStringUtilities urlEncoded:` writes it:
    /// everything but ASCII letters, digits, `-`, `_` and `~` is percent-encoded (UTF-8).
    static func percentEncoded(_ key: String) -> String {
        key.addingPercentEncoding(withAllowedCharacters: Self.keyCharactersInURL) ?? key
    }

    private static let keyCharactersInURL = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_~")

    public override var description: String { self.url }

    public override var ref: DatabaseReference { self }

    // MARK: Writes

    public func setValue(_ value: Any?) {
        self.write("set", value, completion: nil)
    }

    public func setValue(_ value: Any?, withCompletionBlock block: @escaping ((any Error)?, DatabaseReference) -> Void) {
        self.write("set", value, completion: block)
    }

    /// Writes the value with its priority (`DataSnapshot.priority`, priority order).
    public func setValue(_ value: Any?, andPriority priority: Any?) {
        self.write("set", value, priority: .some(priority), completion: nil)
    }

    public func setValue(
        _ value: Any?, andPriority priority: Any?, withCompletionBlock block: @escaping ((any Error)?, DatabaseReference) -> Void
    ) {
        self.write("set", value, priority: .some(priority), completion: block)
    }

    @discardableResult
    public func setValue(_ value: Any?) async throws -> DatabaseReference {
        try await self.write("set", value)
    }

    /// The priority is `(any Sendable)?` here, not Firebase's `Any?`: in an async function,
    /// Swift prefers async overloads, and with `Any?` Firebase's documented
    /// `ref.setValue(v) { (error: Error?, ref: DatabaseReference) in ... }` chose this method,
    /// taking the completion block for a priority, and failed to compile. A closure is not
    /// Sendable, so the completion-block form is chosen; priorities (strings, numbers) are.
    @discardableResult
    public func setValue(_ value: Any?, andPriority priority: (any Sendable)?) async throws -> DatabaseReference {
        try await self.write("set", value, priority: .some(priority))
    }

    public func removeValue() {
        self.write("remove", nil, completion: nil)
    }

    public func removeValue(completionBlock block: @escaping ((any Error)?, DatabaseReference) -> Void) {
        self.write("remove", nil, completion: block)
    }

    @discardableResult
    public func removeValue() async throws -> DatabaseReference {
        try await self.write("remove", nil)
    }

    /// Writes several children at once, atomically: keys are paths relative to this location
    /// ("posts/p1/title"); a nil or NSNull value removes. A path and its ancestor may not both
    /// appear.
    public func updateChildValues(_ values: [AnyHashable: Any]) {
        self.write("update", Self.stringKeyed(values), completion: nil)
    }

    public func updateChildValues(_ values: [AnyHashable: Any], withCompletionBlock block: @escaping ((any Error)?, DatabaseReference) -> Void) {
        self.write("update", Self.stringKeyed(values), completion: block)
    }

    @discardableResult
    public func updateChildValues(_ values: [AnyHashable: Any]) async throws -> DatabaseReference {
        try await self.write("update", Self.stringKeyed(values))
    }

    /// Sets this location's priority (a number, a string, nil to remove it, or a server value);
    /// its local events come at once. A location with no data keeps none: the write fails, as
    /// Firebase's does (over the REST transport it succeeds, storing nothing).
    public func setPriority(_ priority: Any?) {
        self.writePriority(priority, completion: nil)
    }

    public func setPriority(_ priority: Any?, withCompletionBlock block: @escaping ((any Error)?, DatabaseReference) -> Void) {
        self.writePriority(priority, completion: block)
    }

    @discardableResult
    public func setPriority(_ priority: Any?) async throws -> DatabaseReference {
        try await self.awaitCompletion { self.writePriority(priority, completion: $0) }
    }

    /// A set of `<path>/.priority`; its local events move the location in priority order (a
    /// location without data keeps none, as the server does).
    private func writePriority(_ priority: Any?, completion: (((any Error)?, DatabaseReference) -> Void)?) {
        let box = UncheckedSendable(completion)
        let value: Value
        do throws(DatabaseError) {
            guard !self.path.isRoot else { throw DatabaseError(.invalidValue, "setPriority: the root has no priority") }
            value = try FoundationValue.priority(priority, path: self.path.description)
        } catch {
            return self.complete(box.value, .failure(error))
        }
        let target = DatabaseReference(database: self.database, path: self.path.appending(Value.priorityKey))
        let path = self.path
        target.submit("set", value, sentValue: value) { result in
            // Firebase fails a priority set on a location without data; eddyd then stores
            // nothing and answers a null priority (over REST the answer does not say).
            if case .success(.object(let answer)) = result, !value.isNull, answer["priority"] == .null {
                self.complete(
                    box.value,
                    .failure(DatabaseError(.invalidValue, "setPriority: there is no data at \(path); only a location with data has a priority (nothing was stored)")))
                return
            }
            self.complete(box.value, result.map { _ in () })
        }
    }

    private static func stringKeyed(_ values: [AnyHashable: Any]) -> Any {
        var out: [String: Any] = [:]
        for (key, value) in values { out["\(key.base)"] = value }
        return out
    }

    /// `priority`: `.some` for `setValue(_:andPriority:)` (its priority replaces any in the
    /// value), nil for a plain write.
    private func write(_ op: String, _ value: Any?, priority: Any?? = nil, completion: (((any Error)?, DatabaseReference) -> Void)?) {
        let box = UncheckedSendable(completion)
        if Self.isEmptyUpdate(op, value) { return self.complete(box.value, .success(())) }
        self.submit(op, value, priority: priority) { result in self.complete(box.value, result.map { _ in () }) }
    }

    /// What a write sends: its value in the export form (priorities kept), with `priority`
    /// given its own; nil for a remove.
    private func sentValue(_ op: String, _ value: Any?, priority: Any??) throws(DatabaseError) -> Value? {
        guard op != "remove" else { return nil }
        let sent = try FoundationValue.sent(value, path: self.path.description)
        guard let priority else { return sent }
        return sent.withOwnPriority(try FoundationValue.priority(priority, path: self.path.description))
    }

    /// Firebase does nothing for an update with no values and reports success
    /// (FRepo "update called with empty data"); the server would refuse it.
    private static func isEmptyUpdate(_ op: String, _ value: Any?) -> Bool {
        op == "update" && (value as? [String: Any])?.isEmpty == true
    }

    private func write(_ op: String, _ value: Any?, priority: Any?? = nil) async throws -> DatabaseReference {
        if Self.isEmptyUpdate(op, value) { return self }
        let box = UncheckedSendable((value, priority))
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Void, DatabaseError>, Never>) in
            self.submit(op, box.value.0, priority: box.value.1) { continuation.resume(returning: $0.map { _ in () }) }
        }
        try result.get()
        return self
    }

    /// Sends one write; `completion` gets the `written` answer's payload or the error. With
    /// `localEvents`, the write raises its events at once (`PendingWrites`), and a refusal
    /// takes them back before `completion` runs.
    /// `priority`: `.some` for `setValue(_:andPriority:)` (see `sentValue`). `sentValue`: what
    /// goes on the wire, already converted (a `setPriority`); converted here otherwise, inside
    /// `makingWrite`, so an answer that arrives while a large value converts waits for its
    /// local events.
    func submit(
        _ op: String, _ value: Any?, priority: Any?? = nil, sentValue: Value? = nil, ifMatch: String? = nil, localEvents: Bool = true,
        replacing: PendingWrite? = nil, keptWhenStale: (@Sendable (PendingWrite?) -> Void)? = nil,
        completion: @escaping @Sendable (Result<Value, DatabaseError>) -> Void
    ) {
        let box = UncheckedSendable((value, priority))
        self.database.makingWrite {
            self.submitCounted(
                op, box.value.0, priority: box.value.1, sentValue: sentValue, ifMatch: ifMatch, localEvents: localEvents, replacing: replacing,
                keptWhenStale: keptWhenStale, completion: completion)
        }
    }

    private func submitCounted(
        _ op: String, _ value: Any?, priority: Any??, sentValue: Value?, ifMatch: String?, localEvents: Bool, replacing: PendingWrite?,
        keptWhenStale: (@Sendable (PendingWrite?) -> Void)?, completion: @escaping @Sendable (Result<Value, DatabaseError>) -> Void
    ) {
        if InfoView.isInfo(self.path) {
            // Firebase's FValidation writablePath, which raises at the call.
            let method = ["set": "setValue:", "update": "updateChildValues:", "remove": "removeValue"][op] ?? op
            completion(.failure(DatabaseError(.invalidValue, "(\(method)) failed to path \(self.path): Can't modify data under .info")))
            return
        }
        var payload: [String: Value] = ["op": .string(op), "path": .string(self.path.description)]
        var converted = Value.null
        var sent = Value.null
        if op != "remove" {
            do throws(DatabaseError) {
                if let sentValue {
                    sent = sentValue
                } else {
                    sent = try self.sentValue(op, value, priority: priority) ?? .null
                }
            } catch {
                completion(.failure(error))
                return
            }
            converted = WriteValidator.unwrappingFirebaseForms(sent)
            payload["value"] = sent
        }
        if let ifMatch { payload["ifMatch"] = .string(ifMatch) }
        let database = self.database
        // Shown in export form, as the views hold the server's data (priorities kept), and
        // normalized as eddyd stores it (a `{".value": v}` without a priority is `v`).
        var puts = self.puts(op, sent)
        // Checked as eddyd will check it, before any local event: a write it would refuse (a bad
        // key, a string too long, a path too deep) fails at once and is never shown, where
        // Firebase's SDK raises at the call.
        do throws(EddyError) {
            if op == "remove" {
                try WriteValidator.validateLocation(self.path)
            } else {
                for put in self.puts(op, converted) { _ = try WriteValidator.validate(put.value, at: put.path) }
                if sent != converted {
                    for (i, put) in puts.enumerated() {
                        puts[i] = PendingWrite.Put(path: put.path, value: try WriteValidator.validate(put.value, at: put.path))
                    }
                }
            }
        } catch {
            completion(.failure(DatabaseError(error)))
            return
        }
        // Firebase: a set or an update aborts this client's transactions at, above or below
        // what it writes (a transaction's own write carries its ETag).
        if ifMatch == nil {
            database.transactions.abort(
                overlapping: puts.map(\.path),
                with: DatabaseError(
                    .overriddenBySet, "set: a write of this client at \(self.path), at, above or below the transaction's location, replaced its data before it was written"))
        }
        let local = localEvents ? database.beginLocalWrite(at: self.path, puts: puts, replacing: replacing) : nil
        database.connection.request(.write, .object(payload)) { result in
            // A transaction's write that came back stale stays shown until its next run's
            // write takes its place (Firebase's views go from one run's value to the next).
            if let keptWhenStale, case .failure(let error) = result, error.code == .dataStale {
                keptWhenStale(local)
                return
            }
            // Over HTTP an accepted write's events come on the views' streams, possibly after
            // this answer: its completion waits for them (`completeInOrder`).
            var streamedLogID: String?
            if case .success(let answer) = result, answer.payload["streamed"] == .bool(true), case .string(let id) = answer.payload["logID"] {
                streamedLogID = id
            }
            if let local {
                var logID: String?
                if case .success(let answer) = result {
                    logID = "" // accepted; a server that names no log id is passed by any batch
                    if case .string(let id) = answer.payload["logID"] { logID = id }
                }
                database.endLocalWrite(local, logID: logID, streamed: streamedLogID != nil)
            }
            let path = self.path
            database.completeInOrder(after: streamedLogID, touching: path) { completion(result.map(\.payload)) }
        }
    }

    /// `value` of a write `op` in export form as eddyd stores it: `{".value": v}` without a
    /// priority is `v`, null priorities are dropped (each child of an update so).
    static func exportNormalized(_ op: String, _ value: Value, at path: Path) -> Value {
        func normalized(_ value: Value) -> Value {
            (try? WriteValidator.validate(value, at: path)) ?? WriteValidator.unwrappingFirebaseForms(value)
        }
        guard op == "update", case .object(let children) = value else { return normalized(value) }
        return .object(children.mapValues(normalized))
    }

    /// The write as puts at absolute paths: an update's keys are paths below this location.
    /// An update's puts come in the order eddyd applies them: values, removals, then
    /// priorities (`LogEntry.Change.inMergeOrder`), so its local events show what it stores.
    private func puts(_ op: String, _ value: Value) -> [PendingWrite.Put] {
        guard op == "update" else { return [PendingWrite.Put(path: self.path, value: value)] }
        guard case .object(let children) = value else { return [] }
        let puts = children.keys.sorted().map { key in
            PendingWrite.Put(path: self.path.appending(Self.parsePath(key, method: "updateChildValues")), value: children[key]!)
        }
        let priorities = puts.filter { $0.path.lastKey == Value.priorityKey }
        let data = puts.filter { $0.path.lastKey != Value.priorityKey }
        return data.filter { !$0.value.isNull } + data.filter(\.value.isNull) + priorities
    }

    // MARK: Presence: writes the server makes when this client's connection ends
    //
    // As Firebase's: registered on the server (the rules are checked when they run, with this
    // client's identity when it registered them), run when the connection ends however it ends
    // (goOffline, the process killed, the network gone), as one change in Firebase's model
    // (`SparseWriteTree`; a cancel forgets its path in the writes above it too). They are
    // registered for one connection: register them again once `.info/connected` is true again,
    // as Firebase's presence code does. Over the native protocol they go on the connection; over
    // HTTP on eddyd's onDisconnect connection, which the transport opens. A value that is not a
    // database value fails at once. The completion runs when the server has registered (not
    // run) the write; made offline, they wait for the connection.

    public func onDisconnectSetValue(_ value: Any?) {
        self.registerOnDisconnect("set", value, completion: nil)
    }
    public func onDisconnectSetValue(_ value: Any?, withCompletionBlock block: @escaping ((any Error)?, DatabaseReference) -> Void) {
        self.registerOnDisconnect("set", value, completion: block)
    }
    /// The value is written with its priority when the connection ends.
    public func onDisconnectSetValue(_ value: Any?, andPriority priority: Any) {
        self.registerOnDisconnect("set", value, priority: .some(priority), completion: nil)
    }
    public func onDisconnectSetValue(
        _ value: Any?, andPriority priority: Any?, withCompletionBlock block: @escaping ((any Error)?, DatabaseReference) -> Void
    ) {
        self.registerOnDisconnect("set", value, priority: .some(priority), completion: block)
    }
    public func onDisconnectRemoveValue() {
        self.registerOnDisconnect("remove", nil, completion: nil)
    }
    public func onDisconnectRemoveValue(completionBlock block: @escaping ((any Error)?, DatabaseReference) -> Void) {
        self.registerOnDisconnect("remove", nil, completion: block)
    }
    public func onDisconnectUpdateChildValues(_ values: [AnyHashable: Any]) {
        self.registerOnDisconnect("update", Self.stringKeyed(values), completion: nil)
    }
    public func onDisconnectUpdateChildValues(
        _ values: [AnyHashable: Any], withCompletionBlock block: @escaping ((any Error)?, DatabaseReference) -> Void
    ) {
        self.registerOnDisconnect("update", Self.stringKeyed(values), completion: block)
    }
    /// Drops this client's onDisconnect writes at or below this location.
    public func cancelDisconnectOperations() {
        self.cancelOnDisconnect(completion: nil)
    }
    public func cancelDisconnectOperations(completionBlock block: (((any Error)?, DatabaseReference) -> Void)?) {
        self.cancelOnDisconnect(completion: block)
    }

    // The async forms Swift makes of Firebase's completion-block methods.
    @discardableResult
    public func onDisconnectSetValue(_ value: Any?) async throws -> DatabaseReference {
        try await self.awaitCompletion { self.onDisconnectSetValue(value, withCompletionBlock: $0) }
    }
    /// `(any Sendable)?` for the reason `setValue(_:andPriority:) async` gives.
    @discardableResult
    public func onDisconnectSetValue(_ value: Any?, andPriority priority: (any Sendable)?) async throws -> DatabaseReference {
        try await self.awaitCompletion { self.onDisconnectSetValue(value, andPriority: priority, withCompletionBlock: $0) }
    }
    @discardableResult
    public func onDisconnectRemoveValue() async throws -> DatabaseReference {
        try await self.awaitCompletion { self.onDisconnectRemoveValue(completionBlock: $0) }
    }
    @discardableResult
    public func onDisconnectUpdateChildValues(_ values: [AnyHashable: Any]) async throws -> DatabaseReference {
        let box = UncheckedSendable(values)
        return try await self.awaitCompletion { self.onDisconnectUpdateChildValues(box.value, withCompletionBlock: $0) }
    }
    @discardableResult
    public func cancelDisconnectOperations() async throws -> DatabaseReference {
        try await self.awaitCompletion { self.cancelDisconnectOperations(completionBlock: $0) }
    }

    private func registerOnDisconnect(
        _ op: String, _ value: Any?, priority: Any?? = nil, completion: (((any Error)?, DatabaseReference) -> Void)?
    ) {
        var payload: [String: Value] = ["op": .string(op), "path": .string(self.path.description)]
        do {
            // Always present, null included: eddyd refuses a set without a value.
            payload["value"] = try self.sentValue(op, value, priority: priority) ?? .null
        } catch {
            self.complete(completion, .failure(error))
            return
        }
        let box = UncheckedSendable(completion)
        // This client's record of it holds what its views will: the export form as eddyd
        // stores it (an update's children each so).
        let value = Self.exportNormalized(op, payload["value"] ?? .null, at: self.path)
        self.database.connection.request(.onDisconnect, .object(payload)) { result in
            if case .success = result { self.database.disconnectWrites.registered(op, at: self.path, value: value) }
            self.complete(box.value, result.map { _ in () })
        }
    }

    private func cancelOnDisconnect(completion: (((any Error)?, DatabaseReference) -> Void)?) {
        let box = UncheckedSendable(completion)
        self.database.connection.request(.cancelDisconnect, .object(["path": .string(self.path.description)])) { result in
            if case .success = result { self.database.disconnectWrites.cancelled(at: self.path) }
            self.complete(box.value, result.map { _ in () })
        }
    }

    private func complete(_ completion: (((any Error)?, DatabaseReference) -> Void)?, _ result: Result<Void, DatabaseError>) {
        guard let completion else { return }
        let box = UncheckedSendable(completion)
        let ref = self
        self.database.deliver {
            switch result {
            case .success: box.value(nil, ref)
            case .failure(let error): box.value(error, ref)
            }
        }
    }

    private func awaitCompletion(
        _ start: (@escaping ((any Error)?, DatabaseReference) -> Void) -> Void
    ) async throws -> DatabaseReference {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<DatabaseReference, any Error>) in
            start { error, ref in
                if let error { continuation.resume(throwing: error) } else { continuation.resume(returning: ref) }
            }
        }
    }

    // MARK: Connection

    /// Every database instance of the process goes offline / online.
    public static func goOffline() { Database.allInstances().forEach { $0.goOffline() } }

    public static func goOnline() { Database.allInstances().forEach { $0.goOnline() } }

    // MARK: Transactions

    public func runTransactionBlock(_ block: @escaping (MutableData) -> TransactionResult) {
        self.runTransactionBlock(block, andCompletionBlock: nil, withLocalEvents: true)
    }

    public func runTransactionBlock(
        _ block: @escaping (MutableData) -> TransactionResult,
        andCompletionBlock completionBlock: @escaping ((any Error)?, Bool, DataSnapshot?) -> Void
    ) {
        self.runTransactionBlock(block, andCompletionBlock: completionBlock, withLocalEvents: true)
    }

    /// Runs `block` at once on the data the client holds (null where no observer holds the
    /// location, as in Firebase) and writes what it returns if the server's data is what the
    /// block saw (compare-and-set on the ETag); otherwise runs it again on the server's data, at
    /// most 25 runs in all (then `maxRetries`). The block may run several times, the first on
    /// the calling thread (unless an earlier transaction of this instance at, above or below
    /// the location still runs), later ones on the callback queue. With `localEvents`, the value it
    /// returns raises local events at once (replaced by the next run's, and taken back if the
    /// transaction ends without committing).
    public func runTransactionBlock(
        _ block: @escaping (MutableData) -> TransactionResult,
        andCompletionBlock completionBlock: (((any Error)?, Bool, DataSnapshot?) -> Void)?, withLocalEvents localEvents: Bool
    ) {
        let box = UncheckedSendable((block, completionBlock))
        let database = self.database
        TransactionRun(ref: self, localEvents: localEvents, update: { data in box.value.0(data) }) { outcome in
            database.deliver {
                switch outcome {
                case .success(let (committed, snapshot)): box.value.1?(nil, committed, snapshot)
                case .failure(let error): box.value.1?(error, false, nil)
                }
            }
        }.begin()
    }

    @discardableResult
    public func runTransactionBlock(_ block: @escaping (MutableData) -> TransactionResult) async throws -> (Bool, DataSnapshot) {
        let box = UncheckedSendable(block)
        let outcome = await withCheckedContinuation {
            (continuation: CheckedContinuation<Result<(Bool, DataSnapshot), DatabaseError>, Never>) in
            TransactionRun(ref: self, update: { data in box.value(data) }) { continuation.resume(returning: $0) }.begin()
        }
        return try outcome.get()
    }
}
