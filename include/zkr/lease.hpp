// zkr::lease: one lease of a semaphore, returned when the lease object goes.
#pragma once

#include <zkr/detail/lock_driver.hpp>
#include <zkr/error.hpp>
#include <zkr/hold_state.hpp>
#include <zkr/multi_op.hpp>
#include <zkr/results.hpp>

#include <boost/asio/async_result.hpp>
#include <boost/system/error_code.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace zkr {

/**
 * One lease of an interprocess_semaphore_v2. Move-only. The destructor returns the lease (best
 * effort, never throws; a failure is logged, and a delete that failed on a connection problem is
 * retried on reconnection). close() returns it and reports errors.
 *
 * The leases of one acquire(qty) share one ZooKeeper node (that is what makes the acquire all or
 * nothing): the node, and so all qty leases, goes back when the last of them is closed.
 *
 * Loss: as for locks. state() is doubtful while the connection is suspended (or silent for 2/3 of
 * the session timeout, as after a pause of this process), lost once the
 * session is lost or the node deleted (with a fixed maximum of 1, also when someone else writes
 * to the node: the waiter behind takes a data change for our release); act on the guarded resource only while it is held, and
 * pass fencing_token() to it. A lease must not outlive its client.
 */
class lease {
public:
    lease(lease&& other) noexcept = default;
    /// Returns the lease held so far (best effort), then takes other's.
    lease& operator=(lease&& other) noexcept;
    lease(const lease&) = delete;
    lease& operator=(const lease&) = delete;
    ~lease();

    /// Returns the lease. Throws zkr::error: lock_not_held when already closed (or moved from),
    /// lock_lost when the lease had been lost (nothing left to delete), or the delete's error.
    void close();
    void close(boost::system::error_code& ec);
    /// Returns the lease without waiting: the lease is closed when this returns, and the delete
    /// (sent only by the last open lease of its acquire) is sent before any request this thread
    /// issues next on the same client, so an acquire started next queues behind it. The handler
    /// gets close(ec)'s outcome on its associated executor (default: the client's callback
    /// thread); on connection loss the delete is retried on reconnection, as close()'s is.
    /// Signature: void(boost::system::error_code).
    template <typename Token>
    auto async_close(Token&& token);
    /// False once closed or moved from.
    bool is_open() const noexcept { return static_cast<bool>(group_); }

    /// The lease node's name and path (shared by the leases of one acquire).
    std::string node_name() const;
    std::string node_path() const;
    /// The data the node was created with (the semaphore's node data).
    const std::string& data() const;
    /// The node's czxid: strictly increasing in grant order on this semaphore.
    std::int64_t fencing_token() const;
    hold_state state() const;
    bool is_valid() const { return state() == hold_state::held; }
    /// Runs ops atomically only while this lease's node exists on our session; lock_lost if not.
    std::vector<multi_result> guarded_multi(std::vector<multi_op> ops);

    struct group;  // what the leases of one acquire share

private:
    friend class interprocess_semaphore_v2;
    explicit lease(std::shared_ptr<group> g) : group_(std::move(g)) {}
    const group& checked() const;
    void return_quietly() noexcept;

    std::shared_ptr<group> group_;
};

struct lease::group {
    std::shared_ptr<detail::lock_driver> driver;
    std::shared_ptr<detail::hold> hold;
    std::string data;
    std::atomic<std::int32_t> open;  // leases of this group not yet closed
};

template <typename Token>
auto lease::async_close(Token&& token) {
    // Taken now, not when the operation is started (use_awaitable starts it when awaited).
    return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
        [g = std::move(group_)](auto handler) mutable {
            if (!g) {
                auto ex = boost::asio::get_associated_executor(handler);
                boost::asio::post(ex, [handler = std::move(handler)]() mutable {
                    std::move(handler)(make_error_code(errc::lock_not_held));
                });
                return;
            }
            // The others of this acquire still hold the node: nothing to send.
            std::shared_ptr<detail::hold> h = --g->open > 0 ? nullptr : g->hold;
            detail::release_then_complete(*g->driver, std::move(h), {}, std::move(handler));
        },
        token);
}

}  // namespace zkr
