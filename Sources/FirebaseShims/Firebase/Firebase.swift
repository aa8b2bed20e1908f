// `import Firebase` as in older Firebase guides and samples (Firebase's umbrella module): Eddy's
// client under that name, as `FirebaseCore` and `FirebaseDatabase` are. Part of the EddyClient
// product and the `Firebase` product.

@_exported import EddyClient
// Firebase's Objective-C modules import Foundation, so code that imports only them uses `NSNull`,
// `Date` and the rest: so does code that imports this module.
@_exported import Foundation
