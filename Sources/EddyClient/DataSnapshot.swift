// An immutable copy of the data at a location (or in a query's window) at one moment, as
// Firebase's `DataSnapshot`: `value` in Foundation types, `children` in the query's order
// (priority order without one), navigation by path. A location without data has `value`
// NSNull and `exists()` false. The copy is in export form (`Value+Priority.swift`): `value`
// is the data without priorities, `priority` and `valueInExportFormat()` show them.

import EddyModel
import Foundation

public final class DataSnapshot: NSObject, @unchecked Sendable {
    // @unchecked: every stored property is immutable; `ref` is a Sendable class.
    let data: Value
    let order: Query.Order
    /// The location this snapshot is of.
    public let ref: DatabaseReference

    init(ref: DatabaseReference, value: Value, order: Query.Order = .priority) {
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
    public var value: Any? { FoundationValue.foundation(self.data.withoutPriorities) }

    /// The data in Firebase's export format: with priorities (`.priority` members, a primitive
    /// with one as `[".value": v, ".priority": p]`), and objects keyed by list indexes as
    /// dictionaries, never arrays.
    @discardableResult
    public func valueInExportFormat() -> Any? { FoundationValue.foundation(self.data, arrays: false) }

    /// The last key of the location's path ("" at the root).
    public var key: String { self.ref.key ?? "" }

    /// The location's priority: an NSNumber or a String, NSNull when it has none (as
    /// Firebase's).
    public var priority: Any? { FoundationValue.foundation(self.data.priority) }

    @discardableResult
    public func exists() -> Bool { !self.data.isNull }

    @discardableResult
    public func hasChildren() -> Bool { !ChildOrder.children(of: self.data).isEmpty }

    public var childrenCount: UInt { UInt(ChildOrder.children(of: self.data).count) }

    /// Whether there is data at the relative path (`"a/b"`).
    @discardableResult
    public func hasChild(_ childPathString: String) -> Bool {
        !Self.child(of: self.data, at: DatabaseReference.parsePath(childPathString, method: "hasChild:")).isNull
    }

    /// The snapshot of the relative path (`"a/b"`); empty where there is no data.
    @discardableResult
    public func childSnapshot(forPath childPathString: String) -> DataSnapshot {
        let path = DatabaseReference.parsePath(childPathString, method: "childSnapshot(forPath:)")
        return DataSnapshot(ref: self.ref.child(path), value: Self.child(of: self.data, at: path))
    }

    /// The node at `path` of `value` (export form): a primitive has no children, whatever
    /// members its wrapped form has.
    static func child(of value: Value, at path: Path) -> Value {
        var node = value
        for key in path.keys {
            node = ChildOrder.children(of: node)[key] ?? .null
            if node.isNull { break }
        }
        return node
    }

    /// The child snapshots, in the order of the query the snapshot came from.
    public var children: NSEnumerator {
        SnapshotEnumerator(self.childSnapshots)
    }

    var childSnapshots: [DataSnapshot] {
        let children = ChildOrder.children(of: self.data)
        return ChildOrder.sortedKeys(children, self.order).map { key in
            DataSnapshot(ref: self.ref.child(Path(validatedKeys: [key])), value: children[key]!)
        }
    }

    public override var description: String {
        "Snap (\(self.key)) \(JSONWriter.string(self.data.withoutPriorities))"
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
