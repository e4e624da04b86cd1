// Carries out one zk::op on the real connection (recipes/core/zk_ops.hpp): what every engine uses.
#pragma once

#include "zk_ops.hpp"

#include <zkr/client.hpp>
#include <zkr/detail/request.hpp>

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

}  // namespace zkr::detail
