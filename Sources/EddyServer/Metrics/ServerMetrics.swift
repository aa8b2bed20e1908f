// The server's figures for operators, through swift-metrics (exported on `/metrics`):
// - `eddy_subscriptions{transport}`: live subscriptions now (`sse` streams, `native`
//   subscriptions);
// - `eddy_events_delivered_total{transport}`: child events handed to subscribers' sockets;
// - `eddy_subscribers_disconnected_total{transport,reason="lag"}`: subscribers cut off because
//   they fell further behind than their buffer allows;
// - `eddy_rest_writes_at_once_total`: REST writes answered on the event loop that read them
//   (`RESTWriteAtOnceHandler`); the others went through Hummingbird's request task;
// - `eddy_rest_writes_read_raw_total`: those of them read from the connection's bytes, ahead of
//   the HTTP parser (`RESTRawWriteHandler`).
// Made on first use: eddyd bootstraps the metrics backend before it serves anything.

import CoreMetrics
import Metrics
import Synchronization

enum ServerMetrics {
    enum Transport: String {
        case sse, native
    }

    private struct PerTransport: Sendable {
        let subscriptions: Meter
        let events: Counter
        let lagDisconnects: Counter

        init(_ transport: Transport) {
            let labels = [("transport", transport.rawValue)]
            self.subscriptions = Meter(label: "eddy_subscriptions", dimensions: labels)
            self.events = Counter(label: "eddy_events_delivered_total", dimensions: labels)
            self.lagDisconnects = Counter(label: "eddy_subscribers_disconnected_total", dimensions: labels + [("reason", "lag")])
        }
    }

    private static let sse = PerTransport(.sse)
    private static let native = PerTransport(.native)

    private static func metrics(_ transport: Transport) -> PerTransport { transport == .sse ? self.sse : self.native }

    static func subscribed(_ transport: Transport, count: Int = 1) {
        if transport == .native { self.nativeOpen.add(count, ordering: .relaxed) }
        self.metrics(transport).subscriptions.increment(by: Double(count))
    }

    static func unsubscribed(_ transport: Transport, count: Int = 1) {
        guard count > 0 else { return }
        if transport == .native { self.nativeOpen.subtract(count, ordering: .relaxed) }
        self.metrics(transport).subscriptions.decrement(by: Double(count))
    }

    /// Native subscriptions open now in this process (what the gauge shows), for
    /// `--subscriptions-max` (`SubscriptionBounds.total`).
    static var nativeSubscriptions: Int { self.nativeOpen.load(ordering: .relaxed) }
    private static let nativeOpen = Atomic<Int>(0)

    static func delivered(_ transport: Transport, events: Int) {
        guard events > 0 else { return }
        self.metrics(transport).events.increment(by: events)
    }

    static func disconnectedForLag(_ transport: Transport) { self.metrics(transport).lagDisconnects.increment() }

    private static let restWritesAtOnce = Counter(label: "eddy_rest_writes_at_once_total")

    static func restWriteAtOnce() { self.restWritesAtOnce.increment() }

    private static let restWritesReadRaw = Counter(label: "eddy_rest_writes_read_raw_total")

    static func restWriteReadRaw() { self.restWritesReadRaw.increment() }
}
