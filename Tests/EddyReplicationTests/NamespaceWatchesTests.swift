// The leader's table of parked namespaces' watches: a watch fires once, only for an entry newer
// than the one it named (any entry when it named none), rings its connection's bell, and is
// handed out by `takeFired` once; watches of a closed connection come back from `remove` with
// their positions and fire no more; other connections' watches are untouched; `positions` names
// what log retention must keep until the follower connects to a fired namespace again.

import EddyModel
import Testing

@testable import EddyReplication

@Suite struct NamespaceWatchesTests {
    private func ids(_ count: Int) -> [LogID] {
        var generator = PushIDGenerator()
        return (0..<count).map { generator.next(nowMilliseconds: 1_700_000_000_000 + UInt64($0)) }
    }

    @Test func aWatchFiresOnceForANewerEntryAndRingsItsConnection() async {
        let watches = NamespaceWatches()
        let log = self.ids(5)
        let (bell, ring) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        watches.add(connection: 1, bell: ring)
        watches.watch(connection: 1, namespace: "a", after: log[2])
        watches.watch(connection: 1, namespace: "fresh", after: nil)
        watches.committed("a", newest: log[2])
        watches.committed("a", newest: log[1])
        watches.committed("other", newest: log[4])
        #expect(watches.takeFired(connection: 1) == [], "not newer than the entry named: no fire")
        watches.committed("a", newest: log[3])
        watches.committed("fresh", newest: log[0])
        var iterator = bell.makeAsyncIterator()
        #expect(await iterator.next() != nil, "the bell rang")
        #expect(watches.takeFired(connection: 1) == ["a", "fresh"])
        #expect(watches.takeFired(connection: 1) == [], "handed out once")
        watches.committed("a", newest: log[4])
        #expect(watches.takeFired(connection: 1) == [], "a watch fires once")
    }

    @Test func fireFiresOnlyAWatchThatIsStillThere() {
        let watches = NamespaceWatches()
        let (_, ring) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        watches.add(connection: 7, bell: ring)
        watches.fire(connection: 7, namespace: "never-watched")
        #expect(watches.takeFired(connection: 7) == [])
        watches.watch(connection: 7, namespace: "b", after: nil)
        watches.fire(connection: 7, namespace: "b")
        watches.fire(connection: 7, namespace: "b")
        #expect(watches.takeFired(connection: 7) == ["b"])
        watches.watch(connection: 8, namespace: "c", after: nil)
        watches.committed("c", newest: self.ids(1)[0])
        #expect(watches.takeFired(connection: 8) == [], "a connection not added registers nothing")
    }

    @Test func aClosedConnectionsWatchesEndAndOthersStay() {
        let watches = NamespaceWatches()
        let log = self.ids(3)
        let (_, ringOne) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let (_, ringTwo) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        watches.add(connection: 1, bell: ringOne)
        watches.add(connection: 2, bell: ringTwo)
        watches.watch(connection: 1, namespace: "x", after: log[0])
        watches.watch(connection: 1, namespace: "y", after: nil)
        watches.watch(connection: 2, namespace: "x", after: log[1])
        let held = watches.positions(connection: 1, reconnected: { _ in false })
        #expect(held.count == 2)
        #expect(held["x"] == .some(log[0]))
        #expect(held["y"] == .some(nil))
        watches.remove(connection: 1)
        #expect(watches.positions(connection: 1, reconnected: { _ in false }).isEmpty, "a closed connection holds no position")
        #expect(watches.positions(connection: 2, reconnected: { _ in false }) == ["x": .some(log[1])])
        watches.committed("x", newest: log[2])
        #expect(watches.takeFired(connection: 1) == [])
        #expect(watches.takeFired(connection: 2) == ["x"])
    }

    @Test func positionsNameEveryWatchAndFiredOnesUntilTheFollowerConnects() {
        let watches = NamespaceWatches()
        let log = self.ids(4)
        let (_, ring) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        watches.add(connection: 1, bell: ring)
        watches.watch(connection: 1, namespace: "quiet", after: log[0])
        watches.watch(connection: 1, namespace: "written", after: log[1])
        watches.committed("written", newest: log[2])
        _ = watches.takeFired(connection: 1)
        let before = watches.positions(connection: 1) { _ in false }
        #expect(before.count == 2)
        #expect(before["quiet"] == .some(log[0]))
        #expect(before["written"] == .some(log[1]), "fired, the follower not connected yet: still needed")
        let after = watches.positions(connection: 1) { $0 == "written" }
        #expect(after.count == 1 && after["quiet"] == .some(log[0]), "connected again: forgotten")
        #expect(watches.positions(connection: 1) { _ in false }.count == 1, "forgotten for good")
        #expect(watches.positions(connection: 2) { _ in false }.isEmpty)
    }
}
