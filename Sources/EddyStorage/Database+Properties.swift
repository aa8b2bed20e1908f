// RocksDB's integer properties (`rocksdb.*`), for metrics: per column family and summed over all
// of them, or database-wide. Nil when RocksDB does not know the property (a name this version
// lacks) or the database is closed.

import CRocksDB
import Synchronization

extension Database {
    /// `name` summed over every column family (memtable bytes, SST bytes, pending compaction).
    public func integerPropertySummed(_ name: String) -> UInt64? {
        // Under the `closed` lock: `close()` cannot free the handles meanwhile.
        self.closed.withLock { closed -> UInt64? in
            guard !closed else { return nil }
            var total: UInt64 = 0
            var known = false
            for family in self.columnFamilies.values {
                var value: UInt64 = 0
                if rocksdb_property_int_cf(self.db, family.handle, name, &value) == 0 {
                    total &+= value
                    known = true
                }
            }
            return known ? total : nil
        }
    }

    /// A text property of one column family (`rocksdb.num-files-at-level0`, `rocksdb.levelstats`).
    public func property(_ name: String, of family: ColumnFamily) -> String? {
        self.closed.withLock { closed -> String? in
            guard !closed, let value = rocksdb_property_value_cf(self.db, family.handle, name) else { return nil }
            defer { rocksdb_free(value) }
            return String(cString: value)
        }
    }

    /// A database-wide property (`rocksdb.is-write-stopped`, `rocksdb.actual-delayed-write-rate`).
    public func integerProperty(_ name: String) -> UInt64? {
        self.closed.withLock { closed -> UInt64? in
            guard !closed else { return nil }
            var value: UInt64 = 0
            return rocksdb_property_int(self.db, name, &value) == 0 ? value : nil
        }
    }
}
