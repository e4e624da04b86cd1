// The simulated client's side of recipes/core/zk_ops.hpp: applies one zk::op to the in-memory server
// as the real connection would send it, and answers with the reply a machine gets. Watches are
// registered under an id the caller routes back (fired_watch::watch_id). Any machine that speaks
// zk_ops runs in a simulated world through this one function, as it runs on the real connection
// through recipes/core/zk_port.cpp.
#pragma once

#include "../../recipes/core/zk_ops.hpp"
#include "sim_zookeeper.hpp"

#include <zkr/error.hpp>
#include <zkr/path.hpp>

namespace zkr::sim {

inline boost::system::error_code error_of(rc code) {
    switch (code) {
        case rc::ok: return {};
        case rc::no_node: return make_error_code(errc::no_node);
        case rc::node_exists: return make_error_code(errc::node_exists);
        case rc::not_empty: return make_error_code(errc::not_empty);
        case rc::session_expired: return make_error_code(errc::session_expired);
        case rc::bad_version: return make_error_code(errc::bad_version);
    }
    return make_error_code(errc::system_error);
}

inline zkr::stat stat_of(const node& n) {
    zkr::stat st;
    st.version = n.version;
    st.czxid = n.czxid;
    st.pzxid = n.pzxid;
    st.ephemeral_owner = n.owner;
    st.data_length = static_cast<std::int32_t>(n.data.size());
    return st;
}

/// Applies op for `session`; a watch it asks for is set under watch_id. (Timers are the world's.)
/// A protected create's name begins with protect_prefix ("_c_<id>-"), the same for every try of it
/// on one session; the lookup for an earlier try's node is the client's (sim_clients).
inline detail::zk::reply apply_op(zookeeper& zk, std::int64_t session, const detail::zk::op& op, std::uint64_t watch_id,
                                  const std::string& protect_prefix = {}) {
    namespace zk_ops = detail::zk;
    zk_ops::reply r;
    std::visit(
        [&](const auto& o) {
            using T = std::decay_t<decltype(o)>;
            r.id = o.id;
            if constexpr (std::is_same_v<T, zk_ops::get_data> || std::is_same_v<T, zk_ops::exists>) {
                constexpr bool is_exists = std::is_same_v<T, zk_ops::exists>;
                const node* n = zk.read(o.path, session, o.watch ? watch_id : 0, is_exists);
                if (n) {
                    r.stat = stat_of(*n);
                    r.data = n->data;
                } else if (!is_exists) {
                    r.ec = error_of(rc::no_node);
                }
            } else if constexpr (std::is_same_v<T, zk_ops::get_children>) {
                const auto kids = o.watch ? zk.watch_children(o.path, session, watch_id) : zk.children(o.path);
                if (kids) r.children = *kids;
                else r.ec = error_of(rc::no_node);
                if (const node* n = kids ? zk.find(o.path) : nullptr) r.stat = stat_of(*n);
            } else if constexpr (std::is_same_v<T, zk_ops::set_data>) {
                r.ec = error_of(zk.set_data(o.path, o.data, o.version));
                if (const node* n = r.ec ? nullptr : zk.find(o.path)) r.stat = stat_of(*n);
            } else if constexpr (std::is_same_v<T, zk_ops::remove>) {
                r.ec = error_of(zk.remove(o.path, o.version));
            } else if constexpr (std::is_same_v<T, zk_ops::multi>) {
                std::vector<multi_step> steps;
                for (const auto& m : o.ops) {
                    multi_step s;
                    s.path = m.path;
                    s.data = m.data;
                    s.version = m.version;
                    s.ephemeral = is_ephemeral(m.mode);
                    s.what = m.type == multi_op::kind::check ? multi_step::check
                             : m.type == multi_op::kind::set_data ? multi_step::set_data
                             : m.type == multi_op::kind::remove   ? multi_step::remove
                                                                  : multi_step::create;
                    steps.push_back(std::move(s));
                }
                r.ec = error_of(zk.multi(session, steps));
            } else if constexpr (std::is_same_v<T, zk_ops::create>) {
                const std::string parent(parent_path(o.path)), name(node_name(o.path));
                if (!o.parents && !zk.find(parent)) {
                    r.ec = error_of(rc::no_node);
                    return;
                }
                const auto made = zk.create(session, parent, (o.protect ? protect_prefix : std::string()) + name, o.data,
                                            is_sequential(o.mode), is_ephemeral(o.mode));
                r.ec = error_of(made.code);
                r.path = made.path;
                if (!r.ec) r.stat = stat_of(made.stat);
            }
        },
        op);
    return r;
}

}  // namespace zkr::sim
