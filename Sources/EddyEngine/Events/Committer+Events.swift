// The committer's control requests (between groups): rules changes, and attaching or removing
// listeners. A listener's attach batch is delivered through the sync pipeline like a group's
// events, so it arrives after the events of every earlier entry and only once the state it
// describes is durable.

import CoreMetrics
import EddyEvents
import EddyModel

extension Committer {
    func run(_ control: ControlRequest) {
        // Listeners come and go only here (attach, removal, a rules change's cancels).
        defer { self.metrics.listeners.record(self.events.listenerCount) }
        switch control {
        case .setRules(let rules, let continuation):
            let result = self.applyRules(rules)
            if case .success = result, !self.events.isEmpty {
                var cancels = self.events.cancelListenersWithoutIndex()
                let security = self.security
                cancels += self.events.cancelListenersNoLongerReadable(
                    { location, query, access in self.canRead(location, query: query, access) },
                    recheck: { location in security.readDependsOnTreeOrTime(location) })
                if !cancels.isEmpty { self.deliver(cancels) }
            }
            continuation.resume(returning: result)
        case .listen(let spec, let continuation):
            if let failed = self.failed {
                continuation.resume(returning: .failure(failed))
                return
            }
            if !spec.access.isAdmin, !self.canRead(spec.location, query: spec.query, spec.access) {
                continuation.resume(returning: .failure(Engine.permissionDenied))
                return
            }
            var spec = spec
            spec.recheckRead = !spec.access.isAdmin && self.security.readDependsOnTreeOrTime(spec.location)
            let added: (id: ListenerID, first: [Delivery])
            do {
                added = try self.events.add(spec, newest: self.lastAssignedLogID)
            } catch {
                continuation.resume(returning: .failure(error))
                return
            }
            // Handed over (or queued behind earlier groups' events) before the answer.
            if !added.first.isEmpty { self.deliver(added.first) }
            continuation.resume(returning: .success(ListenerAttachment(id: added.id, liveAfter: self.lastAssignedLogID)))
        case .unlisten(let id, let continuation):
            continuation.resume(returning: self.events.remove(id))
        case .unlistenAll(let location, let continuation):
            continuation.resume(returning: self.events.removeAll(at: location))
        case .discardEntries(let common, let countMax, let keep, let continuation):
            continuation.resume(returning: self.discardEntries(after: common, countMax: countMax, keep: keep))
        }
    }
}
