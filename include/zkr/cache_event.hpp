/// @file
/// What a cache of ZooKeeper nodes tells its listeners, and what it keeps of each node.
#pragma once

#include <zkr/stat.hpp>

#include <optional>
#include <string>

namespace zkr {

/// One node as a cache keeps it: its data (empty when the cache keeps no data) and its stat.
struct cached_node {
    std::string data;  ///< its data as read (empty when the cache keeps no data)
    zkr::stat stat;    ///< its stat, from the same read
    /// Equal when data and stat are.
    friend bool operator==(const cached_node&, const cached_node&) = default;
};

/// What happened.
enum class cache_event_type {
    added,        ///< a node the cache did not show is there (a new node: a new czxid)
    updated,      ///< a node it shows has a newer version of its data
    removed,      ///< a node it showed is gone (a node deleted and made again: removed, then added)
    initialized,  ///< the first full read after start is done: the cache shows the tree as read
    suspended,    ///< the connection is down: the cache shows what it last read
    reconnected,  ///< the connection is back: the cache catches up with what changed meanwhile
    lost,         ///< the session ended: the cache reads everything again on the next one
};

/// One event. path and node for added, updated (the new node) and removed (the last one shown).
struct cache_event {
    cache_event_type type = cache_event_type::initialized;  ///< what happened
    std::string path;                 ///< the node's absolute path (empty for the others)
    std::optional<cached_node> node;  ///< added, updated: the node now; removed: the last one shown
};

}  // namespace zkr
