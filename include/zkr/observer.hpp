/// @file
/// What a client and its recipes are doing, as events for tracing and metrics: the counterpart of
/// Curator's TracerDriver and AdvancedTracerDriver. Set client_options::observer.
#pragma once

#include <zkr/connection_state.hpp>

#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace zkr {

/// A ZooKeeper operation's kind.
enum class operation_kind { create, remove, exists, get_data, set_data, get_children, multi };

/// "create", "remove", "exists", "get_data", "set_data", "get_children" or "multi".
std::string_view to_string(operation_kind k) noexcept;

/// One ZooKeeper operation, reported once when its caller hears its outcome.
struct operation_event {
    /// What was asked of the server.
    operation_kind kind = operation_kind::exists;
    /// The path as the caller gave it (without the client's namespace); a multi's is empty.
    std::string path;
    /// From the call to its outcome, waits for a connection and retries included.
    std::chrono::nanoseconds latency{0};
    /// The outcome: clear on success; otherwise the error the caller gets.
    boost::system::error_code result;
    /// How many times it was sent again after a retryable failure (retry_policy).
    int retries = 0;
    /// The result is an answer its caller expected, not a failure: a recipe's read or delete of a
    /// node that had already gone (no_node), a normal step of every contended lock. Metrics that
    /// alert on failures should count these apart (prometheus_example counts them as "ok").
    bool expected = false;
    /// When the outcome was known (wall clock: for logs and traces beside other processes').
    std::chrono::system_clock::time_point at = std::chrono::system_clock::now();
};

/// A change of the client's connection state, as its state listeners hear it.
struct session_event {
    /// The state the client is in now.
    connection_state state = connection_state::latent;
    /// The session in use after the change (0 when there is none).
    std::int64_t session_id = 0;
    /// When the change happened (wall clock).
    std::chrono::system_clock::time_point at = std::chrono::system_clock::now();
};

/// What happened to one acquire or hold of a recipe (a lock, a lease, a leader's term).
enum class hold_event_kind {
    queued,      ///< Waits behind others; position says how many are ahead (again when that changes).
    acquired,    ///< Holds; duration is how long the acquire waited.
    doubtful,    ///< The connection was lost while holding: the session (and the hold) may be gone.
    held_again,  ///< Doubt ended: the session survived and the node is still ours; duration is how long it was doubtful.
    lost,        ///< The hold ended without a release; cause says why.
    released,    ///< Released by its holder; duration is how long it was held.
    revocation_requested,  ///< A revocable hold was asked to let go (zkr::revoke); it is still held.
};

/// "queued", "acquired", "doubtful", "held_again", "lost", "released" or "revocation_requested".
std::string_view to_string(hold_event_kind k) noexcept;

/// Why a hold was lost.
enum class lost_cause {
    none,             ///< (not a loss)
    session_ended,    ///< The session expired or was replaced: its ephemeral node is gone.
    node_deleted,     ///< Someone else deleted the hold's node, or closed its session from another handle (see observer).
    doubt,            ///< The connection was lost and the recipe gives up on doubt (lose_on_doubt).
    client_closed,    ///< The client was closed while holding.
};

/// "none", "session_ended", "node_deleted", "doubt" or "client_closed".
std::string_view to_string(lost_cause c) noexcept;

/// One step of one acquire or hold.
struct hold_event {
    /// Which step.
    hold_event_kind kind = hold_event_kind::queued;
    /// The recipe's path (the lock's, the semaphore's, the election's).
    std::string lock_path;
    /// The node's full path (empty only if queued before the node's name was known).
    std::string node_path;
    /// queued: how many participants are ahead of this one.
    std::size_t position = 0;
    /// acquired: the wait since the acquire began; held_again: how long the hold was doubtful;
    /// released: the time held; otherwise zero.
    std::chrono::nanoseconds duration{0};
    /// lost: why.
    lost_cause cause = lost_cause::none;
    /// The fencing token (the node's czxid) once acquired; 0 before.
    std::int64_t fencing_token = 0;
    /// The kind of recipe: "mutex" (a mutex, a fair lock, a leader selector's), "semaphore",
    /// "read-write lock" or "leader latch".
    std::string_view recipe;
    /// When the step happened (wall clock).
    std::chrono::system_clock::time_point at = std::chrono::system_clock::now();
};

/// A change of leadership of a leader_latch or leader_selector.
struct leadership_event {
    /// The election's path.
    std::string path;
    /// True: this participant became leader; false: its term ended.
    bool gained = false;
    /// The term's epoch: its fencing token (rises with every term, whoever leads).
    std::int64_t epoch = 0;
    /// A term that ended: why it was lost (none when the participant gave it up: close(), or the
    /// selector's function returned or threw).
    lost_cause cause = lost_cause::none;
    /// A selector's term that ended because take_leadership threw: the exception's what() (or
    /// "unknown exception"); empty otherwise.
    std::string failure;
    /// When the change happened (wall clock).
    std::chrono::system_clock::time_point at = std::chrono::system_clock::now();
};

/// Hears everything a client and its recipes do. Override what you need; the defaults do nothing.
///
/// Calls come one at a time on the client's callback thread, in the order the events happened,
/// never on the network thread: an observer may block, at the cost of delaying the client's
/// other callbacks (watches, listeners, async completions). An exception it throws is logged and
/// dropped. When no observer is set, no event is made at all.
///
/// On connection loss an observer hears session_event{suspended}, then doubtful for every hold;
/// when the session expires, session_event{lost} and lost (session_ended) for each hold. A
/// session closed by another handle that took it over (same id and password) ends differently:
/// the server deletes the nodes before it drops this client's connection, so a hold may be lost
/// with node_deleted before session_event{lost} arrives.
///
/// A leader's term that ends because its hold ended is heard in one order: the hold's event
/// (lost, with its cause; or released) first, then leadership_event{gained = false}.
class observer {
public:
    virtual ~observer() = default;
    /// Every ZooKeeper operation, once its outcome is known.
    virtual void on_operation(const operation_event&) {}
    /// Every connection state change.
    virtual void on_session(const session_event&) {}
    /// Every step of every acquire and hold of every recipe of the client.
    virtual void on_hold(const hold_event&) {}
    /// Every leadership change of a leader_latch or leader_selector of the client.
    virtual void on_leadership(const leadership_event&) {}
};

}  // namespace zkr
