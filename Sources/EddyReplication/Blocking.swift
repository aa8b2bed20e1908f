// Runs async engine calls from the follower's blocking threads (its socket loop, the bootstrap
// before the daemon serves): the call runs in a task and the calling thread waits for it.

import EddyModel
import Foundation
import Synchronization

enum Blocking {
    static func wait<T: Sendable>(_ body: @escaping @Sendable () async throws(EddyError) -> T) throws(EddyError) -> T {
        let done = DispatchSemaphore(value: 0)
        let outcome = Mutex<Result<T, EddyError>?>(nil)
        Task {
            do throws(EddyError) {
                let value = try await body()
                outcome.withLock { $0 = .success(value) }
            } catch {
                outcome.withLock { $0 = .failure(error) }
            }
            done.signal()
        }
        done.wait()
        return try outcome.withLock { $0 }!.get()
    }
}
