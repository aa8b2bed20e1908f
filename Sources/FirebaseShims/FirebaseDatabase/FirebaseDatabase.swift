// `import FirebaseDatabase` as in code written for Firebase: Eddy's client under Firebase's module name
// (`FirebaseApp`, `Database` and the rest live in EddyClient). Part of the EddyClient product.

@_exported import EddyClient
