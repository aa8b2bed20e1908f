// Where `eddy export --out PATH` writes. A regular file (or a new one) is written as
// PATH.partial and renamed over PATH when complete, so a PATH that exists is whole. Renaming
// over anything else would replace it: a symbolic link is followed (its target is written the
// same way, next to it), a device, pipe or socket (`/dev/null`, a FIFO a reader waits on) is
// written directly, and a directory is refused.

import EddyModel
import Foundation

struct ExportDestination {
    /// The path written (a link's target).
    let path: String
    /// The file written first and renamed over `path`; nil when `path` is written directly.
    let partial: String?

    init(_ out: String) throws(EddyError) {
        var path = out
        var info = stat()
        if lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFLNK {
            guard let resolved = realpathOrTarget(path) else {
                throw EddyError(.invalidArgument, "--out \(out) is a symbolic link that cannot be resolved")
            }
            path = resolved
        }
        guard stat(path, &info) == 0 else {
            self.path = path
            self.partial = path + ".partial"  // a new file
            return
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG:
            self.path = path
            self.partial = path + ".partial"
        case S_IFDIR:
            throw EddyError(.invalidArgument, "--out \(out) is a directory; give a file name")
        default:
            self.path = path
            self.partial = nil
        }
    }
}

/// The path `link` points to: its resolved path, or for a dangling link the target it names
/// (relative to the link's directory).
private func realpathOrTarget(_ link: String) -> String? {
    if let resolved = realpath(link, nil) {
        defer { free(resolved) }
        return String(cString: resolved)
    }
    guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: link) else { return nil }
    if target.hasPrefix("/") { return target }
    return (link as NSString).deletingLastPathComponent + "/" + target
}
