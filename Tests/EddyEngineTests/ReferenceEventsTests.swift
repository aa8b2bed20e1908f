// The event oracle alone (`ReferenceModel.events`, `initialEvents`, `changeSet`): Firebase's
// documented examples, event order and previousKey, value at any depth, and two seeded
// properties: a client applying the change set ends with exactly the new result, and, when one
// write touched one child, so does a client that applies the events in order (removing, then
// inserting each child after its previousKey). (With several children changed in one entry,
// previousKey names the new view, so an added child may name a sibling whose own move comes
// later in the batch: Firebase's event order, not a sequential recipe.) These are what the
// live-event engine will be checked against.

import EddyModel
import EddyTesting
import Testing

@Suite struct ReferenceEventsTests {
    private func root(_ text: String) throws -> Value { try JSONParser.parse(text).normalized() }
    private func names(_ events: [ListenerEvent]) -> [String] {
        events.map { event in
            var text = event.kind.rawValue
            if let key = event.key { text += " " + key }
            if event.kind != .childRemoved, event.kind != .value { text += " prev " + (event.previousKey ?? "null") }
            return text
        }
    }

    @Test func limitToLastWindowKeepsItsSize() throws {
        let before = try root(#"{"m": {"a": 1, "b": 2, "c": 3}}"#)
        let after = before.setting(.number(4), at: try Path("/m/d"))
        let query = Query(order: .key, limit: .last(2))
        let events = ReferenceModel.events(before: before, after: after, at: try Path("/m"), query)
        #expect(names(events) == ["child_removed b", "child_added d prev c", "value"])
        #expect(events.last?.value == (try root(#"{"c": 3, "d": 4}"#)))
    }

    @Test func aChildWhoseSortValueChangesMovesThenChanges() throws {
        let before = try root(#"{"m": {"a": {"s": 1}, "b": {"s": 2}, "c": {"s": 3}}}"#)
        let after = before.setting(.number(4), at: try Path("/m/b/s"))
        let query = Query(order: .child(try Path("s")))
        let events = ReferenceModel.events(before: before, after: after, at: try Path("/m"), query)
        #expect(names(events) == ["child_moved b prev c", "child_changed b prev c", "value"])
    }

    @Test func typesComeInFirebaseOrderAndEachTypeInQueryOrder() throws {
        let before = try root(#"{"m": {"a": 1, "b": 2, "c": 3, "d": 4}}"#)
        var after = before
        after.set(.null, at: try Path("/m/d"))
        after.set(.null, at: try Path("/m/a"))
        after.set(.number(0), at: try Path("/m/z"))  // sorts first by value
        after.set(.number(5), at: try Path("/m/b"))  // moves to the end
        after.set(.number(-1), at: try Path("/m/y"))
        let events = ReferenceModel.events(before: before, after: after, at: try Path("/m"), Query(order: .value))
        #expect(
            names(events) == [
                "child_removed a", "child_removed d", "child_added y prev null", "child_added z prev y", "child_moved b prev c",
                "child_changed b prev c", "value",
            ])
    }

    @Test func plainListenersHearEveryDepthAndNothingElse() throws {
        let before = try root(#"{"m": {"a": {"x": {"y": 1}}}, "other": 1}"#)
        let location = try Path("/m")
        let deep = before.setting(.number(2), at: try Path("/m/a/x/y"))
        #expect(names(ReferenceModel.events(before: before, after: deep, at: location, nil)) == ["child_changed a prev null", "value"])
        let elsewhere = before.setting(.number(2), at: try Path("/other"))
        #expect(ReferenceModel.events(before: before, after: elsewhere, at: location, nil).isEmpty)
        let primitive = before.setting(.string("p"), at: location)
        let events = ReferenceModel.events(before: before, after: primitive, at: location, nil)
        #expect(names(events) == ["child_removed a", "value"])
        #expect(events.last?.value == .string("p"))
        let gone = before.setting(.null, at: try Path("/"))
        #expect(names(ReferenceModel.events(before: before, after: gone, at: location, nil)) == ["child_removed a", "value"])
    }

    @Test func keyOrderNeverMovesAndAQueryIgnoresChangesOutsideItsWindow() throws {
        let before = try root(#"{"m": {"a": 1, "b": 2, "c": 3}}"#)
        let location = try Path("/m")
        let changed = before.setting(.number(9), at: try Path("/m/b"))
        #expect(names(ReferenceModel.events(before: before, after: changed, at: location, Query(order: .key))) == ["child_changed b prev a", "value"])
        let outside = before.setting(.number(9), at: try Path("/m/c"))
        #expect(ReferenceModel.events(before: before, after: outside, at: location, Query(order: .key, limit: .first(2))).isEmpty)
    }

    @Test func attachingListsTheResultThenValue() throws {
        let data = try root(#"{"m": {"a": {"s": 2}, "b": {"s": 1}, "c": {}}}"#)
        let events = ReferenceModel.initialEvents(data, at: try Path("/m"), Query(order: .child(try Path("s"))))
        #expect(names(events) == ["child_added b prev null", "child_added a prev b", "value"])
        #expect(names(ReferenceModel.initialEvents(data, at: try Path("/nothing"), nil)) == ["value"])
    }

    @Test func applyingEventsOrTheChangeSetGivesTheNewResult() {
        let seed = SeededGenerator.seedFromEnvironment()
        print("ReferenceEventsTests: EDDY_SEED=\(seed)")
        var g = SeededGenerator(seed: seed)
        let keys = ["a", "b", "c", "d", "e", "1", "2", "10"]
        func randomRoot(_ g: inout SeededGenerator) -> Value {
            var children: [String: Value] = [:]
            for key in keys where g.chance(2, in: 3) {
                children[key] = g.chance(1, in: 2) ? .number(Double(g.int(in: 0...4))) : .object(["s": .number(Double(g.int(in: 0...4)))])
            }
            return Value.object(["m": .object(children)]).normalized()
        }
        let location = Path(validatedKeys: ["m"])
        for iteration in 0..<500 {
            let before = randomRoot(&g)
            var after = before
            var touched = Set<String>()
            for _ in 0..<g.int(in: 1...3) {
                let key = g.element(of: keys)
                touched.insert(key)
                let path = Path(validatedKeys: ["m", key] + (g.chance(1, in: 2) ? ["s"] : []))
                after.set(g.chance(1, in: 4) ? .null : .number(Double(g.int(in: 0...4))), at: path)
            }
            let orders: [Query.Order] = [.key, .value, .child(Path(validatedKeys: ["s"]))]
            var query = Query(order: g.element(of: orders))
            if g.chance(1, in: 2) { query.limit = g.chance(1, in: 2) ? .first(g.int(in: 1...4)) : .last(g.int(in: 1...4)) }
            let context = Comment("seed \(seed) iteration \(iteration) query \(query)")
            let old = ReferenceModel.listenerResult(before, at: location, query)
            let new = ReferenceModel.listenerResult(after, at: location, query)

            // A client keeping an ordered list by previousKey (one child written).
            var list = touched.count == 1 ? old : new
            for event in ReferenceModel.events(before: before, after: after, at: location, query) where touched.count == 1 {
                switch event.kind {
                case .childRemoved:
                    list.removeAll { $0.key == event.key }
                case .childAdded, .childMoved, .childChanged:
                    list.removeAll { $0.key == event.key }
                    let at = event.previousKey.flatMap { previous in list.firstIndex { $0.key == previous }.map { $0 + 1 } } ?? 0
                    list.insert((event.key!, event.value), at: at)
                case .value:
                    break
                }
            }
            #expect(list.map(\.key) == new.map(\.key), context)
            #expect(list.map(\.value) == new.map(\.value), context)

            // A client applying the change set.
            guard let set = ReferenceModel.changeSet(before: before, after: after, at: location, query) else {
                #expect(old.map(\.key) == new.map(\.key) && old.map(\.value) == new.map(\.value), context)
                continue
            }
            var applied = old
            for i in set.deletions.reversed() { applied.remove(at: i) }
            for j in set.insertions { applied.insert(new[j], at: j) }
            for j in set.modifications { applied[j] = new[j] }
            #expect(applied.map(\.key) == new.map(\.key), context)
            #expect(applied.map(\.value) == new.map(\.value), context)
        }
    }
}
