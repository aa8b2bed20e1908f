// Compiled regular expressions of rules' `matches(/.../flags)`, by pattern and flags, so a rule
// evaluated on every write compiles its regex once instead of at each evaluation. Bounded: at
// most `countMax` entries; when full it starts over (a rules document holds few distinct
// patterns). A `RuleRegex` is an immutable value, shared freely between threads.

import Synchronization

enum RuleRegexCache {
    static let countMax = 256
    private static let compiled = Mutex<[String: RuleRegex]>([:])

    /// The regex for `pattern` with `flags`; throws why it does not compile.
    static func regex(_ pattern: String, flags: String) throws(RuleRegexError) -> RuleRegex {
        let key = flags + "/" + pattern
        if let cached = self.compiled.withLock({ $0[key] }) { return cached }
        let regex = try RuleRegex(pattern, flags: flags)
        self.compiled.withLock { cache in
            if cache.count >= self.countMax { cache.removeAll(keepingCapacity: true) }
            cache[key] = regex
        }
        return regex
    }
}
