// Carries out one zk::op on the real connection (recipes/core/zk_ops.hpp), and client_port: the
// real connection as an engine sees it (requests, timers, connection changes, the network thread).
// The simulation gives the same engine a port of its own (test/sim/sim_port.hpp).
#pragma once

#include "timer_slots.hpp"
#include "zk_ops.hpp"

#include <zkr/client.hpp>
#include <zkr/detail/request.hpp>

#include <cstdint>
#include <functional>
#include <utility>

namespace zkr::detail {

/// op as the connection's request, its strings moved in. A timer is not an op the connection
/// knows: the engine runs it.
struct zk_request {
    request req;
    zk::ticket id = 0;
    bool watch = false;
    bool has_stat = true;   ///< the reply carries the node's stat (not a delete's or a multi's)
    bool is_exists = false; ///< an exists: a missing node is no error, and has no stat
};
zk_request to_request(zk::op&& op);
/// The connection's response to the op of `id` as a zk::reply.
zk::reply reply_of(zk::ticket id, const boost::system::error_code& ec, response&& r, bool has_stat);

/// Sends op on c's connection. Its reply and its watch's event come to `feed` (copyable, and
/// callable with a zk::reply&& and a zk::watch_fired&&: one copy goes with the watch) on the
/// network thread, never inside this call.
/// A read of a node that has gone is an answer a machine expects (no_node, not a failure to the
/// observer). Feed is a template, not a std::function: its one or two copies live inside the
/// request's completion and watch, and a cycle of a machine allocates nothing for them.
template <typename Feed>
void send_op(zkr::client& c, zk::op op, Feed feed) {
    auto out = to_request(std::move(op));
    const auto id = out.id;
    if (out.watch) out.req.watch = [feed, id](watch_event e) mutable { feed(zk::watch_fired{id, e.type}); };
    submit(connection_of(c), std::move(out.req),
           [feed = std::move(feed), id, has_stat = out.has_stat, is_exists = out.is_exists](const boost::system::error_code& ec, response&& r) mutable {
               const bool stat = has_stat && (!is_exists || r.exists);
               feed(reply_of(id, ec, std::move(r), stat));
           });
}

/// The real connection of one client, as basic_zk_engine uses it. Any port has these members but
/// client() (the lock engine's: it runs on the real connection only).
class client_port {
public:
    using timers = timer_slots;

    client_port(zkr::client& c) noexcept : c_(&c) {}  // (implicit: an engine is made from its client)

    zkr::client& client() const noexcept { return *c_; }
    /// The engine's timers, run on the network thread.
    timers make_timers() const { return timers(network_executor(connection_of(*c_))); }
    /// send_op: the reply and the watch's event come to feed on the network thread.
    template <typename Feed>
    void send(zk::op op, Feed feed) const {
        send_op(*c_, std::move(op), std::move(feed));
    }
    /// on_change(state) on the network thread for each connection change; the id for unobserve.
    std::uint64_t observe(unique_function<void(connection_state)> on_change) const {
        return add_state_observer(connection_of(*c_), std::move(on_change));
    }
    void unobserve(std::uint64_t id) const { remove_state_observer(connection_of(*c_), id); }
    /// The session the client has now (0: none).
    std::int64_t session_id() const { return c_->session_id(); }
    /// fn on the network thread: inside this call when it is made there (an outcome's handler
    /// that posts to its engine is fed at once, or queued by the engine's inbox), else later;
    /// false once the client closes (fn is dropped).
    bool post(unique_function<void()> fn) const { return run_on_network(connection_of(*c_), std::move(fn)); }

private:
    zkr::client* c_;
};

}  // namespace zkr::detail
