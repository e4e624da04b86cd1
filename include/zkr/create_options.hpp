// How a node is created.
#pragma once

#include <zkr/acl.hpp>

#include <chrono>
#include <optional>

namespace zkr {

enum class create_mode {
    persistent,
    ephemeral,                       ///< Deleted when the session ends.
    persistent_sequential,
    ephemeral_sequential,
    container,                       ///< Deleted by the server once its last child is gone.
    persistent_with_ttl,             ///< Needs the server's zookeeper.extendedTypesEnabled=true.
    persistent_sequential_with_ttl,
};

constexpr bool is_ephemeral(create_mode m) noexcept {
    return m == create_mode::ephemeral || m == create_mode::ephemeral_sequential;
}
constexpr bool is_sequential(create_mode m) noexcept {
    return m == create_mode::persistent_sequential || m == create_mode::ephemeral_sequential ||
           m == create_mode::persistent_sequential_with_ttl;
}
constexpr bool has_ttl(create_mode m) noexcept {
    return m == create_mode::persistent_with_ttl || m == create_mode::persistent_sequential_with_ttl;
}

struct create_options {
    create_mode mode = create_mode::persistent;
    /// Create missing parents first, as container nodes (pipelined: one round trip).
    bool create_parents = false;
    /// Protected create: the name is prefixed "_c_<uuid>-" so that, after a connection loss
    /// during the create, zkr finds its own node again instead of creating a second one.
    /// Recovered nodes must belong to the current session (ephemeral modes).
    bool protect = false;
    /// ACL of the new node; the client's default ACL when empty.
    std::optional<acl_list> acl;
    /// For the *_with_ttl modes; must be positive there and zero elsewhere.
    std::chrono::milliseconds ttl{0};
};

}  // namespace zkr
