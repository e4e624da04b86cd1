// The one predecessor-watch driver behind every lock and semaphore recipe.
#pragma once

#include "hold.hpp"
#include "lock_rule.hpp"

#include <zkr/client.hpp>
#include <zkr/detail/request.hpp>
#include <zkr/detail/unique_function.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

namespace zkr::detail {

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
    unique_function<void()> on_waiting;
    /// The node names on this path that the acquiring owner holds already (lock_rule::decide).
    std::vector<std::string> held_by_us;
    /// If given, our node takes this sequence (a plain ephemeral create, not a sequential one): a
    /// read-write lock's downgrade places its read node at its writer's.
    std::optional<std::uint32_t> sequence;
    /// If given, this acquire is a step of a larger one (a Curator-layout semaphore's inner mutex
    /// then leases, a multi-lock's async acquire of its members) that began when the driver's
    /// cancellations() was this: a cancel() since then ends it at once with `cancelled` (a
    /// cancel() between two steps would otherwise find no acquire to end).
    std::optional<std::uint64_t> begun_at_cancellation;
};

/// Acquires holds on one lock path with one rule. Thread-safe; its work runs on the network thread.
class lock_driver : public std::enable_shared_from_this<lock_driver> {
public:
    lock_driver(zkr::client& c, std::string lock_path, std::shared_ptr<const lock_rule> rule);

    /// done runs on the network thread with (ec, hold) (see acquire_request for the timeout); a
    /// null hold without error means the timeout passed.
    void acquire(acquire_request req, acquire_handler done);
    /// The blocking form, for the sync recipe APIs.
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
    /// How many times cancel() was called (acquire_request::begun_at_cancellation).
    std::uint64_t cancellations();

    /// The message of an acquire that failed with ec: says to call client::start() when that is
    /// what was missing, and names the other kind's node on a lock_kind_mismatch.
    std::string acquire_failure(const boost::system::error_code& ec, std::string_view what) const;

    /// Lock nodes in queue order (full paths, without namespace).
    std::vector<std::string> participants(boost::system::error_code& ec);

    zkr::client& get_client() noexcept { return client_; }
    const std::string& path() const noexcept { return *path_; }
    /// The lock path, and the path of a node made with the rule's own name and no fixed sequence
    /// (most acquires), made once: each acquire's machine shares them.
    const std::shared_ptr<const std::string>& shared_path() const noexcept { return path_; }
    const std::shared_ptr<const std::string>& default_create_path() const noexcept { return default_create_path_; }
    const lock_rule& rule() const noexcept { return *rule_; }
    /// Its holds from now on read their node's data for a revocation request (before any acquire:
    /// a recipe's constructor calls it).
    void make_revocable() noexcept { revocable_ = true; }
    bool revocable() const noexcept { return revocable_; }

private:
    std::string kind_mismatch_message(std::string_view what) const;
    /// The engines of acquires still in flight, for cancel() (which forgets them) and reevaluate().
    std::vector<std::shared_ptr<lock_engine>> live_engines(bool forget = false);
    std::mutex pending_mutex_;
    std::vector<std::weak_ptr<lock_engine>> pending_;
    std::uint64_t cancellations_ = 0;  // under pending_mutex_, with pending_
    zkr::client& client_;
    std::shared_ptr<const std::string> path_;  // never null
    std::shared_ptr<const lock_rule> rule_;
    std::shared_ptr<const std::string> default_create_path_;
    std::atomic<bool> revocable_{false};
};

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
