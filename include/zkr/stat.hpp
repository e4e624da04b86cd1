// A znode's metadata.
#pragma once

#include <cstdint>

namespace zkr {

/// A znode's Stat, as the server returns it.
struct stat {
    std::int64_t czxid = 0;            ///< The zxid that created the node: zkr's fencing token.
    std::int64_t mzxid = 0;            ///< The zxid of the last change of its data.
    std::int64_t ctime = 0;            ///< Milliseconds since the epoch.
    std::int64_t mtime = 0;            ///< Its last data change, in milliseconds since the epoch.
    std::int32_t version = 0;          ///< Data version, for set_data / remove / check.
    std::int32_t cversion = 0;         ///< Version of its children (changes as children come and go).
    std::int32_t aversion = 0;         ///< Version of its ACL.
    std::int64_t ephemeral_owner = 0;  ///< Session id owning an ephemeral node, else 0.
    std::int32_t data_length = 0;      ///< Bytes of data.
    std::int32_t num_children = 0;     ///< Children now.
    std::int64_t pzxid = 0;            ///< The zxid of the last change of its children.
    /// Equal when every field is.
    friend bool operator==(const stat&, const stat&) = default;
};

}  // namespace zkr
