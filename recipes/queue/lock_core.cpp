#include "lock_core.hpp"

#include <algorithm>

#include "grant_mark.hpp"
#include "hold_access.hpp"

#include "../../src/listener_registry.hpp"

#include <zkr/detail/lock_ops.hpp>

#include <zkr/path.hpp>

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include <cassert>
#include <cstdio>

namespace zkr::detail {

struct lock_core::listeners final : hold_listener_hub {
    listener_registry<std::function<void(hold_state)>> fns;
    std::function<void()> on_revoke;  // set once, before any acquire
    bool any() const override { return !fns.empty(); }
    void call(hold_state s) const override {
        for (const auto& fn : fns.snapshot()) fn(s);
    }
};

lock_core::lock_core(zkr::client& c, std::string path, std::shared_ptr<const lock_rule> rule)
    : driver_(std::make_shared<lock_driver>(c, std::move(path), std::move(rule))),
      listeners_(std::make_shared<listeners>()) {}

lock_core::~lock_core() { driver_->cancel(); }

void lock_core::release_or_log(const std::shared_ptr<hold>& h, const boost::system::error_code& ec, const char* owner) const noexcept {
    if (ec == errc::lock_not_held) return report_unowned_unlock(owner);
    if (ec) return log_quiet_release(driver_->get_client(), driver_->path(), ec);
    detail::release_quietly(*driver_, h);
}

// A std::unique_lock moved to another thread, or a coroutine resumed elsewhere, unlocks a lock its
// thread never held: nothing is released, and every other process waits until the owner unlocks
// or the object goes. Silent, it looks like a hang elsewhere; with the default (null) logger only
// stderr reaches the user.
void lock_core::report_unowned_unlock(const char* owner) const noexcept {
    const auto& path = driver_->path();
    std::fprintf(stderr,
                 "zkr: unlock() of the lock %s by %s that does not hold it: nothing was released, and the lock stays "
                 "held until its owner releases it or the lock object is destroyed (to release from another thread, "
                 "use zkr::interprocess_semaphore_mutex or an owned zkr::lock_hold)\n",
                 printable_path(path).c_str(), owner);
    log_quiet_release(driver_->get_client(), path, make_error_code(errc::lock_not_held));
    assert(!"zkr: unlock() by an owner that does not hold the lock (see the line above)");
}

void lock_core::set_node_data(std::string data) {
    std::lock_guard lock(mutex_);
    data_ = std::move(data);
}

void lock_core::note_multi_hold(std::thread::id owner, bool held) {
    std::lock_guard lock(mutex_);
    if (held) return multi_holders_.push_back(owner);
    if (const auto it = std::find(multi_holders_.begin(), multi_holders_.end(), owner); it != multi_holders_.end()) multi_holders_.erase(it);
}

void lock_core::refuse_if_held_through_multi_lock(std::thread::id owner, std::string_view who) const {
    std::lock_guard lock(mutex_);
    if (std::find(multi_holders_.begin(), multi_holders_.end(), owner) == multi_holders_.end()) return;
    throw zkr::error(make_error_code(errc::would_deadlock), path(),
                     std::string(who) + ": this thread holds the lock through an interprocess_multi_lock: a direct acquire "
                                        "would queue behind its own node (release the multi-lock first, or use only one of them)");
}

std::string lock_core::node_data() const {
    std::lock_guard lock(mutex_);
    return data_;
}

std::vector<std::string> lock_core::participant_nodes() const {
    boost::system::error_code ec;
    auto nodes = driver_->participants(ec);
    detail::throw_if(ec, driver_->path());
    return nodes;
}

std::vector<std::string> lock_core::participant_data(std::size_t most) const {
    auto& c = driver_->get_client();
    std::vector<std::string> data;
    for (const auto& node : participant_nodes()) {
        if (data.size() == most) break;
        boost::system::error_code ec;
        auto d = c.get_data(node, ec);
        if (ec == errc::no_node) continue;  // left meanwhile
        detail::throw_if(ec, node);
        // A node of a shared count's semaphore marks its grant after its data: not the caller's.
        data.emplace_back(without_grant_mark(d.data));
    }
    return data;
}

std::string lock_core::leader_data() const {
    auto first = participant_data(1);
    return first.empty() ? std::string() : std::move(first.front());
}

void lock_core::join_in_background(std::string data,
                                   std::function<bool(const boost::system::error_code&, std::shared_ptr<hold>&)> deliver) {
    acquire_request req;
    req.data = std::move(data);
    // The network thread only posts the outcome: an election's work (listeners, a leader's thread)
    // runs on the callback thread.
    driver_->acquire(std::move(req), [ex = callback_executor(connection_of(driver_->get_client())), driver = driver_,
                                      deliver = std::move(deliver)](const boost::system::error_code& ec, std::shared_ptr<hold> h) {
        boost::asio::post(ex, [driver, deliver, ec, h = std::move(h)]() mutable {
            if (!deliver(ec, h) && h) detail::release_quietly(*driver, h);  // its owner is gone: leave at once
        });
    });
}

state_subscription lock_core::add_hold_listener(std::function<void(hold_state)> listener) {
    if (!listener) throw zkr::error(make_error_code(errc::invalid_argument), {}, "hold listener is empty");
    const auto id = listeners_->fns.add(std::move(listener));
    return state_subscription([weak = std::weak_ptr<listeners>(listeners_), id] {
        if (auto l = weak.lock()) l->fns.remove(id);
    });
}

void lock_core::make_revocable(std::function<void()> on_revoke) {
    listeners_->on_revoke = std::move(on_revoke);
    driver_->make_revocable();
}

// The recipe's listeners reach a hold through a weak reference: a hold may outlive its recipe.
void lock_core::attach(const std::weak_ptr<listeners>& weak, const std::shared_ptr<hold>& h) {
    if (auto l = weak.lock(); l && l->on_revoke) h->on_revocation(l->on_revoke);
    h->attach_hub(weak);
}

// (Directly, not through listener_attacher: a sync acquire makes no function object for it.)
void lock_core::attach_listeners(const std::shared_ptr<hold>& h) const { attach(listeners_, h); }

std::function<void(const std::shared_ptr<hold>&)> lock_core::listener_attacher() const {
    return [weak = std::weak_ptr<listeners>(listeners_)](const std::shared_ptr<hold>& h) { attach(weak, h); };
}

std::optional<std::chrono::milliseconds> checked_timeout(std::chrono::milliseconds t) {
    if (t.count() < 0)
        throw zkr::error(make_error_code(errc::invalid_argument), {},
                         "timeout must not be negative, got " + std::to_string(t.count()) + " ms (0 tries once)");
    return t;
}

std::shared_ptr<hold> lock_core::acquire_hold(std::optional<std::chrono::milliseconds> timeout,
                                              std::function<void(const std::string&)> on_queued) {
    acquire_request req;
    req.timeout = timeout;
    req.on_queued = std::move(on_queued);
    return acquire_hold(std::move(req));
}

std::shared_ptr<hold> lock_core::acquire_hold(acquire_request req) {
    if (req.data.empty()) req.data = node_data();
    boost::system::error_code ec;
    auto h = driver_->acquire_sync(std::move(req), ec);
    if (ec) detail::throw_if(ec, driver_->path(), driver_->acquire_failure(ec, "the lock"));
    if (h) attach_listeners(h);
    return h;
}

std::vector<multi_result> lock_core::guarded_multi(const std::shared_ptr<hold>& h, std::vector<multi_op> ops,
                                                 boost::system::error_code& ec) {
    ec = {};
    if (!h) {
        ec = make_error_code(errc::lock_not_held);
        return {};
    }
    return h->guarded_multi(std::move(ops), ec);
}

std::vector<multi_result> lock_core::guarded_multi(const std::shared_ptr<hold>& h, std::vector<multi_op> ops) const {
    boost::system::error_code ec;
    auto r = guarded_multi(h, std::move(ops), ec);
    detail::throw_if(ec, path(), ec.message() + " in a guarded write");
    return r;
}

// ---- the async starts of the public templates (include/zkr/detail/lock_ops.hpp) -----------------

acquire_start prepare_acquire(const lock_core& core, std::optional<std::chrono::milliseconds> timeout) {
    return {core.shared_driver(), core.listener_attacher(), core.node_data(), {}, timeout,
            callback_executor(connection_of(core.driver().get_client()))};
}

void lock_core::start_acquire(acquire_start start, acquire_handler done) {
    auto driver = std::move(start.driver);
    acquire_request req{start.timeout, std::move(start.data), std::move(start.node_name), {}, {}};
    driver->acquire(std::move(req), [attach = std::move(start.attach), done = std::move(done)](
                                        const boost::system::error_code& ec, std::shared_ptr<hold> granted) mutable {
        if (granted) attach(granted);
        done(ec, std::move(granted));
    });
}

void start_hold_acquire(acquire_start start, unique_function<void(const boost::system::error_code&, lock_hold)> done) {
    auto driver = start.driver;
    lock_core::start_acquire(std::move(start), [driver, done = std::move(done)](const boost::system::error_code& ec,
                                                                              std::shared_ptr<hold> granted) mutable {
        done(ec, granted ? hold_access::make_hold(driver, std::move(granted)) : lock_hold());
    });
}

std::shared_ptr<lock_driver> driver_of(const lock_core& core) { return core.shared_driver(); }

boost::asio::any_io_executor callbacks_of(const lock_core& core) {
    return callback_executor(connection_of(core.driver().get_client()));
}

void start_release(lock_driver& driver, std::shared_ptr<hold> h, boost::system::error_code ec,
                   unique_function<void(const boost::system::error_code&)> done) {
    if (!h) return done(ec);
    driver.release(h, std::move(done));
}

}  // namespace zkr::detail
