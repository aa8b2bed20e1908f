// Keeps RocksDB from ever running the data volume out of space: before a group of local writes
// is applied, the free space of the volume (statvfs, about a microsecond) is compared with the
// reserve; below it the whole group is refused with `insufficientStorage` (HTTP 507) before
// anything is written, the engine stays healthy, reads go on, and writes resume by themselves
// once space is free again. (A write that RocksDB itself fails for lack of space stops the
// engine until a restart, and Debian's librocksdb, built with assertions, may even abort on it:
// the reserve is what keeps that from happening.) The reserve also leaves room for flushes and
// compactions, which need space to free space.

#if canImport(Glibc)
    import Glibc
#endif
import EddyModel

struct DiskSpaceReserve {
    let path: String
    let reserveBytes: UInt64

    /// Bytes an unprivileged writer may still use on the volume holding `path`; nil when the
    /// file system cannot say.
    static func availableBytes(at path: String) -> UInt64? {
        #if canImport(Glibc)
            var stats = statvfs()
            guard statvfs(path, &stats) == 0 else { return nil }
            return UInt64(stats.f_bavail) * UInt64(stats.f_frsize)
        #else
            return nil
        #endif
    }

    /// The refusal for a group of writes of about `groupBytes`, or nil when there is room.
    /// The group needs its own size twice over the reserve: once in the write-ahead log and
    /// once more when its memtable is flushed to a table file, so a large write cannot carry
    /// the volume through the reserve in one step.
    func refusal(groupBytes: Int) -> EddyError? {
        guard self.reserveBytes > 0, let available = Self.availableBytes(at: self.path) else { return nil }
        let needed = self.reserveBytes.addingReportingOverflow(2 * UInt64(max(0, groupBytes))).partialValue
        guard available < needed else { return nil }
        let what = available < self.reserveBytes
            ? "below the reserve of \(self.reserveBytes) (--disk-reserve-bytes)"
            : "too little for \(groupBytes) bytes of writes on top of the reserve of \(self.reserveBytes) (--disk-reserve-bytes)"
        return EddyError(
            .insufficientStorage,
            "the data volume has \(available) bytes free, \(what); the write was not applied. Writes resume by themselves once space is freed on the volume; reads keep working")
    }
}
