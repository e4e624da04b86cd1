#include "zk_port.hpp"

#include <zkr/detail/request.hpp>

#include <utility>

namespace zkr::detail {

namespace {

zk::reply reply_of(zk::ticket id, const boost::system::error_code& ec, response&& r, bool has_stat) {
    zk::reply out;
    out.id = id;
    out.ec = ec;
    if (!ec && has_stat) out.stat = r.stat;
    out.data = std::move(r.data);
    out.children = std::move(r.children);
    out.path = std::move(r.path);
    return out;
}

}  // namespace

void send_op(zkr::client& c, const zk::op& op, std::function<void(zk::event)> feed) {
    request req;
    zk::ticket id = 0;
    bool watch = false, has_stat = true;
    std::visit(
        [&](const auto& o) {
            using T = std::decay_t<decltype(o)>;
            id = o.id;
            if constexpr (std::is_same_v<T, zk::get_data>) {
                req.kind = op_kind::get_data;
                req.path = o.path;
                watch = o.watch;
                req.no_node_is_an_answer = true;
            } else if constexpr (std::is_same_v<T, zk::exists>) {
                req.kind = op_kind::exists;
                req.path = o.path;
                watch = o.watch;
            } else if constexpr (std::is_same_v<T, zk::get_children>) {
                req.kind = op_kind::get_children;
                req.path = o.path;
                watch = o.watch;
                req.no_node_is_an_answer = true;  // (the listed node's stat comes with it: getChildren2)
            } else if constexpr (std::is_same_v<T, zk::create>) {
                req.kind = op_kind::create;
                req.path = o.path;
                req.data = o.data;
                req.create.mode = o.mode;
                req.create.create_parents = o.parents;
                req.create.protect = o.protect;
                req.create.ttl = o.ttl;
            } else if constexpr (std::is_same_v<T, zk::set_data>) {
                req.kind = op_kind::set_data;
                req.path = o.path;
                req.data = o.data;
                req.version = o.version;
                req.no_node_is_an_answer = true;
            } else if constexpr (std::is_same_v<T, zk::remove>) {
                req.kind = op_kind::remove;
                req.path = o.path;
                req.version = o.version;
                req.required_session = o.session;
                req.fail_fast = o.once;
                req.no_node_is_an_answer = true;
                has_stat = false;
            } else if constexpr (std::is_same_v<T, zk::multi>) {
                req.kind = op_kind::multi;
                req.ops = o.ops;
                has_stat = false;
            } else {
                static_assert(std::is_same_v<T, zk::after>, "a new op needs its request here");
            }
        },
        op);
    if (watch) req.watch = [feed, id](watch_event e) { feed(zk::watch_fired{id, e.type}); };
    const bool is_exists = req.kind == op_kind::exists;
    submit(connection_of(c), std::move(req), [feed = std::move(feed), id, has_stat, is_exists](const boost::system::error_code& ec, response&& r) {
        // exists: a missing node is no error, and has no stat.
        feed(reply_of(id, ec, std::move(r), has_stat && (!is_exists || r.exists)));
    });
}

}  // namespace zkr::detail
