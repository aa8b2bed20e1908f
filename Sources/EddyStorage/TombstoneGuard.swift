// What a guarded `Iterator` needs: how many deleted or hidden records one seek or step may skip
// before RocksDB stops it (`max_skippable_internal_keys`, status Incomplete), how to recognise
// that stop, and the fallback iterator that redoes the move (owning its read options, which
// hold its upper bound). See Iterator.swift.

import CRocksDB
import Glibc

public enum TombstoneGuard {
    /// Skips beyond this stop a guarded move (tens of microseconds of walking): far more than a
    /// live subtree's overwritten versions, far less than a removed subtree's tombstones.
    public static let skippedKeysMax: UInt64 = 1_000

    /// A fallback iterator, the read options it reads with and the bytes of their upper bound
    /// (RocksDB's C API keeps a pointer to them, not a copy: they live as long as the iterator).
    final class Fallback {
        let iterator: OpaquePointer
        private let readOptions: FallbackReadOptions

        init(iterator: OpaquePointer, readOptions: FallbackReadOptions) {
            self.iterator = iterator
            self.readOptions = readOptions
        }

        deinit {
            rocksdb_iter_destroy(self.iterator)  // before the options and bound it reads
        }
    }

    /// Read options for a fallback: no skip limit, bounded above by `bound` when given.
    final class FallbackReadOptions {
        let options: OpaquePointer
        private let bound: UnsafeMutableBufferPointer<CChar>?

        init(bound: [UInt8]?) {
            self.options = rocksdb_readoptions_create()!
            if let bound {
                let copy = UnsafeMutableBufferPointer<CChar>.allocate(capacity: max(bound.count, 1))
                for (i, byte) in bound.enumerated() { copy[i] = CChar(bitPattern: byte) }
                self.bound = copy
                rocksdb_readoptions_set_iterate_upper_bound(self.options, copy.baseAddress, bound.count)
            } else {
                self.bound = nil
            }
        }

        deinit {
            rocksdb_readoptions_destroy(self.options)
            self.bound?.deallocate()
        }
    }

    /// Read options that stop a move after `skippedKeysMax` skipped records.
    static func makeGuardedReadOptions(skippedKeysMax: UInt64) -> OpaquePointer {
        let options = rocksdb_readoptions_create()!
        rocksdb_readoptions_set_max_skippable_internal_keys(options, skippedKeysMax)
        return options
    }

    /// The smallest key above every key that starts with `prefix` (nil when there is none: an
    /// empty prefix or one of only 0xFF bytes).
    public static func end(of prefix: [UInt8]) -> [UInt8]? {
        var end = prefix
        while let last = end.last {
            if last < 0xFF {
                end[end.count - 1] = last + 1
                return end
            }
            end.removeLast()
        }
        return nil
    }

    /// True when the iterator's last move stopped for too many skipped records.
    static func stoppedForSkips(_ iterator: OpaquePointer) -> Bool {
        var error: UnsafeMutablePointer<CChar>? = nil
        rocksdb_iter_get_error(iterator, &error)
        guard let error else { return false }
        defer { rocksdb_free(error) }
        return strncmp(error, "Result incomplete", 17) == 0
    }
}
