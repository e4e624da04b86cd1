/// @file
/// zkr::node_cache: one node kept in memory (it may not exist), with change listeners.
#pragma once

#include <zkr/tree_cache.hpp>

namespace zkr {

/**
 * One node kept in memory: a tree_cache of depth 0 (Curator's NodeCache, Kazoo's DataWatch). The
 * node need not exist: get() is empty until it does. Events, connection loss and session expiry
 * as for tree_cache: `added`, `updated` (a newer version), `removed`, `initialized` once per
 * start, and the connection's. It never writes to ZooKeeper (Curator's NodeCache makes the
 * parents, CURATOR-319).
 */
class node_cache {
public:
    /// Throws zkr::error (invalid_path) on a bad path.
    node_cache(client& c, std::string path, bool cache_data = true);
    /// Begins reading. Throws zkr::error (invalid_argument) if started before, or closed.
    void start() { cache_.start(); }
    /// Stops (never throws); a second close does nothing.
    void close() noexcept { cache_.close(); }
    /// Waits until the first read after start() is done; false on timeout.
    bool wait_initialized(std::chrono::milliseconds timeout) const { return cache_.wait_initialized(timeout); }
    /// tree_cache::async_wait_initialized.
    template <typename Token>
    auto async_wait_initialized(std::chrono::milliseconds timeout, Token&& token) {
        return cache_.async_wait_initialized(timeout, std::forward<Token>(token));
    }
    /// The node, if it exists as last read.
    std::optional<cached_node> get() const { return cache_.get(cache_.path()); }
    /// Hears every event from now on, on the callback thread. Throws zkr::error if empty.
    state_subscription add_listener(std::function<void(const cache_event&)> listener) { return cache_.add_listener(std::move(listener)); }
    /// The node's path.
    const std::string& path() const noexcept { return cache_.path(); }

private:
    tree_cache cache_;
};

}  // namespace zkr
