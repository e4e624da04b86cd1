// zkr::interprocess_mutex: a re-entrant cross-process mutex (Curator's InterProcessMutex, done better).
#pragma once

#include <zkr/detail/lock_ops.hpp>
#include <zkr/detail/thread_holds.hpp>
#include <zkr/hold_state.hpp>
#include <zkr/hold_view.hpp>
#include <zkr/lock_hold.hpp>
#include <zkr/multi_op.hpp>
#include <zkr/results.hpp>
#include <zkr/subscription.hpp>
#include <zkr/timed_lockable.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

namespace zkr {

class client;
class lock_rule;
class interprocess_read_write_lock;
class multi_lock_member;
namespace detail {
struct acquire_request;
class hold_cache;
}

/// What other libraries' lock nodes an interprocess_mutex takes part with on its path.
struct mutex_options {
    /// Also queue behind Kazoo's (Python) Lock nodes ("<uuid hex>__lock__<seq>"), which zkr ignores
    /// otherwise (they lack Curator's protect prefix). With Kazoo processes that create their Lock
    /// with `extra_lock_patterns=("-lock-",)` (Kazoo 2.7.1 and later), so that they queue behind
    /// zkr's nodes in turn, a zkr mutex and a Kazoo Lock on one path exclude each other.
    bool kazoo_lock_nodes = false;
    /// Lock caching (opt-in; no peer library has it): the last release of a hold keeps its node
    /// while no other node queues on the path, and the next acquire through this object, by any
    /// thread, takes it back with no request. The first such release lists the lock's folder with
    /// a children watch (one request); while that watch has not fired, later releases send nothing
    /// either. Once another node queues, the watch fires and the kept node is deleted at once, or,
    /// when an acquire here has taken it back, at the end of that hold.
    ///
    /// What changes: after release() or unlock() returns, another process cannot lock at once. It
    /// can once it has queued and this process has heard of it: one notification and one delete
    /// later (plus the hold in progress here, if any). Mutual exclusion is as without caching: the
    /// kept node stays first in the queue, and it is handed only to an acquire of this object,
    /// only while it reads held (connected, and the server heard from within 2/3 of the session
    /// timeout). A hold taken back is the same hold: the same node and fencing token (a fenced
    /// resource that refuses tokens lower than the highest it has seen accepts it), and hold
    /// listeners hear it end only when the node goes, not at each unlock(). Connection loss: a
    /// kept node is not lent while doubtful; the acquire queues anew, and the kept node is
    /// deleted once the connection returns. Session expiry: it went with the session. The
    /// destructor deletes a kept node as it releases holds. async_acquire does not take a kept
    /// node (it queues, which lets the kept one go). is_acquired_in_this_process() and state()
    /// read "not held" while a node is only kept; participant_nodes() and `zkr status` show it.
    bool cache_hold = false;
};

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
 * close, or our node deleted by someone else: the hold is lost for good. A write to our node by
 * someone else (a revocation request, an operator's) changes nothing: no waiter takes it for a
 * release, so the hold stands. Hold listeners hear both.
 * A holder must stop acting on the protected resource unless state() is held, and should pass
 * fencing_token() to it (see docs/recipes.md). Waiters carry on through connection loss, and queue
 * again with a new node when their session is lost.
 *
 * Work that must stop with the hold: stop_token() (the calling thread's hold) is requested once
 * the hold ends (lost, or released), on the client's callback thread. Give it to a std::jthread
 * or a std::stop_callback; zkr::cancellation_link cancels an Asio object with it. It is not
 * requested for doubt (the hold may come back): watch state() or a hold listener for that.
 *
 * Errors: acquire throws zkr::error (closed, not_connected after the retry policy gave up, or
 * when the client was never start()ed; invalid_argument for a negative timeout). try_lock() and
 * acquire(0ms) try once and never wait for a connection: without one they throw not_connected at
 * once (false means someone else holds). A timed acquire returns within its timeout (plus a
 * round trip to remove a node it had queued) in every connection state.
 *
 * Release: unlock() and the destructor never throw and never wait for a connection: a failure is
 * logged (lock_lost, a release by a thread that holds nothing), and without a connection the node
 * is deleted in the background once the connection returns. release() reports the outcome:
 * it throws lock_not_held for a thread that holds nothing, lock_lost when the hold had already
 * ended (the work done under it may have overlapped another holder: the caller should know),
 * connection_loss when the delete is pending (as above), closed; release(ec) reports the same
 * without throwing.
 *
 * Async: async_acquire gives a lock_hold that owns the hold (for coroutines, which may resume on
 * any thread); it does not count as the calling thread's hold.
 */
class interprocess_mutex : public timed_lockable<interprocess_mutex> {
public:
    /// A mutex on the lock path `path` (checked at once: zkr::error with invalid_path). Nothing
    /// is sent until the first acquire; the client must outlive this object.
    interprocess_mutex(client& c, std::string path);
    /// A revocable mutex: another process may ask its holders to let go (zkr::revoke, `zkr revoke`,
    /// Curator's Revoker), by writing the revocation signal to the holder's node. For each hold
    /// that is asked, once: its stop_token() is requested and on_revoke() runs, both on the
    /// client's callback thread. The hold stays held until the holder releases: a request, not a
    /// loss. (Each hold reads its node's data when granted, with the watch that tells it of a
    /// deletion too; so does a lock_hold from async_acquire. A plain hold sets that watch only
    /// once it has lasted 100 ms.)
    ///
    /// Revocable and plain mutexes (zkr's, Curator's, `zkr lock`) mix on one path: no waiter takes
    /// a write to a node for a release, so the request never lets anyone in beside the holder.
    interprocess_mutex(client& c, std::string path, std::function<void()> on_revoke);
    /// A mutex that also takes part with other libraries' lock nodes (mutex_options).
    interprocess_mutex(client& c, std::string path, mutex_options options);
    /// Releases every hold still taken through this object (best effort, errors logged).
    ~interprocess_mutex();

    /// Blocks until held.
    void acquire();
    /// True when held within the timeout; false (and no node left behind) otherwise.
    /// A zero timeout tries once without queueing.
    bool acquire(std::chrono::milliseconds timeout);
    /// Completes with (error_code, lock_hold) on the handler's associated executor (default: the
    /// client's callback thread). The lock_hold owns the hold, whichever thread the completion runs
    /// on; it is empty (no error) when the timeout passed. It is never re-entrant: it competes like
    /// another process, also with this thread's own hold. Zero tries once (not_connected at once
    /// without a connection). If this object is destroyed first, the acquire ends with cancelled.
    template <typename Token>
    auto async_acquire(std::chrono::milliseconds timeout, Token&& token) {
        return detail::async_acquire_hold(*core_, detail::checked_timeout(timeout), std::forward<Token>(token));
    }

    /// Releases one level of the calling thread's hold. Throws as described above.
    void release();
    /// As release(), with the failure in ec instead of an exception.
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

    /// Whether the calling thread holds (the hold that release() and unlock() would end).
    bool is_held() const { return is_owned_by_current_thread(); }
    /// Whether any thread of this process holds through this object (Curator's isAcquiredInThisProcess).
    bool is_acquired_in_this_process() const;
    /// Whether the calling thread holds (Curator's isOwnedByCurrentThread).
    bool is_owned_by_current_thread() const;
    /// The czxid of the calling thread's lock node: strictly increasing across successive holders.
    /// Throws lock_not_held when the thread holds nothing.
    std::int64_t fencing_token() const;
    /// The calling thread's hold state: released when it holds nothing, releasing after its unlock()
    /// while the delete waits for the connection (as the hold listeners hear it).
    hold_state state() const;
    /// Whether the calling thread's hold reads held (not doubtful, lost or released).
    bool is_valid() const { return state() == hold_state::held; }
    /// The calling thread's hold's stop token; already requested when the thread holds nothing.
    std::stop_token stop_token() const;
    /// The calling thread's hold, as a view that reads the same from any thread: take it here and
    /// hand it to the job that works under the lock (see zkr::hold_view). Throws lock_not_held
    /// when the thread holds nothing.
    hold_view view() const;
    /// Wakes every thread of this process waiting to acquire through this object: their acquire
    /// throws zkr::error with errc::cancelled and their nodes are removed. Holds stay held.
    void cancel();
    /// What the nodes of later acquires carry (default "<host>:<pid>"), as `zkr status` shows it.
    void set_node_data(std::string data);
    /// The lock's nodes in queue order, holders first, as full paths (without the client's
    /// namespace). Throws zkr::error on a connection problem.
    std::vector<std::string> participant_nodes() const;
    /// listener(state) runs on the client's callback thread for every change of every hold taken
    /// through this object from now on (doubtful on connection loss, held again, lost, released).
    state_subscription add_hold_listener(std::function<void(hold_state)> listener);
    /// The calling thread's lock node path (empty when it holds nothing).
    std::string node_path() const;
    /// Runs ops atomically only while the calling thread's hold is valid: a check of our own node
    /// is sent in the same multi, bound to our session. lock_lost when the hold is gone.
    std::vector<multi_result> guarded_multi(std::vector<multi_op> ops);
    /// As guarded_multi(ops), with the failure in ec instead of an exception.
    std::vector<multi_result> guarded_multi(std::vector<multi_op> ops, boost::system::error_code& ec);

    // Lockable / TimedLockable.
    /// acquire(), for std::scoped_lock and std::unique_lock.
    void lock() { acquire(); }
    /// One attempt without queueing (acquire with a zero timeout).
    bool try_lock() { return acquire(std::chrono::milliseconds(0)); }
    /// Never throws (see Release above).
    void unlock() noexcept;

private:
    friend class interprocess_read_write_lock;
    friend class multi_lock_member;  // a multi-lock member acquires through our core
    /// Asked before a thread's first level of a hold: fills in what the acquire must know (a
    /// read-write lock's downgrade), or throws zkr::error to refuse it (an upgrade).
    using acquire_plan = std::function<void(std::thread::id owner, detail::acquire_request& req)>;
    /// A read-write lock's side: a mutex with another rule and a plan.
    interprocess_mutex(client& c, std::string path, std::shared_ptr<const lock_rule> rule, acquire_plan plan);
    /// The node of `owner`'s hold while it counts (held or doubtful); empty otherwise.
    std::string valid_node_of(std::thread::id owner) const;
    bool holds(std::thread::id owner) const;

    std::shared_ptr<detail::hold> current_hold() const;
    /// One level of owner's hold: the hold itself when that was the last level, else null.
    std::shared_ptr<detail::hold> take_for_release(std::thread::id owner, boost::system::error_code& ec);
    bool acquire_for(std::optional<std::chrono::milliseconds> timeout);
    void adopt(std::thread::id owner, std::shared_ptr<detail::hold> h);
    /// True (and the count raised) when `owner` already holds.
    bool reenter(std::thread::id owner);

    std::unique_ptr<detail::lock_core> core_;
    acquire_plan plan_;
    mutable std::mutex mutex_;
    detail::thread_holds<std::shared_ptr<detail::hold>> holds_;
    // Each thread's last released hold, while its delete may still be pending (for state()).
    mutable detail::by_thread<std::weak_ptr<detail::hold>> released_;
    // mutex_options::cache_hold: the node kept between holds (null without caching).
    std::shared_ptr<detail::hold_cache> cache_;
};

template <typename Token>
auto interprocess_mutex::async_release(Token&& token) {
    return detail::async_release_hold(*core_, [this, owner = std::this_thread::get_id()](boost::system::error_code& ec) {
        return take_for_release(owner, ec);
    }, std::forward<Token>(token));
}

}  // namespace zkr
