// Live-event figures measured in-process (issue 4), `durability: .sync`:
//   idle    per-write cost of durable pushes with 10,000 idle listeners on unrelated paths vs
//           none: one writer (latency) and 64 writers (throughput), configurations interleaved
//           in rounds.
//   fanout  one writer at a fixed rate (default 2,000 writes/s for 10 s) pushing to /feed, with
//           100 listeners on /feed each receiving every change: events/s delivered, losses, and
//           the latency from submitting a write to each listener's sink receiving its event
//           (events are handed over before the writer's acknowledgement, so this covers commit,
//           fsync and event computation).
//   socket  the same fan-out through a running eddyd's native socket: one writer connection
//           (writes pipelined at `rate`), `subscribers` connections subscribed to /feed/latest,
//           each receiving every write: events/s, losses, and latency from the write's
//           acknowledgement (and from its submission) to each subscriber's receipt. Subscribers
//           ask for `coalesce` (FANOUT_COALESCE=0: one events frame per entry).
//   redis   the socket fan-out against Redis Streams (RedisFanout.swift): XADD pipelined at
//           `rate`, `subscribers` connections each in an XREAD BLOCK loop; same figures and
//           output, for scripts/event-bench.sh to compare with `socket` in one run.
// Usage: EventProfile idle [rounds] | fanout [rate] [seconds] [listeners]
//        | socket SOCKET [rate] [seconds] [subscribers]
//        | redis HOST:PORT|SOCKET [rate] [seconds] [subscribers]

import EddyEngine
import EddyModel
import EddyProtocol
import FanoutReceipts
import Foundation
import Logging
import Synchronization

let quietLogger = Logger(label: "eddy.event-profile", factory: { _ in SwiftLogNoOpLogHandler() })

func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }
func percentile(_ sorted: [Double], _ f: Double) -> Double { sorted[min(max(Int((f * Double(sorted.count)).rounded(.up)) - 1, 0), sorted.count - 1)] }
func median(_ xs: [Double]) -> Double { percentile(xs.sorted(), 0.5) }
func format(_ x: Double, _ d: Int = 1) -> String { String(format: "%.\(d)f", x) }

func openEngine() throws -> (Engine, String) {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("eddy-events-\(UUID().uuidString)").path
    return (try Engine.open(directory: path, options: EngineOptions(durability: .sync), logger: quietLogger), path)
}

let feed = try! Path("/feed")
let value = try! JSONParser.parse(#"{"user": "ada", "text": "hello there", "n": 1}"#)

func idle(rounds: Int) async throws {
    let (plain, plainPath) = try openEngine()
    let (listened, listenedPath) = try openEngine()
    defer {
        plain.close()
        listened.close()
        try? FileManager.default.removeItem(atPath: plainPath)
        try? FileManager.default.removeItem(atPath: listenedPath)
    }
    for i in 0..<10_000 {
        _ = try await listened.listen(try Path("/idle/l\(i)"), sink: { _ in })
    }
    var single: [String: [Double]] = [:]
    var concurrent: [String: [Double]] = [:]
    for round in 0..<rounds {
        for (name, engine) in round % 2 == 0 ? [("none", plain), ("10k idle", listened)] : [("10k idle", listened), ("none", plain)] {
            var latencies: [Double] = []
            for _ in 0..<1000 {
                let start = ContinuousClock.now
                _ = try await engine.push(feed, value)
                latencies.append(seconds(ContinuousClock.now - start) * 1e6)
            }
            single[name, default: []].append(median(latencies))
            let start = ContinuousClock.now
            try await withThrowingTaskGroup(of: Void.self) { group in
                for w in 0..<64 {
                    group.addTask { for _ in stride(from: w, to: 20_000, by: 64) { _ = try await engine.push(feed, value) } }
                }
                try await group.waitForAll()
            }
            concurrent[name, default: []].append(20_000 / seconds(ContinuousClock.now - start))
        }
        print("round \(round): none \(format(single["none"]!.last!)) us, \(Int(concurrent["none"]!.last!))/s; 10k idle \(format(single["10k idle"]!.last!)) us, \(Int(concurrent["10k idle"]!.last!))/s")
    }
    let s0 = median(single["none"]!), s1 = median(single["10k idle"]!)
    let c0 = median(concurrent["none"]!), c1 = median(concurrent["10k idle"]!)
    print("1 writer: none \(format(s0)) us, 10,000 idle listeners \(format(s1)) us (\(format(s1 / s0, 2))x)")
    print("64 writers: none \(Int(c0))/s, 10,000 idle listeners \(Int(c1))/s (cost \(format(c0 / c1, 2))x)")
}

final class Latencies: Sendable {
    let samples = Mutex<[Double]>([])
    let received = Atomic<Int>(0)
    /// Submit times by the push's payload number; sinks look them up.
    let submitted = Mutex<[Int: ContinuousClock.Instant]>([:])
}

func fanout(rate: Int, duration: Double, listeners: Int) async throws {
    let (engine, path) = try openEngine()
    defer {
        engine.close()
        try? FileManager.default.removeItem(atPath: path)
    }
    let latencies = Latencies()
    for _ in 0..<listeners {
        _ = try await engine.listen(feed, query: Query(order: .key, limit: .last(1)), sink: { events in
            let now = ContinuousClock.now
            for event in events where event.kind == .childAdded {
                guard case .number(let n)? = event.value.objectValue?["n"], let start = latencies.submitted.withLock({ $0[Int(n)] }) else { continue }
                latencies.received.add(1, ordering: .relaxed)
                latencies.samples.withLock { $0.append(seconds(now - start) * 1e6) }
            }
        })
    }
    let total = Int(Double(rate) * duration)
    let interval = Duration.seconds(1.0 / Double(rate))
    let start = ContinuousClock.now
    try await withThrowingTaskGroup(of: Void.self) { group in
        for n in 0..<total {
            let due = start.advanced(by: interval * n)
            if due > .now { try await Task.sleep(until: due, clock: .continuous) }
            group.addTask {
                var payload = value
                payload.set(.number(Double(n)), at: try Path("n"))
                latencies.submitted.withLock { $0[n] = .now }
                _ = try await engine.push(feed, payload)
            }
        }
        try await group.waitForAll()
    }
    let elapsedSeconds = seconds(ContinuousClock.now - start)
    let sorted = latencies.samples.withLock { $0 }.sorted()
    let expected = total * listeners
    let received = latencies.received.load(ordering: .relaxed)
    print("fanout: \(total) writes at \(rate)/s over \(format(elapsedSeconds, 2)) s, \(listeners) listeners each receiving every write")
    print("  events delivered \(received) of \(expected) (lost \(expected - received)), \(Int(Double(received) / elapsedSeconds)) events/s")
    print("  submit to receipt: p50 \(format(percentile(sorted, 0.5))) us, p99 \(format(percentile(sorted, 0.99))) us")
}

extension Value {
    var objectValue: [String: Value]? {
        if case .object(let children) = self { return children }
        return nil
    }
}

/// Receipt times by log id, per subscriber thread.
func socketFanout(path: String, rate: Int, duration: Double, subscribers: Int) throws {
    let total = Int(Double(rate) * duration)
    var receipts: [FanoutReceipts] = []
    var threads: [Thread] = []
    let ready = DispatchSemaphore(value: 0)
    let done = DispatchGroup()
    for _ in 0..<subscribers {
        let client = try NativeClient(path: path)
        let mine = FanoutReceipts(expected: total)
        receipts.append(mine)
        try client.send(Frame(kind: .subscribe, requestID: 1, payload: fanoutSubscribePayload))
        done.enter()
        let thread = Thread {
            defer { done.leave() }
            var attached = false
            while let frame = try? client.receive() {
                let now = FanoutReceipts.now()
                if frame.kind == .behind {
                    // Cut off for lagging (the daemon's bound on what waits for a subscriber):
                    // at an offered rate beyond what is delivered this is the measurement, not a
                    // failure. Counted; what it received so far stays counted.
                    mine.cutOff = true
                    if !attached { ready.signal() }
                    return
                }
                if frame.kind == .error {
                    fatalError("subscriber got \(frame.kind): \(String(decoding: frame.payload, as: UTF8.self))")
                }
                guard frame.kind == .events else { continue }
                if !attached {
                    attached = true
                    ready.signal()
                    continue
                }
                // Each write's value is {"n": <write number>}.
                forEachWriteNumber(in: frame.payload) { mine.record($0, at: now) }
                if mine.count == total { return }
            }
        }
        threads.append(thread)
        thread.start()
    }
    for _ in 0..<subscribers { ready.wait() }
    let writer = try NativeClient(path: path)
    let acks = FanoutReceipts(expected: total)
    let ackDone = DispatchSemaphore(value: 0)
    let ackThread = Thread {
        while acks.count < total, let frame = try? writer.receive() {
            let now = FanoutReceipts.now()
            if frame.kind == .error { fatalError("writer got an error: \(String(decoding: frame.payload, as: UTF8.self))") }
            // Write n is sent with request id n.
            guard frame.kind == .written else { continue }
            acks.record(Int(frame.requestID), at: now)
        }
        ackDone.signal()
    }
    let start = ContinuousClock.now
    let interval = Duration.seconds(1.0 / Double(rate))
    ackThread.start()
    for n in 0..<total {
        let due = start.advanced(by: interval * n)
        while ContinuousClock.now < due { Thread.sleep(forTimeInterval: max(0, seconds(due - ContinuousClock.now))) }
        try writer.send(Frame(kind: .write, requestID: UInt64(n), payload: Array(#"{"op":"set","path":"/feed/latest","value":{"n":\#(n)}}"#.utf8)))
    }
    ackDone.wait()
    _ = done.wait(timeout: .now() + 30)
    let elapsedSeconds = seconds(ContinuousClock.now - start)
    var fromAck: [Double] = []
    let received = receipts.reduce(0) { $0 + $1.count }
    for receipt in receipts { receipt.latencies(from: acks, into: &fromAck) }
    fromAck.sort()
    print("socket fan-out: \(total) writes at \(rate)/s, \(subscribers) subscriber connections each receiving every write, \(format(elapsedSeconds, 2)) s")
    let cutOff = receipts.filter(\.cutOff).count
    print("  events received \(received) of \(total * subscribers) (lost \(total * subscribers - received)), \(Int(Double(received) / elapsedSeconds)) events/s")
    if cutOff > 0 { print("  subscribers cut off for lagging (behind): \(cutOff) of \(subscribers)") }
    if !fromAck.isEmpty {
        print("  acknowledgement to receipt: p50 \(format(percentile(fromAck, 0.5))) us, p99 \(format(percentile(fromAck, 0.99))) us (negative: the event arrived before the writer's ack)")
    }
}


let arguments = CommandLine.arguments.dropFirst()
switch arguments.first {
case "idle": try await idle(rounds: arguments.dropFirst().first.flatMap { Int($0) } ?? 5)
case "fanout":
    let rest = Array(arguments.dropFirst())
    try await fanout(
        rate: rest.first.flatMap { Int($0) } ?? 2000, duration: rest.dropFirst().first.flatMap { Double($0) } ?? 10,
        listeners: rest.dropFirst(2).first.flatMap { Int($0) } ?? 100)
case "socket":
    let rest = Array(arguments.dropFirst())
    guard let path = rest.first else { fatalError("socket needs the daemon's socket path") }
    try socketFanout(
        path: path, rate: rest.dropFirst().first.flatMap { Int($0) } ?? 2000,
        duration: rest.dropFirst(2).first.flatMap { Double($0) } ?? 10, subscribers: rest.dropFirst(3).first.flatMap { Int($0) } ?? 100)
case "redis":
    let rest = Array(arguments.dropFirst())
    guard let address = rest.first else { fatalError("redis needs the server's HOST:PORT or unix socket path") }
    try redisFanout(
        address: address, rate: rest.dropFirst().first.flatMap { Int($0) } ?? 2000,
        duration: rest.dropFirst(2).first.flatMap { Double($0) } ?? 10, subscribers: rest.dropFirst(3).first.flatMap { Int($0) } ?? 100)
default:
    print("usage: EventProfile idle [rounds] | fanout [rate] [seconds] [listeners] | socket SOCKET [rate] [seconds] [subscribers]")
    print("       | redis HOST:PORT|SOCKET [rate] [seconds] [subscribers]")
}
