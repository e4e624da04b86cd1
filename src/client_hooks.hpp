// What the client layer shows this tree beyond the public API, and nothing installed does: the
// C client's process-wide lock (the network threads take it; a test holds it to stall them),
// fault injection, and what tests and benchmarks read of a connection. Tests, the test support
// library and the benchmark include it (their include path has src/).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <utility>

namespace zkr::detail {

class connection;

/// Held around every call into the ZooKeeper C client in this process. The single-threaded library
/// keeps process-wide state (static buffers for log lines and endpoint names, the xid counter), so
/// clients on different network threads must not enter it at once. Recursive: completions run
/// inside zookeeper_process and issue new calls.
std::recursive_mutex& c_client_mutex();
/// Fault injection for tests: the next n successful replies are treated as lost to a connection
/// drop (the server applied the request; the client never learns it). Exercises recovery paths
/// such as protected create.
void lose_next_replies(connection& c, int n);
/// Fault injection for tests: the next n successful replies come back as "session expired", as a
/// server answers the requests of a session it has closed on a connection it has not closed yet.
void expire_next_replies(connection& c, int n);
/// The current session's id and password (for tests that expire a session on purpose).
std::pair<std::int64_t, std::string> session_credentials(connection& c);
/// Requests sent to the server so far (for round-trip tests and benchmarks).
std::uint64_t requests_sent(connection& c);

}  // namespace zkr::detail
