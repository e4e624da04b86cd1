// The connection's side of a protected create (its decisions: protected_create.hpp): the lookup
// sent before a retry, the check of the node found, and the clean-up of a create that gave up
// while its node may exist (the clean-up queue's searches and their answers).
#include "connection_internal.hpp"

#include <zkr/path.hpp>

namespace zkr::detail {

void connection::issue_protected_lookup(const op_ptr& op) {
    const c_client_lock c_lock(c_client_mutex());
    auto f = depot_.new_record();
    f->op = op;
    f->what = inflight::step::protected_list;
    auto* t = track(std::move(f));
    const std::string parent(parent_path(op->zk_path()));
    if (const int rc = list_after_sync(parent, t); rc != ZOK) {
        depot_.take(t);
        on_result(op, rc, {});
    }
}

// The create whose reply was lost may have been applied by the leader and not yet by the server
// we are connected to now (we reconnect after a lost reply, often to another server, and we never
// saw the create's zxid, so the server may be behind it). A listing there would miss our node:
// a retry would then make a second one, and a gave-up create would leave its node for good (a
// lock's phantom holder; the partition suite met it). A sync first brings the server up to the
// leader; the listing, sent after it on the same session, is answered after it.
int connection::list_after_sync(const std::string& parent, inflight* t) {
    static constexpr string_completion_t ignore = [](int, const char*, const void*) {};
    if (const int rc = zoo_async(zh(), parent.c_str(), ignore, nullptr); rc != ZOK) return rc;
    return zoo_aget_children2(zh(), parent.c_str(), 0, &on_children, t);
}

// A protected create gave up (its retries spent) with its reply lost: the server may have made the
// node. Nobody would ever delete it (an ephemeral one would stay until the session ends: a lock's
// phantom holder, ahead of every waiter), so look for it by the prefix and delete it, as Curator's
// protection mode does in the background. Connected, only the new orphan needs a search now: the
// others' are under way, or wait for the next read-write connection (look_for_orphans).
void connection::forget_protected(const op_ptr& op, std::string_view prefix) {
    cleanup_queue::orphan o{std::string(parent_path(op->zk_path())), std::string(prefix), session_id_.load(),
                            is_ephemeral(op->req.create.mode)};
    if (is_connected(machine_.state()) && zh() && !on_read_only_server()) look_for(o);
    cleanup_.add_orphan(std::move(o));
}

// On each read-write connection: every orphan not found yet.
void connection::look_for_orphans() {
    // A read-only server may not have the node (made on the quorum after it was cut off): look on
    // a read-write connection (the next one looks again).
    if (on_read_only_server()) return;
    for (const auto& o : cleanup_.orphans_to_look_for(session_id_.load())) look_for(o);
}

void connection::look_for(const cleanup_queue::orphan& o) {
    const c_client_lock c_lock(c_client_mutex());
    auto f = depot_.new_record();
    f->what = inflight::step::orphan_list;
    f->path = o.parent;
    f->child = o.prefix;
    auto* t = track(std::move(f));
    if (list_after_sync(o.parent, t) != ZOK) depot_.take(t);
}

void connection::on_orphans_listed(const inflight& f, int rc, const struct String_vector* strings) {
    std::vector<std::string_view> children;
    if (rc == ZOK && strings) children.assign(strings->data, strings->data + strings->count);
    for (const auto& path : cleanup_.orphan_listed(f.path, f.child, to_error_code(rc), children)) {
        options_.logger->warn("a create that gave up had made {}: deleting it", path);
        delete_guaranteed(path, -1);
    }
}

// A protected create failed in a way that may have left its node (ec: why), and may be tried
// again: the next try looks for that node first, or, on a new session, draws a new prefix.
void connection::prepare_protected_retry(const op_ptr& op, const boost::system::error_code& ec) {
    if (const auto left = op->protection.failed(ec, is_ephemeral(op->req.create.mode))) forget_protected(op, left->view());
}

// The listing of the parent: a child with our prefix may be our node; check its owner.
void connection::on_protected_listed(const inflight& f, int rc, const struct String_vector* strings) {
    const auto& op = f.op;
    if (rc == ZOK && strings) {
        for (int i = 0; i < strings->count; ++i) {
            std::string_view child(strings->data[i]);
            if (!op->protection.is_ours(child)) continue;
            auto g = depot_.new_record();
            g->op = op;
            g->what = inflight::step::protected_exists;
            g->child = join_path(parent_path(op->zk_path()), child);
            auto* t = track(std::move(g));
            if (const int rc2 = zoo_aexists(zh(), t->child.c_str(), 0, &on_stat, t); rc2 != ZOK) {
                depot_.take(t);
                on_result(op, rc2, {});
            }
            return;
        }
    }
    if (rc == ZOK || rc == ZNONODE) return create_after_lookup(op);
    on_result(op, rc, {});
}

// The check of the node found: adopted, or a create.
void connection::on_protected_found(const inflight& f, int rc, const struct Stat* stat) {
    if (rc == ZOK && stat) {
        if (f.op->protection.adopts(stat->ephemeralOwner, session_id_.load(), is_ephemeral(f.op->req.create.mode))) {
            response r;
            r.path = f.child;
            r.stat = from_zk(*stat);
            return on_result(f.op, ZOK, std::move(r));
        }
        return issue_create(f.op);
    }
    if (rc == ZOK || rc == ZNONODE) return create_after_lookup(f.op);
    on_result(f.op, rc, {});
}

void connection::create_after_lookup(const op_ptr& op) {
    op->protection.found_none(on_read_only_server());
    issue_create(op);
}

}  // namespace zkr::detail
