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

}

/// Identifies an observer for `removeObserver(withHandle:)`.
public typealias DatabaseHandle = UInt
