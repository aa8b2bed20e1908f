// `import Firebase` alone (older Firebase guides and samples) brings Firebase's database API.

import Firebase
import Testing

@Suite struct FirebaseUmbrellaImportTests {
    @Test func theUmbrellaModuleNamesTheSameTypes() {
        #expect(Firebase.Database.self == EddyClient.Database.self)
        #expect(Firebase.FirebaseApp.self == EddyClient.FirebaseApp.self)
        #expect(Firebase.ServerValue.timestamp() as NSDictionary == [".sv": "timestamp"] as NSDictionary)
    }
}
