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

    /// The memtable insert hint of the tree family (`StorageOptions`): a tag and the first 3
    /// bytes of the top-level key. Without a hint RocksDB remembers only its last insert's place
    /// and redoes the whole skiplist search whenever that place does not bracket the next key;
    /// a push's leaves go in in hash order, so most of them did. With a hint it climbs only as
    /// far as needed, and consecutive pushes to one list (`/items/<push ID>/...`) land next to
    /// each other. Short on purpose: a memtable keeps one hint (about 250 bytes) per distinct
    /// prefix, so a longer one would cost that much per write under many distinct parents; a
    /// write far from its prefix's hint costs a few comparisons more than none.
    /// With both hints, old/new binaries alternating for 3 rounds: `IndexQueryProfile push
    /// --indexes 0,4` (three-leaf children, 64 writers) 46,500-51,300 -> 50,900-59,100 pushes/s
    /// without an index and 25,700-27,700 -> 29,500-32,400 with four; a leaf of a random child
    /// set by 64 writers (`EngineWriteProfile update64 100000 3 none`, medians per run)
    /// 60,700-69,000 -> 65,000-73,600 writes/s.
    static let treeInsertHintPrefixBytes = 4

    /// The memtable insert hint of the index family: the index's 4-byte id and the first byte
    /// of its location, so about one hint per index. An online build writes each chunk's
    /// entries in key order, so each insert starts from the one before and climbs only as far
    /// as the entries of earlier chunks between them require (without a hint RocksDB redoes the
    /// whole search whenever the last insert's place does not bracket the key). Dropping an
    /// index deletes the range from its 4-byte id: shorter than the prefix, as a hinted
    /// family's range deletions must be (`WriteBatch.deleteRange`). `IndexQueryProfile build
    /// 1000000` on one copy, alternating for 3 rounds: 164,800-166,000 -> 184,000-192,500
    /// children/s.
    static let indexInsertHintPrefixBytes = 5

    /// The options an engine's database opens with; the caller adds read-only mode and the
    /// shared block cache.
    static func engineLayout() -> StorageOptions {
        var storage = StorageOptions()
        // Index windows are read at random positions; their blocks must decompress fast.
        storage.lz4Families = [ColumnFamilies.index]
        storage.writeBufferBytesByFamily = [ColumnFamilies.index: Self.indexWriteBufferBytes]
        storage.blockBytesByFamily = [ColumnFamilies.index: Self.indexBlockBytes]
        storage.memtableInsertHintPrefixBytesByFamily = [
            ColumnFamilies.tree: Self.treeInsertHintPrefixBytes, ColumnFamilies.index: Self.indexInsertHintPrefixBytes,
        ]
        return storage
    }
}
