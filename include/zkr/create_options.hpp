// How a node is created.
#pragma once

#include <zkr/acl.hpp>

#include <chrono>
#include <optional>

namespace zkr {

/// A node's kind (ZooKeeper's CreateMode).
enum class create_mode {
    persistent,                      ///< Stays until deleted.
    ephemeral,                       ///< Deleted when the session ends.
    persistent_sequential,           ///< Persistent, its name suffixed with a rising 10-digit sequence.
    ephemeral_sequential,            ///< Ephemeral and sequential.
    container,                       ///< Deleted by the server once its last child is gone.
    persistent_with_ttl,             ///< Needs the server's zookeeper.extendedTypesEnabled=true.
    persistent_sequential_with_ttl,  ///< Sequential, with a TTL (same server setting).
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

/// How a node is created (client::create).
struct create_options {
    create_mode mode = create_mode::persistent;  ///< The node's kind.
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
