#include "../queue/hold_access.hpp"
#include "../queue/lock_core.hpp"

#include <zkr/fair_lock.hpp>

#include <zkr/path.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

namespace zkr {

fair_lock::fair_lock(client& c, std::string path)
    : core_(std::make_unique<detail::lock_core>(c, std::move(path), std::make_shared<lowest_n_rule>(1))) {}

fair_lock::fair_lock(client& c, std::string path, std::function<void()> on_revoke) : fair_lock(c, std::move(path)) {
    if (!on_revoke)
        throw zkr::error(make_error_code(errc::invalid_argument), core_->path(), "fair_lock: the revocation listener is empty");
    core_->make_revocable(std::move(on_revoke));
}

fair_lock::~fair_lock() {
    std::shared_ptr<detail::hold> h;
    {
        std::lock_guard lock(mutex_);
        h = std::move(hold_);
        count_ = 0;
    }
    core_->release_quietly(h);
}

void fair_lock::cancel() { core_->driver().cancel(); }
void fair_lock::set_node_data(std::string data) { core_->set_node_data(std::move(data)); }
std::vector<std::string> fair_lock::participant_nodes() const { return core_->participant_nodes(); }
state_subscription fair_lock::add_hold_listener(std::function<void(hold_state)> listener) {
    return core_->add_hold_listener(std::move(listener));
}

bool fair_lock::acquire(std::chrono::milliseconds timeout) { return acquire_for(detail::checked_timeout(timeout)); }

void fair_lock::acquire() { acquire_for(std::nullopt); }

bool fair_lock::acquire_for(std::optional<std::chrono::milliseconds> limit) {
    core_->refuse_if_held_through_multi_lock(std::this_thread::get_id(), "fair_lock");
    const auto start = std::chrono::steady_clock::now();
    std::unique_lock lock(mutex_);
    // One acquisition per object at a time: a second caller waits for it, within its own bound (a
    // try does not wait at all), and then re-enters.
    const auto idle = [&] { return !acquiring_; };
    if (!limit) acquiring_done_.wait(lock, idle);
    else if (!acquiring_done_.wait_until(lock, start + *limit, idle)) return false;
    if (hold_) {
        ++count_;
        return true;
    }
    if (limit) {  // what is left of the bound (0: try once)
        const auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
        limit = std::max(std::chrono::milliseconds(0), *limit - spent);
    }
    acquiring_ = true;
    lock.unlock();
    std::shared_ptr<detail::hold> h;
    try {
        h = core_->acquire_hold(limit, [this](const std::string& node) {
            std::lock_guard l(mutex_);
            queued_node_ = node;
        });
    } catch (...) {
        lock.lock();
        acquiring_ = false;
        queued_node_.clear();
        acquiring_done_.notify_all();
        throw;
    }
    lock.lock();
    acquiring_ = false;
    queued_node_.clear();
    acquiring_done_.notify_all();
    if (!h) return false;
    hold_ = std::move(h);
    count_ = 1;
    return true;
}

std::shared_ptr<detail::hold> fair_lock::take_for_unlock(boost::system::error_code& ec) {
    ec = {};
    std::lock_guard lock(mutex_);
    if (!hold_) {
        ec = make_error_code(errc::lock_not_held);
        return nullptr;
    }
    if (--count_ > 0) return nullptr;
    released_ = hold_;
    return std::move(hold_);
}

void fair_lock::release(boost::system::error_code& ec) {
    if (auto h = take_for_unlock(ec)) ec = core_->driver().release_sync(h);
}

void fair_lock::release() {
    boost::system::error_code ec;
    release(ec);
    core_->throw_release_error(ec, "release of a fair lock this object does not hold", "the lock");
}

void fair_lock::unlock() noexcept {
    core_->unlock_quietly([this](boost::system::error_code& ec) { return take_for_unlock(ec); }, "an object");
}

std::optional<std::size_t> fair_lock::queue_position() const {
    std::string ours;
    {
        std::lock_guard lock(mutex_);
        ours = hold_ ? hold_->node_path() : queued_node_;
    }
    if (ours.empty()) return std::nullopt;
    const auto nodes = participant_nodes();
    const auto it = std::find(nodes.begin(), nodes.end(), ours);
    if (it == nodes.end()) return std::nullopt;
    return static_cast<std::size_t>(it - nodes.begin());
}

std::size_t fair_lock::queue_length() const { return participant_nodes().size(); }

bool fair_lock::is_held() const {
    std::lock_guard lock(mutex_);
    return hold_ != nullptr;
}

int fair_lock::hold_count() const {
    std::lock_guard lock(mutex_);
    return count_;
}

std::int64_t fair_lock::fencing_token() const {
    std::lock_guard lock(mutex_);
    if (!hold_) detail::throw_if(make_error_code(errc::lock_not_held), core_->path(), "the fair_lock is not held");
    return hold_->fencing_token();
}

std::string fair_lock::node_path() const {
    std::lock_guard lock(mutex_);
    return hold_ ? hold_->node_path() : std::string();
}

hold_state fair_lock::state() const {
    std::lock_guard lock(mutex_);
    if (hold_) return hold_->caller_state();
    // Released: releasing while its delete waits for the connection, as the listeners hear it.
    if (const auto h = released_.lock(); h && h->state() == hold_state::releasing) return hold_state::releasing;
    return hold_state::released;
}

hold_view fair_lock::view() const {
    std::lock_guard lock(mutex_);
    if (!hold_) detail::throw_if(make_error_code(errc::lock_not_held), core_->path(), "the fair_lock holds no lock to view");
    return detail::hold_access::view_of(hold_);
}

std::stop_token fair_lock::stop_token() const {
    std::lock_guard lock(mutex_);
    return hold_ ? hold_->stop_token() : detail::stopped_token();
}

std::shared_ptr<detail::hold> fair_lock::current_hold() const {
    std::lock_guard lock(mutex_);
    return hold_;
}

std::vector<multi_result> fair_lock::guarded_multi(std::vector<multi_op> ops) {
    return core_->guarded_multi(current_hold(), std::move(ops));
}

std::vector<multi_result> fair_lock::guarded_multi(std::vector<multi_op> ops, boost::system::error_code& ec) {
    return detail::lock_core::guarded_multi(current_hold(), std::move(ops), ec);
}

}  // namespace zkr
