// A serial executor on a dispatch queue of its own, for test actors that block on purpose
// (to hold the actor busy): blocking one of Swift's cooperative threads instead would stall
// every other test's async work on a 2-core machine, whose pool has two.

import Dispatch

final class ThreadExecutor: SerialExecutor {
    private let queue: DispatchQueue

    init(label: String) {
        self.queue = DispatchQueue(label: label)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        self.queue.async { job.runSynchronously(on: self.asUnownedSerialExecutor()) }
    }
}
