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

    /// The data block size of the index family. An index entry carries its covered child (about
    /// 100 bytes for a small one), so a 4 KiB block holds some 40 entries and a 100-child window
    /// spans three blocks; the block index of a million entries is then about 1 MiB, searched
    /// with a cache miss per step. With 16 KiB blocks a window is mostly one block and the
    /// block index a quarter the size: on 1M children (IndexQueryProfile query, fresh loads,
    /// 3 alternating rounds) equalTo 7.2-7.6 -> 6.3-6.5 us, 100-child windows 32-34 -> 29-31 us
    /// (limitToLast 37-38 -> 34.5-35 us). Larger blocks gained a little more on this data set,
    /// but a block cache miss reads and decompresses the whole block: 16 KiB keeps that a few
    /// microseconds with LZ4.
    static let indexBlockBytes = 16 << 10

    /// The options an engine's database opens with; the caller adds read-only mode and the
    /// shared block cache.
    static func engineLayout() -> StorageOptions {
        var storage = StorageOptions()
        // Index windows are read at random positions; their blocks must decompress fast.
        storage.lz4Families = [ColumnFamilies.index]
        storage.writeBufferBytesByFamily = [ColumnFamilies.index: Self.indexWriteBufferBytes]
        storage.blockBytesByFamily = [ColumnFamilies.index: Self.indexBlockBytes]
        return storage
    }
}
