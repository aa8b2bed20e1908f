// The socket fan-out of `EventProfile socket`, against Redis Streams instead of eddyd: one writer
// connection pipelining `XADD feed * n <n>` at `rate`, `subscribers` connections each looping on
// `XREAD BLOCK 0 COUNT 1000 STREAMS feed <last id>` and receiving every entry. Same harness and
// output as socketFanout, so the two can be compared in one run (scripts/event-bench.sh).

import FanoutReceipts
import Foundation

/// The XREAD of every subscriber: up to 1,000 entries after `id`, blocking until there is one.
func xread(after id: String) -> [String] { ["XREAD", "BLOCK", "0", "COUNT", "1000", "STREAMS", "feed", id] }

func redisFanout(address: String, rate: Int, duration: Double, subscribers: Int) throws {
    let total = Int(Double(rate) * duration)
    // A fresh stream with a sentinel entry: subscribers read after its id, so an entry added
    // before a subscriber's first XREAD arrives is still delivered (no `$` race).
    let control = try RESPClient(address: address)
    _ = try control.command(["DEL", "feed"])
    guard case .bulk(let startID?) = try control.command(["XADD", "feed", "*", "n", "start"]) else { fatalError("XADD of the sentinel entry gave no id") }
    var receipts: [FanoutReceipts] = []
    var threads: [Thread] = []
    let ready = DispatchSemaphore(value: 0)
    let done = DispatchGroup()
    for _ in 0..<subscribers {
        let client = try RESPClient(address: address)
        let mine = FanoutReceipts(expected: total)
        receipts.append(mine)
        done.enter()
        let thread = Thread {
            defer { done.leave() }
            do {
                try client.send(xread(after: startID))
                ready.signal()
                // An XREAD reply's bulk strings come in this order: the stream's name, then for
                // each entry its id, the field name "n" and the write number.
                var lastID: [UInt8] = []
                while true {
                    var position = -1
                    var now: Int64 = 0
                    let open = try client.receiveBulks { bytes in
                        position += 1
                        // The first bulk string is read once the reply has arrived.
                        guard position > 0 else { now = FanoutReceipts.now(); return }
                        switch (position - 1) % 3 {
                        case 0: lastID.removeAll(keepingCapacity: true); lastID.append(contentsOf: bytes)
                        case 2:
                            var n = 0
                            for byte in bytes { n = n * 10 + Int(byte &- 0x30) }
                            mine.record(n, at: now)
                        default: break
                        }
                    }
                    guard open else { fatalError("redis closed a subscriber connection after \(mine.count) entries") }
                    guard position >= 3 else { fatalError("XREAD BLOCK 0 returned no entries") }
                    if mine.count >= total { return }
                    try client.send(xread(after: String(decoding: lastID, as: UTF8.self)))
                }
            } catch {
                fatalError("subscriber failed: \(error)")
            }
        }
        threads.append(thread)
        thread.start()
    }
    for _ in 0..<subscribers { ready.wait() }
    // Sent is not yet blocked: wait until redis counts every subscriber as blocked in XREAD.
    let blockedBy = ContinuousClock.now.advanced(by: .seconds(30))
    while true {
        guard case .bulk(let info?) = try control.command(["INFO", "clients"]) else { fatalError("INFO clients gave no text") }
        let line = info.split(whereSeparator: \.isNewline).first { $0.hasPrefix("blocked_clients:") }
        if let line, let blocked = Int(line.dropFirst("blocked_clients:".count)), blocked >= subscribers { break }
        if ContinuousClock.now > blockedBy { fatalError("subscribers not all blocked in XREAD after 30 s: \(line ?? "no blocked_clients line")") }
        Thread.sleep(forTimeInterval: 0.001)
    }
    let writer = try RESPClient(address: address)
    let acks = FanoutReceipts(expected: total)
    let ackDone = DispatchSemaphore(value: 0)
    let ackThread = Thread {
        // Replies come in the order of the writes: the n-th is write n's.
        var n = 0
        while n < total {
            let reply: RESPValue?
            do { reply = try writer.receive() } catch { fatalError("writer's reply: \(error)") }
            guard let reply else { break }
            let now = FanoutReceipts.now()
            guard case .bulk(_?) = reply else { fatalError("XADD replied \(reply), expected the entry id") }
            acks.record(n, at: now)
            n += 1
        }
        ackDone.signal()
    }
    let start = ContinuousClock.now
    let interval = Duration.seconds(1.0 / Double(rate))
    ackThread.start()
    for n in 0..<total {
        let due = start.advanced(by: interval * n)
        while ContinuousClock.now < due { Thread.sleep(forTimeInterval: max(0, seconds(due - ContinuousClock.now))) }
        try writer.send(["XADD", "feed", "*", "n", String(n)])
    }
    ackDone.wait()
    _ = done.wait(timeout: .now() + 30)
    let elapsedSeconds = seconds(ContinuousClock.now - start)
    var fromAck: [Double] = []
    let received = receipts.reduce(0) { $0 + $1.count }
    for receipt in receipts { receipt.latencies(from: acks, into: &fromAck) }
    fromAck.sort()
    print("redis fan-out: \(total) writes at \(rate)/s, \(subscribers) subscriber connections each receiving every write, \(format(elapsedSeconds, 2)) s")
    print("  events received \(received) of \(total * subscribers) (lost \(total * subscribers - received)), \(Int(Double(received) / elapsedSeconds)) events/s")
    if !fromAck.isEmpty {
        print("  acknowledgement to receipt: p50 \(format(percentile(fromAck, 0.5))) us, p99 \(format(percentile(fromAck, 0.99))) us (negative: the event arrived before the writer's ack)")
    }
}
