// The rules document: accepted shapes, `.indexOn` declarations with wildcards, and refusals
// that name the rules path.

import EddyModel
import Testing

@Suite struct RulesTests {
    @Test func indexOnDeclarationsWithWildcardsNestedPathsAndValue() throws {
        let rules = try Rules.parse(
            JSONParser.parse(
                #"{"rules": {".read": "auth != null", ".write": false, "user-posts": {"$uid": {".indexOn": ["starCount", "metrics/views"], ".validate": "newData.exists()"}}, "scores": {".indexOn": ".value"}, "a": {"b": {".indexOn": "c"}}}}"#
            ))
        #expect(
            Set(rules.indexes.map(\.description)) == [
                "/user-posts/$uid .indexOn starCount", "/user-posts/$uid .indexOn metrics/views", "/scores .indexOn .value",
                "/a/b .indexOn c",
            ])
        let starCount = rules.indexes.first { $0.description.hasSuffix("starCount") }!
        #expect(starCount.matches(try Path("/user-posts/ada")))
        #expect(!starCount.matches(try Path("/user-posts")))
        #expect(!starCount.matches(try Path("/other/ada")))
        #expect(Rules.default.indexes.isEmpty)
    }

    @Test func twoWildcardsAtOneLevelAreRefusedWhenSet() throws {
        let document = try JSONParser.parse(#"{"rules": {"a": {"$y": {".read": true}, "$x": {}}, "b": {"$z": {}}}}"#)
        do {
            try Rules.checkOneWildcardPerLevel(document)
            Issue.record("accepted two wildcards at one level")
        } catch {
            #expect(error.message.contains("rules at /a: wildcards $x and $y at one level"), "\(error.message)")
        }
        try Rules.checkOneWildcardPerLevel(try JSONParser.parse(#"{"rules": {"a": {"$x": {"$y": {}}}}}"#))
        #expect(throws: Never.self, "a stored document with two still loads") { try Rules.parse(document) }
    }

    @Test(arguments: [
        (#"{"rules": 1}"#, "one member \"rules\""),
        (#"{"rules": {}, "x": 1}"#, "one member \"rules\""),
        (#"{"rules": {".foo": {}}}"#, "unknown rule .foo"),
        (#"{"rules": {"a": {".indexOn": 3}}}"#, "rules at /a: .indexOn must be a string or an array"),
        (#"{"rules": {"a": {".indexOn": ["ok", 3]}}}"#, "rules at /a: .indexOn must be a string or an array"),
        (#"{"rules": {"a": {".indexOn": "b.c"}}}"#, "rules at /a: .indexOn \"b.c\""),
        (#"{"rules": {"a#": {}}}"#, "rules at /"),
        (#"{"rules": {"a": {".read": 1}}}"#, "rules at /a: .read must be a boolean"),
        (#"{"rules": {"a": 1}}"#, "rules at /: a must hold an object"),
    ])
    func refusesNamingTheRulesPath(document: String, fragment: String) throws {
        do {
            _ = try Rules.parse(try JSONParser.parse(document))
            Issue.record("accepted \(document)")
        } catch {
            #expect(error.message.contains(fragment), "\(error.message)")
        }
    }
}
