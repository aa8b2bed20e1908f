// What the event router reads from the committer's open group, and nothing else: the tree and
// the index entries as the group's batch leaves them, and the index definitions the group
// maintains, and the priorities. `TreeWriter` provides it; the router never writes.

import EddyIndexes
import EddyStorage

package protocol EventGroupReads: AnyObject {
    /// Reads the tree through the open group's batch (its writes visible), inside a group.
    var groupIterator: Iterator { get }
    /// The declared indexes, ready or building, as the group maintains them.
    var indexDefinitions: [IndexDefinition] { get }
    /// A new iterator over the index entries through the group's batch, its pending entries
    /// written first, inside a group.
    func makeGroupIndexIterator() -> Iterator
    /// Reads the `priority` family through the open group's batch, inside a group; nil while
    /// the family holds no record (then no node has a priority).
    var groupPriorityIteratorIfAny: Iterator? { get }
}
