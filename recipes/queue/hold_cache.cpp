#include "hold_cache.hpp"

#include "lock_driver.hpp"

#include "../core/zk_port.hpp"

#include <zkr/client.hpp>
#include <zkr/path.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>

namespace zkr::detail {

using action = hold_cache_machine::action;

namespace {
bool reads_held(const hold& h) noexcept { return h.caller_state() == hold_state::held; }
}  // namespace

hold_cache::hold_cache(std::shared_ptr<lock_driver> driver) : driver_(std::move(driver)) {}

bool hold_cache::keep(const std::shared_ptr<hold>& h) {
    if (driver_->get_client().state() == connection_state::closed) return false;  // (nothing to keep it for)
    std::unique_lock lock(mutex_);
    const bool lent_one = lent_ == h.get();
    const auto a = machine_.released(reads_held(*h), lent_one);
    if (lent_one) lent_ = nullptr;
    if (a == action::release_now) return false;
    kept_ = h;
    if (a != action::list) return true;
    const auto listing = ++listings_;
    lock.unlock();
    try {
        list(h, listing);
        return true;
    } catch (const std::exception&) {  // (out of memory): released as without caching
        lock.lock();
        if (listing != listings_ || machine_.listed(false) != action::let_go) return true;  // let go meanwhile
        answered_.notify_all();
        kept_.reset();
        return false;
    }
}

std::shared_ptr<hold> hold_cache::take(std::optional<std::chrono::steady_clock::time_point> deadline) {
    std::unique_lock lock(mutex_);
    // A release's listing in flight: its answer decides, and queueing behind our own node instead
    // would let the node go (a lock-unlock loop would never take it back).
    // (At most a session timeout when the caller gave none: the listing answers within the C
    // client's receive timeout, but a request refused by a client that closed meanwhile is
    // answered on its callback thread, which may have stopped.)
    const auto answered = [this] { return machine_.current() != hold_cache_machine::phase::listing; };
    if (!answered()) {  // (the clock and the timeout only then: a take-back is the hot path)
        auto& c = driver_->get_client();
        const auto session = c.negotiated_session_timeout().count() > 0 ? c.negotiated_session_timeout() : c.options().session_timeout;
        const auto longest = std::chrono::steady_clock::now() + session;
        answered_.wait_until(lock, deadline ? std::min(*deadline, longest) : longest, answered);
    }
    const auto a = machine_.acquire(kept_ && reads_held(*kept_));  // (kept_: while listing or kept)
    if (a == action::grant) {
        lent_ = kept_.get();
        return std::move(kept_);
    }
    let_go_kept_if(a, lock);  // doubtful or lost: it goes, and the acquire queues anew
    return nullptr;
}

std::shared_ptr<hold> hold_cache::close() {
    std::lock_guard lock(mutex_);
    const auto a = machine_.close();
    answered_.notify_all();
    if (a != action::let_go) return nullptr;
    return std::move(kept_);
}

// The listing is sent once (zk::get_children's once): caught by a connection loss, it is not
// retried, so it answers within a round trip, or as soon as the loss is noticed (the kept node then
// goes). Its answer and its watch run on the network thread (library code, short, never
// blocking): a waiter's notification is not held up behind the user's callbacks. A folder gone
// (no_node) is an answer too: we are not alone, and no failure.
struct hold_cache::listing_feed {
    std::weak_ptr<hold_cache> cache;
    std::uint64_t listing = 0;
    std::string ours;  // our node's name
    void operator()(zk::reply&& r) const {
        if (auto self = cache.lock()) self->on_listed(!r.ec && r.children.size() == 1 && r.children.front() == ours, listing);
    }
    void operator()(zk::watch_fired&&) const {  // (its event, or not_watching: either lets a kept node go)
        if (auto self = cache.lock()) self->on_changed();
    }
};

void hold_cache::list(const std::shared_ptr<hold>& h, std::uint64_t listing) {
    send_op(driver_->get_client(), zk::get_children{.path = driver_->path(), .watch = true, .once = true},
            listing_feed{weak_from_this(), listing, std::string(node_name(h->node_path()))});
}

void hold_cache::on_listed(bool alone, std::uint64_t listing) {
    std::unique_lock lock(mutex_);
    if (listing != listings_) return;  // (an earlier keep's listing: stale)
    const auto a = machine_.listed(alone);
    answered_.notify_all();
    let_go_kept_if(a, lock);
}

void hold_cache::on_changed() {
    std::unique_lock lock(mutex_);
    const auto a = machine_.changed();
    answered_.notify_all();
    let_go_kept_if(a, lock);
}

void hold_cache::let_go_kept_if(action a, std::unique_lock<std::mutex>& lock) {
    if (a != action::let_go) return;
    auto h = std::move(kept_);
    lock.unlock();  // (the release posts to the network thread, or runs there: not under our lock)
    let_go(std::move(h));
}

void hold_cache::let_go(std::shared_ptr<hold> h) {
    if (!h) return;
    auto& c = driver_->get_client();
    try {
        driver_->release(h, [&c, node = h->node_path()](const boost::system::error_code& ec) {
            try {
                c.logger()->debug("lock cache: the kept node {} let go: {}", node, ec ? ec.message() : "deleted");
            } catch (...) {  // a logger's sink may throw
            }
        });
    } catch (const std::exception&) {  // (out of memory): the node stays with the session
        try {
            c.logger()->warn("lock cache: could not release the kept node {}; it stays until the session ends", h->node_path());
        } catch (...) {
        }
    }
}

}  // namespace zkr::detail
