// EddyClient figures (issue 12), each against the same operation through REST with
// async-http-client, one measurement per process so that the script can alternate them:
//
//   ClientProfile rtt    unix|tcp|rest  URLS   set round trip, sequential: p50/p99 in µs
//   ClientProfile push   unix|tcp|rest  URLS   durable pushes/s from one client: pipelined on the
//                                              native protocol, 64 requests in flight over REST
//   ClientProfile event  unix|tcp|rest  URLS   another client's write to this observer's callback:
//                                              p50/p99 in µs (the write includes its fsync)
//   ClientProfile memory unix           URLS   client bytes per active observer (10,000 of them)
//   ClientProfile observed unix|tcp|http URLS  pushes made at once under a childAdded and a value
//                                              observer of their list: pushes/s to the last
//                                              completion and the last childAdded (EddyClient on
//                                              every transport; `http` is its REST/SSE fallback)
//   ClientProfile idle unix|tcp|http     URLS   the client process's CPU while 10 observers (each
//                                              its own subscription) wait and nothing arrives:
//                                              cores busy over 3 s (`--count N` observers)
//
// URLS: --socket PATH --tcp HOST:PORT --http http://HOST:PORT. Prints one JSON line.

import AsyncHTTPClient
import Dispatch
import EddyClient
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

struct Options {
    var figure = ""
    var transport = ""
    var socket = ""
    var tcp = ""
    var http = ""
    var count = 0

    static let usage =
        "usage: ClientProfile rtt|push|event|memory|observed|idle unix|tcp|rest|http --socket PATH --tcp HOST:PORT --http http://HOST:PORT [--count N]"

    init() {
        var args = Array(CommandLine.arguments.dropFirst())
        guard args.count >= 2, args.count % 2 == 0 else { Self.fail("a figure, a transport and option values are needed") }
        self.figure = args.removeFirst()
        self.transport = args.removeFirst()
        while !args.isEmpty {
            let name = args.removeFirst()
            let value = args.removeFirst()
            switch name {
            case "--socket": self.socket = value
            case "--tcp": self.tcp = value
            case "--http": self.http = value
            case "--count":
                guard let count = Int(value), count > 0 else { Self.fail("--count \(value) is not a positive integer") }
                self.count = count
            default: Self.fail("unknown option \(name)")
            }
        }
    }

    static func fail(_ reason: String) -> Never {
        FileHandle.standardError.write(Data("ClientProfile: \(reason)\n\(Self.usage)\n".utf8))
        exit(2)
    }

    func url(_ transport: String, alternate: Bool = false) -> String {
        switch transport {
        case "unix": return "eddy+unix://" + self.socket
        case "tcp": return "eddy://" + (alternate ? self.tcp.replacingOccurrences(of: "127.0.0.1", with: "localhost") : self.tcp)
        default: return self.http + "?transport=rest"  // the REST and SSE fallback, not the native protocol on that port
        }
    }
}

let options = Options()
let queue = DispatchQueue(label: "client-profile")
let run = "r\(UInt32.random(in: 0...UInt32.max))"

func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
}

func database(_ url: String) -> Database {
    let database = Database.database(url: url)
    database.callbackQueue = queue
    return database
}

func rest() -> HTTPClient {
    var configuration = HTTPClient.Configuration()
    configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 64)
    return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
}

func restWrite(_ client: HTTPClient, _ method: HTTPMethod, _ path: String, _ json: String) async throws {
    var request = HTTPClientRequest(url: options.http + path + ".json?print=silent")
    request.method = method
    request.body = .bytes(ByteBuffer(string: json))
    let response = try await client.execute(request, timeout: .seconds(60))
    guard response.status.code / 100 == 2 else { throw ProfileError("REST \(method) \(path): \(response.status)") }
    _ = try await response.body.collect(upTo: 1 << 20)
}

struct ProfileError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

func emit(_ fields: [String: Any]) {
    var all = fields
    all["figure"] = options.figure
    all["transport"] = options.transport
    let data = try! JSONSerialization.data(withJSONObject: all, options: [.sortedKeys])
    print(String(decoding: data, as: UTF8.self))
}

// MARK: Figures

func roundTrip() async throws {
    let count = options.count > 0 ? options.count : 2000
    var samples: [Double] = []
    if options.transport == "rest" {
        let client = rest()
        for i in 0..<(count + 200) {
            let start = now()
            try await restWrite(client, .PUT, "/bench/\(run)/rtt", "\(i)")
            if i >= 200 { samples.append(Double(now() - start) / 1000) }
        }
        try await client.shutdown()
    } else {
        let ref = database(options.url(options.transport)).reference().child("bench/\(run)/rtt")
        for i in 0..<(count + 200) {
            let start = now()
            _ = try await ref.setValue(i)
            if i >= 200 { samples.append(Double(now() - start) / 1000) }
        }
    }
    emit(["p50_us": percentile(samples, 0.5), "p99_us": percentile(samples, 0.99), "count": samples.count])
}

func pushes() async throws {
    if options.transport == "rest" {
        let count = options.count > 0 ? options.count : 10_000
        let client = rest()
        let start = now()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<64 {
                group.addTask {
                    for i in stride(from: worker, to: count, by: 64) {
                        try await restWrite(client, .POST, "/bench/\(run)/push", "{\"n\":\(i)}")
                    }
                }
            }
            try await group.waitForAll()
        }
        let seconds = Double(now() - start) / 1e9
        try await client.shutdown()
        emit(["pushes_per_s": Double(count) / seconds, "count": count, "in_flight": 64])
        return
    }
    let count = options.count > 0 ? options.count : 50_000
    let list = database(options.url(options.transport)).reference().child("bench/\(run)/push")
    _ = try await list.child("warm").setValue(true)
    let start = now()
    let failures = await pushAtOnce(count, to: list)
    let seconds = Double(now() - start) / 1e9
    emit(["pushes_per_s": Double(count) / seconds, "count": count, "failures": failures])
}

/// Makes `count` pushes into `list` without waiting, each with a completion block; returns once
/// every one is answered, with the number that failed.
func pushAtOnce(_ count: Int, to list: DatabaseReference) async -> Int {
    let failures = Atomic<Int>(0)
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
        let left = Atomic<Int>(count)
        for i in 0..<count {
            list.childByAutoId().setValue(["n": i]) { error, _ in
                if error != nil { failures.add(1, ordering: .relaxed) }
                if left.subtract(1, ordering: .relaxed).newValue == 0 { done.resume() }
            }
        }
    }
    return failures.load(ordering: .relaxed)
}

/// Pushes made without waiting under observers of their list (the local events of each write,
/// then its answer and the server's events): what an app's burst of writes to a list it shows
/// costs the client. Each change recomputes only the children it touches (`QueryView`).
func observedPushes() async throws {
    let count = options.count > 0 ? options.count : (options.transport == "http" ? 2_000 : 10_000)
    let list = database(options.url(options.transport)).reference().child("bench/\(run)/observed")
    let loaded = Arrivals()
    let added = Atomic<Int>(0)
    list.observe(.value) { _ in loaded.arrived("value") }
    list.observe(.childAdded) { _ in
        if added.add(1, ordering: .relaxed).newValue == count { loaded.arrived("added") }
    }
    _ = await loaded.wait("value")
    let start = now()
    let failures = await pushAtOnce(count, to: list)
    _ = await loaded.wait("added")
    let seconds = Double(now() - start) / 1e9
    emit(["pushes_per_s": Double(count) / seconds, "count": count, "failures": failures])
}

/// Waits for `key` to be seen by the observer.
final class Arrivals: Sendable {
    private let state = Mutex<(seen: [String: UInt64], waiting: [String: CheckedContinuation<UInt64, Never>])>(([:], [:]))

    func arrived(_ key: String) {
        let t = now()
        let waiter = self.state.withLock { state -> CheckedContinuation<UInt64, Never>? in
            if let waiter = state.waiting.removeValue(forKey: key) { return waiter }
            state.seen[key] = t
            return nil
        }
        waiter?.resume(returning: t)
    }

    func wait(_ key: String) async -> UInt64 {
        await withCheckedContinuation { continuation in
            let seen = self.state.withLock { state -> UInt64? in
                if let t = state.seen.removeValue(forKey: key) { return t }
                state.waiting[key] = continuation
                return nil
            }
            if let seen { continuation.resume(returning: seen) }
        }
    }
}

func eventLatency() async throws {
    let count = options.count > 0 ? options.count : 1000
    let path = "bench/\(run)/events"
    let arrivals = Arrivals()
    var samples: [Double] = []
    if options.transport == "rest" {
        let client = rest()
        var request = HTTPClientRequest(url: options.http + "/" + path + ".json")
        request.headers.add(name: "Accept", value: "text/event-stream")
        let response = try await client.execute(request, timeout: .hours(1))
        let ready = Arrivals()
        let reader = Task {
            var pending = ""
            for try await buffer in response.body {
                pending += String(buffer: buffer)
                while let range = pending.range(of: "\n\n") {
                    let block = pending[..<range.lowerBound]
                    pending.removeSubrange(..<range.upperBound)
                    guard block.hasPrefix("event: put"), let data = block.range(of: "data: {\"path\":\"/") else { continue }
                    let rest = block[data.upperBound...]
                    if rest.hasPrefix("\"") { ready.arrived("ready"); continue }  // the first put, at "/"
                    if let quote = rest.firstIndex(of: "\"") { arrivals.arrived(String(rest[..<quote])) }
                }
            }
        }
        _ = await ready.wait("ready")
        for i in 0..<(count + 50) {
            let start = now()
            try await restWrite(client, .PUT, "/\(path)/k\(i)", "\(i)")
            let t = await arrivals.wait("k\(i)")
            if i >= 50 { samples.append(Double(t - start) / 1000) }
        }
        reader.cancel()
        try? await client.shutdown()
    } else {
        let observer = database(options.url(options.transport)).reference().child(path)
        let ready = Arrivals()
        observer.observe(.value) { _ in ready.arrived("ready") }
        observer.observe(.childAdded) { snapshot in arrivals.arrived(snapshot.key) }
        _ = await ready.wait("ready")
        // Another client: the TCP listener under a second name (one Database per URL).
        let writer = database(options.url("tcp", alternate: true)).reference().child(path)
        for i in 0..<(count + 50) {
            let start = now()
            _ = try await writer.child("k\(i)").setValue(i)
            let t = await arrivals.wait("k\(i)")
            if i >= 50 { samples.append(Double(t - start) / 1000) }
        }
    }
    emit(["p50_us": percentile(samples, 0.5), "p99_us": percentile(samples, 0.99), "count": samples.count])
}

func residentBytes() -> Int {
    let text = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8)) ?? "0 0"
    return (Int(text.split(separator: " ")[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// `count` `.value` observers, of `root`'s children o0, o1, ..., each its own subscription, once
/// every one has had its first value.
func observeEach(_ count: Int, under root: DatabaseReference) async -> [(DatabaseReference, DatabaseHandle)] {
    let ready = Arrivals()
    let left = Atomic<Int>(count)
    var handles: [(DatabaseReference, DatabaseHandle)] = []
    for i in 0..<count {
        let ref = root.child("o\(i)")
        handles.append((ref, ref.observe(.value) { _ in if left.subtract(1, ordering: .relaxed).newValue == 0 { ready.arrived("all") } }))
    }
    _ = await ready.wait("all")
    return handles
}

func memory() async throws {
    let count = options.count > 0 ? options.count : 10_000
    let root = database(options.url(options.transport)).reference().child("bench/\(run)/memory")
    _ = try await root.child("warm").setValue(true)
    try await Task.sleep(for: .milliseconds(200))
    let before = residentBytes()
    let handles = await observeEach(count, under: root)
    try await Task.sleep(for: .milliseconds(200))
    let after = residentBytes()
    emit(["bytes_per_observer": Double(after - before) / Double(count), "observers": count, "rss_before": before, "rss_after": after])
    for (ref, handle) in handles { ref.removeObserver(withHandle: handle) }
}

/// User and system CPU seconds of this process so far.
func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

func idleObservers() async throws {
    let count = options.count > 0 ? options.count : 10
    let seconds = 3.0
    let root = database(options.url(options.transport)).reference().child("bench/\(run)/idle")
    let handles = await observeEach(count, under: root)
    try await Task.sleep(for: .milliseconds(500))  // the streams settle
    let before = processCPUSeconds()
    try await Task.sleep(for: .seconds(seconds))
    let cpu = processCPUSeconds() - before
    emit(["cores_busy": cpu / seconds, "cpu_seconds": cpu, "seconds": seconds, "observers": count])
    for (ref, handle) in handles { ref.removeObserver(withHandle: handle) }
}

switch options.figure {
case "rtt": try await roundTrip()
case "push": try await pushes()
case "event": try await eventLatency()
case "memory": try await memory()
case "observed": try await observedPushes()
case "idle": try await idleObservers()
default: Options.fail("unknown figure \(options.figure)")
}
exit(0)
