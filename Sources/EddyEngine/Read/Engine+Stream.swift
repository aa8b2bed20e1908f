// Streamed reads: the value at a path as JSON in chunks (`TreeJSONStream`), for answers too
// large to build in memory. The read is checked against the rules once, when the stream opens;
// every chunk then comes from the same snapshot. An answer that fits in the first chunk is
// written whole from a pooled iterator of the newest state instead (no snapshot, no cursor).

import EddyModel
import EddyStorage
import EddyTree
import NIOPosix

extension Engine {
    /// Opens a streamed read of the value at `path` for `access` (throws `permissionDenied` when
    /// the rules do not allow it) and reads its first chunk in the same trip to a reader thread
    /// (at least `firstChunkBytes` unless it is all: then `stream.isFinished`). Counted against
    /// `readQueueCountMax` like any read.
    public func openJSONStream(
        _ path: Path, pretty: Bool, access: Access, firstChunkBytes: Int
    ) async throws(EddyError) -> (stream: TreeJSONStream, first: [UInt8]) {
        try await self.onReader { () throws(EddyError) in
            try self.checkRead(path, query: nil, access)
            // Most answers are small: written whole, with no snapshot or cursor to set up.
            if !pretty, let whole = try self.readValueJSON(path, bytesMax: firstChunkBytes) {
                return (TreeJSONStream(finishedIn: self.streams), whole)
            }
            guard let stream = self.streams.open(database: self.database, path: path, pretty: pretty) else {
                throw EddyError(.shuttingDown, "the database is shutting down")
            }
            return (stream, try stream.next(bytesMax: firstChunkBytes) ?? [])
        }
    }

    /// The value at `path` as compact JSON (`TreeJSONWriter`, byte for byte `JSONWriter.bytes`
    /// of `readValue`) from a pooled iterator of the newest state; nil when it runs past
    /// `bytesMax` bytes (what was written is dropped).
    func readValueJSON(_ path: Path, bytesMax: Int = .max) throws(EddyError) -> [UInt8]? {
        var out: [UInt8] = []
        let iterator = self.database.makeCurrentIterator(self.database.columnFamily(ColumnFamilies.tree))
        return try TreeJSONWriter.appendSubtree(iterator, prefix: PathKeyEncoding.encode(path), bytesMax: bytesMax, into: &out) ? out : nil
    }

    /// The stream's next chunk (at least `bytesMax` bytes unless it is the last; nil after the
    /// last), read on the reader pool. Not counted against `readQueueCountMax`: a stream that
    /// was admitted must be able to finish, and each stream waits for at most one chunk at a time,
    /// so the streams' reads are bounded by the open streams (themselves bounded by connections).
    public func nextChunk(of stream: TreeJSONStream, bytesMax: Int) async throws(EddyError) -> [UInt8]? {
        let result: Result<[UInt8]?, EddyError>
        do {
            result = try await self.readers.runIfActive { () -> Result<[UInt8]?, EddyError> in
                do throws(EddyError) { return .success(try stream.next(bytesMax: bytesMax)) } catch { return .failure(error) }
            }
        } catch {
            throw EddyError(.shuttingDown, "the database is shutting down")
        }
        return try result.get()
    }

    /// Streamed reads open now (for tests and figures).
    public var openStreamCount: Int { self.streams.count }
}
