// The length of the accept queue of eddyd's client listeners (HTTP, the native Unix socket and
// TCP). Clients that connect at once, as every client of a restarted daemon does, wait there
// until an event loop accepts them. Past it a Unix-socket client's connect fails at once
// (EAGAIN) and a TCP client's SYN is dropped (it retries after a second or more), so a short
// queue turns a reconnect burst into failed connects and back-off. The kernel caps the value
// at `net.core.somaxconn` (4096 on Debian 12); a queued connection costs only kernel memory
// until it is accepted, where `--http-connections-max` and the file-descriptor limit apply.

enum ListenBacklog {
    static let connections = 4096
}
