// zkr::fair_lock: a strict first-come-first-served cross-process queue lock.
#pragma once

#include <zkr/detail/lock_base.hpp>

#include <chrono>
#include <condition_variable>
#include <optional>

namespace zkr {

/**
 * A queue lock: processes hold it strictly in the order their requests reached ZooKeeper.
 *
 * Re-entrant by a hold count on the object (any thread of the object's owner may lock again; as
 * many unlocks are needed). try_lock never queues: if it does not hold at once, its node is removed
 * before it returns false. queue_position() and queue_length() show the queue.
 *
 * Connection loss, session loss, errors: as for interprocess_mutex (hold_state, listeners,
 * fencing_token, guarded_multi).
 */
class fair_lock : public detail::lock_base, public detail::timed_lockable<fair_lock> {
public:
    fair_lock(client& c, std::string path);
    ~fair_lock();

    void lock();
    bool try_lock();
    void unlock();
    void unlock(boost::system::error_code& ec);
    bool acquire(std::chrono::milliseconds timeout);

    /// Nodes ahead of ours (0 while we hold); nullopt when this object is neither holding nor queued.
    std::optional<std::size_t> queue_position() const;
    /// Nodes in the queue, the holder included.
    std::size_t queue_length() const;

    bool is_held() const;
    int hold_count() const;
    std::int64_t fencing_token() const;
    /// Our lock node's path while held (empty otherwise).
    std::string node_path() const;
    hold_state state() const;
    bool is_valid() const { return state() == hold_state::held; }
    /// Wakes every thread of this process waiting to acquire through this object: their acquire
    /// throws zkr::error with errc::cancelled and their nodes are removed. Holds stay held.
    void cancel() { driver_->cancel(); }
    std::vector<multi_result> guarded_multi(std::vector<multi_op> ops);

private:
    bool acquire_for(std::optional<std::chrono::milliseconds> timeout);

    mutable std::mutex mutex_;
    std::condition_variable acquiring_done_;
    bool acquiring_ = false;  // one acquisition at a time per object
    std::shared_ptr<detail::hold> hold_;
    int count_ = 0;
    std::string queued_node_;
};

}  // namespace zkr
