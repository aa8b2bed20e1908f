// How a `Database` reaches eddyd: the native protocol (`ClientConnection`, Unix socket or TCP)
// or, as a fallback, REST and SSE over HTTP (`HTTPTransport`). Both take the native protocol's
// requests (kinds and payloads of EddyProtocol/Frame.swift) and answer in its shapes, so the
// rest of the client does not know which one it talks to.

import EddyModel
import EddyProtocol

protocol Transport: Sendable {
    /// Sends a request; `answer` gets its answer (an `error` frame's payload as a failure).
    /// Writes reach the server in the order they are made, and wait across a lost connection.
    func request(_ kind: Frame.Kind, _ payload: Value, answer: @escaping ClientConnection.Answer)
    /// Starts a subscription (`subscribe` payload); returns its id.
    @discardableResult
    func subscribe(_ payload: Value, _ subscription: ClientConnection.Subscription) -> UInt64
    func unsubscribe(_ id: UInt64)
    func goOffline()
    func goOnline()
    /// Starts connecting when idle and not offline: Firebase's repo connects when the database
    /// is first used, not at its first request, so a listen made soon after does not also wait
    /// for the connection.
    func open()
    func purgeWaitingWrites()
    /// Called with true when the connection is made and false when it goes.
    func onStateChange(_ handler: @escaping @Sendable (Bool) -> Void)
    /// The credential later requests carry (nil: none): eddyd's admin secret, an ID token, or
    /// `owner` in emulator mode. Kept across reconnects.
    func setAuthToken(_ token: String?)
}
