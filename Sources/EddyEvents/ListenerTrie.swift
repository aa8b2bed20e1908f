// Listener windows by location, as a trie of path keys, so a change finds the windows it touches by
// walking its own path (listeners at the change's ancestors and at itself) plus the subtree
// below it (listeners the change replaces), whatever the number of listeners elsewhere.
// Owned by the committer thread.

import EddyModel

final class ListenerTrie {
    private final class Node {
        var children: [String: Node] = [:]
        var listeners: Set<ListenerWindow.ID> = []
    }

    private let root = Node()

    var isEmpty: Bool { self.root.children.isEmpty && self.root.listeners.isEmpty }

    func add(_ id: ListenerWindow.ID, at location: Path) {
        var node = self.root
        for key in location.keys {
            if let child = node.children[key] {
                node = child
            } else {
                let child = Node()
                node.children[key] = child
                node = child
            }
        }
        node.listeners.insert(id)
    }

    func remove(_ id: ListenerWindow.ID, at location: Path) {
        var path: [(Node, String)] = []
        var node = self.root
        for key in location.keys {
            guard let child = node.children[key] else { return }
            path.append((node, key))
            node = child
        }
        node.listeners.remove(id)
        // Prune nodes left without listeners or children.
        while let (parent, key) = path.popLast(), let child = parent.children[key], child.listeners.isEmpty, child.children.isEmpty {
            parent.children.removeValue(forKey: key)
        }
    }

    /// Listeners at `path`, at its ancestors, and below it.
    func touched(by path: Path) -> [ListenerWindow.ID] {
        var found: [ListenerWindow.ID] = Array(self.root.listeners)
        var node = self.root
        for key in path.keys {
            guard let child = node.children[key] else { return found }
            node = child
            found.append(contentsOf: node.listeners)
        }
        var below = Array(node.children.values)
        while let next = below.popLast() {
            found.append(contentsOf: next.listeners)
            below.append(contentsOf: next.children.values)
        }
        return found
    }
}
