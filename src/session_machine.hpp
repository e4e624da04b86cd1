// Decision logic of a client's session: what to report and what to do on each change of the
// ZooKeeper handle's state. No I/O, no clock: unit-tested without a server.
#pragma once

#include <zkr/connection_state.hpp>

#include <cstdint>
#include <optional>

namespace zkr::detail {

/// What the handle reported (read with zoo_state after every call into the C client).
/// `associating`: a connection is open and the handshake sent; the server's answer is awaited.
enum class handle_event { connecting, associating, connected, connected_read_only, expired, auth_failed };

class session_machine {
public:
    struct actions {
        std::optional<connection_state> notify;  ///< Tell the listeners.
        bool start_suspend_timer = false;        ///< Declare lost if not back within the session timeout.
        bool cancel_suspend_timer = false;
        bool abandon_requests = false;           ///< Requests in flight on the handle have failed.
        bool new_session = false;                ///< Close the handle and open one with a new session.
        bool start_handshake_timer = false;      ///< Give up on this server if it does not answer in time.
        bool cancel_handshake_timer = false;
        bool drop_connection = false;            ///< Close the connection: the C client tries the next server.
    };

    actions on_handle(handle_event e);
    /// The suspend timer ran out: the session is presumed expired (Curator's rule).
    actions on_suspend_timeout();
    /// The handshake timer ran out: the server accepted the connection but has not answered it.
    /// ZooKeeper 3.8.0's server does that to a connection that arrives while it starts (its close
    /// throws before the socket is closed: ZOOKEEPER-5051, unfixed upstream in 2026); the C client
    /// alone would wait 2/3 of the session timeout on it.
    actions on_handshake_timeout();
    void on_close() { state_ = connection_state::closed; }
    connection_state state() const noexcept { return state_; }

private:
    connection_state state_ = connection_state::latent;
    bool handshaking_ = false;
};

}  // namespace zkr::detail
