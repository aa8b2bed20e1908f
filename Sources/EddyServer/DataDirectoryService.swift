// Makes the data directory a ServiceLifecycle service: it runs until graceful shutdown, then
// drains every namespace's commit queue and closes RocksDB. Started before the HTTP server,
// so it shuts down after it (ServiceGroup stops services in reverse order).

import EddyEngine
import ServiceLifecycle

public struct DataDirectoryService: Service {
    let data: DataDirectory

    public init(data: DataDirectory) {
        self.data = data
    }

    public func run() async throws {
        try? await gracefulShutdown()  // throws only on cancellation, which also means stop
        self.data.close()
    }
}
