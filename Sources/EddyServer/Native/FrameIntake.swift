// Bounds on native requests as they arrive, across connections: a frame may hold up to 16 MiB,
// and a connection may queue 64 MiB of requests before its socket is no longer read, so without
// a shared bound 300 connections that each sent most of one frame and stopped held 4.9 GB (and
// reading a frame comes before any `auth`). The bytes of frames being received and of requests
// queued count in `budget`, the one HTTP request bodies use (`--request-bodies-bytes-total`);
// a connection that would take it past its bound is refused and closed. A frame that stops
// arriving for `stallSeconds` (`--http-body-timeout-seconds`) ends its connection the same way.

struct FrameIntake: Sendable {
    let budget: MemoryBudget
    let stallSeconds: Int64

    init(budget: MemoryBudget = MemoryBudget(bytesMax: 1 << 30), stallSeconds: Int64 = 30) {
        self.budget = budget
        self.stallSeconds = stallSeconds
    }
}
