// zkr::lease: one lease of a semaphore, returned when the lease object goes.
#pragma once

#include <zkr/hold_state.hpp>
#include <zkr/multi_op.hpp>
#include <zkr/results.hpp>

#include <boost/system/error_code.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace zkr {

namespace detail {
class hold;
class lock_driver;
}  // namespace detail

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

}  // namespace zkr
