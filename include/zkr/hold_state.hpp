// What a lock or lease holder knows about its hold.
#pragma once

#include <string_view>

namespace zkr {

/// The life of a hold. Only `held` means the hold is valid; act on the protected resource only
/// then, and pass the fencing token along so the resource can reject a stale holder.
enum class hold_state {
    held,       ///< Our node holds, our session is live and connected.
    doubtful,   ///< Connection suspended, read-only, or silent for 2/3 of the session timeout (this
                ///< process may have been paused and its session expired meanwhile): we may or may
                ///< not still hold. Stop acting.
    lost,       ///< Session lost, client closed, or our node deleted (for a one-holder lock, also
                ///< written) by someone else. Terminal; the hold's stop_token is requested.
    releasing,  ///< A release is under way (every release passes through it). It stays here while
                ///< the delete waits for the connection to return, when there was none.
    released,   ///< Our node is gone after our own release. Terminal; the stop_token is requested.
};

std::string_view to_string(hold_state s) noexcept;

}  // namespace zkr
