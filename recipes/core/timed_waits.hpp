// Async waits for one condition, each with a timeout (tree_cache::async_wait_initialized,
// leader_latch::async_await_leadership): each completes once, with what its owner decides
// (take_all) or with false when its timeout runs out. A wait that ends before its timeout cancels
// its timer: a pending timer keeps the callback thread's pool busy until it runs out, and a
// client's destructor joins that pool (a 30 s wait answered at once held a client's destruction
// for 30 s). Every timer call runs on the callback strand, so a timer is never used from two
// threads at once.
#pragma once

#include <zkr/detail/unique_function.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/error_code.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace zkr::detail {

class timed_waits : public std::enable_shared_from_this<timed_waits> {
public:
    using done_fn = unique_function<void(const boost::system::error_code&, bool)>;

    /// callbacks: the client's callback strand (the timers run there).
    explicit timed_waits(boost::asio::any_io_executor callbacks) : callbacks_(std::move(callbacks)) {}

    /// A wait that ends with done(ok, false) after timeout, unless take_all() takes it first.
    void add(std::chrono::milliseconds timeout, done_fn done) {
        std::lock_guard lock(mutex_);
        const auto id = ++last_;
        auto timer = std::make_shared<boost::asio::steady_timer>(callbacks_);
        waits_.push_back({id, std::move(done), timer});
        // Posted under the mutex: a cancel of take_all() is posted after it, and runs after it.
        boost::asio::post(callbacks_, [timer, timeout, id, weak = weak_from_this()] {
            timer->expires_after(timeout);
            timer->async_wait([id, weak](const boost::system::error_code& ec) {
                const auto self = weak.lock();
                if (ec || !self) return;
                if (auto late = self->take(id)) (*late)({}, false);
            });
        });
    }

    /// Every wait not ended yet, its timer cancelled; the caller completes them.
    std::vector<done_fn> take_all() {
        std::vector<done_fn> taken;
        std::lock_guard lock(mutex_);
        for (auto& w : waits_) {
            boost::asio::post(callbacks_, [timer = std::move(w.timer)] { timer->cancel(); });
            taken.push_back(std::move(w.done));
        }
        waits_.clear();
        return taken;
    }

private:
    struct wait {
        std::uint64_t id = 0;
        done_fn done;
        std::shared_ptr<boost::asio::steady_timer> timer;
    };

    std::unique_ptr<done_fn> take(std::uint64_t id) {
        std::lock_guard lock(mutex_);
        const auto it = std::find_if(waits_.begin(), waits_.end(), [id](const wait& w) { return w.id == id; });
        if (it == waits_.end()) return nullptr;
        auto done = std::make_unique<done_fn>(std::move(it->done));
        waits_.erase(it);
        return done;
    }

    const boost::asio::any_io_executor callbacks_;
    std::mutex mutex_;
    std::vector<wait> waits_;  // under mutex_
    std::uint64_t last_ = 0;   // under mutex_
};

}  // namespace zkr::detail
