// zkr::lease: one lease of a semaphore, returned when the lease object goes.
#pragma once

#include <zkr/lock_hold.hpp>

#include <string>

namespace zkr {

/**
 * One lease of an interprocess_semaphore_v2: a lock_hold (move-only, owned by the object, released
 * by its destructor without throwing or waiting for a connection) with the semaphore's names for
 * returning it. close() is release().
 *
 * The leases of one acquire(qty) share one ZooKeeper node (that is what makes the acquire all or
 * nothing): the node, and so all qty leases, goes back when the last of them is closed.
 *
 * Loss, doubt and stop_token(): as for lock_hold. A write to the node by someone else changes
 * nothing (no waiter takes it for a release). A lease must not outlive its client.
 */
class lease : public lock_hold {
public:
    /// Takes over other's lease; other then owns nothing.
    lease(lease&& other) noexcept = default;
    /// Returns the lease owned so far (as the destructor does), then takes other's.
    lease& operator=(lease&& other) noexcept = default;

    /// Returns the lease: release(). Throws zkr::error: lock_not_held when already closed (or
    /// moved from), lock_lost when the lease had been lost (nothing left to delete), or the
    /// delete's error (connection_loss: the node is deleted once the connection returns).
    void close() { release(); }
    /// As close(), with the failure in ec instead of an exception.
    void close(boost::system::error_code& ec) noexcept { release(ec); }
    /// async_release(token): the lease is closed when this returns, the delete (sent only by the
    /// last open lease of its acquire) goes before any request this thread issues next on the same
    /// client. Signature: void(boost::system::error_code).
    template <typename Token>
    auto async_close(Token&& token) {
        return async_release(std::forward<Token>(token));
    }

    /// The lease node's name (shared by the leases of one acquire).
    std::string node_name() const;
    /// The data the node was created with (the semaphore's node data).
    const std::string& data() const;

private:
    friend struct detail::hold_access;
    explicit lease(std::shared_ptr<group> g) noexcept : lock_hold(std::move(g)) {}
};

}  // namespace zkr
