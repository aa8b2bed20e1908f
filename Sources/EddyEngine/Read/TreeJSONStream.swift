// A location's value as JSON, produced in chunks from one RocksDB snapshot: a large REST GET
// streams its answer instead of building the whole `Value` and then the whole body in memory.
//
// Invariants:
// - The output is byte for byte `JSONWriter.bytes(value, pretty:)` of the value at the path in
//   the snapshot: members in Firebase key order (the tree's key order), and a node rendered as an
//   array when Firebase renders it so (every key an array index, the largest < 2 × the count;
//   holes as null).
// - A container's form is decided before its first member is written, by a second iterator on
//   the same snapshot that walks the container's direct children (one seek per child). A
//   container whose first key is a string is an object without it (a node keyed by push ids
//   costs nothing); otherwise the walk stops at the first key that is not an array index.
// - Memory: the chunk being built, the path of open containers, RocksDB's iterator blocks.
// - The engine owns the iterators and the snapshot (`TreeStreamRegistry`): it releases them
//   before it closes the database, and a chunk asked for after that throws `shuttingDown`.
//   `TreeJSONStream` is used by one task at a time.
// - An answer of at most the first chunk's size is written in one go from pooled iterators of
//   the newest state (`Engine.openJSONStream`, `TreeJSONWriter`): no snapshot, no cursor; the
//   stream is finished from the start.

import EddyModel
import EddyStorage

public final class TreeJSONStream: @unchecked Sendable {
    // @unchecked: one task at a time reads it; the cursor it names is guarded by its own lock.
    let id: Int
    private let registry: TreeStreamRegistry
    /// True once the last chunk was returned.
    public private(set) var isFinished = false

    init(id: Int, registry: TreeStreamRegistry) {
        self.id = id
        self.registry = registry
    }

    /// A stream whose whole answer was the first chunk: no cursor, nothing registered (ids
    /// start at 1, so removing 0 removes nothing).
    init(finishedIn registry: TreeStreamRegistry) {
        self.id = 0
        self.registry = registry
        self.isFinished = true
    }

    deinit {
        self.registry.remove(self.id)
    }

    /// The next piece of the JSON: at least `bytesMax` bytes unless it is the last; nil after
    /// the last. Blocking (reads RocksDB).
    public func next(bytesMax: Int) throws(EddyError) -> [UInt8]? {
        guard !self.isFinished else { return nil }
        guard let cursor = self.registry.cursor(self.id) else {
            throw EddyError(.shuttingDown, "the database closed while this answer was being sent")
        }
        let (chunk, finished) = try cursor.next(bytesMax: bytesMax)
        if finished {
            self.isFinished = true
            self.registry.remove(self.id)
        }
        return chunk
    }
}
