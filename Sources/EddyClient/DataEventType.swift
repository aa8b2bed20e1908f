// Firebase's event types, with their raw values (FIRDataEventType).

public enum DataEventType: Int, Sendable {
    /// A child was added to the location (or entered the query's window).
    case childAdded = 0
    /// A child was removed (or left the window).
    case childRemoved = 1
    /// A child's data changed.
    case childChanged = 2
    /// A child moved relative to its siblings in the query's order.
    case childMoved = 3
    /// The data at the location (or in the window) changed, recursively.
    case value = 4

    /// The event's name in the native protocol.
    var wireName: String {
        switch self {
        case .childAdded: return "child_added"
        case .childRemoved: return "child_removed"
        case .childChanged: return "child_changed"
        case .childMoved: return "child_moved"
        case .value: return "value"
        }
    }
}

/// Identifies an observer for `removeObserver(withHandle:)`.
public typealias DatabaseHandle = UInt
