// The one predecessor-watch driver behind every lock and semaphore recipe.
#pragma once

#include <zkr/client.hpp>
#include <zkr/detail/listener_registry.hpp>
#include <zkr/detail/request.hpp>
#include <zkr/hold_state.hpp>
#include <zkr/lock_rule.hpp>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

namespace zkr::detail {

class lock_engine;  // carries out the lock machine's actions; recipes/lock_engine.hpp

/// One hold as its recipe sees it: our node, its fencing token, our session, and the hold's
/// state. The lock engine behind it decides on the network thread (recipes/lock_machine.hpp) and
/// publishes each state here; listeners run on the client's callback thread.
class hold : public std::enable_shared_from_this<hold> {
public:
    hold(zkr::client& c, std::string node_path, std::int64_t fencing_token, std::int64_t session_id,
         std::shared_ptr<lock_engine> engine);
    ~hold();

    const std::string& node_path() const noexcept { return node_path_; }
    std::int64_t fencing_token() const noexcept { return token_; }
    std::int64_t session_id() const noexcept { return session_; }
    /// The state the engine acts on (it changes on the network thread).
    hold_state state() const noexcept { return state_.load(); }
    /// The state a caller may act on: as state(), except that held reads doubtful while the
    /// connection has been silent past the C client's receive timeout. A process that was paused
    /// (SIGSTOP, a VM or GC pause) may run again before its network thread has seen the silence,
    /// and its session may have expired meanwhile: it must not act as the holder then.
    hold_state caller_state() const noexcept;
    /// Stop is requested once the hold ends: lost (session ended, node deleted or written by
    /// someone else, client closed) or released. Requested on the client's callback thread, so
    /// std::stop_callback functions run there, never on the network thread. Doubt (connection
    /// suspended) does not request it: the hold may come back.
    std::stop_token stop_token() const noexcept;

    /// fn runs on the callback thread after each state change. listening, if given, is asked on the
    /// network thread first: while it says no, nothing is posted (a recipe attaches its listener
    /// hub to every hold; most have no user listener, and a post wakes the callback thread twice
    /// per lock cycle).
    std::uint64_t add_listener(std::function<void(hold_state)> fn, std::function<bool()> listening = {});
    void remove_listener(std::uint64_t id);

    /// A multi that commits only while this hold's node exists on this hold's session.
    std::vector<multi_result> guarded_multi(std::vector<multi_op> ops, boost::system::error_code& ec);

private:
    friend class lock_engine;
    friend class lock_driver;  // hands a release to the engine
    // Network thread only: the engine publishes the machine's decision.
    void set_state(hold_state s);
    void request_stop();

    zkr::client& client_;
    std::string node_path_;
    std::int64_t token_;
    std::int64_t session_;
    // Keeps the engine (and with it the machine) alive while the recipe keeps this hold; the
    // engine holds only a weak pointer back.
    std::shared_ptr<lock_engine> engine_;
    std::atomic<hold_state> state_{hold_state::held};
    // Only a hold whose token was taken requests its stop (a post to the callback thread per
    // release would wake it once per lock cycle, which W2 showed costs 8%). stop_wanted_ and
    // state_ are seq_cst: of a token taken while the hold ends, at least one side sees the other.
    mutable std::stop_source stop_;
    mutable std::atomic<bool> stop_wanted_{false};
    struct listener {
        std::function<void(hold_state)> fn;
        std::function<bool()> listening;
    };
    listener_registry<listener> listeners_;
};

using acquire_handler = unique_function<void(const boost::system::error_code&, std::shared_ptr<hold>)>;

struct acquire_request {
    /// nullopt waits for ever; zero tries once and never queues (the node is removed at once when
    /// it does not hold).
    std::optional<std::chrono::milliseconds> timeout;
    std::string data;
    /// The node's name before the protect prefix and sequence; empty: the rule's node_name().
    std::string node_name;
    /// If given, runs on the network thread once our node exists, with its path.
    std::function<void(const std::string&)> on_queued;
    /// If given, runs on the network thread whenever the attempt starts waiting for other nodes.
    std::function<void()> on_waiting;
};

/// Acquires holds on one lock path with one rule. Thread-safe; its work runs on the network thread.
class lock_driver : public std::enable_shared_from_this<lock_driver> {
public:
    lock_driver(zkr::client& c, std::string lock_path, std::shared_ptr<const lock_rule> rule);

    /// timeout: nullopt waits for ever; zero tries once and never queues (the node is removed
    /// at once when it does not hold). done runs on the network thread with (ec, hold); a null
    /// hold without error means the timeout passed.
    /// on_queued(node_path), if given, runs on the network thread once our node exists.
    void acquire(std::optional<std::chrono::milliseconds> timeout, std::string data, acquire_handler done,
                 std::function<void(const std::string&)> on_queued = {});
    void acquire(acquire_request req, acquire_handler done);
    /// Blocking forms, for the sync recipe APIs.
    std::shared_ptr<hold> acquire_sync(std::optional<std::chrono::milliseconds> timeout, std::string data,
                                       boost::system::error_code& ec,
                                       std::function<void(const std::string&)> on_queued = {});
    std::shared_ptr<hold> acquire_sync(acquire_request req, boost::system::error_code& ec);
    /// Returns once the delete has its outcome (then the lock is free for every process), or at
    /// once with connection_loss when there is no connection (the node is deleted once it returns).
    /// Without a connection it thus waits at most until the loss is noticed (the C client's receive
    /// timeout, 2/3 of the session timeout, when the server stopped answering with the delete in
    /// flight).
    boost::system::error_code release_sync(const std::shared_ptr<hold>& h);
    /// Starts the release at once; done(ec) runs on the network thread once the delete has its
    /// outcome (as release_sync's). Requests of one session reach the server in order, so an
    /// acquire started after this call is queued after the delete.
    void release(const std::shared_ptr<hold>& h, unique_function<void(const boost::system::error_code&)> done);

    /// The rule's limit changed (a semaphore's shared count): every waiter decides again from
    /// what it knows, and holds at once if it now may.
    void reevaluate();

    /// Ends every acquisition of this driver still in flight with `cancelled`; their nodes are
    /// removed. Holds already granted are not touched.
    void cancel();

    /// The message of an acquire that failed with ec: says to call client::start() when that is
    /// what was missing, and names the other kind's node on a lock_kind_mismatch.
    std::string acquire_failure(const boost::system::error_code& ec, std::string_view what) const;

    /// Lock nodes in queue order (full paths, without namespace).
    std::vector<std::string> participants(boost::system::error_code& ec);

    zkr::client& get_client() noexcept { return client_; }
    const std::string& path() const noexcept { return path_; }
    const lock_rule& rule() const noexcept { return *rule_; }

private:
    std::string kind_mismatch_message(std::string_view what) const;
    /// The engines of acquires still in flight, for cancel() (which forgets them) and reevaluate().
    std::vector<std::shared_ptr<lock_engine>> live_engines(bool forget = false);
    std::mutex pending_mutex_;
    std::vector<std::weak_ptr<lock_engine>> pending_;
    zkr::client& client_;
    std::string path_;
    std::shared_ptr<const lock_rule> rule_;
};

/// The end of every async release (a mutex's, a fair lock's, a lease's): releases h, if given, at
/// once, and hands the delete's outcome to handler on its associated executor (default: the
/// client's callback thread). Without a hold there is nothing to send: handler gets ec (clear for
/// a nested level, or why there was nothing), posted there.
template <typename Handler>
void release_then_complete(lock_driver& driver, std::shared_ptr<hold> h, boost::system::error_code ec, Handler handler) {
    // Posted: without a hold, or with a closed client, the outcome is known inside this call.
    auto complete = completion_on<true>(std::move(handler), callback_executor(detail::connection_of(driver.get_client())));
    if (!h) return complete(ec);
    driver.release(h, [complete = std::move(complete)](const boost::system::error_code& e) mutable { complete(e); });
}

/// Releases h (when given) and tells nobody but the log: the release of a destructor or of
/// unlock(), which must never throw through a guard. Waits for the delete only while connected (see
/// lock_driver::release_sync); what went wrong is logged (lock_lost, a pending delete, ...).
void release_quietly(lock_driver& driver, const std::shared_ptr<hold>& h) noexcept;
/// The end of every throwing release(): nothing for a clear ec; else zkr::error with not_held as
/// the message of lock_not_held (a misuse), and "<reason> while releasing <what>" otherwise.
void throw_release_error(const boost::system::error_code& ec, std::string_view path, std::string_view not_held,
                         std::string_view what);
/// Logs the outcome ec of a release of `node` that no caller hears (a destructor, unlock()).
void log_quiet_release(zkr::client& c, const std::string& node, const boost::system::error_code& ec) noexcept;
/// A stop token whose stop was requested: the token of a hold that is not there.
std::stop_token stopped_token() noexcept;

/// "<host name>:<pid>", the default data of lock and lease nodes.
std::string default_node_data();

/// Throws zkr::error (invalid_path) when the lock path is not valid, or (with no namespace) lies
/// in ZooKeeper's system tree /zookeeper.
void check_lock_path(const std::string& path, const std::string& name_space);

}  // namespace zkr::detail
