// One-shot watch notifications.
#pragma once

#include <string>
#include <string_view>

namespace zkr {

enum class watch_event_type {
    node_created,
    node_deleted,
    node_data_changed,
    node_children_changed,
    /// The watch ended without its event: the session was lost or the client was closed.
    /// The node may have changed meanwhile; read it again on the new session.
    not_watching,
};

std::string_view to_string(watch_event_type t) noexcept;

/// What a one-shot watch reports, exactly once. Connection loss alone does not fire a watch:
/// ZooKeeper restores watches when the same session reconnects.
struct watch_event {
    watch_event_type type = watch_event_type::not_watching;  ///< What happened to the node.
    std::string path;  ///< As the user named it (without namespace).
};

}  // namespace zkr
