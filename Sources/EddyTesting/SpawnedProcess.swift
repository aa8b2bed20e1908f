// A child process started with posix_spawn, its standard output on a pipe and its standard
// error discarded or in a file: what tests start eddyd, eddy and etcd with. Not Foundation's `Process`:
// on Linux its run() reads /proc/self/fd with a struct copy that can read past glibc's buffer
// and crash (swift-corelibs-foundation #5472, in Swift 6.3.1), about one run in five of a
// suite that starts many daemons while others hold many descriptors open.
//
// The child gets standard output and error and no other descriptor of this process (it
// closes every one from 3 up before it runs). The pipe is also made close-on-exec, and children
// are started one at a time, so a child started by another thread never holds this one's write
// end (the reader would not see the end of the output).

import Foundation

public final class SpawnedProcess: @unchecked Sendable {
    // @unchecked: `exited` is only touched under `lock`; the rest never changes.
    public let pid: pid_t
    /// The read end of the child's standard output.
    public let output: FileHandle
    private let lock = NSLock()
    private var exited = false

    /// Held from the pipe's creation to the child's start.
    private static let spawning = NSLock()

    /// `errorPath`: where the child's standard error goes (appended to).
    public init(_ executable: String, _ arguments: [String], errorPath: String = "/dev/null") throws {
        Self.spawning.lock()
        defer { Self.spawning.unlock() }
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw SpawnError("pipe failed: errno \(errno)") }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, errorPath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        // Nothing else of this process reaches the child: a socket a test's client holds would
        // otherwise stay open in the child after the client closed it, and its server would
        // never see the connection end (an onDisconnect that never ran, a cut connection that
        // stayed up); NIO's sockets are not close-on-exec.
        Self.closeFrom3(&actions)
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        close(fds[1])
        guard status == 0 else {
            close(fds[0])
            throw SpawnError("cannot start \(executable): errno \(status)")
        }
        self.pid = pid
        self.output = FileHandle(fileDescriptor: fds[0], closeOnDealloc: true)
    }

    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 on; Swift's Glibc module does
    /// not declare it), looked up once.
    private static let addCloseFrom: AddCloseFrom? = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np")
        .map { unsafeBitCast($0, to: AddCloseFrom.self) }

    /// Has the child close every descriptor from 3 up: with glibc's closefrom action, else one
    /// close action per descriptor open now (under `spawning`).
    private static func closeFrom3(_ actions: inout posix_spawn_file_actions_t) {
        if let addCloseFrom = Self.addCloseFrom, addCloseFrom(&actions, 3) == 0 { return }
        let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for fd in open.compactMap({ Int32($0) }) where fd >= 3 && fcntl(fd, F_GETFD) >= 0 {
            posix_spawn_file_actions_addclose(&actions, fd)
        }
    }

    /// SIGSTOP, and returns once every thread of the child is stopped (state `T` in
    /// /proc/PID/task/*/stat), at most `seconds` later. kill() only queues the signal: one thread
    /// starts the group stop when it next runs, and on a loaded machine the others can go on
    /// for milliseconds meanwhile (answering a request sent right after kill(), say). Returns
    /// whether the child was seen stopped.
    @discardableResult
    public func pause(seconds: Double = 5) -> Bool {
        self.signal(SIGSTOP)
        let deadline = Date().addingTimeInterval(seconds)
        repeat {
            if self.isStopped { return true }
            usleep(1000)
        } while Date() < deadline
        return false
    }

    /// Whether every thread of the child is stopped now (SIGSTOP).
    public var isStopped: Bool {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(self.pid)/task")) ?? []
        guard !tasks.isEmpty else { return false }
        return tasks.allSatisfy { task in
            let stat = (try? String(contentsOfFile: "/proc/\(self.pid)/task/\(task)/stat", encoding: .utf8)) ?? ""
            // "tid (comm) S ...": the state follows the command's closing parenthesis.
            guard let close = stat.lastIndex(of: ")") else { return false }
            return stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).hasPrefix("T")
        }
    }

    /// False once the child has exited (and was reaped).
    public var isRunning: Bool {
        self.lock.lock()
        defer { self.lock.unlock() }
        if self.exited { return false }
        var status: Int32 = 0
        if waitpid(self.pid, &status, WNOHANG) == self.pid { self.exited = true }
        return !self.exited
    }

    public func signal(_ signal: Int32) {
        self.lock.lock()
        defer { self.lock.unlock() }
        if !self.exited { kill(self.pid, signal) }
    }

    /// Waits until the child has exited; its exit status (nil when a signal ended it, or when
    /// it was reaped before, by `isRunning`).
    @discardableResult
    public func wait() -> Int32? {
        self.lock.lock()
        defer { self.lock.unlock() }
        guard !self.exited else { return nil }
        var status: Int32 = 0
        while waitpid(self.pid, &status, 0) == -1, errno == EINTR {}
        self.exited = true
        return status & 0x7f == 0 ? (status >> 8) & 0xff : nil
    }
}

public struct SpawnError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
