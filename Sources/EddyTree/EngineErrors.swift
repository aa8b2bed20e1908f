// Converts storage errors into `EddyError` with the operation that failed.

import EddyModel
import EddyStorage

package enum EngineErrors {
    package static func storage(_ error: RocksDBError, while doing: String) -> EddyError {
        let code: EddyError.Code
        switch error.code {
        case .corruption: code = .corruption
        case .io where error.isNoSpace:
            return EddyError(
                .insufficientStorage,
                "the data volume is full (No space left on device) while \(doing); nothing of the write was applied. Free space, then restart eddyd to accept writes again; reads keep working",
                underlying: error)
        case .io: code = .io
        case .busy: code = .io
        case .invalidArgument, .notSupported, .incomplete, .other: code = .internal
        }
        return EddyError(code, "storage error while \(doing): \(error.message)", underlying: error)
    }
}
