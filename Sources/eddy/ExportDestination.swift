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
        // `attributesOfItem` does not follow a link: its type is the link's own.
        if Self.type(of: path) == .typeSymbolicLink {
            guard let resolved = realpathOrTarget(path) else {
                throw EddyError(.invalidArgument, "--out \(out) is a symbolic link that cannot be resolved")
            }
            path = resolved
        }
        switch Self.type(of: path) {
        case nil, .typeRegular?:
            self.path = path
            self.partial = path + ".partial"  // a new file, or one replaced whole
        case .typeDirectory?:
            throw EddyError(.invalidArgument, "--out \(out) is a directory; give a file name")
        default:
            self.path = path
            self.partial = nil
        }
    }

    /// What is at `path` (nil: nothing), without following a link.
    private static func type(of path: String) -> FileAttributeType? {
        (try? FileManager.default.attributesOfItem(atPath: path))?[.type] as? FileAttributeType
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
