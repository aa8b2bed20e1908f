// Converts storage errors into `EddyError` with the operation that failed.

import EddyModel
import EddyStorage

enum EngineErrors {
    static func storage(_ error: RocksDBError, while doing: String) -> EddyError {
        let code: EddyError.Code
        switch error.code {
        case .corruption: code = .corruption
        case .io: code = .io
        case .busy: code = .io
        case .invalidArgument, .notSupported, .incomplete, .other: code = .internal
        }
        return EddyError(code, "storage error while \(doing): \(error.message)", underlying: error)
    }
}
