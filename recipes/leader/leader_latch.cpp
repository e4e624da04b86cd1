// The leader latch: a lock core on Curator's "latch-" nodes, acquired untimed in the background;
// each grant is a term, each loss (or, with lose_on_doubt, doubt) ends it and queues again.
#include <zkr/leader_latch.hpp>

#include "../../src/listener_registry.hpp"
#include "../core/timed_waits.hpp"
#include "election.hpp"

#include <zkr/client.hpp>
#include <zkr/path.hpp>

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <optional>

namespace zkr {

using boost::system::error_code;

// An election whose terms are told to listeners and awaited.
struct leader_latch::impl : detail::election, std::enable_shared_from_this<impl> {
    impl(client& c, std::string path, std::string participant, options o)
        : election(c, std::move(path), queue_kind::latch, std::move(participant), "leader_latch"),
          opts(o),
          callbacks(detail::callback_executor(detail::connection_of(c))),
          waits(std::make_shared<detail::timed_waits>(callbacks)) {}

    const options opts;
    const boost::asio::any_io_executor callbacks;
    std::condition_variable changed_cv;
    error_code ended_by;                 // what ended the election (a closed client, another kind of lock)
    detail::listener_registry<std::function<void(bool)>> listeners;
    // The async waits for leadership (async_await_leadership): added and taken under m.
    const std::shared_ptr<detail::timed_waits> waits;

    bool ends_term(hold_state s) const {
        return s == hold_state::lost || s == hold_state::released || s == hold_state::releasing ||
               (opts.lose_on_doubt && s == hold_state::doubtful);
    }

    bool leads() const { return term && term->caller_state() == hold_state::held; }

    // What a wait for leadership hears now, if anything (under m): leading, or the error that ends
    // every wait (closed, the election ended).
    std::optional<std::pair<error_code, bool>> verdict() const {
        if (now == phase::closed) return std::pair{make_error_code(errc::closed), false};
        if (ended_by) return std::pair{ended_by, false};
        if (leads()) return std::pair{error_code{}, true};
        return std::nullopt;
    }

    // Completes the async waits once there is a verdict; their handlers are posted (completion_on).
    void settle() {
        std::vector<await_done> done;
        std::optional<std::pair<error_code, bool>> v;
        {
            std::lock_guard lock(m);
            v = verdict();
            if (!v) return;
            done = waits->take_all();
        }
        for (auto& d : done) d(v->first, v->second);
    }

    // Queues an untimed acquire (called under m, so that close() cancels it). Its outcome comes to
    // joined() on the callback thread.
    void join() { core.join_in_background(id, weak_from_this(), &impl::joined); }

    void joined(const error_code& ec, std::shared_ptr<detail::hold> h) {
        std::unique_lock lock(m);
        if (!wanted(lock, ec, h)) return;
        if (ec) {
            ended_by = ec;
            lock.unlock();
            core.driver().get_client().logger()->error("leader_latch {}: the election ended: {}", printable_path(core.path()), ec.message());
            changed_cv.notify_all();
            settle();
            return;
        }
        term = h;
        lock.unlock();
        h->add_listener([weak = weak_from_this(), hw = std::weak_ptr<detail::hold>(h)](hold_state s) {
            auto self = weak.lock();
            auto hold = hw.lock();
            if (self && hold) self->on_state(hold, s);
        });
        detail::observe_leadership(*h, core.path(), true);
        if (ends_term(h->state())) return end_term(h);  // ended before the listener was there
        tell(true);
        changed_cv.notify_all();
        settle();
    }

    void on_state(const std::shared_ptr<detail::hold>& h, hold_state s) {
        changed_cv.notify_all();
        if (ends_term(s)) return end_term(h);
        settle();  // doubtful, then held again: it leads
    }

    // The term of h is over: tell, release what is left of it, and queue again.
    void end_term(const std::shared_ptr<detail::hold>& h) {
        {
            std::lock_guard lock(m);
            if (term != h) return;  // told already
            term.reset();
            if (now == phase::started) join();
        }
        detail::observe_leadership(*h, core.path(), false);
        // Doubt (lose_on_doubt): the node is still ours; give it up (deleted once connected).
        if (h->state() == hold_state::doubtful || h->state() == hold_state::held) core.release_quietly(h);
        tell(false);
        changed_cv.notify_all();
    }

    void tell(bool leader) {
        for (const auto& fn : listeners.snapshot()) {
            try {
                fn(leader);
            } catch (const std::exception& e) {
                core.driver().get_client().logger()->error("leader_latch {}: a listener threw: {}", printable_path(core.path()), e.what());
            }
        }
    }
};

leader_latch::leader_latch(client& c, std::string path, std::string id) : leader_latch(c, std::move(path), std::move(id), options{}) {}

leader_latch::leader_latch(client& c, std::string path, std::string id, options o)
    : impl_(std::make_shared<impl>(c, std::move(path), std::move(id), o)) {}

leader_latch::~leader_latch() {
    try {
        if (impl_->started()) close();
    } catch (const std::exception& e) {
        impl_->core.driver().get_client().logger()->warn("leader_latch {}: close on destruction: {}", printable_path(impl_->core.path()),
                                                          e.what());
    }
    impl_->listeners.take_all();  // no new call of a user listener after this object is gone
}

void leader_latch::start() {
    std::lock_guard lock(impl_->m);
    impl_->begin_start();
    impl_->join();
}

void leader_latch::close() {
    std::shared_ptr<detail::hold> h;
    {
        std::lock_guard lock(impl_->m);
        impl_->begin_close();
        h = std::move(impl_->term);
    }
    impl_->changed_cv.notify_all();
    impl_->settle();
    if (!h) return;
    detail::observe_leadership(*h, impl_->core.path(), false);
    impl_->core.release_quietly(h);
    // The term ended: listeners hear it on the callback thread, as every other time.
    boost::asio::post(impl_->callbacks, [weak = std::weak_ptr<impl>(impl_)] {
        if (auto self = weak.lock()) self->tell(false);
    });
}

boost::asio::any_io_executor leader_latch::callback_executor() const { return impl_->callbacks; }

void leader_latch::start_await(const std::shared_ptr<impl>& self, std::chrono::milliseconds timeout, await_done done) {
    std::unique_lock lock(self->m);
    const auto refuse = [&](error_code ec) {
        lock.unlock();
        done(ec, false);
    };
    if (timeout.count() < 0) return refuse(make_error_code(errc::invalid_argument));
    if (self->now == impl::phase::idle) return refuse(make_error_code(errc::invalid_argument));  // before start()
    if (const auto v = self->verdict()) {
        lock.unlock();
        return done(v->first, v->second);
    }
    if (timeout.count() == 0) return refuse({});
    self->waits->add(timeout, std::move(done));
}

bool leader_latch::has_leadership() const {
    std::lock_guard lock(impl_->m);
    return impl_->leads();
}

void leader_latch::await_leadership() {
    while (!await_leadership(std::chrono::hours(1))) {
    }
}

bool leader_latch::await_leadership(std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    std::unique_lock lock(impl_->m);
    if (impl_->now == impl::phase::idle) impl_->misuse("await_leadership() before start()");
    for (;;) {
        if (impl_->now == impl::phase::closed)
            throw zkr::error(make_error_code(errc::closed), impl_->core.path(), "leader_latch: closed while awaiting leadership");
        if (impl_->ended_by)
            throw zkr::error(impl_->ended_by, impl_->core.path(),
                             impl_->core.driver().acquire_failure(impl_->ended_by, "leadership"));
        if (impl_->leads()) return true;
        const auto now = std::chrono::steady_clock::now();
        if (now >= until) return false;
        // A bounded wait: a hold that reads doubtful while the connection is silent reads held
        // again without an event.
        impl_->changed_cv.wait_for(lock, std::min<std::chrono::steady_clock::duration>(until - now, std::chrono::milliseconds(100)));
    }
}

std::int64_t leader_latch::fencing_token() const { return impl_->fencing_token(); }

std::stop_token leader_latch::stop_token() const {
    std::lock_guard lock(impl_->m);
    return impl_->term ? impl_->term->stop_token() : detail::stopped_token();
}

hold_state leader_latch::state() const { return impl_->state(); }

std::vector<multi_result> leader_latch::guarded_multi(std::vector<multi_op> ops) {
    return impl_->core.guarded_multi(impl_->current_term(), std::move(ops));
}

std::vector<multi_result> leader_latch::guarded_multi(std::vector<multi_op> ops, boost::system::error_code& ec) {
    return detail::lock_core::guarded_multi(impl_->current_term(), std::move(ops), ec);
}

state_subscription leader_latch::add_listener(std::function<void(bool)> listener) {
    if (!listener) throw zkr::error(make_error_code(errc::invalid_argument), impl_->core.path(), "leader_latch: the listener is empty");
    const auto id = impl_->listeners.add(std::move(listener));
    return state_subscription([weak = std::weak_ptr<impl>(impl_), id] {
        if (auto self = weak.lock()) self->listeners.remove(id);
    });
}

const std::string& leader_latch::id() const noexcept { return impl_->id; }

std::vector<std::string> leader_latch::participants() const { return impl_->participants(); }

std::string leader_latch::leader() const { return impl_->leader(); }

}  // namespace zkr
