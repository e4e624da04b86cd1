// String names and small value helpers of the public enums and ACLs.
#include <zkr/acl.hpp>
#include <zkr/connection_state.hpp>
#include <zkr/observer.hpp>
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

std::string_view to_string(operation_kind k) noexcept {
    switch (k) {
        case operation_kind::create: return "create";
        case operation_kind::remove: return "remove";
        case operation_kind::exists: return "exists";
        case operation_kind::get_data: return "get_data";
        case operation_kind::set_data: return "set_data";
        case operation_kind::get_children: return "get_children";
        case operation_kind::multi: return "multi";
    }
    return "unknown";
}

std::string_view to_string(hold_event_kind k) noexcept {
    switch (k) {
        case hold_event_kind::queued: return "queued";
        case hold_event_kind::acquired: return "acquired";
        case hold_event_kind::doubtful: return "doubtful";
        case hold_event_kind::held_again: return "held_again";
        case hold_event_kind::lost: return "lost";
        case hold_event_kind::released: return "released";
        case hold_event_kind::revocation_requested: return "revocation_requested";
    }
    return "unknown";
}

std::string_view to_string(lost_cause c) noexcept {
    switch (c) {
        case lost_cause::none: return "none";
        case lost_cause::session_ended: return "session_ended";
        case lost_cause::node_deleted: return "node_deleted";
        case lost_cause::doubt: return "doubt";
        case lost_cause::client_closed: return "client_closed";
    }
    return "unknown";
}

acl_list open_acl_unsafe() { return {{perms::all, "world", "anyone"}}; }
acl_list creator_all_acl() { return {{perms::all, "auth", ""}}; }
acl_list read_acl_unsafe() { return {{perms::read, "world", "anyone"}}; }

}  // namespace zkr
