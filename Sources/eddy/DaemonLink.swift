// What the CLI's online commands need from a running daemon, whichever way they reach it: its
// native socket (`DaemonConnection`, the default) or HTTP (`DaemonHTTPConnection`, `--url`).
// Errors are EddyErrors whose message names the daemon's address and, when it refused, its
// own message.

import EddyModel

protocol DaemonLink: AnyObject {
    /// Where the daemon was reached (a socket path or a URL), for messages.
    var address: String { get }
    func get(_ path: Path, ns: String) throws(EddyError) -> Value
    /// `parameters`: REST query parameter texts (`orderBy` = `"\"name\""`, `limitToFirst` = `"2"`).
    func query(_ path: Path, parameters: [(name: String, value: String)], ns: String) throws(EddyError) -> Value
    /// A write (`op`: set, update, push, remove); its answer, with `name` for a push.
    func write(_ op: String, _ path: Path, _ value: Value?, ns: String) throws(EddyError) -> Value
    /// The rules document `{"rules": {...}}`.
    func rules(ns: String) throws(EddyError) -> Value
    /// Replaces the rules; the number of `.indexOn` declarations.
    func setRules(_ document: Value, ns: String) throws(EddyError) -> Int
}
