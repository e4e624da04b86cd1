// ZooKeeper's operations as values: what any recipe machine asks of the server, and what comes
// back. A machine returns ops among its actions; an engine (recipes/core/zk_engine.hpp) carries them
// out on the real connection, and the simulation on its in-memory server (test/sim/sim_clients.hpp),
// so the machine is the same in both. In the manner of Boost.MySQL's next_action: one small
// vocabulary for every algorithm. (The lock machine speaks it through recipes/queue/zk_lock_machine.hpp.)
#pragma once

#include <zkr/connection_state.hpp>
#include <zkr/create_options.hpp>
#include <zkr/error.hpp>
#include <zkr/multi_op.hpp>
#include <zkr/stat.hpp>
#include <zkr/watch_event.hpp>

#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace zkr::detail::zk {

/// Names one request, watch or timer of a machine: its reply, its watch's event or its expiry
/// comes back with the same ticket.
using ticket = std::uint64_t;

/// getData; with watch, its event comes as watch_fired (set only when the node exists).
struct get_data {
    ticket id = 0;
    std::string path;
    bool watch = false;
};
/// exists; with watch, its event comes as watch_fired (set on a missing node too: it fires on creation).
struct exists {
    ticket id = 0;
    std::string path;
    bool watch = false;
};
/// getChildren; with watch, its event comes as watch_fired. once: sent at most once, never retried
/// by the client (fails with connection_loss when its connection drops first, or its reply is
/// lost): an answer within a round trip or as soon as the loss is noticed, for a machine that
/// would rather act on a failure than wait through a reconnection (the lock cache's listing).
struct get_children {
    ticket id = 0;
    std::string path;
    bool watch = false;
    bool once = false;
};
/// create; reply::path is the node made.
struct create {
    ticket id = 0;
    std::string path;
    std::string data;
    create_mode mode = create_mode::persistent;
    bool parents = false;  ///< missing parents made as containers
    bool protect = false;  ///< a protected name: the client finds its node after a lost reply (create_options::protect)
    std::chrono::milliseconds ttl{0};  ///< the *_with_ttl modes'
};
/// setData; version -1: whatever the node's version.
struct set_data {
    ticket id = 0;
    std::string path;
    std::string data;
    std::int32_t version = -1;
};
/// delete; version -1: whatever the node's version. once: sent at most once, never retried by the
/// client (fails with connection_loss when its connection drops first, or its reply is lost): a
/// delete retried after it took could delete a node made at the path meanwhile. session:
/// non-zero, only on that session (a session's ephemeral node; on a later one the node at the
/// path may be another's): fails with session_expired on a new session. guaranteed: the client
/// keeps retrying it in the background, across reconnections, until it is done or the client
/// closes (a node nobody else would ever delete); its reply may come much later.
struct remove {
    ticket id = 0;
    std::string path;
    std::int32_t version = -1;
    bool once = false;
    std::int64_t session = 0;
    bool guaranteed = false;
};
/// An atomic multi: all of ops or none. Its reply's ec is the failing operation's (none when
/// every operation took).
struct multi {
    ticket id = 0;
    std::vector<multi_op> ops;
};
/// A timer: timer_due after delay.
struct after {
    ticket id = 0;
    std::chrono::milliseconds delay{0};
};

using op = std::variant<get_data, exists, get_children, create, set_data, remove, multi, after>;

/// The reply to the op of `id`. stat: the node's, when the op read or wrote one (an exists of a
/// missing node: none, and no error; a getChildren: the listed node's).
struct reply {
    ticket id = 0;
    boost::system::error_code ec;
    std::optional<zkr::stat> stat;
    std::string data;
    std::vector<std::string> children;
    std::string path;
};
/// The watch set by the op of `id` fired (not_watching: it ended with the session or the client).
struct watch_fired {
    ticket id = 0;
    watch_event_type type = watch_event_type::not_watching;
};
/// The timer of `id` ran out.
struct timer_due {
    ticket id = 0;
};
/// The connection changed; session: the one in use now (0 when there is none).
struct connection_changed {
    connection_state state = connection_state::latent;
    std::int64_t session = 0;
};

using event = std::variant<reply, watch_fired, timer_due, connection_changed>;

}  // namespace zkr::detail::zk

namespace zkr::detail {

/// A failure of the connection, not of the request: a machine sends the request again once
/// connected (a write refused by a read-only server too).
inline bool awaits_connection(const boost::system::error_code& ec) {
    return is_retryable(ec) || ec == errc::not_read_only || ec == errc::closing;
}

}  // namespace zkr::detail
