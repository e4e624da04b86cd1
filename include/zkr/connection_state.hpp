// The connection states a client reports to its listeners.
#pragma once

#include <string_view>

namespace zkr {

/// States as Curator names them. A listener sees them in this order of life:
/// connected (once) -> suspended -> reconnected | lost -> (new session) reconnected ...
enum class connection_state {
    latent,       ///< Not connected yet (before the first connection). Never sent to listeners.
    connected,    ///< The first connection, sent once.
    suspended,    ///< The connection was lost; the session may still be alive. Holds are doubtful.
    reconnected,  ///< Connected again: same session after suspended, or a new session after lost.
    lost,         ///< The session is gone (expired, or suspended longer than its timeout).
    read_only,    ///< Connected to a server in read-only mode: reads only, no lock is ever granted.
    closed,       ///< close() was called. Never sent to listeners.
};

std::string_view to_string(connection_state s) noexcept;

/// True for the states in which requests are served (connected, reconnected, read_only).
constexpr bool is_connected(connection_state s) noexcept {
    return s == connection_state::connected || s == connection_state::reconnected ||
           s == connection_state::read_only;
}

}  // namespace zkr
