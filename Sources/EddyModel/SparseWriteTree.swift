// Writes remembered at disjoint paths, as Firebase's SparseSnapshotTree holds a connection's
// onDisconnect writes: a set replaces what is remembered at and below its path, or changes the
// value remembered at an ancestor in place; an update is a set per child path; a remove is a
// set of null. Forgetting a path (onDisconnect `cancel`) drops what is remembered at and below
// it, and splits a value remembered above it into its children first, so the rest of that value
// is still written (a leaf above the path is kept whole: the path leads nowhere in it). Eddy's
// server and client both use it, so the client shows on disconnect what the server writes.
//
// Invariants: no remembered path is an ancestor of another, so `writes` can be made as one
// multi-path update; an empty tree remembers nothing (not even a null).

public struct SparseWriteTree: Sendable, Equatable {
    private var value: Value?
    private var children: [String: SparseWriteTree] = [:]

    public init() {}

    public var isEmpty: Bool { self.value == nil && self.children.isEmpty }

    /// Remembers `data` (null: a remove) at `path`, relative to the tree's root.
    public mutating func remember(_ data: Value, at path: Path) {
        self.remember(data, keys: path.keys[...])
    }

    private mutating func remember(_ data: Value, keys: ArraySlice<String>) {
        if keys.isEmpty {
            self.value = data
            self.children = [:]
        } else if let value = self.value {
            self.value = value.setting(data, at: Path(validatedKeys: Array(keys)))
        } else {
            let key = keys.first!
            self.children[key, default: SparseWriteTree()].remember(data, keys: keys.dropFirst())
        }
    }

    /// Forgets what is remembered at and below `path`; true when the tree is now empty.
    @discardableResult
    public mutating func forget(_ path: Path) -> Bool {
        self.forget(keys: path.keys[...])
    }

    private mutating func forget(keys: ArraySlice<String>) -> Bool {
        if keys.isEmpty {
            self.value = nil
            self.children = [:]
            return true
        }
        if let value = self.value {
            guard case .object(let members) = value else {
                // A leaf: the path leads nowhere in it, so nothing is forgotten. (A remembered
                // null has no children: splitting it leaves nothing, as in Firebase.)
                if value.isNull {
                    self.value = nil
                    return true
                }
                return false
            }
            self.value = nil
            for (key, member) in members { self.children[key] = SparseWriteTree(value: member) }
            return self.forget(keys: keys)
        }
        let key = keys.first!
        if self.children[key]?.forget(keys: keys.dropFirst()) == true { self.children[key] = nil }
        return self.children.isEmpty
    }

    private init(value: Value) {
        self.value = value
    }

    /// Every remembered value with its path below `prefix`, in path order.
    public func writes(below prefix: Path = .root) -> [(path: Path, value: Value)] {
        var out: [(path: Path, value: Value)] = []
        self.collect(prefix, into: &out)
        return out
    }

    private func collect(_ prefix: Path, into out: inout [(path: Path, value: Value)]) {
        if let value = self.value {
            out.append((prefix, value))
            return
        }
        for key in self.children.keys.sorted() { self.children[key]!.collect(prefix.appending(key), into: &out) }
    }
}
