// Set-up shared by the storage suites: a fresh directory under the system's temporary directory
// per test, and a database opened there for a test's body, closed and removed after it.

import EddyStorage
import Foundation

/// A path under the temporary directory that does not exist yet.
func temporaryDirectory() -> String {
    FileManager.default.temporaryDirectory.appendingPathComponent("eddy-storage-\(UUID().uuidString)").path
}

/// Opens a database with `columnFamilies` (default options) in a fresh directory (`db.path`),
/// runs `body`, then closes the database and removes the directory, also when `body` throws.
func withDatabase<T>(_ columnFamilies: [String], _ body: (Database) throws -> T) throws -> T {
    let path = temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: path) }
    let db = try Database(path: path, columnFamilies: columnFamilies, options: StorageOptions())
    defer { db.close() }
    return try body(db)
}
