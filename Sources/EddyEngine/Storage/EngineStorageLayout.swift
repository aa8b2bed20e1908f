// How an engine's column families are tuned, for every place that opens one (the engine, a
// follower's snapshot restore), so a database is never opened with two different layouts.

import EddyStorage
import EddyTree

extension StorageOptions {
    /// The memtable of the index family. Index entries land at random positions (sort values,
    /// not time order), so each insert walks the skiplist from the top; a memtable a quarter
    /// the size of the others stays in the CPU's cache (32 MiB of L3 on the reference VM) and
    /// took 4-index pushes from 31,600 to 35,000/s at 64 writers (IndexQueryProfile push).
    /// The cost is four times as many flushes of that family.
    static let indexWriteBufferBytes = 16 << 20

    /// The options an engine's database opens with; the caller adds read-only mode and the
    /// shared block cache.
    static func engineLayout() -> StorageOptions {
        var storage = StorageOptions()
        // Index windows are read at random positions; their blocks must decompress fast.
        storage.lz4Families = [ColumnFamilies.index]
        storage.writeBufferBytesByFamily = [ColumnFamilies.index: Self.indexWriteBufferBytes]
        return storage
    }
}
