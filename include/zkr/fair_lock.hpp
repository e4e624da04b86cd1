// zkr::fair_lock: a strict first-come-first-served cross-process queue lock.
#pragma once

#include <zkr/detail/lock_ops.hpp>
#include <zkr/hold_state.hpp>
#include <zkr/hold_view.hpp>
#include <zkr/lock_hold.hpp>
#include <zkr/multi_op.hpp>
#include <zkr/results.hpp>
#include <zkr/subscription.hpp>
#include <zkr/timed_lockable.hpp>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

namespace zkr {

class client;
class multi_lock_member;

/**
 * A queue lock: processes hold it strictly in the order their requests reached ZooKeeper.
 *
 * Re-entrant by a hold count on the object (any thread of the object's owner may lock again; as
 * many unlocks are needed). try_lock never queues: if it does not hold at once, its node is removed
 * before it returns false. queue_position() and queue_length() show the queue.
 *
 * Connection loss, session loss, stop_token(), errors, and what unlock() (never throws) and the
 * destructor do when the hold was lost or the server is unreachable: as for interprocess_mutex
 * (hold_state, listeners, fencing_token, guarded_multi).
 */
class fair_lock : public timed_lockable<fair_lock> {
public:
    /// A fair lock on `path` (checked at once: zkr::error with invalid_path).
    fair_lock(client& c, std::string path);
    /// A revocable fair lock: as interprocess_mutex's revocable constructor (zkr::revoke asks the
    /// holder to let go; on_revoke runs once per hold on the callback thread, and the hold's
    /// stop_token() is requested). Mixes with plain waiters on the same path.
    fair_lock(client& c, std::string path, std::function<void()> on_revoke);
    /// Releases a hold still taken through this object (best effort, errors logged).
    ~fair_lock();

    /// Blocks until held (one more level when the object holds already).
    void acquire();
    /// True when held within the timeout; false (and no node left behind) otherwise. Zero tries
    /// once, and throws not_connected at once when there is no connection to try on.
    bool acquire(std::chrono::milliseconds timeout);
    /// One level less; releases the hold after the last. Throws zkr::error: lock_not_held,
    /// lock_lost (the hold had already ended), connection_loss (no connection: the node is deleted
    /// once it returns), closed.
    void release();
    /// release(), reporting through ec instead of throwing.
    void release(boost::system::error_code& ec);
    /// release() without waiting for the delete: when this returns the object holds one level less
    /// (not at all after the last one), and an acquire on the same client is queued behind the
    /// delete (one session's requests reach the server in order). Completes with (error_code) once
    /// the delete has its outcome, on the handler's associated executor (default: the client's
    /// callback thread): lock_not_held if nothing was held, lock_lost if the hold had already
    /// ended, and on connection loss the error while the node is deleted on reconnection (as for
    /// release()). Until then another process may still find the lock taken. A nested level
    /// completes at once with no request.
    template <typename Token>
    auto async_release(Token&& token) {
        return detail::async_release_hold(*core_, [this](boost::system::error_code& ec) { return take_for_unlock(ec); },
                                  std::forward<Token>(token));
    }

    // Lockable / TimedLockable.
    /// acquire(), for std::scoped_lock and std::unique_lock.
    void lock() { acquire(); }
    /// Tries once; throws not_connected at once when there is no connection to try on.
    bool try_lock() { return acquire(std::chrono::milliseconds(0)); }
    /// One level less; releases the hold after the last. Never throws: a failure is logged.
    void unlock() noexcept;

    /// Old names, kept for one release.
    [[deprecated("use release(ec)")]] void unlock(boost::system::error_code& ec) { release(ec); }
    /// Old name of async_release, kept for one release.
    template <typename Token>
    [[deprecated("use async_release")]] auto async_unlock(Token&& token) {
        return async_release(std::forward<Token>(token));
    }

    /// Completes with (error_code, lock_hold): a hold owned by the lock_hold, not by this object
    /// (not counted by is_held(), hold_count() or unlock()), in the same queue. Empty without error
    /// when the timeout passed. If this object is destroyed first, it ends with cancelled.
    template <typename Token>
    auto async_acquire(std::chrono::milliseconds timeout, Token&& token) {
        return detail::async_acquire_hold(*core_, detail::checked_timeout(timeout), std::forward<Token>(token));
    }

    /// Nodes ahead of ours (0 while we hold); nullopt when this object is neither holding nor queued.
    std::optional<std::size_t> queue_position() const;
    /// Nodes in the queue, the holder included.
    std::size_t queue_length() const;

    /// Whether this object holds (any thread may release a fair lock's hold).
    bool is_held() const;
    /// Levels of the object's hold (0 when it holds nothing).
    int hold_count() const;
    /// The czxid of our lock node: strictly increasing across successive holders. Throws
    /// lock_not_held when the object holds nothing.
    std::int64_t fencing_token() const;
    /// Our lock node's path while held (empty otherwise).
    std::string node_path() const;
    /// released when the object holds nothing; releasing after its unlock() while the delete waits
    /// for the connection (as the hold listeners hear it).
    hold_state state() const;
    /// Whether the object's hold reads held (not doubtful, lost or released).
    bool is_valid() const { return state() == hold_state::held; }
    /// The object's hold's stop token; already requested when the object holds nothing.
    std::stop_token stop_token() const;
    /// The object's hold, as a view to hand to a job (see zkr::hold_view). Throws lock_not_held
    /// when the object holds nothing.
    hold_view view() const;
    /// Wakes every thread of this process waiting to acquire through this object: their acquire
    /// throws zkr::error with errc::cancelled and their nodes are removed. Holds stay held.
    void cancel();
    /// Runs ops atomically only while the object's hold is valid (as interprocess_mutex's).
    std::vector<multi_result> guarded_multi(std::vector<multi_op> ops);
    /// As guarded_multi(ops), with the failure in ec instead of an exception.
    std::vector<multi_result> guarded_multi(std::vector<multi_op> ops, boost::system::error_code& ec);
    /// What the nodes of later acquires carry (default "<host>:<pid>"), as `zkr status` shows it.
    void set_node_data(std::string data);
    /// The lock's nodes in queue order, holders first, as full paths (without the client's
    /// namespace). Throws zkr::error on a connection problem.
    std::vector<std::string> participant_nodes() const;
    /// listener(state) runs on the client's callback thread for every change of every hold taken
    /// through this object from now on (doubtful on connection loss, held again, lost, released).
    state_subscription add_hold_listener(std::function<void(hold_state)> listener);

private:
    friend class multi_lock_member;  // a multi-lock member acquires through our core
    bool acquire_for(std::optional<std::chrono::milliseconds> timeout);
    std::shared_ptr<detail::hold> current_hold() const;
    /// One level less; the hold once the last level goes (null otherwise, ec set if none was held).
    std::shared_ptr<detail::hold> take_for_unlock(boost::system::error_code& ec);

    std::unique_ptr<detail::lock_core> core_;
    mutable std::mutex mutex_;
    std::condition_variable acquiring_done_;
    bool acquiring_ = false;  // one acquisition at a time per object
    std::shared_ptr<detail::hold> hold_;
    std::weak_ptr<detail::hold> released_;  // the last one released, while its delete may be pending
    int count_ = 0;
    std::string queued_node_;
};

}  // namespace zkr
