// Which locations a write or a view concerns, for the client's bookkeeping.

import EddyModel

extension Path {
    /// Whether `self` and `other` are at, above or below each other: a write at one changes
    /// what a view of the other shows.
    func overlaps(_ other: Path) -> Bool {
        self.isAncestorOrSelf(of: other) || other.isAncestorOrSelf(of: self)
    }
}
