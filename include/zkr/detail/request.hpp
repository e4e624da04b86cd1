// The one narrow interface between the public client and its connection: a request, its response,
// and a completion that runs on the network thread.
#pragma once

#include <zkr/connection_state.hpp>
#include <zkr/create_options.hpp>
#include <zkr/detail/asio.hpp>
#include <zkr/detail/unique_function.hpp>
#include <zkr/multi_op.hpp>
#include <zkr/observer.hpp>
#include <zkr/results.hpp>
#include <zkr/watch_event.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace zkr::detail {

/// The observer's operation kinds are the requests' kinds.
using op_kind = zkr::operation_kind;

/// Called once on the network thread; must not block. Wrappers hand the event to an executor.
using watch_function = unique_function<void(watch_event)>;

struct request {
    op_kind kind = op_kind::exists;
    std::string path;
    std::string data;
    std::int32_t version = -1;
    create_options create;
    bool guaranteed = false;           ///< remove: keep retrying in the background until done.
    std::vector<multi_op> ops;         ///< multi
    watch_function watch;              ///< exists / get_data / get_children: one-shot watch
    /// Non-zero: run only on this session, never retried on another (fails with session_expired).
    std::int64_t required_session = 0;
    /// Never wait for a connection and never retry: without a connection, or when the connection
    /// drops with the request in flight, fail at once with connection_loss. For a release, which
    /// must not block its caller during an outage (the hold retries on reconnection itself).
    bool fail_fast = false;
    /// no_node is an answer the caller expects, not a failure (a recipe reading or deleting a node
    /// that may have gone): the observer hears it as operation_event::expected.
    bool no_node_is_an_answer = false;
    /// A failure's response carries this request's path (moved out of it): a sync call names the
    /// path in its error without a copy made for every call that succeeds.
    bool path_back_on_error = false;
};

struct response {
    std::string path;
    std::string data;
    zkr::stat stat;
    bool exists = false;
    std::vector<std::string> children;
    std::vector<multi_result> results;
};

/// Runs on the network thread, exactly once.
using completion = unique_function<void(const boost::system::error_code&, response&&)>;

/// What was wrong with a request, for the throwing overloads' message.
struct failure {
    boost::system::error_code ec;
    std::string message;
    explicit operator bool() const noexcept { return static_cast<bool>(ec); }
};

class connection;

/// Checks a request before anything is sent: paths, data size, versions, modes, ttl.
failure check_request(const request& req);
/// Queues the request; thread-safe. The completion never runs inside this call. It runs on the
/// network thread; a request refused because the client is closed (or not started) is answered
/// on the callback thread, unless it was submitted on the network thread, which answers it.
void submit(connection& c, request req, completion done);
/// Blocks the calling thread until the request completes. Must not run on the network thread.
failure run_sync(connection& c, request req, response& out);
/// Why a call failed with not_connected: the client was never started, or what was waited for.
std::string not_connected_reason(connection& c, std::chrono::steady_clock::duration waited);
/// Where handlers without an associated executor run: a thread of the client, never the
/// network thread.
boost::asio::any_io_executor callback_executor(connection& c);
/// Whether start() was called (the network thread runs or has run).
bool is_started(connection& c);
/// For recipes: the client's network thread. Handlers bound to it run inline there; they must
/// never block and never run user code.
boost::asio::any_io_executor network_executor(connection& c);
/// For recipes: runs fn on the network thread (at once when called there). Once the client's
/// close() has begun, fn is dropped and false is returned: the caller then completes whatever
/// waits for fn (with closed). Never post to network_executor from another thread instead: a
/// step posted just as the network loop ends is never run.
bool run_on_network(connection& c, unique_function<void()> fn);
/// For recipes: fn(state) runs on the network thread right after each state change (and with
/// closed when the client closes). Returns an id for remove_state_observer. (A unique_function:
/// an engine's observer, a weak pointer, stays inside it, where a std::function allocates.)
std::uint64_t add_state_observer(connection& c, unique_function<void(connection_state)> fn);
void remove_state_observer(connection& c, std::uint64_t id);
/// Connected, but nothing read from the server for longer than the C client's receive timeout:
/// the process may have been paused, so a hold must not be reported as held (any thread).
bool silent_past_receive_timeout(connection& c);
/// Runs fn on the callback executor (used for watches registered through sync calls).
watch_function post_to_callbacks(connection& c, std::function<void(const watch_event&)> fn);

}  // namespace zkr::detail
