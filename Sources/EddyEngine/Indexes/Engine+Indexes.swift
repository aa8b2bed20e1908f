// Folder Indexes/: the engine's wiring of EddyIndexes (the committer maintains entries and
// applies rules changes to the catalog; the engine reports status). The index logic itself is
// the EddyIndexes target.
//
// Index status for operators (`GET /.settings/indexes.json`, `eddy index status`) and a wait
// for builds to finish (tests, benchmarks, `eddy index build`).

import EddyIndexes
import EddyModel
import EddyStorage

/// One index as an operator sees it.
public struct IndexStatus: Sendable, Equatable {
    public enum State: String, Sendable {
        case building
        case ready
    }

    public var id: UInt32
    /// The declaration's location, wildcards as written: "/posts/$uid".
    public var location: String
    /// ".value" or the child path: "metrics/views".
    public var on: String
    public var state: State
    /// Children the build has indexed (writes during the build keep the index current too).
    public var indexedCount: Int
    /// While building: the child the build resumes at (the location itself before it starts).
    public var position: String?
    public var createdMilliseconds: UInt64
    public var readyMilliseconds: UInt64?

    /// The JSON object of the HTTP endpoint and the CLI.
    public var json: Value {
        var object: [String: Value] = [
            "id": .number(Double(self.id)), "location": .string(self.location), "on": .string(self.on),
            "state": .string(self.state.rawValue), "indexed": .number(Double(self.indexedCount)),
            "created": .number(Double(self.createdMilliseconds)),
        ]
        if let position = self.position { object["position"] = .string(position) }
        if let ready = self.readyMilliseconds { object["ready"] = .number(Double(ready)) }
        return .object(object)
    }
}

extension Engine {
    public func indexStatus() -> [IndexStatus] {
        self.indexCatalog.definitions.map { definition in
            var position: String? = nil
            if case .building(resumeKey: let resumeKey) = definition.state {
                position = Self.describeTreeKey(
                    resumeKey.isEmpty ? definition.literalTreePrefix : resumeKey, segmentsMax: definition.depth + 1)
            }
            return IndexStatus(
                id: definition.id, location: definition.locationText, on: definition.onText,
                state: definition.isReady ? .ready : .building, indexedCount: definition.indexedCount, position: position,
                createdMilliseconds: definition.createdMilliseconds, readyMilliseconds: definition.readyMilliseconds)
        }
    }

    /// Returns when no index is building; throws `unavailable` after `timeoutSeconds`, and
    /// at once when this engine does not run builds (`EngineOptions.runIndexBuilds`).
    public func waitForIndexes(timeoutSeconds: Double = 60) async throws(EddyError) {
        let deadline = ContinuousClock.now.advanced(by: .milliseconds(Int(timeoutSeconds * 1000)))
        while let building = self.indexCatalog.definitions.first(where: { !$0.isReady }) {
            if let failure = self.failure { throw failure }
            guard self.options.runIndexBuilds, ContinuousClock.now < deadline else {
                throw EddyError(
                    .unavailable,
                    "index \(building.description) is still building (\(building.indexedCount) children indexed so far)")
            }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Compactions of freshly built indexes still queued or running (see `Committer.settle`).
    /// Queries are correct meanwhile, only slower; benchmarks wait for zero before measuring.
    public var indexCompactionsPending: Int { self.database.backgroundCompactionsPending }

    /// The first `segmentsMax` segments of a tree key as a path (the child a build resumes at).
    static func describeTreeKey(_ key: [UInt8], segmentsMax: Int) -> String {
        var keys: [String] = []
        var rest = key[...]
        while !rest.isEmpty, keys.count < segmentsMax, let length = PathKeyEncoding.segmentLength(rest) {
            var segment = rest.prefix(length)
            guard let k = try? PathKeyEncoding.decodeSegment(&segment) else { break }
            keys.append(k)
            rest = rest.dropFirst(length)
        }
        return Path(validatedKeys: keys).description
    }
}
