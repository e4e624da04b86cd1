/// @file
/// zkr::tree_cache: a ZooKeeper subtree kept in memory, with change listeners.
#pragma once

#include <zkr/cache_event.hpp>
#include <zkr/client.hpp>
#include <zkr/detail/asio.hpp>
#include <zkr/detail/unique_function.hpp>
#include <zkr/subscription.hpp>

#include <boost/system/error_code.hpp>

#include <chrono>
#include <climits>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zkr {

/// What a tree_cache keeps.
struct tree_cache_options {
    /// How deep below its path: 0 the node alone, 1 with its children, and so on (at least 0).
    int max_depth = INT_MAX;
    /// false: each node keeps its stat only (its data is read, and dropped).
    bool cache_data = true;
    /// Children whose name matches one of these shell patterns (fnmatch: `*`, `?`, `[...]`; for
    /// example "_c_*" or "lock-*") are neither read, watched nor shown, nor anything under them.
    /// The cache's own path is never skipped.
    std::vector<std::string> skip_names;
    /// A node whose data is longer than this many bytes is shown with its stat and no data
    /// (stat.data_length tells its length), as with cache_data = false; 0: no limit.
    std::size_t max_data_bytes = 0;
};

/**
 * A subtree under a path kept in memory: each node's data and stat, and listeners told of every
 * change. The design is Curator's TreeCache (the C client has no persistent watch): each cached
 * node costs a data watch, and one on its children above the depth limit.
 *
 * What it shows: every node it shows was a state of that node on the server (its czxid, version
 * and data); a node's version never goes back; a node is shown only under its parent. A change
 * overwritten before the cache reads it again is seen as its last value, never a wrong one.
 * Events are exact differences, in the server's order for each path: `added` for a node not shown
 * (a node deleted and made again: `removed`, then `added`), `updated` for a newer version of the
 * node shown, `removed` for a node gone, after everything under it. A node's stat is the one of
 * the read that gave its last event.
 *
 * The path need not exist: the cache waits for it (an exists watch) and shows it once made. It
 * never writes to ZooKeeper.
 *
 * Connection loss: the cache shows what it last read (`suspended`); on reconnection with the same
 * session, the watches ZooKeeper's client set again fire for what changed meanwhile, and only the
 * reads that failed are sent again (`reconnected`). Session expiry (`lost`): on the next session
 * every cached node is read again, and the differences are told as events.
 *
 * Listeners run on the client's callback thread, in order, never on the network thread; one that
 * throws is logged and the others still run.
 */
class tree_cache {
public:
    /// Throws zkr::error (invalid_path, invalid_argument) on a bad path, a negative depth or an
    /// empty skip pattern.
    tree_cache(client& c, std::string path, tree_cache_options options = {});
    /// Closes (never throws).
    ~tree_cache();
    tree_cache(const tree_cache&) = delete;
    tree_cache& operator=(const tree_cache&) = delete;

    /// Begins reading. Throws zkr::error (invalid_argument) if started before, or closed.
    void start();
    /// Stops: no read, watch or event from now on; what is shown stays. A second close does nothing.
    void close() noexcept;
    /// Waits until the first full read after start() is done; false on timeout.
    bool wait_initialized(std::chrono::milliseconds timeout) const;
    /// wait_initialized without blocking: completes with (error_code, bool) on the handler's
    /// associated executor (default: the client's callback thread): true once the first full read
    /// is done, false after timeout (zero: whether it is done now); `closed` when the cache is
    /// closed first, `invalid_argument` for a negative timeout. It may be asked before start().
    template <typename Token>
    auto async_wait_initialized(std::chrono::milliseconds timeout, Token&& token) {
        return boost::asio::async_initiate<Token, void(boost::system::error_code, bool)>(
            [s = state_, callbacks = callback_executor(), timeout](auto handler) mutable {
                start_wait(s, timeout, detail::completion_on<true>(std::move(handler), callbacks));
            },
            token);
    }

    /// The node at an absolute path, if the cache shows it.
    std::optional<cached_node> get(std::string_view path) const;
    /// The names of the children of path that the cache shows, sorted.
    std::vector<std::string> children(std::string_view path) const;
    /// Every node shown, by path: one consistent copy.
    std::map<std::string, cached_node> view() const;

    /// Hears every event from now on. Throws zkr::error (invalid_argument) if empty.
    state_subscription add_listener(std::function<void(const cache_event&)> listener);
    /// The subtree's path.
    const std::string& path() const noexcept { return path_; }

private:
    struct state;
    using wait_done = detail::unique_function<void(const boost::system::error_code&, bool)>;
    static void start_wait(const std::shared_ptr<state>& s, std::chrono::milliseconds timeout, wait_done done);
    boost::asio::any_io_executor callback_executor() const;
    client& client_;
    std::string path_;
    tree_cache_options options_;
    std::shared_ptr<state> state_;
};

}  // namespace zkr
