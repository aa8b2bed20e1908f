// Value: child lookup, `setting(_:at:)` (replace, create parents, replace primitives, prune on
// null), `normalized()`, and the small accessors.

import EddyModel
import EddyTesting
import Testing

@Suite struct ValueTests {
    static func p(_ s: String) -> Path { try! Path(s) }
    static let tree = try! JSONParser.parse(#"{"a":{"b":1,"c":{"d":"x"}},"e":true}"#)

    @Test func childLookup() {
        #expect(Self.tree.child(at: .root) == Self.tree)
        #expect(Self.tree.child(at: Self.p("a/b")) == .number(1))
        #expect(Self.tree.child(at: Self.p("a/c/d")) == .string("x"))
        #expect(Self.tree.child(at: Self.p("a/missing")) == .null)
        #expect(Self.tree.child(at: Self.p("a/b/below-a-leaf")) == .null)
        #expect(Self.tree.child(at: Self.p("missing/x/y")) == .null)
        #expect(Self.tree["e"] == .bool(true))
        #expect(Self.tree["zz"] == .null)
        #expect(Value.string("s")["a"] == .null)
        #expect(Value.null.child(at: Self.p("a")) == .null)
    }

    @Test func settingAtRootReplacesEverything() {
        #expect(Self.tree.setting(.number(5), at: .root) == .number(5))
        #expect(Self.tree.setting(.null, at: .root) == .null)
    }

    @Test func settingReplacesASubtreeAndKeepsSiblings() throws {
        let updated = Self.tree.setting(.string("new"), at: Self.p("a/c"))
        #expect(updated == (try JSONParser.parse(#"{"a":{"b":1,"c":"new"},"e":true}"#)))
    }

    @Test func settingCreatesMissingParents() throws {
        #expect(Value.null.setting(.number(1), at: Self.p("x/y/z")) == (try JSONParser.parse(#"{"x":{"y":{"z":1}}}"#)))
        let updated = Self.tree.setting(.bool(false), at: Self.p("a/new/deep"))
        #expect(updated.child(at: Self.p("a/new/deep")) == .bool(false))
        #expect(updated.child(at: Self.p("a/b")) == .number(1))
    }

    @Test func settingBelowAPrimitiveReplacesThePrimitive() throws {
        let updated = Self.tree.setting(.number(2), at: Self.p("a/b/c"))
        #expect(updated.child(at: Self.p("a/b")) == .object(["c": .number(2)]))
        #expect(Value.string("leaf").setting(.number(1), at: Self.p("k")) == .object(["k": .number(1)]))
    }

    @Test func settingNullPrunesEmptyParents() throws {
        let removed = Self.tree.setting(.null, at: Self.p("a/c/d"))
        #expect(removed == (try JSONParser.parse(#"{"a":{"b":1},"e":true}"#)))
        let single = Value.null.setting(.number(1), at: Self.p("x/y/z"))
        #expect(single.setting(.null, at: Self.p("x/y/z")) == .null)
        // Removing something absent changes nothing, even below a primitive (Firebase's
        // LeafNode.updateChild returns the leaf unchanged when the new child is empty).
        #expect(Self.tree.setting(.null, at: Self.p("nope/x")) == Self.tree)
        #expect(Self.tree.setting(.null, at: Self.p("e/x")) == Self.tree)
        #expect(Value.string("s").setting(.null, at: Self.p("a/b")) == .string("s"))
    }

    @Test func normalizedPrunesNullsAndEmptyObjects() throws {
        let raw = try JSONParser.parse(#"{"a":null,"b":{},"c":{"d":{"e":null}},"f":[null,{}],"g":{"h":0,"i":null}}"#)
        #expect(raw.normalized() == .object(["g": .object(["h": .number(0)])]))
        #expect(Value.object([:]).normalized() == .null)
        #expect(Value.number(-0.0).normalized() == .number(0))
        #expect(Value.string("").normalized() == .string(""))
        #expect(Value.bool(false).normalized() == .bool(false))
    }

    @Test func normalizedIsIdempotentOnRandomValues() {
        let seed = SeededGenerator.seedFromEnvironment()
        var g = SeededGenerator(seed: seed)
        for _ in 0..<propertyIterations {
            let raw = RandomValues.value(&g, normalized: false)
            let once = raw.normalized()
            #expect(once.normalized() == once, Comment("seed \(seed)"))
            #expect(once.leafCount == raw.leafCount, Comment("seed \(seed)"))
        }
    }

    @Test func settingThenGettingReturnsTheValue() {
        let seed = SeededGenerator.seedFromEnvironment()
        var g = SeededGenerator(seed: seed)
        var root = Value.null
        for iteration in 0..<propertyIterations {
            // Start over now and then so the tree (and the O(n) checks below) stay small.
            if iteration % 200 == 0 { root = .null }
            let path = RandomValues.path(&g, depthMax: 3)
            let value = g.chance(1, in: 4) ? .null : RandomValues.value(&g, depthMax: 2)
            root = root.setting(value, at: path)
            #expect(root.child(at: path) == value, Comment("seed \(seed): \(path)"))
            #expect(root.normalized() == root, Comment("seed \(seed): \(path)"))
        }
    }

    @Test func accessors() {
        #expect(Value.null.isNull)
        #expect(!Value.bool(false).isNull)
        #expect(Value.bool(true).isPrimitive)
        #expect(Value.number(1).isPrimitive)
        #expect(Value.string("").isPrimitive)
        #expect(!Value.null.isPrimitive)
        #expect(!Self.tree.isPrimitive)
        #expect(Self.tree.leafCount == 3)
        #expect(Value.null.leafCount == 0)
        #expect(Value.string("x").leafCount == 1)
    }
}
