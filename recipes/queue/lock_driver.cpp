// The driver: starts an engine per acquire, and the release and cancel that reach it.
#include "lock_driver.hpp"

#include "lock_engine.hpp"

#include "../../src/pooled.hpp"
#include "../../src/sync_result.hpp"
#include <zkr/path.hpp>

#include <boost/asio/dispatch.hpp>
#include <spdlog/spdlog.h>

#include <unistd.h>


namespace zkr {

namespace detail {

using boost::system::error_code;

std::string default_node_data() {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    return std::string(host) + ":" + std::to_string(::getpid());
}

std::stop_token stopped_token() noexcept {
    static const std::stop_source stopped = [] {
        std::stop_source s;
        s.request_stop();
        return s;
    }();
    return stopped.get_token();
}

void log_quiet_release(zkr::client& c, const std::string& node, const error_code& ec) noexcept {
    if (!ec) return;
    try {
        if (ec == errc::lock_lost)
            c.logger()->warn("the hold on {} had ended before its release (session ended, client closed, or the node "
                             "deleted by someone else)", node);
        else if (ec == errc::lock_not_held)
            c.logger()->error("release of {} by an owner that does not hold it: nothing released", node);
        else if (!is_retryable(ec))  // a pending delete was logged when it failed
            c.logger()->warn("releasing {}: {}", node, ec.message());
    } catch (...) {  // a logger's sink may throw; a release reports nothing then
    }
}

void release_quietly(lock_driver& driver, const std::shared_ptr<hold>& h) noexcept {
    if (!h) return;
    error_code ec;
    try {
        ec = driver.release_sync(h);
    } catch (const std::exception&) {  // out of memory: the node stays with the session
        ec = make_error_code(errc::system_error);
    }
    // Released after the client itself was closed (a service shutting down closes its client
    // while a term or a guard still ends), or while it closes (closed: the release was refused
    // before the close reached the hold): the node goes with the session; nothing to warn of.
    if ((ec == errc::lock_lost && h->cause() == lost_cause::client_closed) || ec == errc::closed) {
        try {
            driver.get_client().logger()->debug("{}: the client was closed first; the node went with its session", h->node_path());
        } catch (...) {
        }
        return;
    }
    log_quiet_release(driver.get_client(), h->node_path(), ec);
}

void check_lock_path(const std::string& path, const std::string& name_space) {
    if (auto e = path_error(path))
        throw zkr::error(make_error_code(errc::invalid_path), path, "invalid lock path \"" + printable_path(path) + "\": " + *e);
    if (path == "/") throw zkr::error(make_error_code(errc::invalid_path), path, "the root \"/\" cannot be a lock path");
    // Without a namespace the path is the server's own: /zookeeper is its system tree (quotas,
    // config), where lock nodes have no business.
    if (name_space.empty() && (path == "/zookeeper" || path.rfind("/zookeeper/", 0) == 0))
        throw zkr::error(make_error_code(errc::invalid_path), path,
                         "invalid lock path \"" + printable_path(path) + "\": /zookeeper is ZooKeeper's own system tree");
}

// ---------------------------------------------------------------------------------------------
// lock_driver

lock_driver::lock_driver(zkr::client& c, std::string lock_path, std::shared_ptr<const lock_rule> rule)
    : client_(c), path_(std::make_shared<const std::string>(std::move(lock_path))), rule_(std::move(rule)) {
    check_lock_path(path(), c.options().name_space);
    default_create_path_ = std::make_shared<const std::string>(join_path(path(), rule_->node_name()));
}

void lock_driver::acquire(acquire_request req, acquire_handler done) {
    if (client_.state() == connection_state::closed || !is_started(detail::connection_of(client_))) {
        // The network thread is gone, or has not run yet (start() was never called; its timers
        // would never fire): complete here, on the caller's thread, as a plain operation would.
        done(make_error_code(client_.state() == connection_state::closed ? errc::closed : errc::not_connected), nullptr);
        return;
    }
    std::shared_ptr<lock_engine> e;
    {
        std::lock_guard lock(pending_mutex_);
        // Under the lock that cancel() takes: a step of a larger acquire cancelled meanwhile
        // never starts.
        if (!req.begun_at_cancellation || *req.begun_at_cancellation == cancellations_) {
            e = make_pooled<lock_engine>(shared_from_this(), std::move(req), std::move(done));  // (one per acquire)
            std::erase_if(pending_, [](const auto& w) { return w.expired(); });
            pending_.push_back(e);
        }
    }
    if (!e) return done(make_error_code(errc::cancelled), nullptr);  // (done was not moved)
    // Refused once the client closes: the engine, never started, dies here with the last
    // reference and answers closed.
    run_on_network(detail::connection_of(client_), [e] { e->start(); });
}

std::shared_ptr<hold> lock_driver::acquire_sync(acquire_request req, error_code& ec) {
    auto result = make_pooled<sync_result<std::pair<error_code, std::shared_ptr<hold>>>>();
    // Waiting behind a holder lasts as long as the holder likes: no point spinning through it.
    if (req.on_waiting)
        req.on_waiting = [result, chained = std::move(req.on_waiting)]() mutable {
            result->stop_spinning();
            chained();
        };
    else
        req.on_waiting = [result] { result->stop_spinning(); };  // (kept inside the function: no allocation)
    acquire(std::move(req), [result](const error_code& e, std::shared_ptr<hold> h) { result->set(e, std::move(h)); });
    auto& [e, h] = result->get(client_.options().blocking_call_spin);
    ec = e;
    return std::move(h);
}

std::vector<std::shared_ptr<lock_engine>> lock_driver::live_engines(bool forget) {
    std::vector<std::shared_ptr<lock_engine>> live;
    std::lock_guard lock(pending_mutex_);
    for (auto& w : pending_)
        if (auto e = w.lock()) live.push_back(std::move(e));
    if (forget) {  // cancel(): under the same lock, so an acquire started now is not lost uncancelled
        pending_.clear();
        ++cancellations_;
    }
    return live;
}

void lock_driver::reevaluate() {
    auto live = live_engines();
    if (live.empty() || client_.state() == connection_state::closed) return;
    run_on_network(detail::connection_of(client_), [live = std::move(live)] {
        for (const auto& e : live) e->feed(lock_in::reevaluate{});
    });  // (refused once the client closes: the close itself ends every acquire)
}

error_code lock_driver::release_sync(const std::shared_ptr<hold>& h) {
    // Wait for the delete's outcome: when release() returns, the lock is free for everyone, as a
    // user of std::mutex expects (another process's try_lock then succeeds). Returning once the
    // delete is queued would save a round trip per cycle but break that expectation; callers who
    // want that trade use the async form (interprocess_mutex::async_release). docs/performance.md.
    auto result = make_pooled<sync_result<error_code>>();
    release(h, [result](const error_code& ec) { result->set(ec); });
    return result->get(client_.options().blocking_call_spin);
}

void lock_driver::release(const std::shared_ptr<hold>& h, unique_function<void(const error_code&)> done) {
    // The close may begin between any check here and the network thread: the outcome is shared
    // with the step, which answers it there, or this thread does when the step is refused.
    auto outcome = make_pooled<unique_function<void(const error_code&)>>(std::move(done));  // (one per release)
    if (!run_on_network(detail::connection_of(client_), [e = h->engine_, outcome] { e->release(std::move(*outcome)); }))
        (*outcome)(make_error_code(h->state() == hold_state::lost ? errc::lock_lost : errc::closed));
}

std::uint64_t lock_driver::cancellations() {
    std::lock_guard lock(pending_mutex_);
    return cancellations_;
}

void lock_driver::cancel() {
    auto live = live_engines(/*forget=*/true);
    if (live.empty() || client_.state() == connection_state::closed) return;
    run_on_network(detail::connection_of(client_), [live = std::move(live)] {
        for (const auto& e : live) e->feed(lock_in::cancel{});
    });  // (refused once the client closes: the close itself ends every acquire)
}

std::string lock_driver::acquire_failure(const error_code& ec, std::string_view what) const {
    if (ec == errc::not_connected && !is_started(detail::connection_of(client_)))
        return "the client was never started: call client::start() before acquiring";
    if (ec == errc::lock_kind_mismatch) return kind_mismatch_message(what);
    if (ec == errc::not_connected)
        return "not connected to ZooKeeper at " + client_.options().connect_string + " while acquiring " + std::string(what) +
               " (a try does not wait for a connection, a timed acquire waits at most its timeout: after start(), call "
               "block_until_connected() before the first acquire)";
    return ec.message() + " while acquiring " + std::string(what);
}

std::string lock_driver::kind_mismatch_message(std::string_view what) const {
    std::string m = "refused to acquire " + std::string(what) + " of a " + std::string(rule_->kind()) + " on " + path() + ": ";
    try {
        error_code ec;
        const auto r = client_.get_children(path(), ec);
        if (const auto node = ec ? std::nullopt : rule_->queue(r.children).other_kind) {
            const auto* kind = kind_of_node(*node);  // (other_kind is always one of the kinds)
            if (kind && kind->id == queue_kind::curator_semaphore)
                return m + "node " + join_path(path(), *node) +
                       " holds the leases of a semaphore in Curator's layout, which do not count against this lock; use one "
                       "kind and layout per path (semaphore_options::layout = semaphore_layout::curator in every zkr process "
                       "that shares a semaphore with Curator)";
            if (kind) m += "node " + join_path(path(), *node) + " is a " + std::string(kind->name) + "'s " + std::string(kind->node_role) + ", ";
        }
    } catch (const std::exception&) {
        // The node's name is a courtesy; the error stands without it.
    }
    // The command line has no namespace: it names the path as the server knows it.
    const auto& ns = client_.options().name_space;
    const auto server_path = ns.empty() ? path() : "/" + ns + path();
    return m + "and the two kinds do not exclude each other; use one kind per path (zkr status " + server_path + " lists both)";
}

void throw_release_error(const error_code& ec, std::string_view path, std::string_view not_held, std::string_view what) {
    if (!ec) return;  // (before the message: a release that went well builds none)
    if (ec == errc::lock_not_held) detail::throw_if(ec, path, not_held);
    detail::throw_if(ec, path, ec.message() + " while releasing " + std::string(what));
}

std::vector<std::string> lock_driver::participants(error_code& ec) {
    auto r = client_.get_children(path(), ec);
    if (ec == errc::no_node) {
        ec = {};
        return {};
    }
    std::vector<std::string> out;
    for (auto& name : rule_->queue(std::move(r.children)).sorted) out.push_back(join_path(path(), name));
    return out;
}

}  // namespace detail
}  // namespace zkr
