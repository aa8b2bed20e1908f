// What a transaction block returns: the new data to write, or abort (Firebase's
// `TransactionResult`).

import Foundation

public final class TransactionResult: NSObject, @unchecked Sendable {
    // @unchecked: immutable after creation.
    let data: MutableData?

    private init(data: MutableData?) {
        self.data = data
        super.init()
    }

    /// A result that writes nothing, as Firebase's inherited `init()` (not a success): `abort()`.
    public override convenience init() {
        self.init(data: nil)
    }

    /// Write `value` (the block's `MutableData`, changed or not).
    @discardableResult
    public static func success(withValue value: MutableData) -> TransactionResult {
        TransactionResult(data: value)
    }

    /// Write nothing; the completion block is told the transaction was not committed.
    @discardableResult
    public static func abort() -> TransactionResult {
        TransactionResult(data: nil)
    }
}
