// The security-rules language against the examples of Firebase's documentation (each test names
// its page), and the cascade semantics against a small reference evaluator with random rule
// trees (the seed is printed).

import EddyModel
import EddyTesting
import Testing

@Suite struct SecurityRulesTests {
    func rules(_ json: String) throws -> SecurityRules {
        guard case .object(let top) = try JSONParser.parse(Array(json.utf8)), let rules = top["rules"] else {
            throw TestFailure("no rules member")
        }
        return try SecurityRules.compile(rules)
    }

    func context(auth: RuleValue = .null, tree: String = "null", newTree: String? = nil, query: RuleValue = .null) throws -> RuleContext {
        let before = try JSONParser.parse(Array(tree.utf8)).normalized()
        let after = try newTree.map { try JSONParser.parse(Array($0.utf8)).normalized() } ?? before
        return RuleContext(auth: auth, now: 1_700_000_000_000, tree: RuleTree(before), newTree: RuleTree(after), query: query)
    }

    func user(_ uid: String, token: [String: RuleValue] = [:]) -> RuleValue {
        .map(["uid": .string(uid), "provider": .string("password"), "token": .map(token)])
    }

    func path(_ text: String) throws -> Path { try Path(text) }

    // "Understand Firebase Realtime Database Security Rules": user-based rules with $uid.
    @Test func usersWriteOnlyTheirOwnLocation() throws {
        let rules = try self.rules(#"{"rules": {"users": {"$uid": {".write": "$uid === auth.uid"}}}}"#)
        let write = try self.context(auth: self.user("alice"), newTree: #"{"users": {"alice": {"name": "A"}}}"#)
        #expect(rules.canWrite(try self.path("/users/alice"), write))
        #expect(!rules.canWrite(try self.path("/users/bob"), write))
        #expect(!rules.canWrite(try self.path("/users/alice"), try self.context(newTree: #"{"users": {"alice": 1}}"#)), "unauthenticated: auth.uid is null, not alice")
        #expect(!rules.canRead(try self.path("/users/alice"), write), "no .read anywhere denies")
    }

    // `allowsEveryWrite` lets a caller skip the decision: only a root `.write` of true with no
    // `.validate` anywhere, where every write is indeed allowed.
    @Test func everyWriteIsAllowedOnlyUnderAnUnconditionalRootGrantWithoutValidation() throws {
        #expect(SecurityRules.open.allowsEveryWrite)
        #expect(!SecurityRules.locked.allowsEveryWrite)
        let open = try self.rules(#"{"rules": {".read": "auth != null", ".write": true, "a": {".indexOn": ["x"]}}}"#)
        #expect(open.allowsEveryWrite)
        #expect(open.canWrite(try self.path("/a/b"), try self.context(newTree: #"{"a": {"b": {".sv": 1}}}"#)))
        for document in [
            #"{"rules": {".write": "auth != null"}}"#,
            #"{"rules": {".write": false}}"#,
            #"{"rules": {"a": {".write": true}}}"#,
            #"{"rules": {".write": true, ".validate": "newData.exists()"}}"#,
            #"{"rules": {".write": true, "a": {"$k": {".validate": "newData.isNumber()"}}}}"#,
        ] {
            #expect(!(try self.rules(document)).allowsEveryWrite, "\(document)")
        }
        let validated = try self.rules(#"{"rules": {".write": true, "a": {".validate": "newData.isNumber()"}}}"#)
        #expect(!validated.canWrite(try self.path("/a"), try self.context(newTree: #"{"a": "text"}"#)))
    }

    // "Understand rules": read and write rules cascade; a grant above cannot be revoked below.
    @Test func grantsCascadeAndCannotBeRevokedBelow() throws {
        let rules = try self.rules(#"{"rules": {"foo": {".read": true, "bar": {".read": false}}, "baz": {"qux": {".read": true}}}}"#)
        let context = try self.context()
        #expect(rules.canRead(try self.path("/foo/bar"), context))
        #expect(rules.canRead(try self.path("/foo/bar/deeper"), context))
        #expect(!rules.canRead(try self.path("/baz"), context), "a read of /baz is not allowed by a grant on /baz/qux: no filtering")
        #expect(rules.canRead(try self.path("/baz/qux"), context))
        #expect(!rules.canRead(try self.path("/"), context))
    }

    // "Validate data": .validate on new data, not cascading, skipped on delete.
    @Test func validateChecksNewDataAndIsSkippedForDeletes() throws {
        let rules = try self.rules(
            #"{"rules": {".write": true, "foo": {".validate": "newData.isString() && newData.val().length < 100"}}}"#)
        #expect(rules.canWrite(try self.path("/foo"), try self.context(newTree: #"{"foo": "short"}"#)))
        #expect(!rules.canWrite(try self.path("/foo"), try self.context(newTree: #"{"foo": 42}"#)))
        #expect(!rules.canWrite(try self.path("/foo"), try self.context(newTree: "{\"foo\": \"\(String(repeating: "x", count: 120))\"}")))
        #expect(rules.canWrite(try self.path("/foo"), try self.context(tree: #"{"foo": "x"}"#, newTree: "null")), "deleting skips .validate")
        #expect(!rules.canWrite(try self.path("/"), try self.context(newTree: #"{"foo": 1}"#)), "a write above still validates below")
    }

    // "Validate data": the widget example, with $other forbidding unknown children and root lookups.
    @Test func theWidgetExample() throws {
        let rules = try self.rules(
            #"""
            {"rules": {".write": true, "widget": {
                ".validate": "newData.hasChildren(['color', 'size'])",
                "size": {".validate": "newData.isNumber() && newData.val() >= 0 && newData.val() <= 99"},
                "color": {".validate": "newData.isString() && root.child('valid_colors/' + newData.val()).exists()"},
                "$other": {".validate": false}}}}
            """#)
        let colors = #""valid_colors": {"red": true, "blue": true}"#
        func write(_ widget: String) throws -> Bool {
            rules.canWrite(try self.path("/widget"), try self.context(tree: "{\(colors)}", newTree: "{\(colors), \"widget\": \(widget)}"))
        }
        #expect(try write(#"{"color": "red", "size": 10}"#))
        #expect(!(try write(#"{"color": "green", "size": 10}"#)), "root.child() sees the current data: no green")
        #expect(!(try write(#"{"color": "red", "size": 100}"#)))
        #expect(!(try write(#"{"color": "red"}"#)), "hasChildren")
        #expect(!(try write(#"{"color": "red", "size": 1, "extra": true}"#)), "$other")
    }

    // "Rules conditions": data and newData (create or delete, never update), now.
    @Test func existingAndNewDataAndNow() throws {
        let rules = try self.rules(
            #"{"rules": {"items": {"$id": {".write": "!data.exists() || !newData.exists()", ".validate": "newData.child('at').val() <= now"}}}}"#)
        let create = try self.context(newTree: #"{"items": {"a": {"at": 1}}}"#)
        #expect(rules.canWrite(try self.path("/items/a"), create))
        let update = try self.context(tree: #"{"items": {"a": {"at": 1}}}"#, newTree: #"{"items": {"a": {"at": 2}}}"#)
        #expect(!rules.canWrite(try self.path("/items/a"), update))
        let delete = try self.context(tree: #"{"items": {"a": {"at": 1}}}"#, newTree: "null")
        #expect(rules.canWrite(try self.path("/items/a"), delete))
        let future = try self.context(newTree: #"{"items": {"b": {"at": 1800000000000}}}"#)
        #expect(!rules.canWrite(try self.path("/items/b"), future))
    }

    // "Rules conditions": auth.token claims and matches(); "Securely query data": query rules.
    @Test func tokenClaimsRegexAndQueryRules() throws {
        let rules = try self.rules(
            #"""
            {"rules": {
              "admin": {".read": "auth.token.email_verified == true && auth.token.email.matches(/.*@example.com$/)"},
              "baskets": {".read": "auth.uid != null && query.orderByChild == 'owner' && query.equalTo == auth.uid"},
              "flags": {".read": "auth.token.admin === true"}}}
            """#)
        let verified = self.user("u1", token: ["email": .string("ada@example.com"), "email_verified": .bool(true)])
        let unverified = self.user("u1", token: ["email": .string("ada@example.com"), "email_verified": .bool(false)])
        let elsewhere = self.user("u1", token: ["email": .string("ada@example.org"), "email_verified": .bool(true)])
        #expect(rules.canRead(try self.path("/admin"), try self.context(auth: verified)))
        #expect(!rules.canRead(try self.path("/admin"), try self.context(auth: unverified)))
        #expect(!rules.canRead(try self.path("/admin"), try self.context(auth: elsewhere)))
        let own: RuleValue = .map(["orderByChild": .string("owner"), "equalTo": .string("u1")])
        let other: RuleValue = .map(["orderByChild": .string("owner"), "equalTo": .string("u2")])
        #expect(rules.canRead(try self.path("/baskets"), try self.context(auth: verified, query: own)))
        #expect(!rules.canRead(try self.path("/baskets"), try self.context(auth: verified, query: other)))
        #expect(!rules.canRead(try self.path("/baskets"), try self.context(auth: verified)), "no query: query.orderByChild is null")
        #expect(!rules.canRead(try self.path("/flags"), try self.context(auth: verified)), "a missing claim is null, not true")
        #expect(rules.canRead(try self.path("/flags"), try self.context(auth: self.user("x", token: ["admin": .bool(true)]))))
    }

    // "Rules conditions": `auth` is null for a signed-out client, and a member of null is null
    // (recorded from a live database: `auth.uid !== 'eviluser'` holds signed out), so the right
    // side of `||` is still reached; a method or `length` of null fails the rule.
    @Test func aMemberOfNullIsNull() throws {
        let rules = try self.rules(
            #"""
            {"rules": {
              "posts": {"$id": {".read": "auth.uid === data.child('owner').val() || data.child('public').val() === true"}},
              "open": {".read": "auth.token.banned !== true"},
              "tenant": {".read": "auth.token.firebase.tenant == null && auth['token'] != null"},
              "named": {".read": "auth.uid.length > 0"},
              "method": {".read": "auth.uid.contains('a') || true"}}}
            """#)
        let tree = #"{"posts": {"p": {"owner": "alice", "public": true}, "q": {"owner": "alice"}}}"#
        let signedOut = try self.context(tree: tree)
        #expect(rules.canRead(try self.path("/posts/p"), signedOut))
        #expect(!rules.canRead(try self.path("/posts/q"), signedOut))
        #expect(rules.canRead(try self.path("/posts/q"), try self.context(auth: self.user("alice"), tree: tree)))
        #expect(rules.canRead(try self.path("/open"), signedOut))
        #expect(!rules.canRead(try self.path("/open"), try self.context(auth: self.user("b", token: ["banned": .bool(true)]))))
        #expect(rules.canRead(try self.path("/tenant"), try self.context(auth: self.user("t"))))
        #expect(!rules.canRead(try self.path("/tenant"), signedOut), "auth['token'] of null is null")
        #expect(!rules.canRead(try self.path("/named"), signedOut), "length of null fails the rule")
        #expect(rules.canRead(try self.path("/named"), try self.context(auth: self.user("u"))))
        #expect(!rules.canRead(try self.path("/method"), signedOut), "a method of null fails the whole rule")
    }

    // Division by zero is NaN on Firebase (recorded: `(1/0 + '') == 'NaN'`, and both `(1/0) > 2`
    // and `(1/0) < 2` are false), not JavaScript's Infinity.
    @Test func divisionByZeroIsNaN() throws {
        func holds(_ expression: String) throws -> Bool {
            let rules = try self.rules("{\"rules\": {\"e\": {\".read\": \"\(expression)\"}}}")
            return rules.canRead(try self.path("/e"), try self.context())
        }
        #expect(try holds("(1/0 + '') == 'NaN'"))
        #expect(!(try holds("(1/0) > 2")))
        #expect(!(try holds("(1/0) <= 2")))
        #expect(!(try holds("(0/0) >= 0")))
        #expect(!(try holds("1/0 == 1/0")), "NaN equals nothing")
        #expect(try holds("(1e308 * 10 + '') == 'Infinity' && 7 / 2 == 3.5"))
    }

    // Recorded from a live database: a method may be named by a string literal in brackets.
    @Test func aMethodNamedInBrackets() throws {
        let rules = try self.rules(#"{"rules": {"e": {".read": "root['exists']() == false && 'abc'[\"contains\"]('b')"}}}"#)
        #expect(rules.canRead(try self.path("/e"), try self.context()))
        #expect(!rules.canRead(try self.path("/e"), try self.context(tree: #"{"e": 1}"#)))
        #expect(throws: SecurityRules.CompileError.self) { try self.rules(#"{"rules": {"e": {".read": "root['exi' + 'sts']() == false"}}}"#) }
    }

    @Test func stringMethodsAndOperators() throws {
        func holds(_ expression: String, _ value: String = #""Hello World""#) throws -> Bool {
            let rules = try self.rules("{\"rules\": {\".write\": true, \"v\": {\".validate\": \"\(expression)\"}}}")
            return rules.canWrite(try self.path("/v"), try self.context(newTree: "{\"v\": \(value)}"))
        }
        #expect(try holds("newData.val().toLowerCase() == 'hello world'"))
        #expect(try holds("newData.val().toUpperCase().beginsWith('HELLO')"))
        #expect(try holds("newData.val().endsWith('World') && newData.val().contains('o W')"))
        #expect(try holds("newData.val().replace('o', '0') == 'Hell0 W0rld'"))
        #expect(try holds("newData.val().matches(/^hello/i)"))
        #expect(!(try holds("newData.val().matches(/^hello/)")))
        #expect(try holds("newData.val().length === 11 ? true : false"))
        #expect(try holds("newData.val() * 2 + 1 === 7 && newData.val() % 2 == 1 && -newData.val() < 0", "3"))
        #expect(!(try holds("newData.val() == '3'", "3")), "== is strict: a number is not a string")
        #expect(!(try holds("newData.val() > 'a'", "3")), "comparing a number with a string errs")
        #expect(!(try holds("newData.val()", "3")), "a non-boolean result fails")
        #expect(try holds("'id-' + newData.val() == 'id-3'", "3"))
        #expect(try holds("newData.parent().child('v').isNumber() && !newData.isBoolean() && data.getPriority() == null", "3"))
    }

    // Rules are "a subset of JavaScript's expression syntax": strings are UTF-16 code units, so
    // canonically equivalent spellings differ, a combining mark counts, and \d and \w are ASCII.
    @Test func stringsAreJavaScriptCodeUnits() throws {
        func holds(_ expression: String, _ value: String) throws -> Bool {
            let rules = try self.rules("{\"rules\": {\".write\": true, \"v\": {\".validate\": \"\(expression)\"}}}")
            return rules.canWrite(try self.path("/v"), try self.context(newTree: "{\"v\": \(value)}"))
        }
        #expect(try holds("newData.val().length == 2", #""\ud83d\ude00""#), "an emoji is two code units")
        #expect(!(try holds("newData.val().length < 100", "\"a\(String(repeating: "\\u0301", count: 200))\"")), "combining marks count")
        #expect(!(try holds("newData.val() == '\u{E9}'", #""e\u0301""#)), "e + U+0301 is not U+00E9")
        #expect(try holds("newData.val() == '\u{E9}'", #""\u00e9""#))
        #expect(try holds("newData.val() == '\\u00e9' && '\\ud83d\\ude00'.length == 2", #""\u00e9""#), "JavaScript's \\u escapes")
        #expect(!(try holds("newData.val() != 'e\u{301}' || newData.val() < 'e'", #""e\u0301""#)))
        #expect(try holds("newData.val() < '\u{FF61}'", #""\ud83d\ude00""#), "code unit order: 0xD83D < 0xFF61")
        #expect(try holds("newData.val().beginsWith('e') && newData.val().endsWith('\u{301}x') && newData.val().contains('\u{301}')", #""e\u0301x""#))
        #expect(try holds("newData.val().replace('\u{301}', '') == 'ex'", #""e\u0301x""#))
        #expect(try holds(#"newData.val().matches(/^\\d{4}$/)"#, #""1234""#))
        #expect(!(try holds(#"newData.val().matches(/^\\d{4}$/)"#, #""\u0661\u0662\u0663\u0664""#)), "Arabic-Indic digits are not \\d")
        #expect(!(try holds(#"newData.val().matches(/^\\w+$/)"#, #""\u00e9t\u00e9""#)), "accented letters are not \\w")
        #expect(try holds("newData.val().matches(/^.$/)", #""\u00e9""#))
        #expect(!(try holds("newData.val().matches(/^.$/)", #""a\u0301""#)), ". is one character, not a grapheme")
    }

    // "Rules and Auth": `auth.token.firebase.identities["google.com"][0]`, an array claim.
    @Test func arrayClaimsAreIndexedByNumber() throws {
        let rules = try self.rules(#"{"rules": {"g": {".read": "auth.token.firebase.identities['google.com'][0] == '1234'"}}}"#)
        let token: [String: RuleValue] = ["firebase": .map(["identities": .map(["google.com": .map(["0": .string("1234")])])])]
        #expect(rules.canRead(try self.path("/g"), try self.context(auth: self.user("u", token: token))))
        let other: [String: RuleValue] = ["firebase": .map(["identities": .map(["google.com": .map(["0": .string("99")])])])]
        #expect(!rules.canRead(try self.path("/g"), try self.context(auth: self.user("u", token: other))))
    }

    @Test func syntaxErrorsNameTheRuleAndColumn() throws {
        func refusal(_ rules: String) -> String {
            do {
                _ = try self.rules(rules)
                return "accepted"
            } catch {
                return "\(error)"
            }
        }
        #expect(refusal(#"{"rules": {"a": {".read": "auth.uid =="}}}"#).contains("rules at /a: .read \"auth.uid ==\": expected a value"))
        #expect(refusal(#"{"rules": {".read": "foo == 1"}}"#).contains("unknown variable foo"))
        #expect(refusal(#"{"rules": {"a": {".read": "$uid == auth.uid"}}}"#).contains("no such wildcard"))
        #expect(refusal(#"{"rules": {"$uid": {"b": {".read": "$uid == auth.uid"}}}}"#) == "accepted")
        #expect(refusal(#"{"rules": {".read": "auth != null &&"}}"#).contains("column 16"))
        #expect(refusal(#"{"rules": {".read": "'unterminated"}}"#).contains("unterminated string"))
    }

    /// Random trees of literal `.read` grants against the reference: a read of P is allowed
    /// exactly when some location on the way to P grants it.
    @Test func cascadeMatchesAReferenceOnRandomTrees() throws {
        let seed = UInt64.random(in: 1...UInt64(UInt32.max))
        print("SecurityRulesTests cascade seed \(seed)")
        var g = SeededGenerator(seed: seed)
        let keys = ["a", "b", "c"]
        for round in 0..<200 {
            // A tree of depth 3 over keys a, b, c, sometimes a $w wildcard; random .read true/false/absent.
            var grants: [String: Bool] = [:]  // rules location ("/a/$w") -> literal
            func build(_ location: [String], depth: Int) -> Value {
                var members: [String: Value] = [:]
                let roll = Int.random(in: 0..<3, using: &g)
                if roll < 2 {
                    let grant = roll == 0
                    members[".read"] = .bool(grant)
                    grants["/" + location.joined(separator: "/")] = grant
                }
                if depth < 3 {
                    for key in keys + ["$w"] where Int.random(in: 0..<2, using: &g) == 0 {
                        members[key] = build(location + [key], depth: depth + 1)
                    }
                }
                return .object(members)
            }
            let tree = build([], depth: 0)
            let rules = try SecurityRules.compile(tree)
            for _ in 0..<20 {
                let depth = Int.random(in: 0...3, using: &g)
                let path = (0..<depth).map { _ in keys[Int.random(in: 0..<keys.count, using: &g)] }
                // Reference: walk literal keys first, else the wildcard; any true grant allows.
                var allowed = grants["/"] == true
                var location: [String] = []
                var members = tree.objectMembers
                for key in path {
                    let step = members[key] != nil ? key : (members["$w"] != nil ? "$w" : nil)
                    guard let step else { break }
                    location.append(step)
                    if grants["/" + location.joined(separator: "/")] == true { allowed = true }
                    members = members[step]!.objectMembers
                }
                let got = rules.canRead(Path(validatedKeys: path), try self.context())
                #expect(got == allowed, "round \(round), /\(path.joined(separator: "/")) (seed \(seed))")
            }
        }
    }
}

extension Value {
    fileprivate var objectMembers: [String: Value] {
        if case .object(let members) = self { return members }
        return [:]
    }
}

struct TestFailure: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

@Suite struct RuleTreeTests {
    // newData of a multi-path update: the base tree with each change set at its path, read
    // only where asked (a reader counts what storage reads it makes).
    @Test func anOverlayReadsOnlyTheLocationsAsked() throws {
        let base: Value = try JSONParser.parse(Array(#"{"a": {"x": 1, "y": 2}, "b": {"big": "z"}}"#.utf8))
        let reads = ReadCounter()
        let stored = RuleTree(reading: { path in
            reads.add(path)
            return base.child(at: path)
        })
        let after = RuleTree(base: stored, writing: [(try Path("/a/x"), .number(5)), (try Path("/c"), .string("new"))])
        #expect(try after.value(at: try Path("/a/x")) == .number(5))
        #expect(try after.value(at: try Path("/a/x/deeper")) == .null)
        #expect(try after.value(at: try Path("/a")) == .object(["x": .number(5), "y": .number(2)]))
        #expect(try after.value(at: try Path("/c")) == .string("new"))
        #expect(reads.paths == [try Path("/a")], "below a write reads nothing; above it reads the base once")
        #expect(try after.value(at: try Path("/a")) == .object(["x": .number(5), "y": .number(2)]))
        #expect(reads.paths.count == 1, "the base caches what it read")
        let removed = RuleTree(base: RuleTree(base), writing: [(try Path("/b/big"), .null)])
        #expect(try removed.value(at: try Path("/b")) == .null, "removing the last child prunes the parent")
    }

    /// `getPriority()`: the stored priority, or in `newData` the one the write gives: its
    /// export form, a `<path>/.priority` write (nothing on an empty node), none where a write
    /// without priorities replaced the node.
    @Test func prioritiesOfAnOverlay() throws {
        let stored = RuleTree(
            reading: { path in (try JSONParser.parse(Array(#"{"a": {"x": 1}, "b": 2}"#.utf8))).child(at: path) },
            readingPriority: { path in path == (try Path("/a")) ? .string("s") : .null })
        #expect(try stored.priority(at: try Path("/a")) == .string("s"))
        let set = RuleTree(
            base: stored, writing: [(try Path("/b"), .number(3))],
            exported: [(try Path("/b"), try JSONParser.parse(Array(#"{".value": 3, ".priority": 7}"#.utf8)))])
        #expect(try set.priority(at: try Path("/b")) == .number(7))
        #expect(try set.priority(at: try Path("/a")) == .string("s"), "beside the write: as stored")
        let plain = RuleTree(base: stored, writing: [(try Path("/a"), .number(1))])
        #expect(try plain.priority(at: try Path("/a")) == .null, "a write without one replaces it")
        let node = Path(validatedKeys: ["b", ".priority"])
        let priorityWrite = RuleTree(base: stored, writing: [(try Path("/b"), .number(2))], exported: [(node, .number(4))])
        #expect(try priorityWrite.priority(at: try Path("/b")) == .number(4))
        let onEmpty = RuleTree(base: stored, writing: [(try Path("/none"), .null)], exported: [(Path(validatedKeys: ["none", ".priority"]), .number(4))])
        #expect(try onEmpty.priority(at: try Path("/none")) == .null, "an empty node keeps none")
        let rules = try SecurityRules.compile(try JSONParser.parse(Array(#"{".read": "data.child('a').getPriority() == 's'"}"#.utf8)))
        #expect(rules.canRead(try Path("/"), RuleContext(auth: .null, now: 0, tree: stored, newTree: stored)))
    }

    @Test func aFailingReadFailsTheRuleNotTheRequest() throws {
        struct Broken: Error {}
        let tree = RuleTree(reading: { _ in throw Broken() })
        let rules = try SecurityRules.compile(try JSONParser.parse(Array(#"{".read": "data.child('x').exists() || true"}"#.utf8)))
        let context = RuleContext(auth: .null, now: 0, tree: tree, newTree: tree)
        #expect(!rules.canRead(try Path("/"), context), "the error makes the whole expression fail")
    }
}

private final class ReadCounter: @unchecked Sendable {
    var paths: [Path] = []
    func add(_ path: Path) { self.paths.append(path) }
}

@Suite struct TreeIndependenceTests {
    func rules(_ json: String) throws -> SecurityRules {
        guard case .object(let top) = try JSONParser.parse(Array(json.utf8)), let rules = top["rules"] else { throw TestFailure("no rules") }
        return try SecurityRules.compile(rules)
    }

    // Which writes the engine may judge before queuing them (without the stored tree).
    @Test func writesDecidableWithoutTheTree() throws {
        let rules = try self.rules(
            #"""
            {"rules": {
              "bench": {"$id": {".write": "auth != null", ".validate": "newData.hasChildren(['n'])", "n": {".validate": "newData.isNumber()"}}},
              "owned": {"$id": {".write": "!data.exists() || data.child('owner').val() === auth.uid"}},
              "checked": {".validate": "newData.hasChildren()", "$id": {".write": true}},
              "parents": {"$id": {".write": true, "x": {".validate": "newData.parent().child('y').exists()"}}},
              "named": {"$id": {".write": "$id.beginsWith('-')"}},
              "docs": {"$id": {".write": "newData.child('owner').val() === auth.uid"}}
            }}
            """#)
        #expect(rules.decidesWithoutTree(try Path("/bench/a")))
        #expect(!rules.decidesWithoutTree(try Path("/bench/a/n")), "the .validate at /bench/a sees the stored siblings of n")
        #expect(!rules.decidesWithoutTree(try Path("/owned/a")), "data is read")
        #expect(!rules.decidesWithoutTree(try Path("/checked/a")), "a .validate above sees stored siblings")
        #expect(!rules.decidesWithoutTree(try Path("/parents/a")), "parent() walks into stored data")
        #expect(rules.decidesWithoutTree(try Path("/elsewhere/deep")), "no rules: denied without reading anything")
        #expect(rules.decidesWithoutTree(try Path("/docs/d1")), "newData at the written location is the written value")
        #expect(!rules.decidesWithoutTree(try Path("/docs/d1/title")), "newData above the written location holds the stored owner")
        #expect(rules.pushKeyIsIrrelevant(under: try Path("/bench")))
        #expect(!rules.pushKeyIsIrrelevant(under: try Path("/named")), "the rule names the captured push key")
    }
}

// What Firebase refuses at deploy beyond syntax (`RulesDeployCheck`, run when rules are set).
@Suite struct RulesDeployCheckTests {
    func check(_ json: String) throws {
        guard case .object(let top) = try JSONParser.parse(Array(json.utf8)), let rules = top["rules"] else { throw TestFailure("no rules") }
        try RulesDeployCheck.check(rules)
    }

    @Test func unknownMethodsAndNewDataInReadAreRefused() throws {
        do {
            try self.check(#"{"rules": {"a": {"$id": {".write": "newData.isStrng() || auth.uid.startsWith('x')"}}}}"#)
            Issue.record("accepted an unknown method")
        } catch {
            #expect(String(describing: error).contains("rules at /a/$id: .write"), "\(String(describing: error))")
            #expect(String(describing: error).contains("unknown method isStrng()"), "\(String(describing: error))")
            #expect(String(describing: error).contains("at column 8"), "\(String(describing: error))")
        }
        do {
            try self.check(#"{"rules": {"b": {".read": "newData.exists()"}}}"#)
            Issue.record("accepted newData in .read")
        } catch {
            #expect(String(describing: error).contains("rules at /b: .read \"newData.exists()\": newData is not available in .read rules"), "\(String(describing: error))")
        }
        // The documented methods, newData in .write and .validate, and members of maps pass.
        try self.check(
            #"""
            {"rules": {"u": {"$uid": {
              ".read": "auth.token.email.endsWith('@x.com') && data.child('a').val().toLowerCase().contains('b') && root.hasChildren(['u'])",
              ".write": "newData.parent().hasChild('x') && newData.child('n').isNumber() && !data.exists() && data.getPriority() == null",
              ".validate": "newData.isString() && newData.val().replace('a', 'b').beginsWith('c') && newData.val().matches(/^c/) && newData.val().toUpperCase().length < 9 || newData.isBoolean()"
            }}}}
            """#)
    }

    /// The message of the refusal of `rule` as a `.read` at /e, or nil when it deploys.
    private func refusal(_ rule: String) -> String? {
        var literal: [UInt8] = []
        JSONWriter.writeString(rule, into: &literal)
        do {
            try self.check(#"{"rules": {"e": {".read": "# + String(decoding: literal, as: UTF8.self) + "}}}")
            return nil
        } catch {
            return String(describing: error)
        }
    }

    // Firebase type-checks rules when they are deployed (recorded from a live database, and its
    // texts "! only operates on booleans." and "No such method/property"): each of these is
    // refused there, and would deny every request without a word here.
    @Test func typeErrorsAreRefused() throws {
        let refused: [(rule: String, says: String)] = [
            ("7", "must evaluate to a boolean, not a number"),
            ("'foo'", "must evaluate to a boolean, not a string"),
            ("auth.uid", "must evaluate to a boolean, not a string"),
            ("auth.someString === 'one' ? 7 : true", "must evaluate to a boolean"),
            ("!data.child('flag').val()", "! only operates on booleans, not a primitive value"),
            ("root.child('foo') != null", "compares values (use val() or exists() on a snapshot), not a snapshot"),
            ("root.hasChildren('foo', 'bar')", "hasChildren() takes 0 or 1 argument(s), not 2"),
            ("root.hasChildren(['foo', 7])", "hasChildren() names children with strings, not a number"),
            ("auth.foo.contains(7)", "contains() takes strings, not a number"),
            ("root.child('str').val().matches('/foo/')", "matches() takes a regular expression literal"),
            ("query.foo == 1", "no such property query.foo"),
            ("root.val() > true", "compares two numbers or two strings, not a boolean"),
            ("data.val().public === true", "use child('public').val()"),
            ("data.exists", "no such property exists of a snapshot"),
            ("data.child(1).exists()", "child() takes strings, not a number"),
            ("now.contains('1')", "no such method contains() of a number"),
            ("data.exists() && 1", "&& only operates on booleans, not a number"),
            // Wrong whatever the data and the token: auth is null or a map, never a boolean;
            // + does not take booleans; < compares two of one kind.
            ("data.exists() && auth", "&& only operates on booleans, not auth"),
            ("!auth", "! only operates on booleans, not auth"),
            ("auth", "must evaluate to a boolean, not auth"),
            ("auth ? true : false", "the condition of ?: must be a boolean, not auth"),
            ("auth + 'x' == 'x'", "+ adds numbers or joins strings, not auth"),
            ("true + 1 == 2", "+ adds numbers or joins strings, not a boolean"),
            ("'a' < 1", "< compares two numbers or two strings, not a string and a number"),
            ("now >= 'yesterday'", ">= compares two numbers or two strings, not a number and a string"),
        ]
        for (rule, says) in refused {
            let message = self.refusal(rule)
            #expect(message?.contains(says) == true, "\(rule): \(message ?? "deployed")")
            #expect(message?.contains("rules at /e: .read") == true, "\(rule): \(message ?? "deployed")")
        }
    }

    // The rules of Firebase's guides deploy (Understand rules, Rules conditions, Securely query
    // data, Core syntax's widget, the regex page, user and group patterns).
    @Test func theDocumentationsRulesDeploy() throws {
        let rules = [
            "auth != null && auth.uid == $uid",
            "auth.uid !== null && query.orderByChild === 'owner' && query.equalTo === auth.uid",
            "query.orderByKey && query.limitToFirst <= 1000",
            "newData.hasChildren(['color', 'size']) && newData.child('size').isNumber()",
            "newData.isNumber() && newData.val() >= 0 && newData.val() <= 99",
            "newData.isString() && newData.val().matches(/^(19|20)[0-9][0-9][-\\/. ](0[1-9]|1[012])[-\\/. ](0[1-9]|[12][0-9]|3[01])$/)",
            "auth.token.email_verified == true && auth.token.email.matches(/.*@google.com$/)",
            "auth.token.firebase.identities['google.com'][0] != null && auth.provider == 'google'",
            "root.child('users').child(auth.uid).child('admin').val() == true",
            "data.child('timestamp').val() > (now - 600000)",
            "!data.exists() || !newData.exists()",
            "root.child('allow_writes').val() === true && !data.parent().child('readOnly').exists() && newData.child('foo').exists()",
            "newData.val().length < 100 && newData.val().toLowerCase().beginsWith('a') ? true : false",
            "$room_id.contains('public') || root.child('members/' + $room_id + '/' + auth.uid).exists()",
            "data.child('owner').val() === auth.uid || data.child('public').val() === true",
            "!(auth.token.banned === true) && newData.getPriority() == null",
            "newData.val() === now || newData.val() + 1 > 0 && -newData.val() < 0",
            "auth.token.admin",
            "data.child('flag').val()",
            "auth == null || auth === null || auth != null",
            "auth['uid'] == $uid && auth.token['admin'] == true",
            "data.val() < 'm' || data.val() < 5 || auth.uid < 'm' || $uid + 1 == 'x1'",
        ]
        for rule in rules {
            var literal: [UInt8] = []
            JSONWriter.writeString(rule, into: &literal)
            let location = rule.contains("$room_id") ? "$room_id" : "$uid"
            let json = #"{"rules": {"e": {""# + location + #"": {".write": "# + String(decoding: literal, as: UTF8.self) + "}}}}"
            do {
                try self.check(json)
            } catch {
                Issue.record("\(rule) was refused: \(error)")
            }
        }
    }
}
