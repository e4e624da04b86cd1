// What the lock recipes share: the driver, node data, hold listeners, guarded writes.
#pragma once

#include <zkr/detail/lock_driver.hpp>
#include <zkr/detail/request.hpp>
#include <zkr/lock_hold.hpp>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <chrono>
#include <mutex>

namespace zkr::detail {

class lock_base {
public:
    lock_base(zkr::client& c, std::string path, std::shared_ptr<const lock_rule> rule);
    lock_base(const lock_base&) = delete;
    lock_base& operator=(const lock_base&) = delete;
    /// Ends this object's acquires still waiting with errc::cancelled (their nodes are removed);
    /// their completions refer to nothing of this object.
    ~lock_base();

    /// What the nodes of later acquires carry (default "<host>:<pid>").
    void set_node_data(std::string data);
    /// The lock's nodes in queue order, holders first, as full paths ("/jobs/nightly/_c_...-lock-
    /// 0000000003", without the client's namespace). Throws zkr::error on a connection problem.
    std::vector<std::string> participant_nodes() const;
    /// listener(state) runs on the client's callback thread for every change of every hold that
    /// this object takes from now on.
    state_subscription add_hold_listener(std::function<void(hold_state)> listener);

protected:
    /// Blocks; null without error when the timeout passed. Attaches the object's listeners.
    std::shared_ptr<hold> acquire_hold(std::optional<std::chrono::milliseconds> timeout,
                                       std::function<void(const std::string&)> on_queued = {});
    void attach_listeners(const std::shared_ptr<hold>& h);
    /// attach_listeners as a function that does not refer to this object (for completions that
    /// may run after it is gone).
    std::function<void(const std::shared_ptr<hold>&)> listener_attacher() const;
    std::string node_data() const;
    static std::optional<std::chrono::milliseconds> checked_timeout(std::chrono::milliseconds t);

    /// The async release of every recipe: take(ec) runs at initiation and hands over the hold to
    /// release (null when there is nothing to send: ec says why, or is clear for a nested level);
    /// the delete starts at once and the handler gets its outcome on its associated executor
    /// (default: the client's callback thread).
    template <typename Take, typename Token>
    auto async_release_hold(Take take, Token&& token) {
        return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
            [this, take = std::move(take)](auto handler) mutable {
                boost::system::error_code ec;
                std::shared_ptr<hold> h = take(ec);
                release_then_complete(*driver_, std::move(h), ec, std::move(handler));
            },
            token);
    }

    /// The async acquire of a one-holder lock: completes with (error_code, lock_hold) on the
    /// handler's associated executor (default: the client's callback thread); an empty lock_hold
    /// without error when the timeout passed. The hold belongs to the lock_hold, not to a thread.
    /// The completion refers to nothing of this object (it may be destroyed meanwhile: the
    /// acquire then ends with cancelled).
    template <typename Token>
    auto async_acquire_hold(std::optional<std::chrono::milliseconds> timeout, Token&& token) {
        return boost::asio::async_initiate<Token, void(boost::system::error_code, lock_hold)>(
            [driver = driver_, attach = listener_attacher(), timeout, data = node_data()](auto handler) mutable {
                // Posted: a closed or unstarted client answers inside this call.
                auto complete = completion_on<true>(std::move(handler), callback_executor(detail::connection_of(driver->get_client())));
                driver->acquire(timeout, std::move(data),
                                [driver, attach, complete = std::move(complete)](
                                    const boost::system::error_code& ec, std::shared_ptr<hold> granted) mutable {
                                    lock_hold out;
                                    if (granted) {
                                        attach(granted);
                                        out = lock_hold(lock_hold::share(driver, std::move(granted), {}, 1));
                                    }
                                    complete(ec, std::move(out));
                                });
            },
            token);
    }

    /// unlock(): takes the hold to release with take(ec) (which may throw: out of memory), then
    /// releases it, or logs why there was nothing to release. Never throws. An unlock() by an owner
    /// that holds nothing (owner: "a thread" or "an object", who owns a hold of this recipe) is misuse
    /// that cannot throw: it is written to stderr, and asserts in a debug build of zkr.
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

    std::shared_ptr<lock_driver> driver_;

private:
    void release_or_log(const std::shared_ptr<hold>& h, const boost::system::error_code& ec, const char* owner) const noexcept;
    void report_unowned_unlock(const char* owner) const noexcept;

    mutable std::mutex base_mutex_;
    std::string data_ = default_node_data();
    struct listeners;
    std::shared_ptr<listeners> listeners_;
};

/// try_lock_for / try_lock_until (TimedLockable) for a recipe with bool acquire(milliseconds).
template <typename Derived>
class timed_lockable {
public:
    template <typename Rep, typename Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period>& d) {
        const auto ms = std::max(std::chrono::milliseconds(0), std::chrono::ceil<std::chrono::milliseconds>(d));
        return static_cast<Derived&>(*this).acquire(ms);
    }
    template <typename Clock, typename Duration>
    bool try_lock_until(const std::chrono::time_point<Clock, Duration>& t) {
        return try_lock_for(t - Clock::now());
    }
};

}  // namespace zkr::detail
