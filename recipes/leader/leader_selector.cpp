// The leader selector: a lock core on mutex nodes (Curator's LeaderSelector), acquired untimed in
// the background; each grant runs take_leadership on a thread of its own, and its return ends the
// term (the node deleted, then queued again with options::requeue).
#include <zkr/leader_selector.hpp>

#include "election.hpp"

#include <zkr/client.hpp>
#include <zkr/path.hpp>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include <thread>

namespace zkr {

using boost::system::error_code;

// An election whose terms run take_leadership on a thread of their own. Its nodes are a mutex's
// (Curator's LeaderSelector). A write to the leader's node (a revocation request, an operator's)
// never starts a second term behind it: no rule takes a data change for a release.
struct leader_selector::impl : detail::election, std::enable_shared_from_this<impl> {
    impl(client& c, std::string path, std::function<void(std::stop_token)> fn, std::string participant, options o)
        : election(c, std::move(path), queue_kind::mutex, std::move(participant), "leader_selector"),
          take_leadership(std::move(fn)),
          opts(o) {
        if (!take_leadership) misuse("take_leadership is empty");
    }

    const std::function<void(std::stop_token)> take_leadership;
    const options opts;
    bool queued = false;                 // an acquire is in flight
    std::stop_source term_stop;          // the running term's token (term: its hold)
    std::thread runner;                  // runs take_leadership (the last term's, once it returned)
    int failures_in_a_row = 0;           // terms whose take_leadership threw, since one returned
    const boost::asio::any_io_executor callbacks = detail::callback_executor(detail::connection_of(core.driver().get_client()));

    auto logger() const { return core.driver().get_client().logger(); }

    // Under m.
    void join() {
        queued = true;
        core.join_in_background(id, weak_from_this(), &impl::joined);
    }

    void joined(const error_code& ec, std::shared_ptr<detail::hold> h) {
        std::unique_lock lock(m);
        queued = false;
        if (!wanted(lock, ec, h)) return;
        if (ec) {
            const auto why = core.driver().acquire_failure(ec, "leadership");
            logger()->error("leader_selector {}: left the election: {}", printable_path(core.path()), why);
            lock.unlock();
            tell_failure(std::make_exception_ptr(zkr::error(ec, core.path(), why)));  // (already on the callback thread)
            return;
        }
        // The last term's thread has returned from take_leadership already (it queued us again).
        if (runner.joinable()) runner.join();
        term = h;
        term_stop = std::stop_source();
        h->add_listener([stop = term_stop, lose_on_doubt = opts.lose_on_doubt](hold_state s) mutable {
            if (s != hold_state::held && (s != hold_state::doubtful || lose_on_doubt)) stop.request_stop();
        });
        // Ended before the listener was there: the term starts stopped.
        const auto s = h->state();
        if (s != hold_state::held && (s != hold_state::doubtful || opts.lose_on_doubt)) term_stop.request_stop();
        detail::observe_leadership(*h, core.path(), true);
        runner = std::thread([self = shared_from_this(), h, token = term_stop.get_token()] { self->run(h, token); });
    }

    // On the term's own thread.
    void run(const std::shared_ptr<detail::hold>& h, std::stop_token token) {
        bool begin = false;
        {
            // A close() (or interrupt_leadership()) that came after the grant but before this
            // thread got here: the call never starts (the check is under m, which close() takes).
            // One that comes just after this check cannot stop the call, only its token.
            std::lock_guard lock(m);
            begin = now == phase::started && !token.stop_requested();
        }
        std::exception_ptr failure;
        std::string what;
        if (begin) try {
            take_leadership(std::move(token));
        } catch (const std::exception& e) {
            failure = std::current_exception();
            what = e.what();
            logger()->error("leader_selector {}: take_leadership threw: {} (the term ends)", printable_path(core.path()), e.what());
        } catch (...) {
            failure = std::current_exception();
            what = "unknown exception";
            logger()->error("leader_selector {}: take_leadership threw (the term ends)", printable_path(core.path()));
        }
        {
            std::lock_guard lock(m);
            term_stop.request_stop();  // has_leadership() reads false from here on
        }
        detail::observe_leadership(*h, core.path(), false, what);
        if (failure)
            boost::asio::post(callbacks, [weak = weak_from_this(), failure] {
                if (auto self = weak.lock()) self->tell_failure(failure);
            });
        // Deleted before a new node is created (one session's requests reach the server in order).
        core.release_quietly(h);
        // The term ends only now, so that nothing queues again (requeue()) before this thread's
        // last step: a grant joins this thread, which must not wait for m then.
        std::lock_guard lock(m);
        term.reset();
        failures_in_a_row = failure ? failures_in_a_row + 1 : 0;
        if (now != phase::started || !opts.requeue) return;
        if (!failure || opts.requeue_backoff.count() <= 0) return join();
        // A take_leadership that keeps throwing must not spin through terms (191 in 3 s were seen).
        requeue_after(backoff());
    }

    // Under m: the wait before queuing again after failures_in_a_row failed terms.
    std::chrono::milliseconds backoff() const {
        auto wait = opts.requeue_backoff;
        for (int i = 1; i < failures_in_a_row && wait < opts.max_requeue_backoff; ++i) wait *= 2;
        return std::min(wait, opts.max_requeue_backoff);
    }

    // Under m: queued (requeue() refuses) from now, joins once `wait` has passed if still started.
    // The timer is never cancelled (no call on it from another thread): a close() meanwhile makes
    // its handler do nothing.
    void requeue_after(std::chrono::milliseconds wait) {
        queued = true;
        auto timer = std::make_shared<boost::asio::steady_timer>(callbacks, wait);
        timer->async_wait([timer, weak = weak_from_this()](const error_code& ec) {
            auto self = weak.lock();
            if (!self) return;
            std::lock_guard lock(self->m);
            self->queued = false;
            if (!ec && self->now == phase::started && !self->term) self->join();
        });
    }

    // On the callback thread.
    void tell_failure(const std::exception_ptr& failure) const {
        if (!opts.on_failure) return;
        try {
            opts.on_failure(failure);
        } catch (const std::exception& e) {
            logger()->error("leader_selector {}: on_failure threw: {}", printable_path(core.path()), e.what());
        } catch (...) {
            logger()->error("leader_selector {}: on_failure threw", printable_path(core.path()));
        }
    }
};

leader_selector::leader_selector(client& c, std::string path, std::function<void(std::stop_token)> take_leadership, std::string id)
    : leader_selector(c, std::move(path), std::move(take_leadership), std::move(id), options{}) {}

leader_selector::leader_selector(client& c, std::string path, std::function<void(std::stop_token)> take_leadership, std::string id,
                                 options o)
    : impl_(std::make_shared<impl>(c, std::move(path), std::move(take_leadership), std::move(id), o)) {}

leader_selector::~leader_selector() {
    std::thread runner;
    try {
        if (impl_->started()) close();
    } catch (const std::exception& e) {
        impl_->logger()->warn("leader_selector {}: close on destruction: {}", printable_path(impl_->core.path()), e.what());
    }
    {
        std::lock_guard lock(impl_->m);
        runner = std::move(impl_->runner);
    }
    if (!runner.joinable()) return;
    // Destroyed from take_leadership itself: it returns after this, and its thread ends the term.
    if (runner.get_id() == std::this_thread::get_id())
        runner.detach();
    else
        runner.join();
}

void leader_selector::start() {
    std::lock_guard lock(impl_->m);
    impl_->begin_start();
    impl_->join();
}

void leader_selector::requeue() {
    std::lock_guard lock(impl_->m);
    if (impl_->now != impl::phase::started) impl_->misuse("requeue() of a selector that is not started, or closed");
    if (impl_->queued || impl_->term) impl_->misuse("requeue() while already queued or leading");
    impl_->join();
}

void leader_selector::close() {
    std::lock_guard lock(impl_->m);
    impl_->begin_close();
    impl_->term_stop.request_stop();
}

void leader_selector::interrupt_leadership() {
    std::lock_guard lock(impl_->m);
    if (impl_->term) impl_->term_stop.request_stop();
}

bool leader_selector::has_leadership() const {
    std::lock_guard lock(impl_->m);
    return impl_->term && !impl_->term_stop.stop_requested() && impl_->term->caller_state() == hold_state::held;
}

std::int64_t leader_selector::fencing_token() const { return impl_->fencing_token(); }

hold_state leader_selector::state() const { return impl_->state(); }

const std::string& leader_selector::id() const noexcept { return impl_->id; }

std::vector<std::string> leader_selector::participants() const { return impl_->participants(); }

std::string leader_selector::leader() const { return impl_->leader(); }

}  // namespace zkr
