/// @file
/// zkr::children_cache: the children of a node kept in memory, with change listeners.
#pragma once

#include <zkr/tree_cache.hpp>

namespace zkr {

/**
 * The direct children of a node kept in memory: a tree_cache of depth 1 whose listeners hear the
 * children's events only (Curator's PathChildrenCache, Kazoo's ChildrenWatch). The parent need not
 * exist: the cache waits for it, and never makes it (PathChildrenCache creates it). Events,
 * connection loss and session expiry as for tree_cache; when the parent goes, each child is
 * `removed`.
 */
class children_cache {
public:
    /// Throws zkr::error (invalid_path) on a bad path.
    children_cache(client& c, std::string path, bool cache_data = true);
    /// Begins reading. Throws zkr::error (invalid_argument) if started before, or closed.
    void start() { cache_.start(); }
    /// Stops (never throws); a second close does nothing.
    void close() noexcept { cache_.close(); }
    /// Waits until the first full read after start() is done; false on timeout.
    bool wait_initialized(std::chrono::milliseconds timeout) const { return cache_.wait_initialized(timeout); }
    /// tree_cache::async_wait_initialized.
    template <typename Token>
    auto async_wait_initialized(std::chrono::milliseconds timeout, Token&& token) {
        return cache_.async_wait_initialized(timeout, std::forward<Token>(token));
    }
    /// The child of that name, if the cache shows it.
    std::optional<cached_node> get(std::string_view child_name) const;
    /// The children's names, sorted.
    std::vector<std::string> children() const { return cache_.children(cache_.path()); }
    /// Hears the children's events and the connection's from now on, on the callback thread.
    /// Throws zkr::error if empty.
    state_subscription add_listener(std::function<void(const cache_event&)> listener);
    /// The parent's path.
    const std::string& path() const noexcept { return cache_.path(); }

private:
    tree_cache cache_;
};

}  // namespace zkr
