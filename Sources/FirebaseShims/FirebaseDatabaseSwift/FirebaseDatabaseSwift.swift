// `import FirebaseDatabaseSwift` as in code written for Firebase: Eddy's client under Firebase's module name
// (`FirebaseApp`, `Database` and the rest live in EddyClient). Part of the EddyClient product and of
// the FirebaseDatabaseSwift product.

@_exported import EddyClient
// Firebase's Objective-C modules import Foundation, so code that imports only them uses `NSNull`,
// `Date` and the rest: so does code that imports this module.
@_exported import Foundation
