#include "zk_port.hpp"

#include <zkr/detail/request.hpp>

#include <utility>

namespace zkr::detail {

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

zk_request to_request(zk::op&& op) {
    zk_request out;
    auto& req = out.req;
    std::visit(
        [&](auto& o) {
            using T = std::decay_t<decltype(o)>;
            out.id = o.id;
            if constexpr (std::is_same_v<T, zk::get_data>) {
                req.kind = op_kind::get_data;
                req.path = std::move(o.path);
                out.watch = o.watch;
                req.no_node_is_an_answer = true;
            } else if constexpr (std::is_same_v<T, zk::exists>) {
                req.kind = op_kind::exists;
                req.path = std::move(o.path);
                out.watch = o.watch;
                out.is_exists = true;
            } else if constexpr (std::is_same_v<T, zk::get_children>) {
                req.kind = op_kind::get_children;
                req.path = std::move(o.path);
                out.watch = o.watch;
                req.fail_fast = o.once;
                req.no_node_is_an_answer = true;  // (the listed node's stat comes with it: getChildren2)
            } else if constexpr (std::is_same_v<T, zk::create>) {
                req.kind = op_kind::create;
                req.path = std::move(o.path);
                req.data = std::move(o.data);
                req.create.mode = o.mode;
                req.create.create_parents = o.parents;
                req.create.protect = o.protect;
                req.create.ttl = o.ttl;
            } else if constexpr (std::is_same_v<T, zk::set_data>) {
                req.kind = op_kind::set_data;
                req.path = std::move(o.path);
                req.data = std::move(o.data);
                req.version = o.version;
                req.no_node_is_an_answer = true;
            } else if constexpr (std::is_same_v<T, zk::remove>) {
                req.kind = op_kind::remove;
                req.path = std::move(o.path);
                req.version = o.version;
                req.required_session = o.session;
                req.fail_fast = o.once;
                req.guaranteed = o.guaranteed;
                req.no_node_is_an_answer = true;
                out.has_stat = false;
            } else if constexpr (std::is_same_v<T, zk::multi>) {
                req.kind = op_kind::multi;
                req.ops = std::move(o.ops);
                out.has_stat = false;
            } else {
                static_assert(std::is_same_v<T, zk::after>, "a new op needs its request here");
            }
        },
        op);
    return out;
}

}  // namespace zkr::detail
