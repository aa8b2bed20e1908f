// Names the calling thread for the kernel (what `top -H`, gdb and crash reports show).
// Foundation's `Thread.name` does not reach the kernel on Linux, so a thread started from a
// Swift-concurrency thread kept its creator's name ("com.apple.root.default-qos"), and a crash
// report could not tell the committer from a pool thread. Names are cut to the kernel's 15 bytes.

#if canImport(Glibc)
    import Glibc

    /// glibc's `int pthread_setname_np(pthread_t, const char *)` (a GNU extension the Glibc
    /// module does not export).
    @_silgen_name("pthread_setname_np")
    private func glibcSetThreadName(_ thread: pthread_t, _ name: UnsafePointer<CChar>) -> Int32
#endif

enum ThreadName {
    static func set(_ name: String) {
        #if canImport(Glibc)
            let short = String(decoding: name.utf8.prefix(15), as: UTF8.self)
            _ = short.withCString { glibcSetThreadName(pthread_self(), $0) }
        #endif
    }
}
