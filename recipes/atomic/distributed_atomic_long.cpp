// zkr::distributed_atomic_long: an atomic_long_machine (atomic_long_machine.hpp) on a zk_engine;
// this file holds only what the public class adds: the arguments checked, one operation at a
// time waited for, the promotion lock taken and released for the machine, the times, and the
// receipt deleted at the end.
#include <zkr/distributed_atomic_long.hpp>

#include "atomic_long_machine.hpp"
#include "../core/zk_engine.hpp"

#include "../../src/protect_prefix.hpp"  // random_uuid

#include <zkr/interprocess_mutex.hpp>
#include <zkr/path.hpp>

#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>

#include <spdlog/spdlog.h>

#include <condition_variable>
#include <mutex>

namespace zkr {

using boost::system::error_code;
using clock_type = std::chrono::steady_clock;
namespace atomic_out = detail::atomic_out;

struct distributed_atomic_long::state : std::enable_shared_from_this<state> {
    using engine = detail::zk_engine<detail::atomic_long_machine, state>;

    client& c;
    const std::string path;
    const atomic_long_options options;
    std::shared_ptr<engine> running;
    bool started = false;

    std::mutex op_mutex;  // one operation at a time
    std::mutex mutex;     // the answer
    std::condition_variable answered;
    std::optional<atomic_out::finished> answer;  // under mutex
    std::optional<clock_type::time_point> promoted_at;  // under mutex
    std::uint64_t receipts_made = 0;                    // under mutex: names receipt_prefix + 1 .. this

    // The promotion lock: touched on the callback thread, and by the destructor.
    std::mutex lock_mutex;
    std::unique_ptr<interprocess_mutex> lock;  // under lock_mutex; with promote_to_lock
    lock_hold hold;                          // under lock_mutex
    bool want_lock = false;                  // under lock_mutex

    state(client& cl, std::string p, atomic_long_options o) : c(cl), path(std::move(p)), options(std::move(o)) {}

    // Network thread.
    void on_outcome(const detail::atomic_long_machine::action& a) {
        if (std::holds_alternative<atomic_out::lock_needed>(a)) {
            {
                std::lock_guard l(mutex);
                if (!promoted_at) promoted_at = clock_type::now();
            }
            boost::asio::post(detail::callback_executor(detail::connection_of(c)), [self = shared_from_this()] { self->take_lock(); });
        } else if (std::holds_alternative<atomic_out::lock_done>(a)) {
            boost::asio::post(detail::callback_executor(detail::connection_of(c)), [self = shared_from_this()] { self->drop_lock(); });
        } else if (const auto* f = std::get_if<atomic_out::finished>(&a)) {
            {
                std::lock_guard l(mutex);
                answer = *f;
                receipts_made = f->receipts_made;
            }
            answered.notify_all();
        }
    }

    // Callback thread. A hold kept from before is one that died with its session: let it go first.
    void take_lock() {
        std::lock_guard l(lock_mutex);
        if (hold) hold.async_release(boost::asio::detached);
        if (!lock) return;
        want_lock = true;
        lock->async_acquire(options.promote_to_lock->timeout, [weak = weak_from_this()](const error_code& ec, lock_hold h) {
            auto self = weak.lock();
            if (!self) return;  // (h releases itself)
            std::lock_guard relock(self->lock_mutex);
            if (!self->want_lock || !self->lock) return;  // the operation ended meanwhile
            if (ec || !h) {
                self->running->post(detail::atomic_in::lock_refused{ec});
                return;
            }
            auto node = h.node_path();
            self->hold = std::move(h);
            self->running->post(detail::atomic_in::lock_granted{self->c.session_id(), std::move(node)});
        });
    }

    void drop_lock() {
        std::lock_guard l(lock_mutex);
        want_lock = false;
        if (hold) hold.async_release(boost::asio::detached);
    }

    atomic_value<std::int64_t> run(const detail::atomic_request& request) {
        std::lock_guard op(op_mutex);
        std::unique_lock l(mutex);
        answer.reset();
        promoted_at.reset();
        const auto start = clock_type::now();
        if (!started || !running->post(detail::atomic_in::begin{request, c.session_id()}))
            throw zkr::error(make_error_code(errc::closed), path, "the client is closed");
        answered.wait(l, [&] { return answer.has_value(); });
        const auto f = std::move(*answer);
        const auto end = clock_type::now();
        if (f.ec) throw zkr::error(f.ec, path, f.reason);
        atomic_value<std::int64_t> out;
        out.succeeded = f.succeeded;
        out.pre_value = f.pre;
        out.post_value = f.succeeded ? f.post : 0;
        out.stats.optimistic_tries = f.optimistic_tries;
        out.stats.promoted_tries = f.promoted_tries;
        const auto ms = [](clock_type::duration d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d); };
        out.stats.optimistic_time = ms(promoted_at.value_or(end) - start);
        if (promoted_at) out.stats.promoted_time = ms(end - *promoted_at);
        return out;
    }
};

distributed_atomic_long::distributed_atomic_long(client& c, std::string path, atomic_long_options options)
    : distributed_atomic_long(c, std::move(path), std::move(options), 8) {}

distributed_atomic_long::distributed_atomic_long(client& c, std::string path, atomic_long_options options, unsigned width)
    : client_(c), path_(std::move(path)), width_(width) {
    const std::string name = width == 4 ? "atomic integer" : "atomic long";
    if (auto e = path_error(path_))
        throw zkr::error(make_error_code(errc::invalid_path), path_, "invalid " + name + " path \"" + path_ + "\": " + *e);
    if (path_ == "/") throw zkr::error(make_error_code(errc::invalid_path), path_, "an " + name + " cannot be the root node");
    const auto refuse = [&](const std::string& what) { throw zkr::error(make_error_code(errc::invalid_argument), path_, what); };
    if (options.optimistic_tries < 1) refuse("atomic_long_options::optimistic_tries must be at least 1");
    if (options.backoff.count() < 0) refuse("atomic_long_options::backoff must not be negative");
    if (options.receipt_ttl.count() < 0) refuse("atomic_long_options::receipt_ttl must not be negative");
    if (const auto& p = options.promote_to_lock) {
        if (auto e = path_error(p->lock_path))
            throw zkr::error(make_error_code(errc::invalid_path), p->lock_path, "invalid promotion lock path \"" + p->lock_path + "\": " + *e);
        if (p->lock_path == path_ || p->lock_path.rfind(path_ + "/", 0) == 0)
            refuse("the promotion lock path " + p->lock_path + " must not be the value's node or under it");
        if (p->tries < 1) refuse("atomic_promotion::tries must be at least 1");
        if (p->timeout.count() < 0) refuse("atomic_promotion::timeout must not be negative");
    }
    receipt_ = path_ + "/zkr-receipt-" + detail::random_uuid() + "-";
    detail::atomic_config config;
    config.path = path_;
    config.receipt = receipt_;
    config.receipt_ttl = options.receipt_ttl;
    config.optimistic_tries = options.optimistic_tries;
    config.backoff = options.backoff;
    config.width = width;
    if (options.promote_to_lock) {
        config.promote = true;
        config.promoted_tries = options.promote_to_lock->tries;
    }
    state_ = std::make_shared<state>(c, path_, std::move(options));
    if (state_->options.promote_to_lock) state_->lock = std::make_unique<interprocess_mutex>(c, state_->options.promote_to_lock->lock_path);
    std::weak_ptr<state> weak = state_;
    state_->running = std::make_shared<state::engine>(c, detail::atomic_long_machine(std::move(config)), weak);
    state_->started = state_->running->start(detail::zk::timer_due{});  // (a no-op event: the machine waits for a call)
}

distributed_atomic_long::~distributed_atomic_long() {
    try {
        state_->running->stop();
        std::unique_ptr<interprocess_mutex> lock;
        {
            std::lock_guard l(state_->lock_mutex);
            state_->want_lock = false;
            if (state_->hold) state_->hold.async_release(boost::asio::detached);
            lock.swap(state_->lock);
        }
        lock.reset();  // (outside lock_mutex: an acquire it cancels may complete in here)
        // The receipts: nobody else reads them; an ephemeral one would go with the session, a TTL
        // one after its TTL. (Every name made: a create resent after a loss may have made an
        // earlier one late.)
        std::uint64_t made = 0;
        {
            std::lock_guard l(state_->mutex);
            made = state_->receipts_made;
        }
        for (std::uint64_t i = 1; i <= made; ++i) client_.async_remove(receipt_ + std::to_string(i), {}, boost::asio::detached);
    } catch (const std::exception& e) {
        client_.logger()->warn("atomic long {}: cleaning up: {}", path_, e.what());
    }
}

std::string distributed_atomic_long::receipt_path() const {
    std::lock_guard l(state_->mutex);
    return state_->receipts_made ? receipt_ + std::to_string(state_->receipts_made) : std::string();
}

atomic_value<std::int64_t> distributed_atomic_long::get() { return state_->run({detail::atomic_request::kind::get}); }

atomic_value<std::int64_t> distributed_atomic_long::add(std::int64_t delta) {
    return state_->run({detail::atomic_request::kind::add, delta});
}

atomic_value<std::int64_t> distributed_atomic_long::compare_and_set(std::int64_t expected, std::int64_t new_value) {
    return state_->run({detail::atomic_request::kind::compare_and_set, new_value, expected});
}

atomic_value<std::int64_t> distributed_atomic_long::try_set(std::int64_t new_value) {
    return state_->run({detail::atomic_request::kind::set, new_value});
}

void distributed_atomic_long::force_set(std::int64_t value) {
    const auto data = detail::long_to_data(value, width_);
    error_code ec;
    client_.set_data(path_, data, -1, ec);
    if (ec == errc::no_node) {
        client_.create(path_, data, {.create_parents = true}, ec);
        if (ec == errc::node_exists) client_.set_data(path_, data, -1, ec);  // made meanwhile: write over it
    }
    detail::throw_if(ec, path_, ec.message() + " while setting " + path_);
}

bool distributed_atomic_long::initialize(std::int64_t value) {
    error_code ec;
    client_.create(path_, detail::long_to_data(value, width_), {.create_parents = true}, ec);
    if (ec == errc::node_exists) return false;
    detail::throw_if(ec, path_, ec.message() + " while initializing " + path_);
    return true;
}

}  // namespace zkr
