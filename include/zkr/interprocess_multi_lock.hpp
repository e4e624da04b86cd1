// zkr::interprocess_multi_lock: several locks taken as one, all or nothing, without deadlock
// (Curator's InterProcessMultiLock, in one global order).
#pragma once

#include <zkr/detail/lock_ops.hpp>
#include <zkr/detail/thread_holds.hpp>
#include <zkr/hold_state.hpp>
#include <zkr/multi_lock_hold.hpp>
#include <zkr/multi_op.hpp>
#include <zkr/timed_lockable.hpp>

#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

namespace zkr {

class client;
class fair_lock;
class interprocess_mutex;
namespace detail {
class hold;
class lock_core;
}

/// One lock of a multi-lock: a mutex or a fair lock the caller owns (it must outlive the
/// multi-lock). A read-write lock's read_lock() or write_lock() is an interprocess_mutex.
class multi_lock_member {
public:
    /// A mutex (also a read-write lock's read_lock() or write_lock()) as a member.
    multi_lock_member(interprocess_mutex& m);  // NOLINT(google-explicit-constructor): a list of locks reads {a, b}
    /// A fair lock as a member.
    multi_lock_member(fair_lock& f);           // NOLINT(google-explicit-constructor)

private:
    friend class interprocess_multi_lock;
    detail::lock_core* core_;
};

/**
 * Holds every one of several locks, or none of them.
 *
 * The members are acquired one at a time in one global order, sorted by path, whatever order the
 * caller lists them in: two processes that lock overlapping sets listed in opposite orders never
 * deadlock (Curator's InterProcessMultiLock takes them in list order, and they do). Each member is
 * a lock of its own in ZooKeeper, so a process that takes one of them alone (zkr or Curator)
 * excludes this multi-lock's hold of it.
 *
 * Re-entrant per thread, like interprocess_mutex; meets Lockable and TimedLockable. A timed acquire
 * shares one deadline among the members; when it fails (or a member's acquire throws) the members
 * already taken are released before it returns, and no node is left behind.
 *
 * The hold is the members' holds together: state() is the worst of theirs (lost if one is lost,
 * doubtful if one is doubtful), and stop_token() is requested as soon as one member's hold ends.
 * Connection and session loss are as for each member (see interprocess_mutex): a member lost for
 * good makes the whole multi-hold lost, and the holder must stop acting on every resource.
 *
 * The multi-lock's holds do not count as the members' thread holds: a thread that holds a member
 * through the multi-lock and acquires that member object directly (lock, try_lock_for, acquire)
 * is refused at once with errc::would_deadlock, since it would queue behind its own node. Use one
 * or the other for a lock.
 *
 * Release: unlock() and the destructor never throw and release every member (errors logged);
 * release() releases them all and reports the first failure (lock_lost when a member's hold had
 * ended, connection_loss when a delete is pending).
 *
 * Async: async_acquire gives a multi_lock_hold that owns every member (for coroutines, which may
 * resume on any thread); it does not count as the calling thread's hold.
 */
class interprocess_multi_lock : public timed_lockable<interprocess_multi_lock> {
public:
    /// One interprocess_mutex per path, owned by this object. Throws zkr::error: invalid_argument
    /// for an empty list or a path listed twice, invalid_path for a bad path.
    interprocess_multi_lock(client& c, std::vector<std::string> paths);
    /// Over locks the caller owns (as above for the errors; two members on one path are one path
    /// listed twice).
    explicit interprocess_multi_lock(std::vector<multi_lock_member> members);
    interprocess_multi_lock(const interprocess_multi_lock&) = delete;
    interprocess_multi_lock& operator=(const interprocess_multi_lock&) = delete;
    /// Releases every hold still taken through this object (best effort, errors logged).
    ~interprocess_multi_lock();

    /// Blocks until every member is held. Throws zkr::error as interprocess_mutex::acquire does;
    /// the members taken so far are released first.
    void acquire();
    /// True when every member is held within the timeout; false otherwise, with nothing held and
    /// no node left. Zero tries each member once.
    bool acquire(std::chrono::milliseconds timeout);
    /// Completes with (error_code, multi_lock_hold) on the handler's associated executor (default:
    /// the client's callback thread): every member held, owned by the multi_lock_hold whichever
    /// thread the completion runs on. It is empty (no error) when the timeout passed; then, as on
    /// an error, the members taken so far are released and no node is left. One deadline for all
    /// members, counted from the start; zero tries each member once. It is never re-entrant: it
    /// competes like another process, also with this thread's own hold. If a member's lock object
    /// is destroyed first (this multi-lock's own ones with it), the acquire ends with cancelled.
    template <typename Token>
    auto async_acquire(std::chrono::milliseconds timeout, Token&& token) {
        return boost::asio::async_initiate<Token, void(boost::system::error_code, multi_lock_hold)>(
            [a = detail::prepare_multi_acquire(members_, detail::checked_timeout(timeout))](auto handler) mutable {
                // Posted: a closed or unstarted client answers inside this call.
                auto complete = detail::completion_on<true>(std::move(handler), detail::callbacks_of(*a));
                detail::start_multi_acquire(std::move(a), std::move(complete));
            },
            token);
    }

    /// Releases one level of the calling thread's hold (every member at the last level).
    void release();
    /// As release(), with the failure in ec instead of an exception.
    void release(boost::system::error_code& ec);

    /// Whether the calling thread holds every member through this object.
    bool is_held() const;
    /// The worst of the members' states for the calling thread's hold; released without one.
    hold_state state() const;
    /// Whether every member's hold reads held.
    bool is_valid() const { return state() == hold_state::held; }
    /// Requested once any member's hold ends (lost or released); already requested when the
    /// calling thread holds nothing.
    std::stop_token stop_token() const;
    /// The members' fencing tokens, in the order of paths(). Throws lock_not_held when the calling
    /// thread holds nothing.
    std::vector<std::int64_t> fencing_tokens() const;
    /// The members' lock paths in acquire order (sorted).
    std::vector<std::string> paths() const;
    /// The calling thread's member nodes, in the order of paths(). Throws lock_not_held when it
    /// holds nothing.
    std::vector<std::string> node_paths() const;
    /// Runs ops as one transaction that commits only while every member's node still exists on
    /// its session (a check of each first): a transfer stored in ZooKeeper that must not happen
    /// unless this thread holds every account. The members' results are left out. Throws
    /// zkr::error: lock_not_held (the thread holds nothing), lock_lost (a member's hold ended, or
    /// ended as the transaction ran), invalid_argument (members on more than one client: one
    /// transaction goes through one session), or the failure of an op.
    std::vector<multi_result> guarded_multi(std::vector<multi_op> ops);
    /// As guarded_multi(ops), with the failure in ec instead of an exception.
    std::vector<multi_result> guarded_multi(std::vector<multi_op> ops, boost::system::error_code& ec);

    // Lockable / TimedLockable.
    /// acquire(), for std::scoped_lock and std::unique_lock.
    void lock() { acquire(); }
    /// Each member tried once without queueing (acquire with a zero timeout).
    bool try_lock() { return acquire(std::chrono::milliseconds(0)); }
    /// Never throws (see Release above).
    void unlock() noexcept;

private:
    struct term;  // one thread's hold of every member
    void order_members();
    bool acquire_for(std::optional<std::chrono::milliseconds> timeout);
    std::shared_ptr<term> current() const;
    /// current(), or lock_not_held when the calling thread holds nothing.
    std::shared_ptr<term> current_or_throw() const;
    std::shared_ptr<term> take_for_release(boost::system::error_code& ec);

    std::vector<std::unique_ptr<interprocess_mutex>> owned_;
    std::vector<detail::lock_core*> members_;  // in acquire order
    mutable std::mutex mutex_;
    detail::thread_holds<std::shared_ptr<term>> holds_;
};

}  // namespace zkr
