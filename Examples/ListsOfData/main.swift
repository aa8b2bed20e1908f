// Firebase's "Work with lists of data" guide, run against eddyd with EddyClient: posts made
// with `childByAutoId`, a post's comments observed with `.childAdded` / `.childRemoved`, the
// most viewed posts by `metrics/views`, the first 100 posts, and a Realm-style change set.
// Only the import and the database URL differ from the guide's code.
//
//   swift run eddy-example-lists [DATABASE_URL]
//
// DATABASE_URL defaults to EDDY_DATABASE_URL, else ./data/eddyd.sock (what `make run` starts);
// `eddy://host:port` and `http://host:port` work too.

import EddyClient
import Foundation

let database = CommandLine.arguments.count > 1 ? Database.database(url: CommandLine.arguments[1]) : Database.database()
let ref = database.reference().child("example-\(Int(Date().timeIntervalSince1970))")

// Comments of one post, as the guide observes them.
let post = ref.child("posts").childByAutoId()
let commentsRef = ref.child("post-comments").child(post.key!)
commentsRef.observe(.childAdded) { snapshot in
    let comment = snapshot.value as? [String: Any]
    print("comment added: \(snapshot.key) \(comment?["text"] ?? "")")
}
commentsRef.observe(.childRemoved) { snapshot in
    print("comment removed: \(snapshot.key)")
}

// The most viewed posts, kept up to date as a Realm-style change set.
let mostViewed = ref.child("posts").queryOrdered(byChild: "metrics/views").queryLimited(toLast: 3)
let token = mostViewed.observe { change in
    switch change {
    case .initial(let results):
        print("most viewed (initial): \(results.map { $0.childSnapshot(forPath: "title").value ?? "" })")
    case .update(let results, let deletions, let insertions, let modifications):
        let titles = results.map { $0.childSnapshot(forPath: "title").value as? String ?? "" }
        print("most viewed: \(titles) deletions \(deletions) insertions \(insertions) modifications \(modifications)")
    case .error(let error):
        print("most viewed failed: \(error)")
    }
}

// In an async function: in top-level code (this file's own statements) Swift resolves
// `try await ref.setValue(...)` to the synchronous `setValue`, which does not wait for the
// server (the compiler warns "no 'async' operations occur within 'await'"), with Firebase's SDK
// as with Eddy's.
func writePostsAndComments() async throws {
    // Posts, each under a push id made on the client (they sort in the order they were made).
    try await post.setValue(["title": "Hello, Eddy", "author": "ada", "metrics": ["views": 10]])
    for (title, views) in [("Lists of data", 42), ("Queries", 7), ("Transactions", 99)] {
        try await ref.child("posts").childByAutoId().setValue(["title": title, "author": "grace", "metrics": ["views": views]])
    }

    // Comments: two added, one removed.
    let first = commentsRef.childByAutoId()
    try await first.setValue(["text": "First!", "author": "grace"])
    try await commentsRef.childByAutoId().setValue(["text": "Nice post", "author": "alan"])
    try await first.removeValue()

    // A view counter incremented on the server, atomically.
    try await post.child("metrics/views").setValue(ServerValue.increment(100))

    // The first 100 posts (push ids sort by time, so in the order they were made).
    let recent = try await ref.child("posts").queryLimited(toFirst: 100).getData()
    for case let child as DataSnapshot in recent.children {
        print("post \(child.key): \(child.childSnapshot(forPath: "title").value ?? "") views \(child.childSnapshot(forPath: "metrics/views").value ?? "")")
    }

    // Let the observers hear the last changes, then clean up.
    try await Task.sleep(for: .milliseconds(300))
    token.invalidate()
    try await ref.removeValue()
    print("done")
}

do {
    try await writePostsAndComments()
} catch {
    print("error: \(error)")
    exit(1)
}
