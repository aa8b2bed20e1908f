// A task executor that runs jobs on one NIO event loop (`withTaskExecutorPreference`). A task
// that waits for a bell, reads a little and writes to a channel of that loop then stays on the
// loop's thread: the write happens where it is made, and its completion resumes the task
// without a thread hop. A job enqueued from another thread wakes the loop once; from the loop
// itself it is queued behind the loop's current work. Jobs run in the order they are enqueued.
//
// Code run this way must not block: the loop serves every other channel assigned to it.

import NIOCore

final class EventLoopTaskExecutor: TaskExecutor {
    let eventLoop: any EventLoop

    init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        self.eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
