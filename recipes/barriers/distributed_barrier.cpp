// zkr::distributed_barrier: set and remove are one request each; every wait is a barrier_machine
// of its own on a zk_engine, ended by its outcome, its timeout, or the object's destruction.
#include <zkr/distributed_barrier.hpp>

#include "barrier_machine.hpp"
#include "../core/timed_waits.hpp"
#include "../core/zk_engine.hpp"

#include <zkr/path.hpp>

#include <future>
#include <optional>
#include <mutex>
#include <vector>

namespace zkr {

namespace detail {

// A sync wait's own end is its caller's timeout; its timer only has to outlast any wait.
constexpr std::chrono::milliseconds barrier_forever = std::chrono::hours(24 * 365 * 10);

// One wait. Its completion sits in `waits` until the machine's outcome, the timeout or a cancel
// takes it (each exactly once, whichever comes first); the completion holds the wait, and the
// wait its engine, so everything of it lives until it ends, and not after.
struct barrier_wait {
    using engine = zk_engine<barrier_machine, barrier_wait>;
    explicit barrier_wait(boost::asio::any_io_executor callbacks, bool first_check_decides)
        : waits(std::make_shared<detail::timed_waits>(std::move(callbacks))), one_check(first_check_decides) {}

    const std::shared_ptr<detail::timed_waits> waits;
    const bool one_check;  // a zero timeout: the first check decides
    std::mutex mutex;
    std::shared_ptr<engine> running;  // under mutex; taken by the end

    // Any thread: completes the wait (unless it has ended) and stops its machine.
    void end(const boost::system::error_code& ec, bool passed) {
        for (auto& fn : waits->take_all()) fn(ec, passed);
        stop();
    }
    void stop() {
        std::shared_ptr<engine> e;
        {
            std::lock_guard lock(mutex);
            e = std::move(running);
        }
        if (e) e->stop();
    }

    // Network thread.
    void on_outcome(const detail::barrier_machine::action& a) {
        if (std::holds_alternative<detail::barrier_out::passed>(a)) return end({}, true);
        if (const auto* f = std::get_if<detail::barrier_out::failed>(&a)) return end(f->ec, false);
        if (std::holds_alternative<detail::barrier_out::seen_set>(a) && one_check) end({}, false);
    }
};

}  // namespace detail

// What the object's waits share with it: the async ones still running, for the destructor.
struct distributed_barrier::state {
    client& c;
    const std::string path;
    const boost::asio::any_io_executor callbacks;
    std::mutex mutex;
    std::vector<std::weak_ptr<detail::barrier_wait>> running;  // under mutex

    state(client& cl, std::string p) : c(cl), path(std::move(p)), callbacks(detail::callback_executor(detail::connection_of(cl))) {}

    // A wait begins: done runs once, with its outcome, or ({}, false) after timer (a zero timeout:
    // after the first check instead), or from end().
    std::shared_ptr<detail::barrier_wait> begin(std::chrono::milliseconds timer, wait_done done) {
        auto op = std::make_shared<detail::barrier_wait>(callbacks, timer.count() == 0);
        // The timeout's end stops the machine too (the completion holds the wait until then).
        op->waits->add(timer.count() == 0 ? detail::barrier_forever : timer, [op, done = std::move(done)](const boost::system::error_code& ec, bool passed) mutable {
            op->stop();
            done(ec, passed);
        });
        {
            std::lock_guard lock(mutex);
            std::erase_if(running, [](const auto& w) { return w.expired(); });
            running.push_back(op);
        }
        auto e = std::make_shared<detail::barrier_wait::engine>(c, detail::barrier_machine(path), std::weak_ptr<detail::barrier_wait>(op));
        {
            std::lock_guard lock(op->mutex);
            op->running = e;
        }
        // Refused once the client's close has begun (the machine would never hear of it): the wait
        // ends here.
        if (!e->start(detail::barrier_in::start{})) op->end(make_error_code(errc::closed), false);
        return op;
    }
};

distributed_barrier::distributed_barrier(client& c, std::string path) : client_(c), path_(std::move(path)) {
    if (auto e = path_error(path_))
        throw zkr::error(make_error_code(errc::invalid_path), path_, "invalid barrier path \"" + printable_path(path_) + "\": " + *e);
    if (path_ == "/") throw zkr::error(make_error_code(errc::invalid_path), path_, "the root \"/\" cannot be a barrier");
    state_ = std::make_shared<state>(c, path_);
}

distributed_barrier::~distributed_barrier() {
    std::vector<std::weak_ptr<detail::barrier_wait>> running;
    {
        std::lock_guard lock(state_->mutex);
        running.swap(state_->running);
    }
    for (const auto& w : running)
        if (auto op = w.lock()) op->end(make_error_code(errc::closed), false);
}

void distributed_barrier::set_barrier() {
    boost::system::error_code ec;
    client_.create(path_, {}, {.mode = create_mode::persistent, .create_parents = true}, ec);
    if (ec && ec != errc::node_exists) detail::throw_if(ec, path_, ec.message() + " while setting the barrier " + printable_path(path_));
}

void distributed_barrier::remove_barrier() {
    boost::system::error_code ec;
    client_.remove(path_, {}, ec);
    if (ec && ec != errc::no_node) detail::throw_if(ec, path_, ec.message() + " while removing the barrier " + printable_path(path_));
}

bool distributed_barrier::is_set() { return client_.exists(path_).has_value(); }

boost::asio::any_io_executor distributed_barrier::callback_executor() const { return state_->callbacks; }

void distributed_barrier::start_wait(std::chrono::milliseconds timeout, wait_done done) {
    if (timeout.count() < 0) return done(make_error_code(errc::invalid_argument), false);
    (void)state_->begin(timeout, std::move(done));
}

bool distributed_barrier::wait(std::optional<std::chrono::milliseconds> timeout) {
    if (timeout && timeout->count() < 0)
        throw zkr::error(make_error_code(errc::invalid_argument), path_, "barrier wait timeout " + std::to_string(timeout->count()) + " ms is negative");
    auto result = std::make_shared<std::promise<std::pair<boost::system::error_code, bool>>>();
    auto answer = result->get_future();
    // The sync form times itself (its timer would run on the callback thread, which may be the
    // caller's): the wait's own timer never ends it, but for a zero timeout's one check.
    const auto op = state_->begin(timeout && timeout->count() == 0 ? *timeout : detail::barrier_forever,
                                  [result](const boost::system::error_code& ec, bool passed) { result->set_value({ec, passed}); });
    if (timeout && timeout->count() > 0 && answer.wait_for(*timeout) == std::future_status::timeout)
        op->end({}, false);  // (unless the outcome came first: then it stands)
    const auto [ec, passed] = answer.get();
    if (ec == errc::closed) detail::throw_if(ec, path_, "the client was closed while waiting on the barrier " + printable_path(path_));
    detail::throw_if(ec, path_, ec.message() + " while waiting on the barrier " + printable_path(path_));
    return passed;
}

void distributed_barrier::wait_on_barrier() { (void)wait(std::nullopt); }

bool distributed_barrier::wait_on_barrier(std::chrono::milliseconds timeout) { return wait(timeout); }

}  // namespace zkr
