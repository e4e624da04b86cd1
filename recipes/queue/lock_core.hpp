// What every recipe on the lock machine composes (it is a member, not a base, so that no recipe
// inherits another's API): the driver, the data of later nodes, the hold listeners, and the quiet
// release of unlock() and destructors. Leader election and the multi-lock compose it too.
#pragma once

#include "lock_driver.hpp"

#include <zkr/detail/lock_ops.hpp>

#include <zkr/client.hpp>
#include <zkr/hold_state.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace zkr::detail {

class lock_core {
public:
    lock_core(zkr::client& c, std::string path, std::shared_ptr<const lock_rule> rule);
    lock_core(const lock_core&) = delete;
    lock_core& operator=(const lock_core&) = delete;
    /// Ends the acquires still waiting with errc::cancelled (their nodes are removed); their
    /// completions refer to nothing of this object.
    ~lock_core();

    lock_driver& driver() const noexcept { return *driver_; }
    const std::shared_ptr<lock_driver>& shared_driver() const noexcept { return driver_; }
    const std::string& path() const noexcept { return driver_->path(); }

    /// What the nodes of later acquires carry (default "<host>:<pid>").
    void set_node_data(std::string data);
    std::string node_data() const;
    /// The lock's nodes in queue order, holders first, as full paths. Throws zkr::error on a
    /// connection problem.
    std::vector<std::string> participant_nodes() const;
    /// What the participants' nodes hold (their ids, for an election), in queue order; a node that
    /// left meanwhile is skipped. Throws zkr::error on a connection problem.
    std::vector<std::string> participant_data(std::size_t most = SIZE_MAX) const;
    /// The first of them, read alone (an election's leader): "" when nobody is queued.
    std::string leader_data() const;
    /// An untimed acquire in the background (an election's): (owner->*joined)(ec, hold) runs on the
    /// callback thread while the owner lives; once it is gone, a granted hold is released at once.
    template <typename Owner>
    void join_in_background(std::string data, std::weak_ptr<Owner> owner,
                            void (Owner::*joined)(const boost::system::error_code&, std::shared_ptr<hold>)) {
        join_in_background(std::move(data), [owner = std::move(owner), joined](const boost::system::error_code& ec,
                                                                               std::shared_ptr<hold>& h) {
            auto self = owner.lock();
            if (self) ((*self).*joined)(ec, std::move(h));
            return static_cast<bool>(self);
        });
    }
    /// listener(state) runs on the client's callback thread for every change of every hold taken
    /// through this core from now on.
    state_subscription add_hold_listener(std::function<void(hold_state)> listener);

    /// Blocks; null without error when the timeout passed. Throws zkr::error with the driver's
    /// explanation. Attaches the hold listeners.
    std::shared_ptr<hold> acquire_hold(std::optional<std::chrono::milliseconds> timeout,
                                       std::function<void(const std::string&)> on_queued = {});
    /// As above, for a request the recipe filled in (its data: node_data() when empty).
    std::shared_ptr<hold> acquire_hold(acquire_request req);
    /// Every hold granted from now on reads its node's data for a revocation request (its one
    /// own-node watch, recipes/lock_machine.hpp): on_revoke runs once per hold asked to let go, on
    /// the callback thread. For a rule whose release is the delete alone.
    void make_revocable(std::function<void()> on_revoke);
    void attach_listeners(const std::shared_ptr<hold>& h) const;
    /// attach_listeners as a function that does not refer to this object (for completions that
    /// may run after it is gone).
    std::function<void(const std::shared_ptr<hold>&)> listener_attacher() const;

    /// Starts the async acquire `start` describes (detail/lock_ops.hpp): done gets (ec, hold) on
    /// the network thread, the hold (if granted) with the recipe's hold listeners attached.
    static void start_acquire(acquire_start start, acquire_handler done);

    /// unlock(): takes the hold to release with take(ec) (which may throw: out of memory), then
    /// releases it, or logs why there was nothing to release. Never throws. An unlock() by an
    /// owner that holds nothing (owner: "a thread" or "an object") is misuse that cannot throw: it
    /// is written to stderr, and asserts in a debug build of zkr.
    template <typename Take>
    void unlock_quietly(Take&& take, const char* owner) const noexcept {
        boost::system::error_code ec;
        std::shared_ptr<hold> h;
        try {
            h = take(ec);
        } catch (const std::exception&) {
            ec = make_error_code(errc::system_error);
        }
        release_or_log(h, ec, owner);
    }
    /// The release of a destructor: never throws, logs what went wrong (lock_driver.hpp).
    void release_quietly(const std::shared_ptr<hold>& h) const noexcept { detail::release_quietly(*driver_, h); }
    /// The end of every throwing release(): see throw_release_error.
    void throw_release_error(const boost::system::error_code& ec, std::string_view not_held, std::string_view what) const {
        detail::throw_release_error(ec, path(), not_held, what);
    }
    /// A multi that commits only while h's node exists on its session; throws zkr::error (lock_not_held
    /// without h, lock_lost when the hold is gone).
    std::vector<multi_result> guarded_multi(const std::shared_ptr<hold>& h, std::vector<multi_op> ops) const;
    /// As guarded_multi, reporting through ec.
    static std::vector<multi_result> guarded_multi(const std::shared_ptr<hold>& h, std::vector<multi_op> ops,
                                                   boost::system::error_code& ec);

    /// A thread holds (held) or no longer holds this lock through an interprocess_multi_lock.
    void note_multi_hold(std::thread::id owner, bool held);
    /// Throws would_deadlock when `owner` holds this lock through an interprocess_multi_lock: its
    /// direct acquire would queue behind its own node (`who`: the recipe, for the message).
    void refuse_if_held_through_multi_lock(std::thread::id owner, std::string_view who) const;

private:
    /// deliver(ec, hold) runs on the callback thread; false: nobody took the outcome.
    void join_in_background(std::string data, std::function<bool(const boost::system::error_code&, std::shared_ptr<hold>&)> deliver);
    void release_or_log(const std::shared_ptr<hold>& h, const boost::system::error_code& ec, const char* owner) const noexcept;
    void report_unowned_unlock(const char* owner) const noexcept;

    std::shared_ptr<lock_driver> driver_;
    mutable std::mutex mutex_;
    std::string data_ = default_node_data();
    std::vector<std::thread::id> multi_holders_;  // one entry per multi-lock hold (under mutex_)
    struct listeners;
    std::shared_ptr<listeners> listeners_;
    static void attach(const std::weak_ptr<listeners>& weak, const std::shared_ptr<hold>& h);
};

}  // namespace zkr::detail
