// What `import EddyClient` brings with it. On Apple platforms `import FirebaseDatabase` brings
// Foundation (Firebase's Objective-C modules import it), so code written for Firebase uses
// `NSNull`, `Date`, `NSNumber` and `DispatchQueue` with no import of its own: so does code that
// imports EddyClient, under swift-testing (whose `import Testing` brings no Foundation) too.

@_exported import Dispatch
@_exported import Foundation
