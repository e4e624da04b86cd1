// zkr::interprocess_semaphore_mutex: a non-re-entrant cross-process mutex (a semaphore of one lease).
#pragma once

#include <zkr/hold_view.hpp>
#include <zkr/interprocess_semaphore_v2.hpp>
#include <zkr/timed_lockable.hpp>

#include <mutex>

namespace zkr {

/**
 * A mutex that any thread of the holding process may release: a semaphore of one lease.
 *
 * Not re-entrant: a second acquire, by any thread including the holder, queues behind the
 * holder and blocks until it is released (or times out). Meets Lockable and TimedLockable.
 * Shares the layout of interprocess_semaphore_v2 with max_leases 1, so both can be used on one
 * path.
 *
 * Connection loss, session loss, fencing, guarded writes, stop_token(), and what unlock() (never
 * throws) and the destructor do when the hold was lost or the server is unreachable: as for
 * interprocess_mutex.
 */
class interprocess_semaphore_mutex : public timed_lockable<interprocess_semaphore_mutex> {
public:
    /// A one-lease semaphore on `path` (checked at once: zkr::error with invalid_path). With
    /// layout curator, Curator's InterProcessSemaphoreMutex on the same path excludes it.
    interprocess_semaphore_mutex(client& c, std::string path, semaphore_options options = {});
    /// Returns a lease still held (best effort, errors logged).
    ~interprocess_semaphore_mutex();

    /// Blocks until held.
    void acquire();
    /// True when held within the timeout; false (and no node left behind) otherwise. Zero tries once.
    bool acquire(std::chrono::milliseconds timeout);
    /// Any thread may release. Throws lock_not_held when not held, lock_lost when the hold was
    /// lost, connection_loss when the delete is pending (no connection: the node goes once it
    /// returns), closed.
    void release();
    /// As release(), with the failure in ec instead of an exception.
    void release(boost::system::error_code& ec);

    /// Whether this object holds its lease (any thread may release it).
    bool is_held() const;
    /// Deprecated: is_held().
    [[deprecated("use is_held()")]] bool is_acquired_in_this_process() const { return is_held(); }
    /// Throws lock_not_held when not held.
    std::int64_t fencing_token() const;
    /// The lease's hold state (released when nothing is held).
    hold_state state() const;
    /// Whether the lease reads held (not doubtful, lost or released).
    bool is_valid() const { return state() == hold_state::held; }
    /// The lease node's path while held (empty otherwise).
    std::string node_path() const;
    /// The lease's stop token; already requested when nothing is held.
    std::stop_token stop_token() const;
    /// The lease's hold, as a view to hand to a job (see zkr::hold_view); of nothing when nothing
    /// is held.
    hold_view view() const;
    /// Runs ops atomically only while the lease is valid (as interprocess_mutex's).
    std::vector<multi_result> guarded_multi(std::vector<multi_op> ops);
    /// As guarded_multi(ops), with the failure in ec instead of an exception.
    std::vector<multi_result> guarded_multi(std::vector<multi_op> ops, boost::system::error_code& ec);
    /// What the nodes of later acquires carry (default "<host>:<pid>"), as `zkr status` shows it.
    void set_node_data(std::string data) { semaphore_.set_node_data(std::move(data)); }
    /// The semaphore's nodes in queue order, holders first, as full paths.
    std::vector<std::string> participant_nodes() const { return semaphore_.participant_nodes(); }
    /// listener(state) runs on the client's callback thread for every change of every hold taken
    /// through this object from now on.
    state_subscription add_hold_listener(std::function<void(hold_state)> listener) {
        return semaphore_.add_hold_listener(std::move(listener));
    }
    /// Wakes every thread waiting to acquire through this object: their acquire throws zkr::error
    /// with errc::cancelled and their nodes are removed. A held lease stays held.
    void cancel() { semaphore_.cancel(); }

    // Lockable / TimedLockable.
    /// acquire(), for std::scoped_lock and std::unique_lock.
    void lock() { acquire(); }
    /// One attempt without queueing (acquire with a zero timeout).
    bool try_lock() { return acquire(std::chrono::milliseconds(0)); }
    /// Never throws: a failure is logged.
    void unlock() noexcept;

private:
    void keep(lease l);

    client& client_;
    std::string path_;
    interprocess_semaphore_v2 semaphore_;
    mutable std::mutex mutex_;
    std::optional<lease> lease_;
};

}  // namespace zkr
