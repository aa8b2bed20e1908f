// How RocksDB's status strings become engine errors: a full volume is its own code
// (`insufficientStorage`, HTTP 507) with a message that tells the operator what to do.

import EddyModel
import EddyStorage
import EddyTree
import Testing

@testable import EddyEngine

@Suite struct EngineErrorsTests {
    @Test func noSpaceLeftIsInsufficientStorage() {
        let rocks = RocksDBError(
            code: .io, message: "IO error: No space left on device: While appending to file: /d/default/000004.log: No space left on device")
        let error = EngineErrors.storage(rocks, while: "committing 1 writes")
        #expect(error.code == .insufficientStorage)
        #expect(error.message.contains("No space left on device") && error.message.contains("restart eddyd"))
        #expect(EngineErrors.storage(RocksDBError(code: .io, message: "IO error: Input/output error"), while: "reading").code == .io)
        #expect(EngineErrors.storage(RocksDBError(code: .corruption, message: "Corruption: bad block"), while: "reading").code == .corruption)
    }
}
