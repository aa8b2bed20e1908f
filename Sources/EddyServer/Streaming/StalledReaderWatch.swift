// Disconnects a client that leaves a large write unread while memory for streams is short.
// A stream's or subscriber's bytes handed to the socket count in the shared `MemoryBudget`
// (`--stream-buffers-bytes-total`) until the socket has taken them. A client that reads nothing
// holds them for as long as its connection lives; a few such clients on a large location would
// fill the budget, and every new stream would be refused. So while a write of at least
// `bytesMin` waits for the client, a check runs every second: once the write has waited
// `graceSeconds` and the budget is full, the connection closes (its memory goes back, and the
// client can reconnect and resume). A slow reader is left alone while the budget has room.
//
// Thread-safety: the check runs on the channel's event loop; `stop()` may be called anywhere.

import NIOCore

struct StalledReaderWatch: Sendable {
    /// Writes smaller than this are not watched: the socket's own buffers take them.
    static let bytesMin = 64 * 1024
    /// How long a write may wait for the client before, with the budget full, it is cut off.
    static let graceSeconds: Int64 = 10

    private let task: RepeatedTask

    /// Starts watching a write to `channel` that waits for the client; `onStalled` runs once
    /// (on the event loop) before the connection is closed.
    init(channel: any Channel, budget: MemoryBudget, onStalled: @escaping @Sendable () -> Void) {
        let started = NIODeadline.now()
        self.task = channel.eventLoop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { task in
            guard NIODeadline.now() - started >= .seconds(Self.graceSeconds), budget.isFull else { return }
            task.cancel()
            onStalled()
            channel.close(promise: nil)
            budget.trimSoon()
        }
    }

    /// The write completed (or the stream ended): no check runs after this.
    func stop() {
        self.task.cancel()
    }
}
