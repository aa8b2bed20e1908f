// `RulesComments.blanked`: comments become spaces outside strings, every other byte stays at
// its line and column.

import EddyModel
import Testing

struct RulesCommentsTests {
    private func blanked(_ text: String) -> String {
        String(decoding: RulesComments.blanked(Array(text.utf8)), as: UTF8.self)
    }

    @Test func lineAndBlockCommentsBecomeSpaces() throws {
        let text = "{ // note\n \"a\": /* x\n y */ 1 }"
        let out = self.blanked(text)
        #expect(out == "{        \n \"a\":     \n      1 }")
        #expect(out.utf8.count == text.utf8.count)
        #expect(try JSONParser.parse(out) == .object(["a": .number(1)]))
    }

    @Test func slashesInsideStringsStay() throws {
        let text = #"{"a": "http://x/*y*/", "b\"//": "c"} // end"#
        #expect(try JSONParser.parse(self.blanked(text)) == .object(["a": .string("http://x/*y*/"), "b\"//": .string("c")]))
    }

    @Test func unterminatedBlockCommentIsLeftForTheParser() {
        let text = "{} /* open"
        #expect(self.blanked(text) == text)
        #expect(throws: EddyError.self) { try JSONParser.parse(self.blanked(text)) }
        #expect(self.blanked("1 /") == "1 /")
    }
}
