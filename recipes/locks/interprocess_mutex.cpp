#include "../queue/hold_access.hpp"
#include "../queue/hold_cache.hpp"
#include "../queue/lock_core.hpp"

#include <zkr/interprocess_mutex.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>

namespace zkr {

interprocess_mutex::interprocess_mutex(client& c, std::string path)
    : core_(std::make_unique<detail::lock_core>(c, std::move(path), std::make_shared<lowest_n_rule>(1))) {}

interprocess_mutex::interprocess_mutex(client& c, std::string path, std::function<void()> on_revoke)
    : core_(std::make_unique<detail::lock_core>(
          c, std::move(path), std::make_shared<lowest_n_rule>(1))) {
    if (!on_revoke)
        throw zkr::error(make_error_code(errc::invalid_argument), core_->path(), "interprocess_mutex: the revocation listener is empty");
    core_->make_revocable(std::move(on_revoke));
}

interprocess_mutex::interprocess_mutex(client& c, std::string path, mutex_options options)
    : core_(std::make_unique<detail::lock_core>(
          c, std::move(path),
          std::make_shared<lowest_n_rule>(1, queue_kind::mutex,
                                          options.kazoo_lock_nodes ? lowest_n_rule::foreign::kazoo : lowest_n_rule::foreign::none))) {
    if (options.cache_hold) cache_ = std::make_shared<detail::hold_cache>(core_->shared_driver());
}

interprocess_mutex::interprocess_mutex(client& c, std::string path, std::shared_ptr<const lock_rule> rule, acquire_plan plan)
    : core_(std::make_unique<detail::lock_core>(c, std::move(path), std::move(rule))), plan_(std::move(plan)) {}

interprocess_mutex::~interprocess_mutex() {
    std::vector<std::shared_ptr<detail::hold>> holds;
    {
        std::lock_guard lock(mutex_);
        holds = holds_.take_all();
    }
    if (cache_)
        if (auto kept = cache_->close()) holds.push_back(std::move(kept));
    for (const auto& h : holds) core_->release_quietly(h);
}

void interprocess_mutex::cancel() { core_->driver().cancel(); }
void interprocess_mutex::set_node_data(std::string data) { core_->set_node_data(std::move(data)); }
std::vector<std::string> interprocess_mutex::participant_nodes() const { return core_->participant_nodes(); }
state_subscription interprocess_mutex::add_hold_listener(std::function<void(hold_state)> listener) {
    return core_->add_hold_listener(std::move(listener));
}

bool interprocess_mutex::reenter(std::thread::id owner) {
    std::lock_guard lock(mutex_);
    return holds_.reenter(owner);
}

void interprocess_mutex::adopt(std::thread::id owner, std::shared_ptr<detail::hold> h) {
    std::lock_guard lock(mutex_);
    holds_.adopt(owner, std::move(h));
    released_.erase(owner);
}

void interprocess_mutex::acquire() { acquire_for(std::nullopt); }

bool interprocess_mutex::acquire(std::chrono::milliseconds timeout) { return acquire_for(detail::checked_timeout(timeout)); }

bool interprocess_mutex::acquire_for(std::optional<std::chrono::milliseconds> timeout) {
    const auto owner = std::this_thread::get_id();
    if (reenter(owner)) return true;
    core_->refuse_if_held_through_multi_lock(owner, "interprocess_mutex");
    detail::acquire_request req;
    req.timeout = timeout;
    if (cache_) {
        // Lock caching: the kept node with no request, or (a release's listing still in flight)
        // after waiting for its answer, within the timeout; what is left of it goes to the queue.
        std::optional<std::chrono::steady_clock::time_point> deadline;
        if (timeout && timeout->count() > 0) deadline = std::chrono::steady_clock::now() + *timeout;
        if (auto kept = cache_->take(deadline)) {
            adopt(owner, std::move(kept));
            return true;
        }
        if (deadline)
            req.timeout = std::max(std::chrono::milliseconds(0), std::chrono::duration_cast<std::chrono::milliseconds>(
                                                                     *deadline - std::chrono::steady_clock::now()));
    }
    if (plan_) plan_(owner, req);
    auto h = core_->acquire_hold(std::move(req));
    if (!h) return false;
    adopt(owner, std::move(h));
    return true;
}

std::shared_ptr<detail::hold> interprocess_mutex::take_for_release(std::thread::id owner, boost::system::error_code& ec) {
    std::shared_ptr<detail::hold> h;
    {
        std::lock_guard lock(mutex_);
        h = holds_.take_level(owner, ec);
        if (h) released_[owner] = h;
    }
    // Lock caching: a kept hold has nothing to release now (its cache lets it go later).
    if (h && cache_ && cache_->keep(h)) return nullptr;
    return h;
}

void interprocess_mutex::release(boost::system::error_code& ec) {
    auto h = take_for_release(std::this_thread::get_id(), ec);
    if (h) ec = core_->driver().release_sync(h);
}

void interprocess_mutex::unlock() noexcept {
    core_->unlock_quietly([this](boost::system::error_code& ec) { return take_for_release(std::this_thread::get_id(), ec); }, "a thread");
}

void interprocess_mutex::release() {
    boost::system::error_code ec;
    release(ec);
    core_->throw_release_error(ec, "release by a thread that does not hold the lock", "the lock");
}

std::shared_ptr<detail::hold> interprocess_mutex::current_hold() const {
    std::lock_guard lock(mutex_);
    return holds_.of(std::this_thread::get_id());
}

bool interprocess_mutex::is_acquired_in_this_process() const {
    std::lock_guard lock(mutex_);
    return !holds_.empty();
}

bool interprocess_mutex::is_owned_by_current_thread() const { return current_hold() != nullptr; }

bool interprocess_mutex::holds(std::thread::id owner) const {
    std::lock_guard lock(mutex_);
    return holds_.of(owner) != nullptr;
}

std::string interprocess_mutex::valid_node_of(std::thread::id owner) const {
    std::lock_guard lock(mutex_);
    const auto h = holds_.of(owner);
    if (!h) return {};
    const auto s = h->state();
    return s == hold_state::held || s == hold_state::doubtful ? h->node_path() : std::string();
}

std::int64_t interprocess_mutex::fencing_token() const {
    auto h = current_hold();
    if (!h) detail::throw_if(make_error_code(errc::lock_not_held), core_->path(), "this thread holds no lock");
    return h->fencing_token();
}

hold_state interprocess_mutex::state() const {
    if (auto h = current_hold()) return h->caller_state();
    // Released by this thread: releasing while its delete waits for the connection, as the hold
    // listeners hear it, then released.
    std::lock_guard lock(mutex_);
    const auto* released = released_.find(std::this_thread::get_id());
    if (!released) return hold_state::released;
    if (const auto h = released->lock(); h && h->state() == hold_state::releasing) return hold_state::releasing;
    released_.erase(std::this_thread::get_id());
    return hold_state::released;
}

std::stop_token interprocess_mutex::stop_token() const {
    auto h = current_hold();
    return h ? h->stop_token() : detail::stopped_token();
}

hold_view interprocess_mutex::view() const {
    auto h = current_hold();
    if (!h) detail::throw_if(make_error_code(errc::lock_not_held), core_->path(), "this thread holds no lock to view");
    return detail::hold_access::view_of(std::move(h));
}

std::string interprocess_mutex::node_path() const {
    auto h = current_hold();
    return h ? h->node_path() : std::string();
}

std::vector<multi_result> interprocess_mutex::guarded_multi(std::vector<multi_op> ops, boost::system::error_code& ec) {
    return detail::lock_core::guarded_multi(current_hold(), std::move(ops), ec);
}

std::vector<multi_result> interprocess_mutex::guarded_multi(std::vector<multi_op> ops) {
    return core_->guarded_multi(current_hold(), std::move(ops));
}

}  // namespace zkr
