// The entry point of Firebase's Apple API for the Realtime Database, pointed at eddyd:
// `Database.database()` / `database(url:)` give the one instance per URL, and `reference()`
// the root of its tree.
//
// URLs: `eddy+unix:///path/to/eddyd.sock` (the native protocol on the daemon's Unix socket),
// `eddy://host:port` (the native protocol over TCP, eddyd's `--native-listen`), and
// `http://host:port` (REST and SSE on eddyd's HTTP listener: the fallback transport, slower;
// `?ns=NAME` names a namespace). Without a URL: `EDDY_DATABASE_URL`, else the socket of a
// daemon started with its defaults in the current directory (`./data/eddyd.sock`, what
// `make run` starts). `useEmulator(withHost:port:)`, as in Firebase, points the instance at
// an HTTP listener (eddyd's `--http`, 127.0.0.1:9000 by default, as the Firebase emulator's)
// before first use; the namespace comes from the URL (`?ns=`, or the NAME of
// `https://NAME.firebaseio.com`).
//
// Callbacks run on `callbackQueue` (the main queue by default, as in Firebase).

import Dispatch
import EddyModel
import Foundation
import Synchronization

public final class Database: NSObject, Sendable {
    /// One instance per app and URL, as Firebase keeps them: two apps with the same URL (two
    /// signed-in users, say) have their own connections, observers and `goOffline()`.
    private struct InstanceKey: Hashable {
        let app: String
        let url: String
    }
    private static let instances = Mutex<[InstanceKey: Database]>([:])

    /// The default instance: `EDDY_DATABASE_URL`, else the `databaseURL` of the default
    /// `FirebaseApp` when one is configured with it, else `./data/eddyd.sock`.
    @discardableResult
    public static func database() -> Database {
        if let url = ProcessInfo.processInfo.environment["EDDY_DATABASE_URL"], !url.isEmpty {
            return self.database(url: url)
        }
        if let app = FirebaseApp.app(), let url = app.databaseURL, !url.isEmpty {
            return self.database(app: app, url: url)
        }
        return self.database(url: self.defaultSocketURL)
    }

    private static var defaultSocketURL: String { "eddy+unix://" + FileManager.default.currentDirectoryPath + "/data/eddyd.sock" }

    /// The instance for `app`: its options' `databaseURL` (or `EDDY_DATABASE_URL`, or the
    /// default socket when it has none).
    @discardableResult
    public static func database(app: FirebaseApp) -> Database {
        guard let url = app.databaseURL, !url.isEmpty else {
            if let url = ProcessInfo.processInfo.environment["EDDY_DATABASE_URL"], !url.isEmpty {
                return self.database(app: app, url: url)
            }
            return self.database(app: app, url: self.defaultSocketURL)
        }
        return self.database(app: app, url: url)
    }

    /// The instance for `url`, belonging to `app` (its own, not shared with another app's).
    @discardableResult
    public static func database(app: FirebaseApp, url: String) -> Database {
        self.instance(app: app.name, url: url)
    }

    /// The `FirebaseApp` this instance belongs to: the one it was asked for with, or the default
    /// app for `database(url:)` and `database()` (as in Firebase); nil while that app is not
    /// configured.
    public var app: FirebaseApp? { FirebaseApp.app(name: self.appName) }

    /// The default app's instance for `url` (the same one for every call with the same URL, and
    /// the one `database(app: FirebaseApp.app()!, url:)` gives). A URL that is not one of Eddy's
    /// schemes traps, as Firebase raises for a malformed database URL. A native URL may list a
    /// cluster's nodes, separated by commas (`eddy://a:9001,b:9001`): the client connects to one
    /// and moves on to the next when it cannot connect or a write is refused as `notLeader`.
    @discardableResult
    public static func database(url: String) -> Database {
        self.instance(app: FirebaseApp.defaultName, url: url)
    }

    private static func instance(app: String, url given: String) -> Database {
        let url = Self.securedWithoutPort(given)
        return self.instances.withLock { instances in
            let key = InstanceKey(app: app, url: Self.withoutTrailingSlash(url))
            if let existing = instances[key] { return existing }
            guard let transport = Self.transport(url) else {
                preconditionFailure(
                    "Database.database(url:) needs eddy+unix:///path/to/eddyd.sock, eddy://host:port or http://host:port, not \(url)")
            }
            // As Firebase's FIRDatabaseComponent: a network URL names a database's root (a
            // socket URL's path is the socket's).
            if !url.hasPrefix("eddy+unix:"), let path = URLComponents(string: url)?.path, !path.isEmpty, path != "/" {
                preconditionFailure(
                    "Configured Database URL '\(url)' is invalid. It should point to the root of a Firebase Database but it includes a path: \(path)")
            }
            let database = Database(url: url, appName: app, transport: transport)
            instances[key] = database
            return database
        }
    }

    /// The app `name` was deleted: its instances go offline and are forgotten, as Firebase
    /// disposes of them (a new app of the same name gets new ones).
    static func appDeleted(_ name: String) {
        let gone = self.instances.withLock { instances -> [Database] in
            let keys = instances.keys.filter { $0.app == name }
            return keys.compactMap { instances.removeValue(forKey: $0) }
        }
        for database in gone { database.goOffline() }
    }

    /// As Firebase's URL parsers (FUtilities parseUrl; firebase-js-sdk parseDatabaseURL): a
    /// network URL without a port is secure whatever its scheme, so `http://host` is
    /// `https://host`; with a port (`http://127.0.0.1:9000`) the scheme is kept.
    static func securedWithoutPort(_ url: String) -> String {
        guard url.lowercased().hasPrefix("http://") else { return url }
        let rest = url.dropFirst("http://".count)
        let authority = rest[..<(rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex)]
        let afterHost = authority.lastIndex(of: "]").map { authority[$0...] } ?? authority  // [v6 address]:port
        return afterHost.contains(":") || authority.isEmpty ? url : "https://" + rest
    }

    static func transport(_ url: String) -> (any Transport)? {
        if let endpoints = self.endpoints(url) { return ClientConnection(endpoints: endpoints, namespace: self.namespace(url)) }
        guard url.hasPrefix("http://") || url.hasPrefix("https://"), let components = URLComponents(string: url),
            let scheme = components.scheme, let host = components.host, !host.isEmpty
        else { return nil }
        let port = components.port.map { ":\($0)" } ?? ""
        let hostText = host.contains(":") ? "[\(host)]" : host
        if scheme.lowercased() == "http", let native = self.nativeOnHTTPPort(url, host: host, port: components.port ?? 80, namespace: self.namespace(url)) {
            return native
        }
        return HTTPTransport(base: "\(scheme)://\(hostText)\(port)", namespace: self.namespace(url))
    }

    /// The native protocol on an `http://` URL's port, where eddyd's HTTP listener takes it too
    /// (`NativeProbe`); nil for REST and SSE. `?transport=rest` asks for REST and SSE without
    /// looking, `?transport=native` for the native protocol without looking.
    static func nativeOnHTTPPort(_ url: String, host: String, port: Int, namespace: String?) -> ClientConnection? {
        let choice = self.queryItem("transport", in: url)
        guard choice != "rest", choice == "native" || NativeProbe.speaksNative(host: host, port: port) else { return nil }
        return ClientConnection(endpoints: [.tcp(host: host, port: port)], namespace: namespace)
    }

    static func queryItem(_ name: String, in url: String) -> String? {
        guard let query = url.firstIndex(of: "?") else { return nil }
        return URLComponents(string: "x:" + url[query...])?.queryItems?.first(where: { $0.name == name })?.value
    }

    /// The namespace a URL names: `?ns=NAME`, or NAME in `https://NAME.firebaseio.com` (and
    /// `.firebasedatabase.app`), as Firebase's emulator takes it.
    static func namespace(_ url: String) -> String? {
        if let query = url.firstIndex(of: "?"), let ns = URLComponents(string: "x:" + url[query...])?.queryItems?.first(where: { $0.name == "ns" })?.value,
            !ns.isEmpty
        {
            return ns  // also for a cluster's `eddy://a:9001,b:9001?ns=NAME`, which is not a URL to URLComponents
        }
        guard let components = URLComponents(string: url) else { return nil }
        // Host names are case-blind: Firebase lowercases them (`https://MyApp.firebaseio.com` is `myapp`).
        guard let host = components.host?.lowercased(), host.hasSuffix(".firebaseio.com") || host.hasSuffix(".firebasedatabase.app") else { return nil }
        return host.split(separator: ".").first.map(String.init)
    }

    /// The native endpoints of `url`: one, or a cluster's nodes separated by commas
    /// (`eddy://a:9001,b:9001`, `eddy+unix:///x/eddyd.sock,/y/eddyd.sock`); nil when any is
    /// malformed or the URL is not a native one.
    static func endpoints(_ url: String) -> [ClientConnection.Endpoint]? {
        for scheme in ["eddy+unix://", "eddy://"] where url.hasPrefix(scheme) {
            var list: [ClientConnection.Endpoint] = []
            for part in url.dropFirst(scheme.count).split(separator: ",", omittingEmptySubsequences: false) {
                guard let endpoint = self.endpoint(scheme + part) else { return nil }
                list.append(endpoint)
            }
            return list.isEmpty ? nil : list
        }
        return nil
    }

    static func endpoint(_ url: String) -> ClientConnection.Endpoint? {
        if url.hasPrefix("eddy+unix://") {
            var path = Substring(url.dropFirst("eddy+unix://".count))
            if let query = path.firstIndex(of: "?") { path = path[..<query] }  // `?ns=`, see `namespace`
            return path.isEmpty ? nil : .unix(path: String(path))
        }
        if url.hasPrefix("eddy://") {
            var rest = Substring(url.dropFirst("eddy://".count))
            if let end = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) { rest = rest[..<end] }
            guard let colon = rest.lastIndex(of: ":"), let port = Int(rest[rest.index(after: colon)...]), (1...65535).contains(port)
            else { return nil }
            var host = String(rest[..<colon])
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            return host.isEmpty ? nil : .tcp(host: host, port: port)
        }
        return nil
    }

    private struct State {
        var connection: any Transport
        var used = false
        /// `http://host:port` after `useEmulator(withHost:port:)`: where this instance's
        /// references' URLs start, as in Firebase.
        var emulatorBase: String?
        /// The observer `keepSynced(true)` attached, by view id.
        var keptSynced: [String: DatabaseHandle] = [:]
        var callbackQueue = DispatchQueue.main
        /// Firebase's disk cache settings. No disk cache here: with persistence enabled, views
        /// whose last observer goes are kept live in memory instead (`retained`), up to the
        /// cache size.
        var persistenceEnabled = false
        var persistenceCacheSizeBytes: UInt = 10 * 1024 * 1024
        /// Views kept live after their last observer went (persistence enabled), oldest first:
        /// the observer that keeps each and the size of its data when it was kept.
        var retained: [(viewID: String, handle: DatabaseHandle, bytes: Int)] = []
        var pushIDs = PushIDGenerator()
        var nextHandle: DatabaseHandle = 1
        /// Views by id (path and query), and the view of each observer handle.
        var views: [String: QueryView] = [:]
        var viewOfHandle: [DatabaseHandle: QueryView] = [:]
        /// The key-path filters of each view's Realm-style observers, by view id.
        var changeSetKeyPaths: [ChangeSetKeyPathGroup.Key: ChangeSetKeyPathGroup] = [:]
    }

    /// Views in the order Firebase raises one change's events across locations (eddyd sends
    /// them so too): depth first, children in key order before their parent (`t/a`'s value,
    /// `t/d`'s, then `t`'s child events and value), so the order never depends on a
    /// dictionary's; views of one location by id.
    static func inEventOrder(_ views: [QueryView]) -> [QueryView] {
        views.sorted { a, b in
            a.query.path != b.query.path ? a.query.path.raisesEventsBefore(b.query.path) : a.id < b.id
        }
    }

    /// The URL this instance was made for.
    let url: String
    /// The name of the app it belongs to (`FirebaseApp.defaultName` for `database(url:)`).
    let appName: String
    private let state: Mutex<State>
    /// The views that hold the whole data of their location (plain locations, queries with
    /// only an order), kept apart from `state` for `wholeServerData`, which views call under
    /// their own lock (the state's lock is taken before a view's, never after).
    private let wholeViews = Mutex<[QueryView]>([])

    /// Writes made and not yet answered: every view shows them on top of the server's data.
    let pendingWrites = PendingWrites()
    /// The onDisconnect writes the server holds for this connection, shown here when it ends.
    let disconnectWrites = DisconnectWrites()
    /// The order of this instance's transactions on overlapping locations.
    let transactions = TransactionQueue()
    private let nextWriteID = Atomic<UInt64>(1)
    /// Writes between their call and their local events (`DatabaseReference.submit`: the
    /// value converted and checked, then shown), by number. A view's first server batch waits
    /// for those begun before it arrived (`QueryView.apply`), as Firebase runs a listen's
    /// answer after the writes made before it came: `observe` then `setValue` at once raises the
    /// written value first, not the server's null.
    private let writesBeingMade = Mutex<(next: UInt64, open: Set<UInt64>)>((1, []))

    /// Runs `body`, a write from its call to its local events, counted in `writesBeingMade`.
    func makingWrite<T>(_ body: () throws -> T) rethrows -> T {
        let id = self.writesBeingMade.withLock { writes in
            defer { writes.next += 1 }
            writes.open.insert(writes.next)
            return writes.next
        }
        defer { _ = self.writesBeingMade.withLock { $0.open.remove(id) } }
        return try body()
    }

    /// The writes being made now (for `hasMade`).
    var writesInTheMaking: Set<UInt64> { self.writesBeingMade.withLock { $0.open } }

    /// Whether every write of `writes` has shown its local events (or failed).
    func hasMade(_ writes: Set<UInt64>) -> Bool { self.writesBeingMade.withLock { $0.open.isDisjoint(with: writes) } }
    /// `.info/connected` and its siblings.
    let info = InfoView()

    private init(url: String, appName: String, transport: any Transport) {
        self.url = url
        self.appName = appName
        self.state = Mutex(State(connection: transport))
        super.init()
        self.watch(self.state.withLock { $0.connection })
    }

    private func watch(_ connection: any Transport) {
        connection.onStateChange { [weak self] connected in guard let self else { return }
            if !connected { self.showDisconnectWrites() }
            self.info.connectionChanged(connected, in: self)
        }
    }

    var connection: any Transport {
        self.state.withLock { state in
            state.used = true
            return state.connection
        }
    }

    /// Where completion blocks and observers are called. The main queue by default.
    public var callbackQueue: DispatchQueue {
        get { self.state.withLock { $0.callbackQueue } }
        set { self.state.withLock { $0.callbackQueue = newValue } }
    }

    /// The root of the tree. As in Firebase, a first reference initializes the instance: the
    /// settings (`useEmulator`, persistence) are fixed from then on.
    @discardableResult
    public func reference() -> DatabaseReference {
        self.markUsed()
        return DatabaseReference(database: self, path: Path(validatedKeys: []))
    }

    /// The location at `path` ("users/ada", leading and trailing slashes allowed). An invalid
    /// path traps with Firebase's message, as Firebase raises.
    @discardableResult
    public func reference(withPath path: String) -> DatabaseReference {
        self.markUsed()
        return DatabaseReference(database: self, path: DatabaseReference.parsePath(path, method: "reference(withPath:)"))
    }

    /// The first use connects (as Firebase's repo does when made), unless offline.
    private func markUsed() {
        let first = self.state.withLock { state -> (any Transport)? in
            defer { state.used = true }
            return state.used ? nil : state.connection
        }
        first?.open()
    }

    /// The location a full URL names: this database's URL followed by a path.
    /// After `useEmulator(withHost:port:)` a URL of the emulator (`http://host:port/...`) and one
    /// of the database URL the instance was made for are both accepted. As in Firebase's SDKs,
    /// a network URL of a host outside Firebase's own domains (`firebaseio.com`,
    /// `firebaseio-demo.com`: FRepoInfo `isCustomHost`) is not checked against the instance's:
    /// its path is taken (`http://127.0.0.1:9000/a` on an instance using the emulator at
    /// `localhost:9000`). Any other URL traps, as Firebase raises.
    /// As Firebase's URL parser, only a `?` ends the path: a `#` is part of it, so a key
    /// holding one (`/ha#sh`) is refused like any invalid key, never cut to another location.
    @discardableResult
    public func reference(fromURL databaseUrl: String) -> DatabaseReference {
        var location = Substring(databaseUrl)
        if let mark = location.firstIndex(of: "?") { location = location[..<mark] }
        while location.hasSuffix("/"), !location.hasSuffix("://") { location = location.dropLast() }
        let folded = Self.withOriginInLowerCase(String(location))
        let bases = [self.locationBase, Self.withoutQuery(self.url)].map(Self.withOriginInLowerCase)
        let rawPath: String
        if let base = bases.first(where: { folded == $0 || folded.hasPrefix($0 + "/") }) {
            rawPath = String(folded.dropFirst(base.count))
        } else if let path = Self.pathOfCustomHostURL(folded) {
            rawPath = path
        } else {
            preconditionFailure("reference(fromURL:): \(databaseUrl) is not a location of the database at \(self.locationBase)")
        }
        return self.reference(withPath: rawPath.removingPercentEncoding ?? rawPath)
    }

    /// The path of a network URL (`scheme://host[:port]/path`) whose host is not in Firebase's
    /// own domains, as Firebase's `isCustomHost` tells it: the domain (what follows the host's
    /// first dot) is neither `firebaseio.com` nor `firebaseio-demo.com`. Nil for other URLs.
    static func pathOfCustomHostURL(_ url: String) -> String? {
        guard !url.hasPrefix("eddy+unix:"), let scheme = url.range(of: "://") else { return nil }
        let rest = url[scheme.upperBound...]
        let pathStart = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = rest[..<pathStart]
        guard !authority.isEmpty else { return nil }
        let domain = authority.firstIndex(of: ".").map { authority[authority.index(after: $0)...] } ?? authority
        let domainWithoutPort = domain.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first ?? domain
        guard domainWithoutPort != "firebaseio.com", domainWithoutPort != "firebaseio-demo.com" else { return nil }
        return String(rest[pathStart...])
    }

    /// The URL without its query or fragment (`?ns=`) and trailing slash, or the emulator's
    /// `http://host:port` after `useEmulator`, its scheme and host in lower case (as Firebase
    /// shows them): where every `DatabaseReference.url` of this instance starts.
    var locationBase: String { Self.withOriginInLowerCase(self.state.withLock { $0.emulatorBase } ?? Self.withoutQuery(self.url)) }

    /// `https://host/` and `https://host` name one database (Firebase gives one instance for
    /// both): the slashes ending a network URL's address are dropped from the instance key.
    static func withoutTrailingSlash(_ url: String) -> String {
        guard !url.hasPrefix("eddy+unix:") else { return url }
        let query = url.firstIndex(where: { $0 == "?" || $0 == "#" }) ?? url.endIndex
        var base = url[..<query]
        while base.hasSuffix("/"), !base.hasSuffix("://") { base = base.dropLast() }
        return String(base) + url[query...]
    }

    /// The URL with its scheme and host in lower case, as they name the same server in any
    /// case (FIRDatabaseTests testNamespaceCaseInsensitivityWithinARepo); the path keeps its
    /// case, and so does a Unix socket's path.
    static func withOriginInLowerCase(_ url: String) -> String {
        guard !url.hasPrefix("eddy+unix:"), let scheme = url.range(of: "://") else { return url }
        let pathStart = url[scheme.upperBound...].firstIndex(of: "/") ?? url.endIndex
        return url[..<pathStart].lowercased() + url[pathStart...]
    }

    static func withoutQuery(_ url: String) -> String {
        var base = Substring(url)
        if let mark = base.firstIndex(where: { $0 == "?" || $0 == "#" }) { base = base[..<mark] }
        while base.hasSuffix("/") { base = base.dropLast() }
        return String(base)
    }

    /// Points this instance at the HTTP listener at host:port (eddyd's `--http`, as the
    /// Firebase emulator's port): over the native protocol where the server takes it there (as
    /// eddyd does), else over REST and SSE (`NativeProbe`). Like Firebase, only before the
    /// instance is first used.
    /// The namespace is the URL's; for an app's instance without one (no `databaseURL`), it is
    /// `<projectID>-default-rtdb`, as Firebase makes the URL from the project id.
    public func useEmulator(withHost host: String, port: Int) {
        let namespace = Self.namespace(self.url) ?? self.app?.options.projectID.flatMap { $0.isEmpty ? nil : "\($0)-default-rtdb" }
        let usedMessage =
            "Cannot connect to emulator after database initialization. Call useEmulator(host:port:) before creating a database reference or trying to load data."
        precondition(!self.state.withLock { $0.used }, usedMessage)
        let hostText = host.contains(":") ? "[\(host)]" : host
        // Looked for outside the lock: it waits for a round trip.
        let connection: any Transport =
            Self.nativeOnHTTPPort(self.url, host: NativeProbe.withoutBrackets(host), port: port, namespace: namespace)
            ?? HTTPTransport(base: "http://\(hostText):\(port)", namespace: namespace)
        self.state.withLock { state in
            precondition(!state.used, usedMessage)
            state.connection = connection
            state.emulatorBase = "http://\(hostText):\(port)"
        }
        self.watch(self.state.withLock { $0.connection })
    }

    /// Beyond Firebase (whose clients take credentials from FirebaseAuth): the credential every
    /// later request and listener carries, kept across reconnects: an ID token (from your sign-in
    /// or `eddy token`), eddyd's admin secret, or `owner` against an emulator-mode eddyd. Nil
    /// goes back to unauthenticated. Listeners attached before keep the identity they had.
    public func setAuthToken(_ token: String?) {
        self.state.withLock { $0.connection }.setAuthToken(token)
    }

    /// Closes the connection and stays offline until `goOnline()`, as in Firebase: writes
    /// made meanwhile raise their local events and wait; observers keep what they have and
    /// resume from their last log id once online; reads fail with `disconnected`.
    public func goOffline() {
        self.connection.goOffline()
    }

    public func goOnline() {
        self.connection.goOnline()
    }

    /// Cancels the writes that wait for the connection (made offline or while it was down):
    /// their completion blocks get `writeCanceled` and their local events are taken back.
    /// Writes already sent are not recalled. As in Firebase (FIRDatabaseTests
    /// testPurgeWritesReraisesEvents), every canceled write is taken back, its events raised,
    /// before the first completion block runs, so each sees the data without any of them.
    public func purgeOutstandingWrites() {
        let batch = PurgeBatch()
        Database.$purgeBatch.withValue(batch) {
            // As Firebase: every transaction not on its way ends with write_canceled too.
            self.transactions.abort(
                overlapping: [Path(validatedKeys: [])], with: DatabaseError(.writeCanceled, "the transaction was canceled by purgeOutstandingWrites()"))
            self.connection.purgeWaitingWrites()
        }
        for location in batch.locations { self.refreshViews(touching: location, cause: nil) }
        for body in batch.deliveries { self.callbackQueue.async(execute: body) }
    }

    /// What `purgeOutstandingWrites` cancels, on its own thread: the locations of the writes it
    /// took back (their views refresh once, after all of them) and the blocks the cancellations
    /// delivered (run after the refreshes' events).
    private final class PurgeBatch: @unchecked Sendable {
        var locations: [Path] = []
        var deliveries: [@Sendable () -> Void] = []
    }

    @TaskLocal private static var purgeBatch: PurgeBatch?

    /// Runs `block`; writes it makes do not notify the change-set observers of `tokens` (Realm's
    /// `write(withoutNotifying:)`), so a screen that made a change does not hear it back. Their
    /// next notification starts from the data with these writes in. Firebase-style observers
    /// and other tokens hear the writes as usual.
    @discardableResult
    public func write<Result>(withoutNotifying tokens: [NotificationToken] = [], _ block: () throws -> Result) rethrows -> Result {
        let silenced = Database.silencedTokens.union(tokens.map { ObjectIdentifier($0) })
        return try Database.$silencedTokens.withValue(silenced) { try block() }
    }

    @TaskLocal static var silencedTokens: Set<ObjectIdentifier> = []

    // MARK: Local events

    /// A write is being made: it joins the waiting writes and every view it touches shows it.
    /// Server values are estimated now, against what the views show (as Firebase resolves them
    /// when a write is made), so the write shows the same on top of data that already holds it.
    /// `replacing`: a waiting write this one takes the place of (`PendingWrites.replace`).
    func beginLocalWrite(at location: Path, puts: [PendingWrite.Put], replacing: PendingWrite? = nil) -> PendingWrite {
        let now = (Date().timeIntervalSince1970 * 1000).rounded()
        let views = self.views(touching: location)
        var estimated = false
        let resolved = puts.map { put in
            // What the write replaces is looked up only for a server value: the lookup walks the
            // waiting writes, and a burst of plain writes (thousands waiting over HTTP) must not
            // cost O(waiting) each.
            guard PendingWrites.holdsServerValue(put.value) else { return put }
            let existing =
                views.lazy.compactMap { $0.visibleValue(at: put.path) }.first ?? self.pendingWrites.completeValue(at: put.path) ?? .null
            let value = PendingWrites.resolve(put.value, existing: existing, now: now)
            if value != put.value { estimated = true }
            return PendingWrite.Put(path: put.path, value: value)
        }
        var write = PendingWrite(
            id: self.nextWriteID.wrappingAdd(1, ordering: .relaxed).oldValue, location: location, puts: resolved,
            timeMilliseconds: now, silenced: Database.silencedTokens)
        write.estimated = estimated
        // Kept even when no view shows the location yet: a view made before the write is
        // answered shows it at once, as Firebase's write tree does (`setValue(42)` then
        // `observeSingleEvent` gives 42; over HTTP the read could otherwise pass the write).
        if let replacing {
            self.pendingWrites.replace(replacing.id, with: write)
        } else {
            self.pendingWrites.add(write)
        }
        for view in Self.inEventOrder(views) { view.refresh(cause: write) }
        return write
    }

    /// The server answered the write. Refused (`logID` nil), it leaves the waiting writes and
    /// the views take it back. Accepted, the views' server copies usually hold it already
    /// (eddyd sends a write's events before its answer), so they show no change. They look
    /// again when a server value was estimated, or when the server's data moved on before the
    /// answer came: another client's write of the same location, committed after this one,
    /// whose events arrived while this write was still shown over them (Firebase's clients
    /// raise those events when the write is acknowledged, too). The write stays only for
    /// views still catching up, and the list is pruned now and then.
    func endLocalWrite(_ write: PendingWrite, logID: String?, streamed: Bool = false) {
        guard let logID else {
            self.pendingWrites.remove(write.id)
            if let batch = Database.purgeBatch {
                batch.locations.append(write.location)
            } else {
                self.refreshViews(touching: write.location, cause: nil)
            }
            return
        }
        let acknowledged = self.pendingWrites.acknowledge(write.id, logID: logID, streamed: streamed)
        // No view needs it now: it goes at once, so a view made later reads the server's data
        // (which holds it) instead of showing it again over newer data.
        let viewsNow = self.views(touching: write.location)
        if let answered = self.pendingWrites.write(write.id), !viewsNow.contains(where: { $0.needs(answered) }) {
            let changed = write.estimated ? viewsNow : viewsNow.filter { $0.showsOtherwiseWithout(answered) }
            self.pendingWrites.remove(write.id)
            for view in Self.inEventOrder(changed) { view.refresh(cause: Self.estimateCause(answered, logID: logID, view: view)) }
            return
        }
        if streamed {
            self.takeBackOnceStreamed(write)
        } else if write.estimated || acknowledged >= 256 {
            self.pruneAcknowledgedWrites()
        }
        // Views still catching up (over HTTP: whose streams have not passed it) show it yet; the
        // others look again if their data moved on.
        let answered = self.pendingWrites.write(write.id) ?? write
        let changed = write.estimated ? viewsNow : viewsNow.filter { view in !view.needs(answered) && view.showsOtherwiseWithout(answered) }
        for view in Self.inEventOrder(changed) { view.refresh(cause: Self.estimateCause(answered, logID: logID, view: view)) }
    }

    /// The cause to refresh `view` with when the answered `write` leaves it: the write itself
    /// (so the observers it silenced only update their copy) when it held a server value and
    /// the view's newest server entry is the write's own, as then all that can change is the
    /// estimate becoming the server's value. Otherwise nil: the view's data also moved on by
    /// other writes, which every observer hears.
    private static func estimateCause(_ write: PendingWrite, logID: String, view: QueryView) -> PendingWrite? {
        guard write.estimated, !write.silenced.isEmpty, view.isAt(logID) else { return nil }
        return write
    }

    /// Over HTTP: takes an answered write back from the views once their streams passed it, or
    /// went quiet for the grace period without (`QueryView.shows`); checked again each grace
    /// period while a stream is still catching up (only this write's views: a burst of writes
    /// behind a slow stream costs one look per write and period).
    private func takeBackOnceStreamed(_ write: PendingWrite) {
        DispatchQueue.global().asyncAfter(deadline: .now() + PendingWrite.streamedGraceSeconds + 0.05) { [weak self] in
            guard let self, let answered = self.pendingWrites.write(write.id) else { return }
            let views = self.views(touching: write.location)
            if views.contains(where: { $0.needs(answered) }) {
                // Views whose grace ran out without their stream passing it stop showing it now.
                let changed = views.filter { !$0.needs(answered) && $0.showsOtherwiseWithout(answered) }
                for view in Self.inEventOrder(changed) { view.refresh(cause: nil) }
                self.takeBackOnceStreamed(write)
                return
            }
            self.pendingWrites.remove(write.id)
            self.refreshViews(touching: write.location, cause: nil)
        }
    }

    /// The connection ended: the views that hold the locations of this connection's onDisconnect
    /// writes show them now, as Firebase's clients do (see `DisconnectWrites`).
    private func showDisconnectWrites() {
        let puts = self.disconnectWrites.takeAll()
        guard !puts.isEmpty else { return }
        let now = (Date().timeIntervalSince1970 * 1000).rounded()
        let views = self.state.withLock { Array($0.views.values) }
        for view in views { view.showServerWrites(puts, now: now) }
    }

    /// Runs `block` once every view of `location` (at, above or below it) has the events of the
    /// log entry `logID`, or after `PendingWrite.streamedGraceSeconds`: over HTTP a write's
    /// answer can come before its events, and a completion should not run before the observers
    /// have heard the write (Firebase raises the events first).
    func afterViewsPass(_ logID: String, touching location: Path, _ block: @escaping @Sendable () -> Void) {
        let views = self.views(touching: location)
        let deadline = Date().addingTimeInterval(PendingWrite.streamedGraceSeconds)
        @Sendable func check() {
            if views.allSatisfy({ $0.hasPassed(logID) }) || Date() >= deadline {
                block()
            } else {
                DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(5), execute: check)
            }
        }
        check()
    }

    /// Write completions waiting their turn (`completeInOrder`), and whether a thread is
    /// running the ready ones.
    private struct CompletionQueue {
        var next: UInt64 = 0
        var entries: [(id: UInt64, ready: Bool, block: @Sendable () -> Void)] = []
        var draining = false
    }
    private let completionQueue = Mutex(CompletionQueue())

    /// Runs a write's completion `block` in the order the answers came: over HTTP an accepted
    /// write's (`logID`) once the views of `location` have its events (`afterViewsPass`, as
    /// Firebase raises a write's events before its completion, on one connection), and never
    /// before the completion of a write answered earlier. Without `logID`, as soon as its turn
    /// comes (at once over the native protocol, whose events come before the answer).
    func completeInOrder(after logID: String?, touching location: Path, _ block: @escaping @Sendable () -> Void) {
        let id = self.completionQueue.withLock { queue -> UInt64 in
            defer { queue.next += 1 }
            queue.entries.append((queue.next, false, block))
            return queue.next
        }
        let ready: @Sendable () -> Void = { [self] in
            var drain = self.completionQueue.withLock { queue -> Bool in
                if let i = queue.entries.firstIndex(where: { $0.id == id }) { queue.entries[i].ready = true }
                guard !queue.draining else { return false }
                queue.draining = true
                return true
            }
            // One thread runs the ready ones, oldest first, outside the lock (a completion may
            // make another write, whose answer queues behind).
            while drain {
                let blocks = self.completionQueue.withLock { queue -> [@Sendable () -> Void] in
                    var blocks: [@Sendable () -> Void] = []
                    while let first = queue.entries.first, first.ready {
                        blocks.append(first.block)
                        queue.entries.removeFirst()
                    }
                    if blocks.isEmpty { queue.draining = false }
                    return blocks
                }
                for block in blocks { block() }
                drain = !blocks.isEmpty
            }
        }
        if let logID, !logID.isEmpty { self.afterViewsPass(logID, touching: location, ready) } else { ready() }
    }

    /// Drops the acknowledged writes that no view catching up needs. A view that showed one
    /// until now (its stream passed it, or its grace ran out, while another view still needed
    /// it) looks again if its data moved on since.
    func pruneAcknowledgedWrites() {
        guard !self.pendingWrites.isEmpty else { return }
        let views = self.state.withLock { Array($0.views.values) }
        let pruned = self.pendingWrites.prune { write in views.contains { $0.needs(write) } }
        guard !pruned.isEmpty else { return }
        let changed = views.filter { view in
            pruned.contains { write in view.query.path.overlaps(write.location) && view.showsOtherwiseWithout(write) }
        }
        for view in Self.inEventOrder(changed) { view.refresh(cause: nil) }
    }

    /// The views of locations at, above or below `location`.
    private func views(touching location: Path) -> [QueryView] {
        self.state.withLock { state in
            state.views.values.filter { $0.query.path.overlaps(location) }
        }
    }

    private func refreshViews(touching location: Path, cause: PendingWrite?) {
        let views = self.views(touching: location)
        for view in Self.inEventOrder(views) { view.refresh(cause: cause) }
    }

    /// Firebase's on-disk cache. Eddy's client keeps no disk cache: with it enabled, a view whose
    /// last observer goes is kept live in memory instead (`retainIfLast`), so what was read
    /// answers later observers and reads, offline too. As in Firebase it is set before the
    /// instance is first used (a later change is ignored here; Firebase raises).
    public var isPersistenceEnabled: Bool {
        get { self.state.withLock { $0.persistenceEnabled } }
        set { self.state.withLock { state in if !state.used { state.persistenceEnabled = newValue } } }
    }

    /// Firebase's disk cache size: 10 MB by default, 1 MB to 100 MB (outside that range traps
    /// with Firebase's message, as Firebase raises). Here: how much data (in JSON bytes, as
    /// measured when kept) the views kept live for persistence hold at most.
    public var persistenceCacheSizeBytes: UInt {
        get { self.state.withLock { $0.persistenceCacheSizeBytes } }
        set {
            precondition(newValue >= 1024 * 1024, "The minimum cache size must be at least 1MB")
            precondition(newValue <= 100 * 1024 * 1024, "Firebase Database currently doesn't support a cache size larger than 100MB")
            self.state.withLock { state in if !state.used { state.persistenceCacheSizeBytes = newValue } }
        }
    }

    public static func setLoggingEnabled(_ enabled: Bool) {}

    @discardableResult
    public static func sdkVersion() -> String { "eddy-1" }

    /// A push id: Firebase's format, strictly increasing for this client.
    func nextPushID() -> String {
        let now = UInt64(max(0, Date().timeIntervalSince1970 * 1000))
        return self.state.withLock { $0.pushIDs.next(nowMilliseconds: now).rawValue }
    }

    static func allInstances() -> [Database] {
        self.instances.withLock { Array($0.values) }
    }

    // MARK: Observers

    func nextHandle() -> DatabaseHandle {
        self.state.withLock { state in
            defer { state.nextHandle += 1 }
            return state.nextHandle
        }
    }

    /// What the client holds for `query` from its live views (Firebase's in-memory cache):
    /// the same query's view, or a view of the whole location or an ancestor with the query
    /// evaluated here; nil when no view has the server's data for it.
    func cachedValue(of query: DatabaseQuery) -> Value? {
        let id = Self.viewID(query)
        let views = self.state.withLock { state in
            state.views.values.filter { $0.id == id || $0.query.path.isAncestorOrSelf(of: query.path) }
        }
        if let same = views.first(where: { $0.id == id }), let value = same.shownValueOnceStarted { return value }
        for view in views {
            guard let value = view.visibleValue(at: query.path) else { continue }
            return query.spec.loadsAllData ? value : LocalQuery.object(LocalQuery.window(value, query.spec))
        }
        // The client's own waiting writes, when one replaced the location whole (Firebase's
        // write tree answers then too).
        guard let written = self.pendingWrites.completeValue(at: query.path, unansweredOnly: true) else { return nil }
        return query.spec.loadsAllData ? written : LocalQuery.object(LocalQuery.window(written, query.spec))
    }

    /// What a view made while not connected starts from (`offlineSeed`).
    enum OfflineSeed {
        /// All of the query's data: its observers hear the value too.
        case complete(Value)
        /// Children other queries of the location loaded: child events only.
        case partial(Value)
    }

    /// What live views hold for a new view of `query` made while not connected. Complete, as
    /// Firebase's in-memory cache is, where a view of the whole location or an ancestor (or the
    /// client's own waiting write that replaced it) holds it; otherwise the children the
    /// location's other queries hold, the query evaluated on them, as Firebase's offline guide
    /// answers a query never run online ("Querying Data Offline": a limitToLast(2) inside a
    /// loaded limitToLast(4) raises child_added for both, and value only once connected).
    func offlineSeed(of query: DatabaseQuery) -> OfflineSeed? {
        let id = Self.viewID(query)
        let views = self.state.withLock { state in
            state.views.values.filter { $0.id != id && $0.query.path.isAncestorOrSelf(of: query.path) }
        }
        func evaluated(_ value: Value) -> Value {
            query.spec.loadsAllData ? value : LocalQuery.object(LocalQuery.window(value, query.spec))
        }
        var held: [String: Value] = [:]
        for view in views {
            if view.query.path == query.path && !view.query.spec.loadsAllData {
                // Another query of the location: its children are known, not all of them.
                for (key, child) in view.heldChildren ?? [:] where held[key] == nil { held[key] = child }
                continue
            }
            if let value = view.visibleValue(at: query.path) { return .complete(evaluated(value)) }
        }
        if let written = self.pendingWrites.completeValue(at: query.path, unansweredOnly: true) { return .complete(evaluated(written)) }
        guard !held.isEmpty else { return nil }
        let window = LocalQuery.window(.object(held), query.spec)
        return window.isEmpty ? nil : .partial(LocalQuery.object(window))
    }

    /// As Firebase serves the views below a location from its listen's data, raising their
    /// events before its own (deepest first, siblings in key order): the views below `view`
    /// that hold their whole location and have no server data yet start from `value`, `view`'s
    /// first data, before `view` raises its events. Their own first batch then raises only what
    /// differs. Takes each view's lock in turn, none while another is held.
    func seedDescendants(of view: QueryView, from value: Value) {
        let below = self.state.withLock { state in
            state.views.values.filter {
                $0 !== view && $0.query.spec.loadsAllData && $0.query.path.depth > view.query.path.depth
                    && view.query.path.isAncestorOrSelf(of: $0.query.path)
            }
        }
        guard !below.isEmpty else { return }
        let depth = view.query.path.depth
        for descendant in below.sorted(by: { Self.comesBefore($0.query.path, $1.query.path) }) {
            descendant.seed(value.child(at: Path(validatedKeys: Array(descendant.query.path.keys.dropFirst(depth)))))
        }
    }

    /// Firebase's order of a change's events across locations: a location's descendants before
    /// it, and siblings' subtrees in key order.
    static func comesBefore(_ a: Path, _ b: Path) -> Bool {
        for (x, y) in zip(a.keys, b.keys) where x != y { return Key.compare(x, y) < 0 }
        return a.depth > b.depth  // one is the other's ancestor: the deeper first
    }

    /// Under the state's lock, as `view` joins or leaves `views`: kept in `wholeViews` when it
    /// holds its whole location.
    private func noteWholeView(_ view: QueryView, added: Bool) {
        guard view.query.spec.loadsAllData else { return }
        self.wholeViews.withLock { views in
            if added { views.append(view) } else { views.removeAll { $0 === view } }
        }
    }

    /// The server's data at `path` from a view that holds the whole location there (or an
    /// ancestor), when that view is at least as far in the log as `logID`: what a query's
    /// window is evaluated on while writes of this client wait, as Firebase's views of a
    /// location share the complete server cache of one at or above it. Called under a view's
    /// lock: takes only `wholeViews`' lock and then the other view's.
    func wholeServerData(at path: Path, asFarAs logID: String?, excluding asking: QueryView) -> Value? {
        let views = self.wholeViews.withLock { $0 }
        for view in views where view !== asking && view.query.path.isAncestorOrSelf(of: path) {
            if let value = view.serverData(at: path, asFarAs: logID) { return value }
        }
        return nil
    }

    /// The view a query's observers share: its path and its constraints.
    static func viewID(_ query: DatabaseQuery) -> String {
        query.path.description + "?" + JSONWriter.string(query.spec.parameters ?? .null) + (query.spec.error ?? "")
    }

    /// Puts `member` (an observer's token) with its filter into the key-path group of the
    /// Realm-style observers of `query`'s view (made when missing) and answers the group. Under
    /// the state lock, as leaving is, so a group is never dropped while a member joins it.
    func joinChangeSetKeyPaths(of query: DatabaseQuery, member: ObjectIdentifier, keyPaths: [Path]?) -> ChangeSetKeyPathGroup {
        let id = ChangeSetKeyPathGroup.Key(view: Self.viewID(query), query: ObjectIdentifier(query))
        return self.state.withLock { state in
            let group = state.changeSetKeyPaths[id] ?? ChangeSetKeyPathGroup()
            state.changeSetKeyPaths[id] = group
            group.join(member, keyPaths: keyPaths)
            return group
        }
    }

    /// Takes `member` out of `group`, dropping the group once it is empty.
    func leaveChangeSetKeyPaths(_ group: ChangeSetKeyPathGroup, of query: DatabaseQuery, member: ObjectIdentifier) {
        let id = ChangeSetKeyPathGroup.Key(view: Self.viewID(query), query: ObjectIdentifier(query))
        self.state.withLock { state in
            if group.leave(member), state.changeSetKeyPaths[id] === group { state.changeSetKeyPaths.removeValue(forKey: id) }
        }
    }

    /// Adds an observer to the view of `query` (made when it is the first).
    func observe(_ query: DatabaseQuery, _ registration: QueryView.Registration) {
        if InfoView.isInfo(query.path) {
            self.info.add(registration, at: query.path, ref: query.ref)
            return
        }
        let id = Self.viewID(query)
        var view: QueryView
        var exists: Bool
        var seed: OfflineSeed?
        while true {
            // Not connected: a new view starts from what live views hold (Firebase's cache), so
            // its observers hear the data at once; the server's data follows once connected.
            exists = self.state.withLock { $0.views[id] != nil }
            seed = exists || self.info.isConnected ? nil : self.offlineSeed(of: query)
            (view, exists) = self.state.withLock { state -> (QueryView, Bool) in
                if let view = state.views[id] {
                    state.viewOfHandle[registration.handle] = view
                    return (view, true)
                }
                let view = QueryView(query: query, id: id)
                state.views[id] = view
                state.viewOfHandle[registration.handle] = view
                self.noteWholeView(view, added: true)
                return (view, false)
            }
            if exists { seed = nil }
            // A view found here can end before the observer joins it: its last observer (a
            // `observeSingleEvent` that just heard its event) is removed on the callback queue
            // between the lookup and `add`. The observer then takes a new view, rather than a
            // dead one that would never raise another event.
            if view.add(registration) { break }
            self.forgetEnded(view, handle: registration.handle)
        }
        switch seed {
        case .complete(let value)?: view.seed(value)
        case .partial(let value)?: view.seedPartially(value)
        case nil: break
        }
        // A new view shows the client's waiting writes at once (their value, when one replaced
        // the location whole), as Firebase's new listeners read its write tree.
        if !exists, !self.pendingWrites.touching(query.path).isEmpty { view.refresh(cause: nil) }
    }

    /// Drops `view`, which ended while an observer (`handle`) was joining it, so the next
    /// lookup makes a new one.
    private func forgetEnded(_ view: QueryView, handle: DatabaseHandle) {
        self.state.withLock { state in
            if state.views[view.id] === view {
                state.views.removeValue(forKey: view.id)
                self.noteWholeView(view, added: false)
            }
            if state.viewOfHandle[handle] === view { state.viewOfHandle.removeValue(forKey: handle) }
        }
    }

    /// `keepSynced`: a value observer that does nothing keeps the query's view live.
    func keepSynced(_ query: DatabaseQuery, _ on: Bool) {
        guard !InfoView.isInfo(query.path) else { return }
        let id = Self.viewID(query)
        if on {
            guard self.state.withLock({ $0.keptSynced[id] == nil }) else { return }
            let handle = query.observe(.value) { _ in }
            let kept = self.state.withLock { state -> Bool in
                guard state.keptSynced[id] == nil else { return false }
                state.keptSynced[id] = handle
                return true
            }
            if !kept { self.removeObserver(handle) }  // another thread kept it first
        } else if let handle = self.state.withLock({ $0.keptSynced.removeValue(forKey: id) }) {
            self.removeObserver(handle)
        }
    }

    /// Removes an observer; its view ends with its last observer, unless persistence is enabled
    /// (`retainIfLast`).
    func removeObserver(_ handle: DatabaseHandle) {
        if self.info.owns(handle) {
            self.info.remove(handle)
            return
        }
        self.retainIfLast(handle)
        guard let view = self.state.withLock({ $0.viewOfHandle.removeValue(forKey: handle) }) else { return }
        if view.remove(handle) {
            self.state.withLock { state in
                if state.views[view.id] === view {
                    state.views.removeValue(forKey: view.id)
                    self.noteWholeView(view, added: false)
                }
            }
            // Answered writes kept for it alone go now.
            self.pruneAcknowledgedWrites()
        }
    }

    /// Views kept live with persistence enabled: at most this many per instance (each holds a
    /// subscription on the server).
    static let retainedViewsMax = 100

    /// With persistence enabled, Firebase's disk cache answers a location read before even
    /// when no observer holds it any more (offline too). Eddy keeps no disk cache; instead, when
    /// `handle` is the last observer of its view, the view is kept live by an observer of its
    /// own (as `keepSynced(true)` keeps one), so its data stays current and answers later
    /// observers and reads, online or offline. The oldest kept views end once there are more
    /// than `retainedViewsMax` or their data (as it was when kept, in JSON bytes) exceeds
    /// `persistenceCacheSizeBytes`. Nothing outlives the process.
    private func retainIfLast(_ handle: DatabaseHandle) {
        let candidate = self.state.withLock { state -> QueryView? in
            guard state.persistenceEnabled, let view = state.viewOfHandle[handle],
                state.keptSynced[view.id] == nil, !state.retained.contains(where: { $0.viewID == view.id || $0.handle == handle })
            else { return nil }
            return view
        }
        guard let view = candidate, view.handles == [handle] else { return }
        let keeper = view.query.observe(.value) { _ in }
        let bytes = view.shownValueOnceStarted.map { JSONWriter.string($0).utf8.count } ?? 0
        // The oldest beyond the bounds (never the one just kept) end. Each stays in `retained`
        // until its observer is removed, so that removal does not keep its view again.
        let evicted = self.state.withLock { state -> [DatabaseHandle] in
            state.retained.append((view.id, keeper, bytes))
            var count = state.retained.count
            var total = state.retained.reduce(0) { $0 + $1.bytes }
            var evicted: [DatabaseHandle] = []
            for entry in state.retained.dropLast() where count > Self.retainedViewsMax || total > Int(state.persistenceCacheSizeBytes) {
                count -= 1
                total -= entry.bytes
                evicted.append(entry.handle)
            }
            return evicted
        }
        for old in evicted {
            self.removeObserver(old)
            self.state.withLock { state in state.retained.removeAll { $0.handle == old } }
        }
    }

    /// With persistence enabled, what a read (`getData`) answered stays too, as Firebase's
    /// reads fill its cache: a view of the query starts from the answer, subscribes, and is kept
    /// live as one whose last observer went (`retainIfLast`). Nothing when a view of the query
    /// is live already (it holds the data) or persistence is off.
    func retainRead(of query: DatabaseQuery, _ value: Value) {
        let id = Self.viewID(query)
        guard !InfoView.isInfo(query.path), query.spec.error == nil,
            self.state.withLock({ state in state.persistenceEnabled && state.views[id] == nil })
        else { return }
        let handle = query.observe(.value) { _ in }
        self.state.withLock { $0.viewOfHandle[handle] }?.seed(value)
        self.removeObserver(handle)
    }

    /// The observers that keep views live for the client (`keepSynced`, persistence), which
    /// `removeAllObservers` leaves.
    private static func keepers(_ state: State) -> Set<DatabaseHandle> {
        Set(state.keptSynced.values).union(state.retained.map(\.handle))
    }

    /// `removeObserver(withHandle:)` called on `query`: removes the observer when it observes
    /// `query`'s location, with any query when `query` is a plain location, else only with
    /// that same query (Firebase's `SyncPoint` searches every view for a default query only).
    func removeObserver(_ handle: DatabaseHandle, through query: DatabaseQuery) {
        if self.info.owns(handle) {
            self.info.remove(handle)
            return
        }
        let viewID = query.spec.isDefault ? nil : Self.viewID(query)
        let observes = self.state.withLock { state -> Bool in
            guard let view = state.viewOfHandle[handle] else { return false }
            return view.query.path == query.path && (viewID == nil || view.id == viewID)
        }
        if observes { self.removeObserver(handle) }
    }

    /// Forgets a view the server refused (its observers were cancelled, `keepSynced`'s too).
    func forget(_ view: QueryView) {
        self.state.withLock { state in
            if state.views[view.id] === view {
                state.views.removeValue(forKey: view.id)
                self.noteWholeView(view, added: false)
            }
            if let kept = state.keptSynced[view.id], view.handles.contains(kept) { state.keptSynced.removeValue(forKey: view.id) }
            state.retained.removeAll { $0.viewID == view.id }
            for handle in view.handles { state.viewOfHandle.removeValue(forKey: handle) }
            state.viewOfHandle = state.viewOfHandle.filter { $0.value !== view }
        }
    }

    /// Removes every observer of every view at `path`.
    /// The observers at `path`: all of them, or (`query`) only those of views of that query.
    func removeObservers(at path: Path, of query: DatabaseQuery? = nil) {
        if InfoView.isInfo(path) {
            self.info.removeAll(at: path)
            return
        }
        let viewID = query.map(Self.viewID)
        let handles = self.state.withLock { state in
            let kept = Self.keepers(state)
            return state.viewOfHandle.filter {
                $0.value.query.path == path && (viewID == nil || $0.value.id == viewID) && !kept.contains($0.key)
            }.map(\.key)
        }
        for handle in handles { self.removeObserver(handle) }
    }

    /// Runs `body` on the callback queue.
    func deliver(_ body: @escaping @Sendable () -> Void) {
        if let batch = Database.purgeBatch {
            batch.deliveries.append(body)
            return
        }
        self.callbackQueue.async(execute: body)
    }
}
