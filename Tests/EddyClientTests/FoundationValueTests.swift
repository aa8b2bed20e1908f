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
}
