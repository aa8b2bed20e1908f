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

    // Firebase's docs print long expressions across lines inside the JSON string (the widget
    // example of "Core syntax"), and Firebase accepts such documents.
    @Test func lineBreaksAndTabsInsideStringsBecomeSpaces() throws {
        let text = "{\"a\": \"newData.isNumber() &&\n\t newData.val() >= 0\", \"b\": 1}\n"
        let out = self.blanked(text)
        #expect(out == "{\"a\": \"newData.isNumber() &&   newData.val() >= 0\", \"b\": 1}\n")
        #expect(try JSONParser.parse(out) == .object(["a": .string("newData.isNumber() &&   newData.val() >= 0"), "b": .number(1)]))
        #expect(self.blanked("{\"a\":\n1}") == "{\"a\":\n1}", "outside strings they stay")
    }

    @Test func unterminatedBlockCommentIsLeftForTheParser() {
        let text = "{} /* open"
        #expect(self.blanked(text) == text)
        #expect(throws: EddyError.self) { try JSONParser.parse(self.blanked(text)) }
        #expect(self.blanked("1 /") == "1 /")
    }
}
