// An immutable copy of the data at a location (or in a query's window) at one moment, as
// Firebase's `DataSnapshot`: `value` in Foundation types, `children` in the query's order,
// navigation by path. A location without data has `value` NSNull and `exists()` false.

import EddyModel
import Foundation

public final class DataSnapshot: NSObject, @unchecked Sendable {
    // @unchecked: every stored property is immutable; `ref` is a Sendable class.
    let data: Value
    let order: Query.Order
    /// The location this snapshot is of.
    public let ref: DatabaseReference

    init(ref: DatabaseReference, value: Value, order: Query.Order = .key) {
        self.ref = ref
        self.data = value
        self.order = order
        super.init()
    }

    /// A snapshot without data at the root of `Database.database()` (Firebase's inherited
    /// `init()` compiles too).
    public override convenience init() {
        self.init(ref: DatabaseReference(), value: .null)
    }

    /// The data as Foundation values: NSNull, NSNumber, String, [String: Any] or [Any].
    public var value: Any? { FoundationValue.foundation(self.data) }

    /// The data in Firebase's export format: with priorities (Eddy stores none), and objects
    /// keyed by list indexes as dictionaries, never arrays.
    public func valueInExportFormat() -> Any? { FoundationValue.foundation(self.data, arrays: false) }

    /// The last key of the location's path ("" at the root).
    public var key: String { self.ref.key ?? "" }

    /// Eddy stores no priorities: always nil.
    public var priority: Any? { nil }

    public func exists() -> Bool { !self.data.isNull }

    public func hasChildren() -> Bool {
        if case .object(let children) = self.data { return !children.isEmpty }
        return false
    }

    public var childrenCount: UInt {
        if case .object(let children) = self.data { return UInt(children.count) }
        return 0
    }

    /// Whether there is data at the relative path (`"a/b"`).
    public func hasChild(_ childPathString: String) -> Bool {
        !self.data.child(at: DatabaseReference.parsePath(childPathString, method: "hasChild:")).isNull
    }

    /// The snapshot of the relative path (`"a/b"`); empty where there is no data.
    public func childSnapshot(forPath childPathString: String) -> DataSnapshot {
        let path = DatabaseReference.parsePath(childPathString, method: "childSnapshot(forPath:)")
        return DataSnapshot(ref: self.ref.child(path), value: self.data.child(at: path))
    }

    /// The child snapshots, in the order of the query the snapshot came from.
    public var children: NSEnumerator {
        SnapshotEnumerator(self.childSnapshots)
    }

    var childSnapshots: [DataSnapshot] {
        guard case .object(let children) = self.data else { return [] }
        return ChildOrder.sortedKeys(children, self.order).map { key in
            DataSnapshot(ref: self.ref.child(Path(validatedKeys: [key])), value: children[key]!)
        }
    }

    public override var description: String {
        "Snap (\(self.key)) \(JSONWriter.string(self.data))"
    }
}

/// An `NSEnumerator` over an array (what `children` hands out, as Firebase does).
final class SnapshotEnumerator<Element>: NSEnumerator {
    private let elements: [Element]
    private var next = 0

    init(_ elements: [Element]) {
        self.elements = elements
    }

    override func nextObject() -> Any? {
        guard self.next < self.elements.count else { return nil }
        defer { self.next += 1 }
        return self.elements[self.next]
    }
}
