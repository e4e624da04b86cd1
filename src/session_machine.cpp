#include "session_machine.hpp"

#include <utility>

namespace zkr::detail {

session_machine::actions session_machine::on_handle(handle_event e) {
    actions a;
    if (state_ == connection_state::closed) return a;
    // One handshake timer per attempt: started when the handshake is sent, ended by whatever the
    // handle reports next (an answer, a drop, an expiry).
    a.cancel_handshake_timer = std::exchange(handshaking_, false);
    switch (e) {
        case handle_event::connected:
        case handle_event::connected_read_only: {
            const bool read_only = e == handle_event::connected_read_only;
            a.cancel_suspend_timer = true;
            connection_state next = state_;
            if (state_ == connection_state::latent)
                next = read_only ? connection_state::read_only : connection_state::connected;
            else if (state_ == connection_state::suspended || state_ == connection_state::lost)
                next = read_only ? connection_state::read_only : connection_state::reconnected;
            else if (state_ == connection_state::read_only && !read_only)
                next = connection_state::reconnected;
            else if (state_ != connection_state::read_only && read_only)
                next = connection_state::read_only;
            if (next != state_) {
                state_ = next;
                a.notify = next;
            }
            return a;
        }
        case handle_event::associating:
        case handle_event::connecting:
            if (e == handle_event::associating) {
                handshaking_ = true;
                a.start_handshake_timer = true;
            }
            if (is_connected(state_)) {
                state_ = connection_state::suspended;
                a.notify = state_;
                a.start_suspend_timer = true;
                a.abandon_requests = true;
            }
            return a;
        case handle_event::expired:
        case handle_event::auth_failed:
            a.cancel_suspend_timer = true;
            a.abandon_requests = true;
            a.new_session = true;
            if (state_ != connection_state::lost) {
                state_ = connection_state::lost;
                a.notify = state_;
            }
            return a;
    }
    return a;
}

session_machine::actions session_machine::on_suspend_timeout() {
    actions a;
    if (state_ != connection_state::suspended) return a;
    state_ = connection_state::lost;
    a.notify = state_;
    a.abandon_requests = true;
    a.new_session = true;
    return a;
}

session_machine::actions session_machine::on_handshake_timeout() {
    actions a;
    if (state_ == connection_state::closed || !handshaking_) return a;  // answered or dropped meanwhile
    handshaking_ = false;
    a.drop_connection = true;
    return a;
}

}  // namespace zkr::detail
