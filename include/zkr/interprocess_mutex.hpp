// zkr::interprocess_mutex: a re-entrant cross-process mutex (Curator's InterProcessMutex, done better).
#pragma once

#include <zkr/detail/lock_base.hpp>

#include <chrono>
#include <map>
#include <thread>

namespace zkr {

/**
 * A mutex shared by every process that uses the same ZooKeeper path.
 *
 * Each acquire creates a protected ephemeral-sequential node under `path` (missing parents are
 * created as containers) and lists the queue in the same round trip; the lowest node holds, and a
 * waiter watches only the node just ahead of it. A woken waiter decides from what it already knows,
 * without listing the queue again.
 *
 * Re-entrant per thread: a nested acquire by the holding thread does no I/O and needs as many
 * releases. Other threads of the same process queue in ZooKeeper like other processes do.
 * Meets Lockable and TimedLockable, so std::unique_lock and std::scoped_lock work.
 *
 * Connection loss: the hold becomes doubtful (state() == hold_state::doubtful); it is held again
 * only once, after reconnection, our node is seen still there on our session. state() also reads
 * doubtful once nothing was heard from the server for 2/3 of the session timeout (this process may
 * have been paused past it), before the client has noticed on its own. Session loss, client
 * close, or our node deleted or written by someone else: the hold is lost for good (a write: the
 * waiter behind takes a data change for our release). Hold listeners hear both.
 * A holder must stop acting on the protected resource unless state() is held, and should pass
 * fencing_token() to it (see docs/recipes.md). Waiters carry on through connection loss, and queue
 * again with a new node when their session is lost.
 *
 * Errors: acquire throws zkr::error (closed, not_connected after the retry policy gave up,
 * invalid_argument for a negative timeout). release by a thread that does not hold it throws
 * lock_not_held; release of a hold that was lost throws lock_lost (the node is already gone).
 */
class interprocess_mutex : public detail::lock_base, public detail::timed_lockable<interprocess_mutex> {
public:
    interprocess_mutex(client& c, std::string path);
    /// Releases every hold still taken through this object (best effort, errors logged).
    ~interprocess_mutex();

    /// Blocks until held.
    void acquire();
    /// True when held within the timeout; false (and no node left behind) otherwise.
    /// A zero timeout tries once without queueing.
    bool acquire(std::chrono::milliseconds timeout);
    /// Completes with (error_code, bool acquired) on the handler's associated executor (default: the
    /// client's callback thread). The hold belongs to the thread that calls async_acquire. It is
    /// re-entrant only once that thread holds: two async_acquire started before either completes
    /// compete like two threads (the second waits for the first's release).
    template <typename Token>
    auto async_acquire(std::chrono::milliseconds timeout, Token&& token);

    void release();
    void release(boost::system::error_code& ec);
    /// Releases the calling thread's hold (one level of it, as release()) without waiting for the
    /// delete: when this returns the thread no longer holds, and its next acquire is queued behind
    /// the delete (one session's requests reach the server in order), so a release-then-acquire
    /// loop costs one round trip less per cycle. Completes with (error_code) once the delete has
    /// its outcome, on the handler's associated executor (default: the client's callback thread):
    /// lock_not_held if the thread held nothing, lock_lost if the hold had already ended, and on
    /// connection loss the error while the node is deleted on reconnection (as for release()).
    /// Until then another process may still find the lock taken. Use boost::asio::detached when
    /// the outcome does not matter.
    template <typename Token>
    auto async_release(Token&& token);

    bool is_acquired_in_this_process() const;
    bool is_owned_by_current_thread() const;
    /// The czxid of the calling thread's lock node: strictly increasing across successive holders.
    /// Throws lock_not_held when the thread holds nothing.
    std::int64_t fencing_token() const;
    /// The calling thread's hold state (released when it holds nothing).
    hold_state state() const;
    bool is_valid() const { return state() == hold_state::held; }
    /// Wakes every thread of this process waiting to acquire through this object: their acquire
    /// throws zkr::error with errc::cancelled and their nodes are removed. Holds stay held.
    void cancel() { driver_->cancel(); }
    /// The calling thread's lock node path (empty when it holds nothing).
    std::string node_path() const;
    /// Runs ops atomically only while the calling thread's hold is valid: a check of our own node
    /// is sent in the same multi, bound to our session. lock_lost when the hold is gone.
    std::vector<multi_result> guarded_multi(std::vector<multi_op> ops);
    std::vector<multi_result> guarded_multi(std::vector<multi_op> ops, boost::system::error_code& ec);

    // Lockable / TimedLockable.
    void lock() { acquire(); }
    bool try_lock() { return acquire(std::chrono::milliseconds(0)); }
    void unlock() { release(); }

private:
    struct entry {
        std::shared_ptr<detail::hold> hold;
        int count = 0;
    };
    std::shared_ptr<detail::hold> current_hold() const;
    /// One level of owner's hold: the hold itself when that was the last level, else null.
    std::shared_ptr<detail::hold> take_for_release(std::thread::id owner, boost::system::error_code& ec);
    bool acquire_for(std::optional<std::chrono::milliseconds> timeout);
    void adopt(std::thread::id owner, std::shared_ptr<detail::hold> h);
    /// True (and the count raised) when `owner` already holds.
    bool reenter(std::thread::id owner);

    mutable std::mutex mutex_;
    std::map<std::thread::id, entry> holds_;
};

template <typename Token>
auto interprocess_mutex::async_acquire(std::chrono::milliseconds timeout, Token&& token) {
    const auto limit = checked_timeout(timeout);
    return boost::asio::async_initiate<Token, void(boost::system::error_code, bool)>(
        [this, limit](auto handler) {
            auto ex = boost::asio::get_associated_executor(handler, detail::callback_executor(driver_->get_client().connection()));
            auto work = boost::asio::make_work_guard(ex);
            const auto owner = std::this_thread::get_id();
            if (reenter(owner)) {
                boost::asio::post(ex, [h = std::move(handler)]() mutable { std::move(h)(boost::system::error_code{}, true); });
                return;
            }
            driver_->acquire(limit, node_data(),
                             [this, owner, h = std::move(handler), work = std::move(work)](
                                 const boost::system::error_code& ec, std::shared_ptr<detail::hold> hold) mutable {
                                 const bool acquired = static_cast<bool>(hold);
                                 if (hold) adopt(owner, std::move(hold));
                                 boost::asio::post(work.get_executor(), [h = std::move(h), ec, acquired]() mutable {
                                     std::move(h)(ec, acquired);
                                 });
                                 work.reset();
                             });
        },
        token);
}

template <typename Token>
auto interprocess_mutex::async_release(Token&& token) {
    return async_release_hold([this, owner = std::this_thread::get_id()](boost::system::error_code& ec) {
        return take_for_release(owner, ec);
    }, std::forward<Token>(token));
}

}  // namespace zkr
