// Everything a client is configured with.
#pragma once

#include <zkr/acl.hpp>
#include <zkr/observer.hpp>
#include <zkr/retry_policy.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace spdlog {
class logger;
}

namespace zkr {

/// What a client connects to and how it behaves; checked by client's constructor.
struct client_options {
    /// "host:port,host:port[/chroot]". The chroot node must exist.
    std::string connect_string;
    /// Requested session timeout; the server clamps it (by default to [2, 20] x tickTime).
    /// The negotiated value is what zkr's timers use (see client::negotiated_session_timeout).
    /// A server that takes a connection but does not answer its handshake within a third of it
    /// is left for the next server (the session is kept).
    std::chrono::milliseconds session_timeout{60'000};
    /// How long an operation waits for a connection before failing with not_connected
    /// (then retried per retry_policy), and the default of block_until_connected.
    std::chrono::milliseconds connection_timeout{15'000};
    /// Retries of operations failing with retryable errors. Default: exponential backoff,
    /// 1 s base, 3 retries.
    std::shared_ptr<const zkr::retry_policy> retry_policy = default_retry_policy();
    /// Every path lives under "/<name_space>" (no leading '/'; empty: none). Created lazily as a
    /// container node.
    std::string name_space;
    /// Credentials added on every (re)connection.
    std::vector<auth_entry> auth;
    /// ACL of created nodes unless create_options::acl says otherwise. Default: open.
    acl_list default_acl = open_acl_unsafe();
    /// Accept read-only servers when no quorum is reachable (state read_only). Reads work there;
    /// writes (create, remove, set_data, multi, and so a lock's acquire) fail with
    /// errc::not_read_only without being sent.
    bool can_be_read_only = false;
    /// How long a blocking call (the sync API, a recipe's acquire and release) spins, yielding its
    /// core, waiting for its reply before it sleeps. A reply on a local network comes within this,
    /// and a caller still awake takes it without a thread wake-up: an uncontended lock cycle is
    /// about 1.4x faster (docs/performance.md). Costs CPU while spinning, so at most one caller
    /// per two cores the process may use (its affinity mask: taskset, a container's cpuset)
    /// spins at a time (the others sleep at once), and an acquire stops spinning
    /// when it queues behind a holder. 0: never spin. At most 10 ms.
    std::chrono::microseconds blocking_call_spin{500};
    /// Where zkr and the C client log. Default: a logger named "zkr" with no sink (silent).
    std::shared_ptr<spdlog::logger> logger;
    /// Hears every operation, connection state change, hold step and leadership change, on the
    /// callback thread (see zkr::observer). Default: none, and then no event is made at all.
    std::shared_ptr<zkr::observer> observer;
};

}  // namespace zkr
