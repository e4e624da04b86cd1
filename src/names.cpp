// String names and small value helpers of the public enums and ACLs.
#include <zkr/acl.hpp>
#include <zkr/connection_state.hpp>
#include <zkr/watch_event.hpp>

namespace zkr {

std::string_view to_string(connection_state s) noexcept {
    switch (s) {
        case connection_state::latent: return "latent";
        case connection_state::connected: return "connected";
        case connection_state::suspended: return "suspended";
        case connection_state::reconnected: return "reconnected";
        case connection_state::lost: return "lost";
        case connection_state::read_only: return "read_only";
        case connection_state::closed: return "closed";
    }
    return "unknown";
}

std::string_view to_string(watch_event_type t) noexcept {
    switch (t) {
        case watch_event_type::node_created: return "node_created";
        case watch_event_type::node_deleted: return "node_deleted";
        case watch_event_type::node_data_changed: return "node_data_changed";
        case watch_event_type::node_children_changed: return "node_children_changed";
        case watch_event_type::not_watching: return "not_watching";
    }
    return "unknown";
}

acl_list open_acl_unsafe() { return {{perms::all, "world", "anyone"}}; }
acl_list creator_all_acl() { return {{perms::all, "auth", ""}}; }
acl_list read_acl_unsafe() { return {{perms::read, "world", "anyone"}}; }

}  // namespace zkr
