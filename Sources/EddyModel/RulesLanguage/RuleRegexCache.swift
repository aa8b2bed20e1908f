// Compiled regular expressions of rules' `matches(/.../flags)`, by pattern and flags, so a rule
// evaluated on every write compiles its regex once instead of at each evaluation. Bounded: at
// most `countMax` entries; when full it starts over (a rules document holds few distinct
// patterns).
//
// Sharing: `Regex<AnyRegexOutput>` is not declared Sendable, but a compiled regex is immutable
// once its program is lowered, and the standard library publishes the lowered program with an
// atomic initialisation; each regex is matched once against "" before it is shared, so every
// thread only reads it.

import Synchronization

enum RuleRegexCache {
    final class Compiled: @unchecked Sendable {
        let regex: Regex<AnyRegexOutput>

        init(_ regex: Regex<AnyRegexOutput>) {
            self.regex = regex
            _ = "".contains(regex)  // lowers the program before the regex is shared
        }
    }

    static let countMax = 256
    private static let compiled = Mutex<[String: Compiled]>([:])

    /// The regex for `pattern` with `flags` (`i`: ignore case); nil when it does not compile.
    static func regex(_ pattern: String, flags: String) -> Compiled? {
        let key = flags + "/" + pattern
        if let cached = self.compiled.withLock({ $0[key] }) { return cached }
        // JavaScript's classes and units, as Firebase documents them: `\d` is [0-9], `\w` is
        // [A-Za-z0-9_], and `.` is one character (a code point), not a grapheme cluster.
        guard var regex = try? Regex(pattern) else { return nil }
        regex = regex.asciiOnlyDigits().asciiOnlyWordCharacters().matchingSemantics(.unicodeScalar)
        if flags.contains("i") { regex = regex.ignoresCase() }
        let compiled = Compiled(regex)
        self.compiled.withLock { cache in
            if cache.count >= self.countMax { cache.removeAll(keepingCapacity: true) }
            cache[key] = compiled
        }
        return compiled
    }
}
