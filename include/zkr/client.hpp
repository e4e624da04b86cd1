// zkr::client: one ZooKeeper session (re-created when lost), its operations and its states.
#pragma once

#include <zkr/client_options.hpp>
#include <zkr/connection_state.hpp>
#include <zkr/detail/asio.hpp>
#include <zkr/detail/request.hpp>
#include <zkr/error.hpp>
#include <zkr/multi_op.hpp>
#include <zkr/results.hpp>
#include <zkr/stat.hpp>
#include <zkr/subscription.hpp>
#include <zkr/watch_event.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zkr {

class client;
namespace detail {
/// For zkr's recipes and tests (never for user code): the connection behind a client.
connection& connection_of(client& c) noexcept;
}  // namespace detail

/// Options of remove().
/// How a node is deleted (client::remove).
struct remove_options {
    std::int32_t version = -1;  ///< -1: any version.
    /// Guaranteed delete: if the delete still fails with a retryable error after the retry policy
    /// gives up, the caller gets that error and zkr keeps deleting in the background, on every
    /// reconnection, until it succeeds, the node is gone, the session is lost, or close().
    bool guaranteed = false;
};

/**
 * A ZooKeeper client: a session, re-created when lost, and the operations on it.
 *
 * Threads: each client owns one network thread that drives the ZooKeeper socket (the C client's
 * single-threaded library, so the C client has no threads of its own) and one callback thread.
 * User code never runs on the network thread: completion handlers run on their associated
 * executor, or on the callback thread when they have none; state listeners and watches of sync
 * calls run on the callback thread, in order. Every member function is thread-safe.
 *
 * Connection loss: listeners see suspended; operations in flight fail with connection_loss and
 * are retried per retry_policy; new operations wait up to connection_timeout for a connection.
 * Watches survive (the server restores them when the same session reconnects).
 *
 * Session expiry (reported by the server, or suspended for longer than the negotiated session
 * timeout): listeners see lost, ephemeral nodes of the old session are gone or going, pending
 * watches fire once with not_watching, and zkr opens a new session (listeners see reconnected).
 *
 * Errors: async operations complete with a boost::system::error_code of category
 * zkr::error_category(); sync operations either set an error_code& or throw zkr::error, whose
 * message says what was wrong. Bad input is rejected before anything is sent.
 */
class client {
public:
    /// Checks the options (connect string, timeouts, namespace, policy); throws zkr::error
    /// with invalid_argument saying what is wrong. Does not connect: call start().
    explicit client(client_options options);
    /// Closes the client (see close()).
    ~client();
    client(const client&) = delete;
    client& operator=(const client&) = delete;

    /// Starts connecting in the background. Idempotent; after close() it throws closed.
    void start();
    /// Closes the session and stops every thread of the client. Idempotent. Pending operations
    /// complete with closed, pending watches fire with not_watching. Ephemeral nodes go at once.
    void close();
    /// Waits until connected; false when the timeout passed first (or the client is closed).
    bool block_until_connected(std::chrono::milliseconds timeout);
    bool block_until_connected();  ///< With client_options::connection_timeout.

    /// Registers a listener for state changes; it runs on the callback thread, in order.
    [[nodiscard]] state_subscription add_state_listener(std::function<void(connection_state)> listener);
    /// The latest state (latent before the first connection, closed after close()).
    connection_state state() const noexcept;
    /// The current session id (0 when none yet).
    std::int64_t session_id() const noexcept;
    /// The session timeout the server granted (0 before the first connection).
    std::chrono::milliseconds negotiated_session_timeout() const noexcept;
    /// The options this client was made with (checked and completed: the logger is set).
    const client_options& options() const noexcept;
    /// Where zkr logs for this client (client_options::logger, or zkr's silent default).
    const std::shared_ptr<spdlog::logger>& logger() const noexcept;

    // Each operation comes in three forms, documented once per group: async_* takes any Asio
    // completion token (a callback, use_future, use_awaitable...); the sync form with an
    // error_code reports failure there; the sync form without one throws zkr::error.

    // ---- create ---------------------------------------------------------------------------
    /// @{
    /// Creates the node `path` with `data` (opts: mode, parents, protection, ACL, TTL) and gives
    /// its actual path (with the sequence suffix of a sequential mode) and stat. A connection
    /// loss is retried per the retry policy; a protected create finds its own node again
    /// instead of making a second one. Completes with node_exists, no_node (a missing parent
    /// without create_parents), or the session's and connection's errors.
    template <typename Token>
    auto async_create(std::string path, std::string data, create_options opts, Token&& token) {
        return launch<create_result>(
            make_create(std::move(path), std::move(data), std::move(opts)), std::forward<Token>(token),
            [](detail::response&& r) { return create_result{std::move(r.path), r.stat}; });
    }
    create_result create(std::string path, std::string data, create_options opts,
                         boost::system::error_code& ec);
    create_result create(std::string path, std::string data = {}, create_options opts = {});
    /// @}

    // ---- get_data -------------------------------------------------------------------------
    /// @{
    /// Reads the node's data and stat; no_node when it does not exist. The forms with a
    /// watcher also set a one-shot watch on the node (its data changed, or it was deleted):
    /// the watcher runs once, on its associated executor for async_get_data, on the callback
    /// thread for the sync forms, and with not_watching if the session ends first.
    template <typename Token>
    auto async_get_data(std::string path, Token&& token) {
        return launch<data_result>(make_read(detail::op_kind::get_data, std::move(path), {}),
                                   std::forward<Token>(token), extract_data);
    }
    template <typename Watcher, typename Token>
    auto async_get_data(std::string path, Watcher&& watcher, Token&& token) {
        return launch<data_result>(make_read(detail::op_kind::get_data, std::move(path),
                                             wrap_watch(std::forward<Watcher>(watcher))),
                                   std::forward<Token>(token), extract_data);
    }
    data_result get_data(std::string path, boost::system::error_code& ec);
    data_result get_data(std::string path);
    data_result get_data(std::string path, std::function<void(const watch_event&)> watcher,
                         boost::system::error_code& ec);
    data_result get_data(std::string path, std::function<void(const watch_event&)> watcher);
    /// @}

    // ---- set_data -------------------------------------------------------------------------
    /// @{
    /// Replaces the node's data if its version is `version` (-1: any) and gives the new stat;
    /// bad_version when another write came first, no_node when it does not exist.
    template <typename Token>
    auto async_set_data(std::string path, std::string data, std::int32_t version, Token&& token) {
        return launch<zkr::stat>(make_set(std::move(path), std::move(data), version),
                                 std::forward<Token>(token), [](detail::response&& r) { return r.stat; });
    }
    zkr::stat set_data(std::string path, std::string data, std::int32_t version,
                       boost::system::error_code& ec);
    zkr::stat set_data(std::string path, std::string data, std::int32_t version = -1);
    /// @}

    // ---- exists ---------------------------------------------------------------------------
    /// @{
    /// The node's stat, or nullopt (and no error) when it does not exist. The forms with a
    /// watcher set a one-shot watch that fires on its creation, deletion or data change (also
    /// when it does not exist yet), on the executor the get_data forms use.
    template <typename Token>
    auto async_exists(std::string path, Token&& token) {
        return launch<std::optional<zkr::stat>>(make_read(detail::op_kind::exists, std::move(path), {}),
                                                std::forward<Token>(token), extract_exists);
    }
    template <typename Watcher, typename Token>
    auto async_exists(std::string path, Watcher&& watcher, Token&& token) {
        return launch<std::optional<zkr::stat>>(
            make_read(detail::op_kind::exists, std::move(path), wrap_watch(std::forward<Watcher>(watcher))),
            std::forward<Token>(token), extract_exists);
    }
    std::optional<zkr::stat> exists(std::string path, boost::system::error_code& ec);
    std::optional<zkr::stat> exists(std::string path);
    std::optional<zkr::stat> exists(std::string path, std::function<void(const watch_event&)> watcher,
                                    boost::system::error_code& ec);
    std::optional<zkr::stat> exists(std::string path, std::function<void(const watch_event&)> watcher);
    /// @}

    // ---- get_children ---------------------------------------------------------------------
    /// @{
    /// The names of the node's children (unsorted, as the server sends them) and its stat;
    /// no_node when it does not exist. The forms with a watcher set a one-shot watch that fires
    /// when a child is added or removed, or the node is deleted.
    template <typename Token>
    auto async_get_children(std::string path, Token&& token) {
        return launch<children_result>(make_read(detail::op_kind::get_children, std::move(path), {}),
                                       std::forward<Token>(token), extract_children);
    }
    template <typename Watcher, typename Token>
    auto async_get_children(std::string path, Watcher&& watcher, Token&& token) {
        return launch<children_result>(make_read(detail::op_kind::get_children, std::move(path),
                                                 wrap_watch(std::forward<Watcher>(watcher))),
                                       std::forward<Token>(token), extract_children);
    }
    children_result get_children(std::string path, boost::system::error_code& ec);
    children_result get_children(std::string path);
    children_result get_children(std::string path, std::function<void(const watch_event&)> watcher,
                                 boost::system::error_code& ec);
    children_result get_children(std::string path, std::function<void(const watch_event&)> watcher);
    /// @}

    // ---- remove ---------------------------------------------------------------------------
    /// @{
    /// Deletes the node (opts: its expected version, and a guaranteed delete, which zkr keeps
    /// retrying in the background after the retry policy gave up: see remove_options). no_node
    /// when it does not exist, not_empty when it has children, bad_version.
    template <typename Token>
    auto async_remove(std::string path, remove_options opts, Token&& token) {
        return launch_void(make_remove(std::move(path), opts), std::forward<Token>(token));
    }
    void remove(std::string path, remove_options opts, boost::system::error_code& ec);
    void remove(std::string path, remove_options opts = {});
    /// @}

    // ---- multi ----------------------------------------------------------------------------
    /// @{
    /// All or nothing. On failure the error is the failing operation's, and the results say
    /// which one failed.
    template <typename Token>
    auto async_multi(std::vector<multi_op> ops, Token&& token) {
        return launch<std::vector<multi_result>>(
            make_multi(std::move(ops)), std::forward<Token>(token),
            [](detail::response&& r) { return std::move(r.results); }, /*result_on_error=*/true);
    }
    std::vector<multi_result> multi(std::vector<multi_op> ops, boost::system::error_code& ec);
    std::vector<multi_result> multi(std::vector<multi_op> ops);
    /// @}

private:
    friend detail::connection& detail::connection_of(client& c) noexcept;

    static detail::request make_create(std::string path, std::string data, create_options opts);
    static detail::request make_read(detail::op_kind kind, std::string path, detail::watch_function w);
    static detail::request make_set(std::string path, std::string data, std::int32_t version);
    static detail::request make_remove(std::string path, remove_options opts);
    static detail::request make_multi(std::vector<multi_op> ops);
    static data_result extract_data(detail::response&& r) { return {std::move(r.data), r.stat}; }
    static std::optional<zkr::stat> extract_exists(detail::response&& r) {
        return r.exists ? std::optional<zkr::stat>(r.stat) : std::nullopt;
    }
    static children_result extract_children(detail::response&& r) {
        return {std::move(r.children), r.stat};
    }

    template <typename Watcher>
    detail::watch_function wrap_watch(Watcher&& watcher) {
        return detail::completion_on<false>(std::forward<Watcher>(watcher), detail::callback_executor(*impl_));
    }

    template <typename Result, typename Token, typename Extract>
    auto launch(detail::request req, Token&& token, Extract extract, bool result_on_error = false) {
        return boost::asio::async_initiate<Token, void(boost::system::error_code, Result)>(
            [this, extract, result_on_error](auto handler, detail::request r) {
                detail::submit(*impl_, std::move(r),
                               [complete = detail::completion_on<false>(std::move(handler), detail::callback_executor(*impl_)),
                                extract, result_on_error](const boost::system::error_code& ec, detail::response&& resp) mutable {
                                   Result result{};
                                   if (!ec || result_on_error) result = extract(std::move(resp));
                                   complete(ec, std::move(result));
                               });
            },
            token, std::move(req));
    }

    template <typename Token>
    auto launch_void(detail::request req, Token&& token) {
        return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
            [this](auto handler, detail::request r) {
                detail::submit(*impl_, std::move(r),
                               [complete = detail::completion_on<false>(std::move(handler), detail::callback_executor(*impl_))](
                                   const boost::system::error_code& ec, detail::response&&) mutable { complete(ec); });
            },
            token, std::move(req));
    }

    std::shared_ptr<detail::connection> impl_;
};

inline detail::connection& detail::connection_of(client& c) noexcept { return *c.impl_; }

}  // namespace zkr
