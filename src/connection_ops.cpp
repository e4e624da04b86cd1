// Operations: submission (the queue: submission_queue.hpp), issuing each request through the C
// client, retries per the retry policy, guaranteed deletes, and the C client's completions and
// watches. Where each request is: request_depot; the watches: watch_registry; the deletes still
// owed: cleanup_queue.
#include "connection_internal.hpp"
#include "pooled.hpp"

#include <zkr/error.hpp>
#include <zkr/path.hpp>

#include <algorithm>

namespace zkr::detail {

// The network thread's drain of the submission queue, posted from the submitting thread. It is
// never outstanding twice (the queue schedules it once until it drains), so it is built in the
// connection's one handler_slot: a request then allocates nothing to wake the network thread.
struct connection::drain_handler {
    connection* c;
    using allocator_type = slot_allocator<void>;
    allocator_type get_allocator() const noexcept { return allocator_type(c->drain_slot_); }
    void operator()() const { c->start_submitted(); }
};

// (Pooled: every request makes one, on any thread; three allocations per W1 cycle before.)
void connection::submit(request req, completion done, bool checked) {
    auto op = make_pooled<operation>();
    op->req = std::move(req);
    op->done = std::move(done);
    op->checked = checked;
    using refusal = decltype(submissions_)::refusal;
    const auto refused = submissions_.push(op, [this] { boost::asio::post(io_, drain_handler{this}); });
    if (refused == refusal::none) return;
    const auto ec = make_error_code(refused == refusal::not_started ? errc::not_connected : errc::closed);
    if (refused == refusal::not_started) options_.logger->warn("operation before start(): call client::start() first");
    // A recipe's request made on the network thread while the client closes (a release the close
    // itself set off) is answered on that thread, which runs until its queue is empty: the recipe
    // is never fed on two threads at once. Any other caller is answered on the callback thread,
    // as always.
    const auto answer = [op, ec] {
        response r;
        hand_back_path(op->req, r);
        op->done(ec, std::move(r));
    };
    if (on_network_thread())
        boost::asio::post(io_, answer);
    else
        boost::asio::post(callback_executor(), answer);
}

void connection::start_submitted() {
    submissions_.drain_into(batch_);
    // One segment for the batch (a lock's create and listing go out together), ended however the
    // loop ends; the batch is emptied with it (its capacity kept for the next one).
    struct batch_end {
        connection& c;
        std::uint64_t batch;
        ~batch_end() {
            c.batch_.clear();
            c.reactor_.end_batch(batch);
        }
    } const batch{*this, reactor_.begin_batch()};
    for (const auto& op : batch_) {
        if (auto f = op->checked ? failure{} : check_request(op->req)) {
            options_.logger->warn("rejected: {}", f.message);
            finish(op, f.ec, {});
            continue;
        }
        if (!ns_.empty()) op->path = full_path(op->req.path);  // (else zk_path() is the request's)
        if (op->req.kind == op_kind::create && op->req.create.protect) op->protection.start();
        if (op->req.watch) {
            op->watch = std::make_shared<watch_registry::watch>();
            op->watch->fn = std::move(op->req.watch);
            op->watch->user_path = op->req.path;
        }
        start_op(op);
    }
}

void connection::start_op(const op_ptr& op) {
    if (closing_) return finish(op, make_error_code(errc::closed), {});
    if (op->req.required_session != 0 && op->req.required_session != session_id_.load())
        return finish(op, make_error_code(errc::session_expired), {});
    if (!zh() || !is_connected(machine_.state())) {
        if (op->req.fail_fast) return finish(op, make_error_code(errc::connection_loss), {});
        return wait_for_connection(op);
    }
    issue(op);
    reactor_.schedule_pump();
}

void connection::wait_for_connection(const op_ptr& op) {
    depot_.wait(op);
    op->timer = std::make_unique<boost::asio::steady_timer>(io_, options_.connection_timeout);
    op->timer->async_wait([this, op](boost::system::error_code ec) {
        if (ec || !depot_.stop_waiting(op)) return;
        retry_or_finish(op, make_error_code(errc::not_connected));
    });
}

inflight* connection::track(request_depot::record f) {
    f->conn = this;
    return depot_.track(std::move(f));
}

// The prologue of every C completion: the connection its record names, and the record taken
// back (null when the connection already let it go).
std::pair<connection*, request_depot::record> connection::claim(const void* data) {
    auto* self = static_cast<const inflight*>(data)->conn;
    return {self, self->depot_.take(data)};
}

void connection::issue(const op_ptr& op) {
    const c_client_lock c_lock(c_client_mutex());
    options_.logger->trace("sending {} {}", static_cast<int>(op->req.kind), op->zk_path());
    if (op->req.kind == op_kind::create) {
        if (op->req.create.protect && op->protection.looks_up_first()) return issue_protected_lookup(op);
        return issue_create(op);
    }
    if (refused_as_read_only(op)) return;
    if (op->req.kind == op_kind::multi) return issue_multi(op);

    auto f = depot_.new_record();
    f->op = op;
    const char* path = op->zk_path().c_str();
    int rc = ZOK;
    switch (op->req.kind) {
        case op_kind::remove: {
            auto* t = track(std::move(f));
            rc = zoo_adelete(zh(), path, op->req.version, &on_void, t);
            if (rc != ZOK) depot_.take(t);
            break;
        }
        case op_kind::set_data: {
            auto* t = track(std::move(f));
            rc = zoo_aset(zh(), path, op->req.data.data(), static_cast<int>(op->req.data.size()), op->req.version,
                          &on_stat, t);
            if (rc != ZOK) depot_.take(t);
            break;
        }
        case op_kind::exists:
        case op_kind::get_data:
        case op_kind::get_children: {
            auto* t = track(std::move(f));
            t->watch = watches_.add(op->watch);
            watcher_fn wfn = t->watch ? &on_watch : nullptr;
            if (op->req.kind == op_kind::exists) rc = zoo_awexists(zh(), path, wfn, t->watch, &on_stat, t);
            else if (op->req.kind == op_kind::get_data) rc = zoo_awget(zh(), path, wfn, t->watch, &on_data, t);
            else rc = zoo_awget_children2(zh(), path, wfn, t->watch, &on_children, t);
            if (rc != ZOK) {
                watches_.settle(t->watch, false);
                depot_.take(t);
            }
            break;
        }
        default: break;
    }
    if (rc != ZOK) on_result(op, rc, {});
}

// A read-only server refuses every write, and it answers the refusal at once, ahead of the reads
// still in its pipeline (a lock's listing sent before a retried create, a protected create's
// lookup): a reply out of order, on which the C client drops the connection and fails everything
// in flight with ZRUNTIMEINCONSISTENCY. A write on a read-only connection is therefore refused
// here, with the server's own answer, and nothing is sent. (The state is the C client's as of its
// last call: the reactor reads it after every call.)
bool connection::refused_as_read_only(const op_ptr& op) {
    if (!on_read_only_server()) return false;
    switch (op->req.kind) {
        case op_kind::create:
        case op_kind::remove:
        case op_kind::set_data:
        case op_kind::multi: break;
        default: return false;
    }
    on_result(op, ZNOTREADONLY, {});
    return true;
}

void connection::issue_create(const op_ptr& op) {
    const c_client_lock c_lock(c_client_mutex());
    if (refused_as_read_only(op)) return;
    const auto& c = op->req.create;
    // (The C client copies the path into its request within the call: one buffer serves every create.)
    if (c.protect) write_with_protect_prefix(op->zk_path(), op->protection.prefix(), protected_path_);
    const std::string& path = c.protect ? protected_path_ : op->zk_path();
    auto f = depot_.new_record();
    f->op = op;
    const bool own_acl = c.acl && !c.acl->empty();
    if (own_acl) f->acl.assign(*c.acl);
    auto* t = track(std::move(f));
    auto* acl = own_acl ? t->acl.get() : default_acl_.get();
    const int mode = to_zk_mode(c.mode);
    int rc;
    if (has_ttl(c.mode))
        rc = zoo_acreate2_ttl(zh(), path.c_str(), op->req.data.data(), static_cast<int>(op->req.data.size()),
                              acl, mode, c.ttl.count(), &on_string_stat, t);
    else
        rc = zoo_acreate2(zh(), path.c_str(), op->req.data.data(), static_cast<int>(op->req.data.size()),
                          acl, mode, &on_string_stat, t);
    if (rc != ZOK) {
        depot_.take(t);
        on_result(op, rc, {});
    }
}

// Creates every missing ancestor as a container, pipelined ahead of the create itself: requests of
// one session are applied in order, so the create sees them. One round trip in all.
void connection::issue_parents(const op_ptr& op) {
    const c_client_lock c_lock(c_client_mutex());
    std::vector<std::string> ancestors;
    const bool all = op->req.create.create_parents;
    for (std::string_view p = parent_path(op->zk_path()); p != "/"; p = parent_path(p)) ancestors.emplace_back(p);
    std::reverse(ancestors.begin(), ancestors.end());
    if (!all) ancestors.resize(std::min<std::size_t>(ancestors.size(), 1));  // only the namespace root
    for (const auto& a : ancestors) {
        auto f = depot_.new_record();
        f->parent_of = op;
        auto* t = track(std::move(f));
        if (zoo_acreate2(zh(), a.c_str(), nullptr, -1, default_acl_.get(), ZOO_CONTAINER, &on_parent_created, t) != ZOK)
            depot_.take(t);
    }
    issue(op);
}

void connection::issue_multi(const op_ptr& op) {
    const c_client_lock c_lock(c_client_mutex());
    auto f = depot_.new_record();
    f->op = op;
    std::vector<multi_op> ops = op->req.ops;
    for (auto& o : ops) o.path = full_path(o.path);
    f->multi.build(ops, options_.default_acl);
    auto* t = track(std::move(f));
    const int rc = zoo_amulti(zh(), static_cast<int>(t->multi.ops.size()), t->multi.ops.data(),
                              t->multi.results.data(), &on_multi, t);
    if (rc != ZOK) {
        depot_.take(t);
        on_result(op, rc, {});
    }
}

void connection::on_result(const op_ptr& op, int rc, response&& r) {
    if (reactor_.closing()) rc = closing_ ? static_cast<int>(errc::closed) : ZSESSIONEXPIRED;
    if (auto* faults = reply_faults_.load(std::memory_order_acquire)) {
        if (const int fault = faults->filter(rc); fault != rc) {
            options_.logger->warn("fault injection: the reply to a request on {} becomes {}", op->zk_path(), zerror(fault));
            rc = fault;
            r = {};
        }
    }
    if (rc == ZSESSIONEXPIRED && !reactor_.closing()) end_expired_session();
    const auto ec = to_error_code(rc);
    if (!ec) return finish(op, ec, std::move(r));
    if (ec == errc::closed) return finish(op, ec, {});
    // The parents (sent ahead of the create, so their replies came first) could not be made (an
    // ephemeral parent, no permission): that is the reason, not the create's own "no node".
    if (op->req.kind == op_kind::create && rc == ZNONODE && op->parent_error)
        return finish(op, to_error_code(op->parent_error), {});
    // A create under a missing parent: create the parents (or, without create_parents, just the
    // lazily created namespace root) and try again.
    if (op->req.kind == op_kind::create && rc == ZNONODE && (op->req.create.create_parents || !ns_.empty()) &&
        op->parent_attempts < (op->req.create.create_parents ? 3 : 1)) {
        ++op->parent_attempts;
        return issue_parents(op);
    }
    if (is_retryable(ec)) return retry_or_finish(op, ec);
    // A read-only server refused it: retrying there is pointless, but a guaranteed delete's node
    // must still go, and a retried protected create's first attempt may have made its node before
    // the outage.
    if (ec == errc::not_read_only) leave_to_cleanup(op, ec);
    finish(op, ec, std::move(r));
}

void connection::retry_or_finish(const op_ptr& op, const boost::system::error_code& ec) {
    if (closing_) return finish(op, make_error_code(errc::closed), {});
    if (op->req.kind == op_kind::create && op->req.create.protect) prepare_protected_retry(op, ec);
    const retry_context ctx{op->retries, std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - op->started), ec};
    const auto sleep = op->req.fail_fast ? std::optional<std::chrono::milliseconds>{} : options_.retry_policy->next_sleep(ctx);
    if (!sleep) {
        leave_to_cleanup(op, ec);
        return finish(op, ec, {});
    }
    ++op->retries;
    options_.logger->debug("retry {} of {} in {} ms after {}", op->retries, op->zk_path(), sleep->count(), ec.message());
    depot_.sleep(op);
    op->timer = std::make_unique<boost::asio::steady_timer>(io_, *sleep);
    op->timer->async_wait([this, op](boost::system::error_code e) {
        if (e || !depot_.wake(op)) return;
        start_op(op);
    });
}

void connection::finish(const op_ptr& op, const boost::system::error_code& ec, response&& r) {
    if (!op->done) return;
    op->timer.reset();
    to_user_path(r.path);
    for (auto& m : r.results) to_user_path(m.path);
    auto done = std::move(op->done);
    op->done = nullptr;
    if (options_.observer)
        post_to_observer(options_, callback_executor(),
                         operation_event{op->req.kind, op->req.path, clock::now() - op->started, ec, op->retries,
                                         op->req.no_node_is_an_answer && ec == errc::no_node});
    if (ec) hand_back_path(op->req, r);
    done(ec, std::move(r));
}

// op gives up with ec, tried for the last time: what it leaves undone goes to the clean-up queue. A
// guaranteed delete is retried in the background; a protected create that may have made its node
// (a reply lost) leaves an orphan that nobody else would delete.
void connection::leave_to_cleanup(const op_ptr& op, const boost::system::error_code& ec) {
    if (op->req.kind == op_kind::remove && op->req.guaranteed) keep_guaranteed(op, ec);
    if (op->req.kind == op_kind::create && op->req.create.protect && op->protection.may_have_left_node())
        forget_protected(op, op->protection.prefix());
}

// Retried on every reconnection until done (run_guaranteed_deletes).
void connection::keep_guaranteed(const op_ptr& op, const boost::system::error_code& ec) {
    options_.logger->warn("delete of {} failed ({}); retrying in the background", op->zk_path(), ec.message());
    cleanup_.keep_delete(op->zk_path(), op->req.version);
}

void connection::run_guaranteed_deletes() {
    // A read-only server refuses them, and out of order (refused_as_read_only): the next
    // reconnection tries again.
    if (on_read_only_server()) return;
    for (const auto& d : cleanup_.deletes()) delete_guaranteed(d.path, d.version);
}

void connection::delete_guaranteed(const std::string& path, std::int32_t version) {
    const c_client_lock c_lock(c_client_mutex());
    auto f = depot_.new_record();
    f->path = path;
    auto* t = track(std::move(f));
    if (zoo_adelete(zh(), path.c_str(), version, &on_guaranteed_delete, t) != ZOK) depot_.take(t);
}

void connection::on_string_stat(int rc, const char* value, const struct Stat* stat, const void* data) {
    auto [self, f] = claim(data);
    if (!f || f->abandoned) return;
    response r;
    if (rc == ZOK) {
        if (value) r.path = value;
        if (stat) r.stat = from_zk(*stat);
    }
    self->on_result(f->op, rc, std::move(r));
}

void connection::on_void(int rc, const void* data) {
    auto [self, f] = claim(data);
    if (!f || f->abandoned) return;
    self->on_result(f->op, rc, {});
}

void connection::on_stat(int rc, const struct Stat* stat, const void* data) {
    auto [self, f] = claim(data);
    if (!f) return;
    if (f->watch) self->watches_.settle(f->watch, rc == ZOK || (rc == ZNONODE && f->op->req.kind == op_kind::exists));
    if (f->abandoned) return;
    if (f->what == inflight::step::protected_exists) return self->on_protected_found(*f, rc, stat);
    response r;
    if (f->op->req.kind == op_kind::exists && rc == ZNONODE) return self->on_result(f->op, ZOK, std::move(r));
    if (rc == ZOK && stat) {
        r.stat = from_zk(*stat);
        r.exists = true;
    }
    self->on_result(f->op, rc, std::move(r));
}

void connection::on_data(int rc, const char* value, int len, const struct Stat* stat, const void* data) {
    auto [self, f] = claim(data);
    if (!f) return;
    self->watches_.settle(f->watch, rc == ZOK);
    if (f->abandoned) return;
    response r;
    if (rc == ZOK) {
        if (value && len > 0) r.data.assign(value, static_cast<std::size_t>(len));
        if (stat) r.stat = from_zk(*stat);
    }
    self->on_result(f->op, rc, std::move(r));
}

void connection::on_children(int rc, const struct String_vector* strings, const struct Stat* stat, const void* data) {
    auto [self, f] = claim(data);
    if (!f) return;
    self->watches_.settle(f->watch, rc == ZOK);
    if (f->abandoned) return;
    if (f->what == inflight::step::orphan_list) return self->on_orphans_listed(*f, rc, strings);
    if (f->what == inflight::step::protected_list) return self->on_protected_listed(*f, rc, strings);
    response r;
    if (rc == ZOK) {
        if (strings) {
            r.children.reserve(static_cast<std::size_t>(strings->count));
            for (int i = 0; i < strings->count; ++i) r.children.emplace_back(strings->data[i]);
        }
        if (stat) r.stat = from_zk(*stat);
    }
    self->on_result(f->op, rc, std::move(r));
}

void connection::on_multi(int rc, const void* data) {
    auto [self, f] = claim(data);
    if (!f || f->abandoned) return;
    response r;
    r.results = f->multi.collect(rc);
    if (rc != ZOK && !is_retryable(to_error_code(rc)) && rc != ZCLOSING) {
        // The error of a failed multi is its failing operation's.
        self->finish(f->op, to_error_code(rc), std::move(r));
        return;
    }
    self->on_result(f->op, rc, std::move(r));
}

void connection::on_watch(zhandle_t*, int type, int, const char*, void* ctx) {
    if (type == ZOO_SESSION_EVENT) return;  // session changes are tracked with zoo_state
    auto* e = static_cast<watch_registry::entry*>(ctx);
    watch_event_type t = watch_event_type::not_watching;
    if (type == ZOO_CREATED_EVENT) t = watch_event_type::node_created;
    else if (type == ZOO_DELETED_EVENT) t = watch_event_type::node_deleted;
    else if (type == ZOO_CHANGED_EVENT) t = watch_event_type::node_data_changed;
    else if (type == ZOO_CHILD_EVENT) t = watch_event_type::node_children_changed;
    e->registry->fire(e, t);
}

void connection::on_parent_created(int rc, const char*, const struct Stat*, const void* data) {
    auto [self, f] = claim(data);
    if (rc == ZOK || rc == ZNODEEXISTS) return;
    self->options_.logger->debug("creating a parent failed: {}", zerror(rc));
    // A definite failure (an ephemeral parent, no permission): the create's own "no node" would
    // hide the reason, so keep this one. Not "no node": that parent's own parent went between the
    // pipelined creates (the server reaps an empty container at any moment), and the create's
    // next round of parents makes it again.
    if (auto op = f ? f->parent_of.lock() : nullptr;
        op && !op->parent_error && rc != ZNONODE && !is_retryable(to_error_code(rc)))
        op->parent_error = rc;
}

void connection::on_guaranteed_delete(int rc, const void* data) {
    auto [self, f] = claim(data);
    if (!f || f->abandoned) return;
    switch (self->cleanup_.delete_answered(f->path, to_error_code(rc))) {
        case cleanup_queue::delete_outcome::retry_later: return;
        case cleanup_queue::delete_outcome::done:
            self->options_.logger->info("guaranteed delete of {} done", f->path);
            return;
        case cleanup_queue::delete_outcome::gave_up:
            self->options_.logger->error("guaranteed delete of {} gave up: {}", f->path, zerror(rc));
            return;
    }
}

}  // namespace zkr::detail
