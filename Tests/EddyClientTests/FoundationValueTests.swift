// Values as Foundation types, the way Firebase's Apple SDK hands them out: integral numbers as
// integer NSNumbers (so `as? Int64` and `as? Int` work for every integral value in range, not
// only below 2^53), others as doubles, booleans as NSNumber booleans.

@testable import EddyClient
import EddyModel
import Foundation
import Testing

struct FoundationValueTests {
    @Test(arguments: [0.0, -3, 1e15, 9_007_199_254_740_992, 1e17, -4e18])
    func integralNumbersAreIntegers(_ number: Double) throws {
        let value = try #require(FoundationValue.foundation(.number(number)) as? NSNumber)
        #expect(value as? Int64 == Int64(number))
        #expect(value as? Int == Int(number))
        #expect(value as? Double == number)
    }

    @Test func othersAreDoublesOrBooleans() throws {
        #expect(FoundationValue.foundation(.number(0.5)) as? Double == 0.5)
        #expect(FoundationValue.foundation(.number(1e19)) as? Double == 1e19)
        #expect(FoundationValue.foundation(.bool(true)) as? Bool == true)
    }

    @Test func aCGFloatIsANumber() throws {
        #expect(try FoundationValue.value(CGFloat(2.5), path: "/g") == .number(2.5))
        #expect(try FoundationValue.value(["w": CGFloat(3)], path: "/g") == .object(["w": .number(3)]))
    }

    @Test func theExportFormatKeepsListsAsDictionaries() throws {
        let list: Value = .object(["0": .string("x"), "1": .object(["0": .number(1)])])
        let snapshot = DataSnapshot(ref: DatabaseReference(), value: list)
        #expect((snapshot.value as? [Any])?.count == 2, "value: Firebase's array form")
        let exported = try #require(snapshot.valueInExportFormat() as? [String: Any])
        #expect(exported["0"] as? String == "x" && (exported["1"] as? [String: Any])?["0"] as? Int == 1)
    }

    @Test func mutableDataDescribesItselfAsFirebases() {
        let data = MutableData(value: .object(["a": .number(1)]))
        #expect(data.description.hasPrefix("FIRMutableData (top-most transaction) (null) "))
        #expect(data.childData(byAppendingPath: "a").description == "FIRMutableData (a) 1")
    }
}
