// Access control entries and digest credentials.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace zkr {

/// ZooKeeper permission bits.
namespace perms {
inline constexpr std::int32_t read = 1;
inline constexpr std::int32_t write = 2;
inline constexpr std::int32_t create = 4;
inline constexpr std::int32_t remove = 8;
inline constexpr std::int32_t admin = 16;
inline constexpr std::int32_t all = 31;
}  // namespace perms

/// One ACL entry: permissions for an identity (scheme "world"/"auth"/"digest"/"ip").
struct acl_entry {
    std::int32_t permissions = perms::all;
    std::string scheme;
    std::string id;
    friend bool operator==(const acl_entry&, const acl_entry&) = default;
};

using acl_list = std::vector<acl_entry>;

/// world:anyone with every permission (ZooKeeper's OPEN_ACL_UNSAFE). The default.
acl_list open_acl_unsafe();
/// Every permission for the identities this session authenticated as (CREATOR_ALL_ACL).
/// Needs at least one auth entry in client_options::auth.
acl_list creator_all_acl();
/// world:anyone may read.
acl_list read_acl_unsafe();

/// A credential sent with zoo_add_auth on every (re)connection: scheme "digest", "user:password".
struct auth_entry {
    std::string scheme = "digest";
    std::string credentials;
};

}  // namespace zkr
