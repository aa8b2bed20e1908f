// Replication figures through running daemons (issue 5), driven by scripts/replication-bench.sh:
//   load SOCKET SECONDS WRITERS   WRITERS connections to a leader's native socket, each writing
//                                 small durable pushes one after the other for SECONDS: writes/s
//                                 (the leader's durable write throughput with whatever followers
//                                 are attached).
//   fanout LEADER RATE SECONDS SUBSCRIBERS FOLLOWER...
//                                 one writer pipelining RATE writes/s to LEADER's /feed/latest;
//                                 SUBSCRIBERS connections on each FOLLOWER socket, each
//                                 subscribed to /feed/latest: events received and lost, events/s,
//                                 latency from the leader's acknowledgement to each receipt.
//                                 FANOUT_SLOW=1 also lists the first subscriber's receipts over
//                                 20 ms late (when acknowledged, how late): stalls show as runs.
//   consume REPLICATION NATIVE NAME
//                                 a stand-in follower that costs the leader exactly what a real
//                                 one does (hello, every entry streamed, an `applied` ack per
//                                 frame) but applies nothing, so on a small machine the leader's
//                                 log-server cost can be measured apart from a co-located
//                                 follower's own CPU. Starts after the leader's newest entry (read
//                                 with a `status` request on NATIVE); runs until killed.
// NATIVE, LEADER, FOLLOWER and SOCKET are native-protocol sockets (`<data>/eddyd.sock`);
// REPLICATION is a leader's `<data>/replication.sock`.

import EddyModel
import EddyProtocol
import FanoutReceipts
import Foundation
import Synchronization

/// CPU this process has used (user + system), in milliseconds.
func cpuMilliseconds() -> Int {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    let user = Int(usage.ru_utime.tv_sec) * 1000 + Int(usage.ru_utime.tv_usec) / 1000
    return user + Int(usage.ru_stime.tv_sec) * 1000 + Int(usage.ru_stime.tv_usec) / 1000
}

func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }
func percentile(_ sorted: [Double], _ f: Double) -> Double { sorted[min(max(Int((f * Double(sorted.count)).rounded(.up)) - 1, 0), sorted.count - 1)] }
func format(_ x: Double, _ d: Int = 1) -> String { String(format: "%.\(d)f", x) }

/// WRITERS connections, each with one durable push in flight at a time, all driven by one thread
/// that waits on their sockets with poll(2), as redis-benchmark drives its clients with one epoll
/// thread. A thread per writer (before 2026-11-26) woke 64 blocked threads per round of
/// acknowledgements; on two cores shared with the daemon their context switches cost as much CPU
/// as the writes themselves, and the peer's driver paid no such cost. LOAD_THREADS=1 brings that
/// driver back, to compare.
func load(socket: String, duration: Double, writers: Int) throws {
    if ProcessInfo.processInfo.environment["LOAD_THREADS"] == "1" {
        return try loadWithThreadPerWriter(socket: socket, duration: duration, writers: writers)
    }
    let clients = try (0..<writers).map { _ throws(ProtocolError) in try NativeClient(path: socket) }
    let payloads = (0..<writers).map { w in Array(#"{"op":"push","path":"/load/w\#(w)","value":{"n":1,"s":"small"}}"#.utf8) }
    var sockets = clients.map { pollfd(fd: $0.fileDescriptor, events: Int16(POLLIN), revents: 0) }
    var counts = Array(repeating: 0, count: writers)
    let start = ContinuousClock.now
    let end = start.advanced(by: .milliseconds(Int(duration * 1000)))
    for w in 0..<writers { try clients[w].send(Frame(kind: .write, requestID: 0, payload: payloads[w])) }
    var open = writers
    while open > 0 {
        let ready = poll(&sockets, nfds_t(sockets.count), 1000)
        if ready < 0 && errno == EINTR { continue }
        guard ready >= 0 else { fatalError("poll failed: \(String(cString: strerror(errno)))") }
        for i in sockets.indices where sockets[i].fd >= 0 && sockets[i].revents != 0 {
            var answered = 0
            var refusal: String?
            let more = try clients[i].receiveReady { frame in
                if frame.kind == .written { answered += 1 } else { refusal = "\(frame.kind): \(String(decoding: frame.payload, as: UTF8.self))" }
            }
            if let refusal { fatalError("a writer failed: \(refusal)") }
            guard more else { fatalError("a writer failed: the daemon closed the connection") }
            guard answered > 0 else { continue }
            counts[i] += answered
            if ContinuousClock.now < end {
                try clients[i].send(Frame(kind: .write, requestID: UInt64(counts[i]), payload: payloads[i]))
            } else {
                sockets[i].fd = -1  // poll skips negative descriptors
                open -= 1
            }
        }
    }
    let elapsed = seconds(ContinuousClock.now - start)
    let total = counts.reduce(0, +)
    print("load: \(writers) writers, \(total) durable writes in \(format(elapsed, 2)) s: \(Int(Double(total) / elapsed)) writes/s")
}

/// The driver before 2026-11-26: a blocked thread per writer.
func loadWithThreadPerWriter(socket: String, duration: Double, writers: Int) throws {
    let counts = Mutex<[Int]>(Array(repeating: 0, count: writers))
    let failures = Mutex<[String]>([])
    let group = DispatchGroup()
    let start = ContinuousClock.now
    let end = start.advanced(by: .milliseconds(Int(duration * 1000)))
    for w in 0..<writers {
        let client = try NativeClient(path: socket)
        group.enter()
        Thread {
            defer { group.leave() }
            var n = 0
            let payload = Array(#"{"op":"push","path":"/load/w\#(w)","value":{"n":1,"s":"small"}}"#.utf8)
            while ContinuousClock.now < end {
                do {
                    try client.send(Frame(kind: .write, requestID: UInt64(n), payload: payload))
                    guard let frame = try client.receive() else { throw ProtocolError("the daemon closed the connection") }
                    guard frame.kind == .written else { throw ProtocolError(String(decoding: frame.payload, as: UTF8.self)) }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                    return
                }
                n += 1
            }
            counts.withLock { $0[w] = n }
        }.start()
    }
    group.wait()
    let elapsed = seconds(ContinuousClock.now - start)
    if let failure = failures.withLock({ $0.first }) { fatalError("a writer failed: \(failure)") }
    let total = counts.withLock { $0.reduce(0, +) }
    print("load: \(writers) writers, \(total) durable writes in \(format(elapsed, 2)) s: \(Int(Double(total) / elapsed)) writes/s")
}

/// One follower's subscribers, read by one thread that waits on all their sockets with poll(2).
/// A thread per subscriber (as before 2026-11-26) woke 200 threads per write, and their context
/// switches took CPU from the daemons being measured on the same two cores; one wake-up here
/// reads every subscriber that is ready. Returns when every subscriber got `total` writes, was
/// cut off or closed, or `stop` is set.
func receiveFanout(clients: [NativeClient], receipts: [FanoutReceipts], total: Int, ready: DispatchSemaphore, stop: borrowing Atomic<Bool>) {
    var sockets = clients.map { pollfd(fd: $0.fileDescriptor, events: Int16(POLLIN), revents: 0) }
    var attached = Array(repeating: false, count: clients.count)
    var open = clients.count
    func finish(_ i: Int) {
        if !attached[i] {
            attached[i] = true
            ready.signal()
        }
        sockets[i].fd = -1  // poll skips negative descriptors
        open -= 1
    }
    while open > 0, !stop.load(ordering: .relaxed) {
        guard poll(&sockets, nfds_t(sockets.count), 100) > 0 else { continue }
        for i in sockets.indices where sockets[i].fd >= 0 && sockets[i].revents != 0 {
            let mine = receipts[i]
            var finished = false
            let more = (try? clients[i].receiveReady { frame in
                let now = FanoutReceipts.now()
                if frame.kind == .error {
                    fatalError("subscriber got \(frame.kind): \(String(decoding: frame.payload, as: UTF8.self))")
                }
                if frame.kind == .behind {
                    // Cut off for lagging (the follower is saturated): counted, not fatal.
                    mine.cutOff = true
                    finished = true
                    return
                }
                guard frame.kind == .events else { return }
                if !attached[i] {
                    attached[i] = true
                    ready.signal()
                    return
                }
                // Each write's value is {"n": <write number>}.
                forEachWriteNumber(in: frame.payload) { mine.record($0, at: now) }
                if mine.count == total { finished = true }
            }) ?? false
            if finished || !more { finish(i) }
        }
    }
}

func fanout(leader: String, rate: Int, duration: Double, subscribers: Int, followers: [String]) throws {
    let total = Int(Double(rate) * duration)
    var receipts: [FanoutReceipts] = []
    let ready = DispatchSemaphore(value: 0)
    let done = DispatchGroup()
    let stop = Atomic<Bool>(false)
    for follower in followers {
        var clients: [NativeClient] = []
        var mine: [FanoutReceipts] = []
        for _ in 0..<subscribers {
            let client = try NativeClient(path: follower)
            try client.send(Frame(kind: .subscribe, requestID: 1, payload: fanoutSubscribePayload))
            clients.append(client)
            mine.append(FanoutReceipts(expected: total))
        }
        receipts += mine
        done.enter()
        Thread { [clients, mine] in
            defer { done.leave() }
            receiveFanout(clients: clients, receipts: mine, total: total, ready: ready, stop: stop)
        }.start()
    }
    for _ in 0..<(subscribers * followers.count) { ready.wait() }
    let writer = try NativeClient(path: leader)
    let acks = FanoutReceipts(expected: total)
    let ackDone = DispatchSemaphore(value: 0)
    Thread {
        while acks.count < total, let frame = try? writer.receive() {
            let now = FanoutReceipts.now()
            if frame.kind == .error { fatalError("writer got an error: \(String(decoding: frame.payload, as: UTF8.self))") }
            // Write n is sent with request id n.
            guard frame.kind == .written else { continue }
            acks.record(Int(frame.requestID), at: now)
        }
        ackDone.signal()
    }.start()
    let start = ContinuousClock.now
    let startCPU = cpuMilliseconds()
    let startReceiptClock = FanoutReceipts.now()
    let interval = Duration.seconds(1.0 / Double(rate))
    for n in 0..<total {
        let due = start.advanced(by: interval * n)
        while ContinuousClock.now < due { Thread.sleep(forTimeInterval: max(0, seconds(due - ContinuousClock.now))) }
        try writer.send(Frame(kind: .write, requestID: UInt64(n), payload: Array(#"{"op":"set","path":"/feed/latest","value":{"n":\#(n)}}"#.utf8)))
    }
    ackDone.wait()
    _ = done.wait(timeout: .now() + 30)
    stop.store(true, ordering: .relaxed)
    let elapsed = seconds(ContinuousClock.now - start)
    let harnessCPU = cpuMilliseconds() - startCPU
    var fromAck: [Double] = []
    let received = receipts.reduce(0) { $0 + $1.count }
    for receipt in receipts { receipt.latencies(from: acks, into: &fromAck) }
    if ProcessInfo.processInfo.environment["FANOUT_SLOW"] != nil {
        var slow: [(Double, Double)] = []
        let startNanoseconds = Double(startReceiptClock)
        for receipt in receipts.prefix(1) {
            for n in 0..<total where receipt.nanoseconds[n] != 0 && acks.nanoseconds[n] != 0 {
                let late = receipt.nanoseconds[n] - acks.nanoseconds[n]
                if late > 20_000_000 { slow.append(((Double(acks.nanoseconds[n]) - startNanoseconds) / 1e9, Double(late) / 1e6)) }
            }
        }
        slow.sort { $0.0 < $1.0 }
        print("slow (ack s since start, ms late): " + slow.map { "\(format($0.0, 3)):\(format($0.1, 1))" }.joined(separator: " "))
    }
    fromAck.sort()
    let expected = total * subscribers * followers.count
    print("follower fan-out: \(total) writes at \(rate)/s to the leader, \(followers.count) followers x \(subscribers) subscribers, \(format(elapsed, 2)) s")
    let cutOff = receipts.count { $0.cutOff }
    print("  events received \(received) of \(expected) (lost \(expected - received)), \(Int(Double(received) / elapsed)) events/s")
    if cutOff > 0 { print("  subscribers cut off for lagging behind (saturated): \(cutOff) of \(receipts.count)") }
    if !fromAck.isEmpty {
        print("  leader acknowledgement to follower-subscriber receipt: p50 \(format(percentile(fromAck, 0.5))) us, p99 \(format(percentile(fromAck, 0.99))) us")
    }
    print("  CPU used by this harness during the run: \(harnessCPU) ms")
}

func consume(replication: String, native: String, name: String) throws {
    let status = try NativeClient(path: native)
    try status.send(Frame(kind: .status, requestID: 1, payload: Array("{}".utf8)))
    guard let answer = try status.receive(), answer.kind == .value else { fatalError("no status from \(native)") }
    let last = try JSONParser.parse(answer.payload)["value"]["last"]
    let client = try NativeClient(path: replication)
    let hello: Value = .object([
        "protocol": .number(Double(Frame.replicationProtocolVersion)), "ns": .string("default"), "follower": .string(name), "databaseID": .null, "lastApplied": last,
    ])
    try client.send(Frame(kind: .hello, requestID: 0, payload: JSONWriter.bytes(hello)))
    while let frame = try client.receive() {
        switch frame.kind {
        case .entries:
            guard let id = try ReplicatedEntries.decode(frame.payload).last?.id else { continue }
            try client.send(Frame(kind: .applied, requestID: 0, payload: JSONWriter.bytes(.object(["applied": .string(id)]))))
        case .refused:
            fatalError("the leader refused the consumer: \(String(decoding: frame.payload, as: UTF8.self))")
        default:
            continue
        }
    }
}

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "load" where arguments.count >= 2:
    try load(socket: arguments[1], duration: arguments.count > 2 ? Double(arguments[2])! : 5, writers: arguments.count > 3 ? Int(arguments[3])! : 64)
case "fanout" where arguments.count >= 6:
    try fanout(
        leader: arguments[1], rate: Int(arguments[2])!, duration: Double(arguments[3])!, subscribers: Int(arguments[4])!,
        followers: Array(arguments[5...]))
case "consume" where arguments.count >= 4:
    try consume(replication: arguments[1], native: arguments[2], name: arguments[3])
default:
    print("usage: ReplicationProfile load SOCKET [SECONDS] [WRITERS] | fanout LEADER RATE SECONDS SUBSCRIBERS FOLLOWER...")
    print("       | consume REPLICATION NATIVE NAME")
}
