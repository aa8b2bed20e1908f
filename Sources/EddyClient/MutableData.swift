// The data a transaction block reads and changes (Firebase's `MutableData`). Children made
// with `childData(byAppendingPath:)` are views of the same data: setting a child's value
// changes the parent's.

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
        get { FoundationValue.foundation(self.root.value.child(at: self.path)) }
        set {
            do {
                let data = try FoundationValue.written(newValue, path: self.path.description)
                self.root.value.set(data.normalized(), at: self.path)
            } catch {
                self.root.error = error
            }
        }
    }

    /// Eddy stores no priorities: reads nil, and setting it has no effect.
    public var priority: Any? {
        get { nil }
        set {}
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

    public var childrenCount: UInt {
        if case .object(let children) = self.root.value.child(at: self.path) { return UInt(children.count) }
        return 0
    }

    public func hasChildren() -> Bool { self.childrenCount > 0 }

    public func hasChild(atPath path: String) -> Bool {
        !self.root.value.child(at: self.path.appending(DatabaseReference.parsePath(path, method: "hasChildAtPath:"))).isNull
    }

    public func childData(byAppendingPath path: String) -> MutableData {
        MutableData(root: self.root, path: self.path.appending(DatabaseReference.parsePath(path, method: "childDataByAppendingPath:")))
    }

    /// The children, in key order.
    public var children: NSEnumerator {
        guard case .object(let children) = self.root.value.child(at: self.path) else { return SnapshotEnumerator<MutableData>([]) }
        return SnapshotEnumerator(ChildOrder.sortedKeys(children, .key).map { self.childData(byAppendingPath: $0) })
    }
}
