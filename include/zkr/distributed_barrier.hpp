/// @file
/// zkr::distributed_barrier: processes wait until a barrier is removed (Curator's DistributedBarrier).
#pragma once

#include <zkr/client.hpp>
#include <zkr/detail/asio.hpp>
#include <zkr/detail/unique_function.hpp>

#include <boost/system/error_code.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace zkr {

/**
 * A barrier that holds waiters back while it is set. It is one persistent node at its path, as
 * Curator's DistributedBarrier and Kazoo's Barrier make it: zkr, Curator and Kazoo processes share
 * a barrier on one path. set_barrier() makes the node, remove_barrier() deletes it, and a wait
 * returns once it sees the node absent.
 *
 * A wait passes only on an answer from the server that the node is absent; a wake-up alone never
 * lets it through. It needs no permission on the node (an exists is never refused).
 *
 * Connection loss: a wait goes on; its watch stays with its session, and a check that failed is
 * sent again on reconnection. Session expiry: the node is persistent, so nothing of the barrier is
 * lost; the wait checks again on the new session. A barrier set and removed again while the
 * connection was away may go unseen (ZooKeeper tells of the node as it is, not of its history),
 * as in Curator. When the client is closed a wait ends with `closed`.
 *
 * Thread safety: every member may be called from any thread, and waits may run side by side.
 */
class distributed_barrier {
public:
    /// Checks the path (zkr::error, invalid_path); nothing is sent.
    distributed_barrier(client& c, std::string path);
    /// Ends the async waits still running with `closed` (never throws).
    ~distributed_barrier();
    distributed_barrier(const distributed_barrier&) = delete;
    distributed_barrier& operator=(const distributed_barrier&) = delete;

    /// Makes the barrier node (missing parents as containers); set already is fine. Throws
    /// zkr::error when it cannot be made (not connected within the retry policy, no permission).
    void set_barrier();
    /// Deletes the barrier node; not set is fine. Throws zkr::error as set_barrier().
    void remove_barrier();
    /// Whether the barrier is set now (one read). Throws zkr::error when it cannot be read.
    bool is_set();
    /// Waits until the barrier is not set. Throws zkr::error (closed) if the client is closed first.
    void wait_on_barrier();
    /// Waits at most `timeout`: true once the barrier is not set, false on timeout (zero: one
    /// check). Throws as wait_on_barrier(), and invalid_argument for a negative timeout.
    bool wait_on_barrier(std::chrono::milliseconds timeout);
    /// wait_on_barrier(timeout) without blocking: completes with (error_code, bool) on the
    /// handler's associated executor (default: the client's callback thread).
    template <typename Token>
    auto async_wait_on_barrier(std::chrono::milliseconds timeout, Token&& token) {
        return boost::asio::async_initiate<Token, void(boost::system::error_code, bool)>(
            [this, timeout](auto handler) mutable {
                start_wait(timeout, detail::completion_on<true>(std::move(handler), callback_executor()));
            },
            token);
    }

    /// The barrier's path.
    const std::string& path() const noexcept { return path_; }

private:
    struct state;
    using wait_done = detail::unique_function<void(const boost::system::error_code&, bool)>;
    void start_wait(std::chrono::milliseconds timeout, wait_done done);
    bool wait(std::optional<std::chrono::milliseconds> timeout);
    boost::asio::any_io_executor callback_executor() const;
    client& client_;
    std::string path_;
    std::shared_ptr<state> state_;
};

}  // namespace zkr
