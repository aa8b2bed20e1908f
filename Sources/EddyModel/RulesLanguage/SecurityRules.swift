// The `.read`, `.write` and `.validate` rules of a rules document, compiled, and Firebase's
// access decisions over them:
// - a read of P is allowed when a `.read` rule at P or at any location above it holds (rules
//   cascade: a grant above cannot be taken back below; no grant anywhere denies);
// - a write at P is allowed when a `.write` at P or above holds, and every `.validate` rule on
//   the written data holds: at P, above it, and at every location below it that the write
//   leaves with data (`.validate` does not cascade and is skipped where the new data is null);
// - a literal key's rules take precedence over a `$wildcard` sibling, which captures the key.
// A multi-path update is allowed only if each of its paths is (checked by the caller against
// the tree the whole update makes).

public struct SecurityRules: Sendable {
    final class Node: Sendable {
        let read: RuleExpression?
        let write: RuleExpression?
        let validate: RuleExpression?
        let children: [String: Node]
        let wildcard: (name: String, node: Node)?
        /// A `.write` or `.validate` here or below may read the stored tree.
        let subtreeWriteReadsTree: Bool
        /// A `.validate` exists below this node (so a write here has children to validate).
        let subtreeHasValidate: Bool
        /// The `.read` here names `query` (the caller builds the variable only then).
        let readMentionsQuery: Bool

        init(read: RuleExpression?, write: RuleExpression?, validate: RuleExpression?, children: [String: Node], wildcard: (String, Node)?) {
            self.read = read
            self.write = write
            self.validate = validate
            self.children = children
            self.wildcard = wildcard
            self.subtreeWriteReadsTree =
                (write?.readsTree ?? false) || (validate?.readsTree ?? false) || children.values.contains { $0.subtreeWriteReadsTree }
                || (wildcard?.1.subtreeWriteReadsTree ?? false)
            let below = Array(children.values) + (wildcard.map { [$0.1] } ?? [])
            self.subtreeHasValidate = below.contains { $0.validate != nil || $0.subtreeHasValidate }
            self.readMentionsQuery = read?.mentions("query") ?? false
        }

        /// The rules for child `key`, and the wildcard it binds (if any).
        func child(_ key: String) -> (Node, String?)? {
            if let node = self.children[key] { return (node, nil) }
            if let wildcard = self.wildcard { return (wildcard.node, wildcard.name) }
            return nil
        }
    }

    /// A rule that does not compile: where (the rules path and the rule) and why.
    public struct CompileError: Error, Sendable, CustomStringConvertible {
        /// The location of the rule in the rules tree, e.g. "/users/$uid".
        public var location: String
        /// `.read`, `.write` or `.validate`.
        public var rule: String
        /// The expression text.
        public var expression: String
        public var error: RuleSyntaxError

        public var description: String {
            "rules at \(self.location): \(self.rule) \"\(self.expression)\": \(self.error.message) at column \(self.error.column)"
        }
    }

    let root: Node

    /// Every write is allowed, whatever it writes: `.write` is `true` at the root and no
    /// `.validate` exists anywhere (the rules of a new database in the emulator mode). A caller
    /// may then skip building the data a decision reads.
    public let allowsEveryWrite: Bool

    /// Rules that allow everything (`.read` and `.write` true at the root).
    public static let open = SecurityRules(root: Node(read: .literal(.bool(true)), write: .literal(.bool(true)), validate: nil, children: [:], wildcard: nil))
    /// Rules that allow nothing.
    public static let locked = SecurityRules(root: Node(read: nil, write: nil, validate: nil, children: [:], wildcard: nil))

    init(root: Node) {
        self.root = root
        self.allowsEveryWrite = root.write == .literal(.bool(true)) && root.validate == nil && !root.subtreeHasValidate
    }

    /// Compiles the rules object of a document already checked by `Rules.parse` (the value of
    /// its "rules" member).
    public static func compile(_ rules: Value) throws(CompileError) -> SecurityRules {
        SecurityRules(root: try self.node(rules, location: "", wildcards: []))
    }

    private static func node(_ value: Value, location: String, wildcards: Set<String>) throws(CompileError) -> Node {
        guard case .object(let members) = value else { return Node(read: nil, write: nil, validate: nil, children: [:], wildcard: nil) }
        func rule(_ name: String) throws(CompileError) -> RuleExpression? {
            switch members[name] {
            case .bool(let b)?: return .literal(.bool(b))
            case .string(let text)?:
                do {
                    return try RuleExpression.parse(text, wildcards: wildcards)
                } catch {
                    throw CompileError(location: location.isEmpty ? "/" : location, rule: name, expression: text, error: error)
                }
            default: return nil
            }
        }
        var children: [String: Node] = [:]
        var wildcard: (String, Node)?
        // Key order, so a stored document with two wildcards at one level (refused since, see
        // `Rules.checkOneWildcardPerLevel`) always applies the same one: the first.
        for (key, child) in members.sorted(by: { Key.lessThan($0.key, $1.key) }) where !key.hasPrefix(".") {
            if key.hasPrefix("$"), wildcard != nil { continue }
            let node = try self.node(child, location: location + "/" + key, wildcards: key.hasPrefix("$") ? wildcards.union([key]) : wildcards)
            if key.hasPrefix("$") { wildcard = (key, node) } else { children[key] = node }
        }
        return Node(read: try rule(".read"), write: try rule(".write"), validate: try rule(".validate"), children: children, wildcard: wildcard)
    }

    /// One rule node on the way from the root down to a path: its depth (its location is the
    /// path's first `depth` keys) and the wildcards bound down to it.
    private struct Step {
        var node: Node
        var depth: Int
        var wildcards: [String: String]
    }

    /// The rule nodes from the root down to `path` (as far as rules go). Locations are not
    /// built here: most steps have no rule to evaluate.
    private func walk(_ path: Path) -> [Step] {
        var steps = [Step(node: self.root, depth: 0, wildcards: [:])]
        steps.reserveCapacity(path.depth + 1)
        var node = self.root
        var wildcards: [String: String] = [:]
        for key in path.keys {
            guard let (child, bound) = node.child(key) else { break }
            if let bound { wildcards[bound] = key }
            node = child
            steps.append(Step(node: child, depth: steps.count, wildcards: wildcards))
        }
        return steps
    }

    private static func location(_ path: Path, _ depth: Int) -> Path {
        depth == path.depth ? path : Path(validatedKeys: Array(path.keys.prefix(depth)))
    }

    /// Whether `expression` holds at `location`; `context` is the caller's scratch copy.
    private func holds(_ expression: RuleExpression, at location: Path, _ wildcards: [String: String], _ context: inout RuleContext) -> Bool {
        context.location = location
        context.wildcards = wildcards
        return RuleEvaluator.holds(expression, context)
    }

    /// Whether the whole location at `path` may be read (`context.query` holds its query).
    public func canRead(_ path: Path, _ context: RuleContext) -> Bool {
        self.canRead(path, context, query: { context.query })
    }

    /// Whether the whole location at `path` may be read; `query` makes the rules' `query`
    /// variable, called only when a `.read` on the way names it.
    public func canRead(_ path: Path, _ context: RuleContext, query: () -> RuleValue) -> Bool {
        var scratch = context
        var madeQuery = false
        for step in self.walk(path) {
            guard let read = step.node.read else { continue }
            if !madeQuery, step.node.readMentionsQuery {
                scratch.query = query()
                madeQuery = true
            }
            if self.holds(read, at: Self.location(path, step.depth), step.wildcards, &scratch) { return true }
        }
        return false
    }

    /// Whether reading the location at `path` may be decided differently as the stored data or
    /// the time change: a `.read` on the way down names `root`, `data` (or walks up with
    /// `parent()`) or `now`. Such a reader's access can be lost without a rules change, so its
    /// listeners are checked again whenever they are about to hear a change, and the log is
    /// never replayed to it (what it missed may have been written while it could not read).
    public func readDependsOnTreeOrTime(_ path: Path) -> Bool {
        self.walk(path).contains { step in
            guard let read = step.node.read else { return false }
            return read.readsTree || read.mentions("now")
        }
    }

    /// Whether a write at `path` (of values without server values) can be decided without the
    /// stored tree: no `.write` on the way down and no `.validate` at or below `path` reads it,
    /// and no `.validate` above `path` exists, nor a `.write` above it that names `newData` (above
    /// the written location `newData` holds the stored siblings too). Then `canWrite` may run
    /// anywhere, with a `newTree` made of the written values alone.
    public func decidesWithoutTree(_ path: Path) -> Bool {
        func readsTreeAbove(_ node: Node) -> Bool {
            guard node.validate == nil, let write = node.write else { return node.validate != nil }
            return write.readsTree || write.mentions("newData")
        }
        let steps = self.walk(path)
        for step in steps.dropLast() where readsTreeAbove(step.node) { return false }
        guard let last = steps.last else { return true }
        if last.depth != path.depth { return !readsTreeAbove(last.node) }
        return !last.node.subtreeWriteReadsTree
    }

    /// For a push under `parent` (its key made later, by the committer): whether the decision
    /// cannot depend on the key. True unless the key would be captured by a `$wildcard` that a
    /// rule on the way or below names, or a literal rules key could be a push id.
    public func pushKeyIsIrrelevant(under parent: Path) -> Bool {
        guard let last = self.walk(parent).last, last.depth == parent.depth else { return true }
        if last.node.children.keys.contains(where: { $0.hasPrefix("-") }) { return false }
        guard let (name, node) = last.node.wildcard else { return true }
        var stack = [node]
        while let next = stack.popLast() {
            for expression in [next.write, next.validate] where expression?.mentions(name) == true { return false }
            stack.append(contentsOf: next.children.values)
            if let wildcard = next.wildcard { stack.append(wildcard.node) }
        }
        return true
    }

    /// Whether a write at `path` that turns `context.tree` into `context.newTree` is allowed.
    public func canWrite(_ path: Path, _ context: RuleContext) -> Bool {
        let steps = self.walk(path)
        var scratch = context
        guard
            steps.contains(where: { step in
                step.node.write.map { self.holds($0, at: Self.location(path, step.depth), step.wildcards, &scratch) } ?? false
            })
        else {
            return false
        }
        return self.validates(path, steps, &scratch)
    }

    /// Every `.validate` on the written data holds: at `path` and above, then below it.
    private func validates(_ path: Path, _ steps: [Step], _ context: inout RuleContext) -> Bool {
        for step in steps {
            guard let validate = step.node.validate else { continue }
            let location = Self.location(path, step.depth)
            guard !((try? context.newTree.value(at: location)) ?? .null).isNull else { continue }
            if !self.holds(validate, at: location, step.wildcards, &context) { return false }
        }
        // Below `path`: only when the rules reach it.
        guard let last = steps.last, last.depth == path.depth, last.node.subtreeHasValidate else { return true }
        var stack: [(Node, Path, [String: String])] = [(last.node, path, last.wildcards)]
        while let (node, location, wildcards) = stack.popLast() {
            guard case .object(let children)? = try? context.newTree.value(at: location) else { continue }
            for key in children.keys {
                guard let (child, bound) = node.child(key) else { continue }
                var bindings = wildcards
                if let bound { bindings[bound] = key }
                let childLocation = location.appending(key)
                if let validate = child.validate, !self.holds(validate, at: childLocation, bindings, &context) { return false }
                if child.subtreeHasValidate { stack.append((child, childLocation, bindings)) }
            }
        }
        return true
    }
}
