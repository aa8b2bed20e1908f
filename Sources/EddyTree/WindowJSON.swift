// The JSON answer of a query window, built member by member as the window is read. The object
// form (`{"key":value,...`) is written in place, each member's range and array index kept, so
// the answer is the buffer itself when it stays an object in the order read; it is rebuilt only
// as an array (`JSONWriter`'s rule: every key an array index, the largest below twice the
// count, holes null) or when the members were read in reverse. Keys come from their encoded
// segments (`SegmentJSON`); values are written by the caller. Empty: `null`.

import EddyModel

package struct WindowJSON {
    private var out: [UInt8] = [UInt8(ascii: "{")]
    /// Each member (key, colon and value) and its value, in `out`, in the order read.
    private var members: [(member: Range<Int>, value: Range<Int>, arrayIndex: Int?)] = []
    private var allArrayIndexes = true

    /// `expectedMembers`: the window's limit, when it has one (at most `membersReservedMax` are
    /// reserved): the member list is sized once instead of doubling from one. Measured on 1M
    /// children (IndexQueryProfile query, alternating): limitToLast(100) answers 51-52 -> 47.5-48
    /// us, key windows 174 -> 170 us, the others unchanged; sizing the text buffer from the
    /// first member as well gained nothing more and cost limitToFirst a microsecond.
    package init(capacity: Int, expectedMembers: Int? = nil) {
        self.out.reserveCapacity(capacity)
        if let expectedMembers { self.members.reserveCapacity(min(expectedMembers, Self.membersReservedMax)) }
    }

    /// The most members a window reserves room for ahead (here about 48 KiB; the readers'
    /// value answers reserve their dictionaries up to it too); past it they grow as usual.
    package static let membersReservedMax = 1024

    /// Appends the member whose key is encoded as `segment`; `writeValue` appends its value.
    package mutating func append(
        segment: UnsafeRawBufferPointer, value writeValue: (inout [UInt8]) throws(EddyError) -> Void
    ) throws(EddyError) {
        if !self.members.isEmpty { self.out.append(UInt8(ascii: ",")) }
        let start = self.out.count
        try self.appendMember(start, SegmentJSON.appendKey(segment, to: &self.out), writeValue)
    }

    package mutating func append(
        segment: ArraySlice<UInt8>, value writeValue: (inout [UInt8]) throws(EddyError) -> Void
    ) throws(EddyError) {
        if !self.members.isEmpty { self.out.append(UInt8(ascii: ",")) }
        let start = self.out.count
        let arrayIndex = segment.withUnsafeBytes { SegmentJSON.appendKey($0, to: &self.out) }
        try self.appendMember(start, arrayIndex, writeValue)
    }

    private mutating func appendMember(
        _ start: Int, _ arrayIndex: Int?, _ writeValue: (inout [UInt8]) throws(EddyError) -> Void
    ) throws(EddyError) {
        if arrayIndex == nil { self.allArrayIndexes = false }
        self.out.append(UInt8(ascii: ":"))
        let valueStart = self.out.count
        try writeValue(&self.out)
        self.members.append((start..<self.out.count, valueStart..<self.out.count, arrayIndex))
    }

    /// The answer. `reversed`: the members were read last first, and the object lists them in
    /// the other order (an array places each by its index either way).
    package mutating func finish(reversed: Bool = false) -> [UInt8] {
        if self.members.isEmpty { return Array("null".utf8) }
        if self.allArrayIndexes, let largest = self.members.lazy.map({ $0.arrayIndex! }).max(), largest < 2 * self.members.count {
            var slots = [Range<Int>?](repeating: nil, count: largest + 1)
            for member in self.members { slots[member.arrayIndex!] = member.value }
            var array: [UInt8] = [UInt8(ascii: "[")]
            array.reserveCapacity(self.out.count)
            for (i, slot) in slots.enumerated() {
                if i > 0 { array.append(UInt8(ascii: ",")) }
                if let slot { array.append(contentsOf: self.out[slot]) } else { array.append(contentsOf: "null".utf8) }
            }
            array.append(UInt8(ascii: "]"))
            return array
        }
        guard reversed else {
            self.out.append(UInt8(ascii: "}"))
            return self.out
        }
        // The same bytes plus the closing brace, members in the other order: one copy each.
        let members = self.members
        return self.out.withUnsafeBufferPointer { source in
            [UInt8](unsafeUninitializedCapacity: source.count + 1) { target, count in
                target[0] = UInt8(ascii: "{")
                var at = 1
                for (n, member) in members.reversed().enumerated() {
                    if n > 0 {
                        target[at] = UInt8(ascii: ",")
                        at += 1
                    }
                    let length = member.member.count
                    UnsafeMutableRawPointer(target.baseAddress! + at).copyMemory(
                        from: source.baseAddress! + member.member.lowerBound, byteCount: length)
                    at += length
                }
                target[at] = UInt8(ascii: "}")
                count = at + 1
            }
        }
    }
}
