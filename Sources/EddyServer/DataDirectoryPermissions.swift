// The data directory holds the whole database and its write-ahead log: only the daemon's user
// should read it. eddyd makes it 0700 (and its files 0600, by its umask); an existing directory
// that others can read or enter is reported at start, with the command that fixes it, and left
// as it is (the operator may share it on purpose).

import Foundation
import Logging

enum DataDirectoryPermissions {
    static func warnIfOpen(_ path: String, logger: Logger) {
        // Made by DataDirectory, 0700.
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
            let permissions = (attributes[.posixPermissions] as? NSNumber)?.uint16Value
        else { return }
        let mode = permissions & 0o777
        guard mode & 0o077 != 0 else { return }
        logger.warning(
            "the data directory is open to other users of this machine (they can read the database and its log); run chmod 700 on it",
            metadata: ["eddy.data": "\(path)", "eddy.mode": "\(String(mode, radix: 8))"])
    }
}
