// The data a transaction block reads and changes (Firebase's `MutableData`). Children made
// with `childData(byAppendingPath:)` are views of the same data: setting a child's value
// changes the parent's. Held in export form (`Value+Priority.swift`): `value` reads the data
// without priorities, `priority` reads and sets the node's; setting `value` replaces the node,
// its priority with it (as Firebase's), and the transaction writes what is held, priorities
// included.

import EddyModel
import Foundation

public final class MutableData: NSObject, @unchecked Sendable {
    // @unchecked: a transaction block runs on one queue at a time; the root box is not shared
    // between transactions.
    final class Root {
        var value: Value
        var error: DatabaseError?
        init(_ value: Value) { self.value = value }
    }

    let root: Root
    let path: Path

    init(root: Root, path: Path) {
        self.root = root
        self.path = path
        super.init()
    }

    convenience init(value: Value) {
        self.init(root: Root(value), path: Path(validatedKeys: []))
    }

    /// Data with no value (NSNull), detached from any transaction (Firebase's inherited `init()`).
    public override convenience init() {
        self.init(value: .null)
    }

    /// The data here as Foundation values (NSNull where there is none, as Firebase's). Setting
    /// it replaces the data here (nil or NSNull removes it); a value JSON cannot hold is refused
    /// and fails the transaction.
    public var value: Any? {
        get { FoundationValue.foundation(self.node.withoutPriorities) }
        set {
            do {
                let data = try FoundationValue.sent(newValue, path: self.path.description)
                self.root.value.setExport(DatabaseReference.exportNormalized("set", data, at: self.path), at: self.path)
            } catch {
                self.root.error = error
            }
        }
    }

    /// The node here, in export form.
    private var node: Value { DataSnapshot.child(of: self.root.value, at: self.path) }

    /// The node's priority (NSNull when none, as Firebase's). Setting it (a number, a string,
    /// nil or NSNull to remove it) gives the node that priority; a node without data has none.
    /// A value that is not a priority is refused and fails the transaction.
    public var priority: Any? {
        get { FoundationValue.foundation(self.node.priority) }
        set {
            do {
                let priority = try FoundationValue.priority(newValue, path: self.path.description)
                self.root.value.setPriority(priority, at: self.path)
            } catch {
                self.root.error = error
            }
        }
    }

    public var key: String? { self.path.keys.last }

    /// Firebase's text: `FIRMutableData (top-most transaction) (null) <value>` at the
    /// transaction's location, `FIRMutableData (<key>) <value>` below it.
    public override var description: String {
        let value = self.value.map { "\($0)" } ?? "(null)"
        guard let key = self.path.keys.last else {
            return "FIRMutableData (top-most transaction) (null) \(value)"
        }
        return "FIRMutableData (\(key)) \(value)"
    }

    public var childrenCount: UInt { UInt(ChildOrder.children(of: self.node).count) }

    @discardableResult
    public func hasChildren() -> Bool { self.childrenCount > 0 }

    @discardableResult
    public func hasChild(atPath path: String) -> Bool {
        !DataSnapshot.child(of: self.node, at: DatabaseReference.parsePath(path, method: "hasChildAtPath:")).isNull
    }

    @discardableResult
    public func childData(byAppendingPath path: String) -> MutableData {
        MutableData(root: self.root, path: self.path.appending(DatabaseReference.parsePath(path, method: "childDataByAppendingPath:")))
    }

    /// The children, in priority order (key order where none has a priority).
    public var children: NSEnumerator {
        SnapshotEnumerator(ChildOrder.sortedKeys(ChildOrder.children(of: self.node), .priority).map { self.childData(byAppendingPath: $0) })
    }
}
