// Access control entries and digest credentials.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace zkr {

/// ZooKeeper permission bits.
namespace perms {
inline constexpr std::int32_t read = 1;    ///< Read the data and list the children.
inline constexpr std::int32_t write = 2;   ///< Set the data.
inline constexpr std::int32_t create = 4;  ///< Create children.
inline constexpr std::int32_t remove = 8;  ///< Delete children.
inline constexpr std::int32_t admin = 16;  ///< Set the ACL.
inline constexpr std::int32_t all = 31;    ///< Every permission above.
}  // namespace perms

/// One ACL entry: permissions for an identity (scheme "world"/"auth"/"digest"/"ip").
struct acl_entry {
    std::int32_t permissions = perms::all;  ///< A sum of zkr::perms bits.
    std::string scheme;                     ///< "world", "auth", "digest" or "ip".
    std::string id;                         ///< The identity in that scheme ("anyone", "user:hash", an address).
    /// Equal when all three are.
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
    std::string scheme = "digest";  ///< The authentication scheme.
    std::string credentials;        ///< For digest: "user:password".
};

}  // namespace zkr
