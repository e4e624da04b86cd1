#include "curator_semaphore.hpp"
#include "../queue/hold_access.hpp"
#include "../queue/lock_core.hpp"

#include "../../src/sync_result.hpp"

#include <zkr/interprocess_semaphore_mutex.hpp>
#include <zkr/interprocess_semaphore_v2.hpp>
#include <zkr/shared_count.hpp>

#include <zkr/path.hpp>

#include <spdlog/spdlog.h>

#include <atomic>
#include <limits>

namespace zkr {

using boost::system::error_code;

// ---------------------------------------------------------------------------------------------
// interprocess_semaphore_v2

// The maximum in force, shared with the rule (which may outlive the semaphore in a pending acquire).
struct interprocess_semaphore_v2::limit {
    std::atomic<std::int64_t> max;
    std::string tag;  // fixed_max_tag or shared_count_max_tag
    shared_count* count = nullptr;
};

namespace {
std::int32_t checked_max(std::int32_t max, const std::string& path) {
    if (max < 1)
        throw zkr::error(make_error_code(errc::invalid_argument), path,
                         "max_leases must be at least 1, got " + std::to_string(max));
    return max;
}
}  // namespace

interprocess_semaphore_v2::interprocess_semaphore_v2(client& c, std::string path, std::shared_ptr<limit> l, semaphore_options options)
    : path_(std::move(path)), limit_(std::move(l)) {
    auto max = [l = limit_] { return l->max.load(); };
    if (options.layout == semaphore_layout::curator) {
        detail::check_lock_path(path_, c.options().name_space);  // before the folders are named after it
        core_ = std::make_unique<detail::lock_core>(c, join_path(path_, detail::curator_leases_folder),
                                                    std::make_shared<curator_lease_rule>(std::move(max)));
        gate_ = std::make_unique<detail::lock_core>(c, join_path(path_, detail::curator_locks_folder), std::make_shared<lowest_n_rule>(1));
    } else {
        core_ = std::make_unique<detail::lock_core>(c, path_, std::make_shared<lease_rule>(std::move(max), limit_->tag));
    }
}

interprocess_semaphore_v2::interprocess_semaphore_v2(client& c, std::string path, std::int32_t max_leases, semaphore_options options)
    : interprocess_semaphore_v2(c, path, [&] {
          auto l = std::make_shared<limit>();
          l->max = checked_max(max_leases, path);
          l->tag = fixed_max_tag(static_cast<std::uint32_t>(max_leases));
          return l;
      }(), options) {}

interprocess_semaphore_v2::interprocess_semaphore_v2(client& c, std::string path, shared_count& count, semaphore_options options)
    : interprocess_semaphore_v2(c, std::move(path), [&] {
          auto l = std::make_shared<limit>();
          l->max = count.count();
          l->tag = shared_count_max_tag(count.path());
          l->count = &count;
          return l;
      }(), options) {
    // A changed maximum: every waiter decides again (a grown one may let some hold now).
    count_subscription_ = count.add_listener([l = limit_, driver = core_->shared_driver()](std::int32_t value) {
        l->max = value;
        driver->reevaluate();
    });
    limit_->max = count.count();  // a change before the subscription
}

interprocess_semaphore_v2::~interprocess_semaphore_v2() { count_subscription_.unsubscribe(); }

void interprocess_semaphore_v2::cancel() {
    if (gate_) gate_->driver().cancel();
    core_->driver().cancel();
}
void interprocess_semaphore_v2::set_node_data(std::string data) { core_->set_node_data(std::move(data)); }
std::vector<std::string> interprocess_semaphore_v2::participant_nodes() const { return core_->participant_nodes(); }
state_subscription interprocess_semaphore_v2::add_hold_listener(std::function<void(hold_state)> listener) {
    return core_->add_hold_listener(std::move(listener));
}

std::int32_t interprocess_semaphore_v2::max_leases() const {
    return static_cast<std::int32_t>(limit_->max.load());
}

void interprocess_semaphore_v2::check_qty(std::int32_t qty) const {
    const auto max = max_leases();
    if (qty < 1)
        throw zkr::error(make_error_code(errc::invalid_argument), path_,
                         "qty must be at least 1, got " + std::to_string(qty));
    if (qty > max)
        throw zkr::error(make_error_code(errc::invalid_argument), path_,
                         "qty " + std::to_string(qty) + " is more than the semaphore's max_leases " + std::to_string(max));
}

namespace {

using leases_done = detail::unique_function<void(const error_code&, std::vector<lease>)>;  // (the class's own, private there)

// Curator's layout: the inner mutex (gate) first, then one node, and so one lease, per hold.
void start_gated(detail::acquire_start start, std::shared_ptr<detail::lock_driver> gate, std::int32_t qty,
                 leases_done done) {
    auto driver = start.driver;
    std::string data = start.data;
    detail::acquire_gated(std::move(gate), driver, qty, start.timeout, data, std::move(start.attach),
                          [driver, data, done = std::move(done)](const error_code& ec, std::vector<std::shared_ptr<detail::hold>> holds) mutable {
                              std::vector<lease> leases;
                              for (auto& h : holds)
                                  leases.push_back(std::move(detail::hold_access::make_leases(driver, std::move(h), 1, data).front()));
                              done(ec, std::move(leases));
                          });
}

// zkr's layout: one node weighing qty leases (its name says so).
void start_weighted(detail::acquire_start start, std::int32_t qty, leases_done done) {
    auto driver = start.driver;
    std::string data = start.data;
    detail::lock_core::start_acquire(std::move(start), [driver, qty, data = std::move(data), done = std::move(done)](
                                                           const error_code& ec, std::shared_ptr<detail::hold> hold) mutable {
        std::vector<lease> leases;
        if (hold) leases = detail::hold_access::make_leases(driver, std::move(hold), qty, std::move(data));
        done(ec, std::move(leases));
    });
}

}  // namespace

interprocess_semaphore_v2::acquire_launch interprocess_semaphore_v2::prepare_acquire(std::int32_t qty,
                                                                                     std::optional<std::chrono::milliseconds> timeout) const {
    check_qty(qty);
    auto start = detail::prepare_acquire(*core_, timeout);
    auto callbacks = start.callbacks;
    if (gate_)  // (the rule names the node)
        return {callbacks, [start = std::move(start), gate = gate_->shared_driver(), qty](leases_done done) mutable {
                    start_gated(std::move(start), std::move(gate), qty, std::move(done));
                }};
    start.node_name = lease_node_name(limit_->tag, static_cast<std::uint32_t>(qty));
    return {callbacks, [start = std::move(start), qty](leases_done done) mutable { start_weighted(std::move(start), qty, std::move(done)); }};
}

error_code interprocess_semaphore_v2::explain(const error_code& ec, std::string& message) const {
    message = core_->driver().acquire_failure(ec, "a lease");
    if (ec != errc::max_mismatch) return ec;
    message = "this semaphore uses " +
              (limit_->count ? "the shared count " + limit_->count->path() : "max_leases " + std::to_string(max_leases()));
    try {
        for (const auto& node : participant_nodes()) {
            const auto info = parse_lease_node(zkr::node_name(node)).value_or(lease_node_info{});
            if (info.max_tag == limit_->tag) continue;
            message += ", but node " + node + " was made with " +
                       (is_shared_count_tag(info.max_tag) ? std::string("another shared count")
                        : max_of_tag(info.max_tag)        ? "max_leases " + std::to_string(*max_of_tag(info.max_tag))
                                                          : std::string("no maximum in its name (not zkr's)"));
            break;
        }
    } catch (const std::exception&) {
        // The explanation is a courtesy; the error stands without it.
    }
    message += ": every process must use the same maximum";
    return ec;
}

std::optional<std::vector<lease>> interprocess_semaphore_v2::acquire_for(std::int32_t qty,
                                                                          std::optional<std::chrono::milliseconds> timeout) {
    check_qty(qty);
    if (gate_) return acquire_gated_sync(qty, timeout);
    std::string data = core_->node_data();
    detail::acquire_request req{timeout, data, lease_node_name(limit_->tag, static_cast<std::uint32_t>(qty)), {}, {}};
    error_code ec;
    auto h = core_->driver().acquire_sync(std::move(req), ec);
    if (ec) {
        std::string message;
        const auto reported = explain(ec, message);  // before message is read
        detail::throw_if(reported, path_, message);
    }
    if (!h) return std::nullopt;
    core_->attach_listeners(h);
    return detail::hold_access::make_leases(core_->shared_driver(), std::move(h), qty, std::move(data));
}

std::optional<std::vector<lease>> interprocess_semaphore_v2::acquire_gated_sync(std::int32_t qty,
                                                                                std::optional<std::chrono::milliseconds> timeout) {
    using outcome = std::pair<error_code, std::vector<lease>>;
    auto result = std::make_shared<detail::sync_result<outcome>>();
    prepare_acquire(qty, timeout).start([result](const error_code& ec, std::vector<lease> leases) { result->set(ec, std::move(leases)); });
    auto& [ec, leases] = result->get(std::chrono::microseconds(0));  // a wait behind the inner mutex or holders: no spin
    if (ec) detail::throw_if(ec, path_, core_->driver().acquire_failure(ec, qty == 1 ? "a lease" : "leases"));
    if (leases.empty()) return std::nullopt;
    return std::move(leases);
}

lease interprocess_semaphore_v2::acquire() { return std::move(acquire_for(1, std::nullopt)->front()); }

std::optional<lease> interprocess_semaphore_v2::acquire(std::chrono::milliseconds timeout) {
    auto leases = acquire_for(1, detail::checked_timeout(timeout));
    if (!leases) return std::nullopt;
    return std::move(leases->front());
}

std::vector<lease> interprocess_semaphore_v2::acquire_many(std::int32_t qty) { return std::move(*acquire_for(qty, std::nullopt)); }

std::optional<std::vector<lease>> interprocess_semaphore_v2::acquire_many(std::int32_t qty, std::chrono::milliseconds timeout) {
    return acquire_for(qty, detail::checked_timeout(timeout));
}

// ---------------------------------------------------------------------------------------------
// interprocess_semaphore_mutex

interprocess_semaphore_mutex::interprocess_semaphore_mutex(client& c, std::string path, semaphore_options options)
    : client_(c), path_(path), semaphore_(c, std::move(path), 1, options) {}

interprocess_semaphore_mutex::~interprocess_semaphore_mutex() {
    std::optional<lease> l;
    {
        std::lock_guard lock(mutex_);
        l.swap(lease_);
    }
    // ~lease returns it, logging a failure.
}

void interprocess_semaphore_mutex::keep(lease l) {
    std::optional<lease> previous;
    {
        std::lock_guard lock(mutex_);
        // Only a lost lease can still be here: ours was gone, so another acquire could succeed.
        previous.swap(lease_);
        lease_.emplace(std::move(l));
    }
}

void interprocess_semaphore_mutex::acquire() { keep(semaphore_.acquire()); }

bool interprocess_semaphore_mutex::acquire(std::chrono::milliseconds timeout) {
    auto l = semaphore_.acquire(timeout);
    if (!l) return false;
    keep(std::move(*l));
    return true;
}

void interprocess_semaphore_mutex::release(error_code& ec) {
    std::optional<lease> l;
    {
        std::lock_guard lock(mutex_);
        l.swap(lease_);
    }
    if (!l) {
        ec = make_error_code(errc::lock_not_held);
        return;
    }
    l->close(ec);
}

void interprocess_semaphore_mutex::release() {
    error_code ec;
    release(ec);
    detail::throw_release_error(ec, {}, "release of an interprocess_semaphore_mutex that is not held", "the semaphore mutex");
}

void interprocess_semaphore_mutex::unlock() noexcept {
    std::optional<lease> l;
    try {
        std::lock_guard lock(mutex_);
        l.swap(lease_);
    } catch (const std::exception&) {
    }
    if (!l) return detail::log_quiet_release(client_, path_, make_error_code(errc::lock_not_held));
    // ~lease releases without throwing and logs what went wrong.
}

std::string interprocess_semaphore_mutex::node_path() const {
    std::lock_guard lock(mutex_);
    return lease_ ? lease_->node_path() : std::string();
}

hold_view interprocess_semaphore_mutex::view() const {
    std::lock_guard lock(mutex_);
    return lease_ ? lease_->view() : hold_view();
}

std::stop_token interprocess_semaphore_mutex::stop_token() const {
    std::lock_guard lock(mutex_);
    return lease_ ? lease_->stop_token() : detail::stopped_token();
}

bool interprocess_semaphore_mutex::is_held() const {
    std::lock_guard lock(mutex_);
    return lease_.has_value();
}

std::int64_t interprocess_semaphore_mutex::fencing_token() const {
    std::lock_guard lock(mutex_);
    if (!lease_) throw zkr::error(make_error_code(errc::lock_not_held), {}, "the interprocess_semaphore_mutex is not held");
    return lease_->fencing_token();
}

hold_state interprocess_semaphore_mutex::state() const {
    std::lock_guard lock(mutex_);
    return lease_ ? lease_->state() : hold_state::released;
}

std::vector<multi_result> interprocess_semaphore_mutex::guarded_multi(std::vector<multi_op> ops) {
    // Under the mutex: a release from another thread waits for the guarded write to finish.
    std::lock_guard lock(mutex_);
    if (!lease_) throw zkr::error(make_error_code(errc::lock_not_held), {}, "the interprocess_semaphore_mutex is not held");
    return lease_->guarded_multi(std::move(ops));
}

std::vector<multi_result> interprocess_semaphore_mutex::guarded_multi(std::vector<multi_op> ops, error_code& ec) {
    std::lock_guard lock(mutex_);
    if (!lease_) {
        ec = make_error_code(errc::lock_not_held);
        return {};
    }
    return lease_->guarded_multi(std::move(ops), ec);
}

}  // namespace zkr
