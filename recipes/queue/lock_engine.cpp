#include "lock_engine.hpp"

#include "../../src/observe.hpp"
#include "../../src/pooled.hpp"
#include "../core/zk_port.hpp"
#include "grant_mark.hpp"

#include <zkr/revocation.hpp>

#include <zkr/path.hpp>

#include <algorithm>
#include <cstdio>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

namespace zkr::detail {

using boost::system::error_code;

namespace {

lock_machine::config machine_config(const lock_driver& d, const acquire_request& req) {
    return {.rule = &d.rule(), .timeout = req.timeout, .context = {req.held_by_us}, .revocable = d.revocable()};
}

// Our node's path before the protect prefix: "<lock path>/<name>", with the sequence when it is given.
std::string node_create_path(const lock_driver& d, const acquire_request& req) {
    auto name = req.node_name.empty() ? d.rule().node_name() : req.node_name;
    if (req.sequence) {
        char digits[11];
        std::snprintf(digits, sizeof digits, "%010u", *req.sequence);
        name += digits;
    }
    return join_path(d.path(), name);
}

}  // namespace

lock_engine::lock_engine(std::shared_ptr<lock_driver> driver, acquire_request req, acquire_handler done)
    : driver_(std::move(driver)),
      client_(driver_->get_client()),
      net_(network_executor(detail::connection_of(client_))),
      machine_(machine_config(*driver_, req)),
      data_(std::move(req.data)),
      create_path_(node_create_path(*driver_, req)),
      create_mode_(req.sequence ? create_mode::ephemeral : create_mode::ephemeral_sequential),
      done_(std::move(done)),
      on_queued_(std::move(req.on_queued)),
      on_waiting_(std::move(req.on_waiting)),
      asked_at_(std::chrono::steady_clock::now()) {}

lock_engine::~lock_engine() {
    if (auto d = std::exchange(done_, {})) d(make_error_code(errc::closed), nullptr);
    for (auto& [caller, done] : std::exchange(releases_, {})) done(make_error_code(errc::closed));
}

void lock_engine::start() {
    // An acquire in progress keeps its engine alive. Its requests, watches and timers usually do,
    // but a waiter that has waited a while has only its watches out, and the loss of its session
    // ends them all: the engine would die with them, and an untimed caller hear "client closed"
    // although the client reconnects at once. The machine queues again on the new session, and
    // the acquire ends only by its own outcome (granted, not granted, cancelled, closed).
    acquiring_self_ = shared_from_this();
    std::weak_ptr<lock_engine> weak = weak_from_this();
    observer_ = add_state_observer(detail::connection_of(client_), [weak](connection_state s) {
        if (auto self = weak.lock()) self->feed(lock_in::connection{s, self->client_.session_id()});
    });
    feed(lock_in::start{is_connected(client_.state()), client_.session_id()});
}

// Events that arrive while actions are carried out (an action's handler may answer at once) wait
// their turn: the machine sees one event at a time, and every action of one before the next.
void lock_engine::feed(lock_event e) {
    // The feed that runs the events keeps the engine alive: a completion may drop the last other
    // reference.
    const auto self = inbox_.busy() ? nullptr : shared_from_this();
    const bool ran = inbox_.feed(std::move(e), [this](const lock_event& next) {
        for (const auto& a : machine_.resume(next)) carry_out(a);
    });
    if (ran && machine_.finished()) wind_down();
}

// The machine may answer at once (nothing held, or no connection), or later. A release from a
// completion of ours, while the machine's actions are carried out, waits in the inbox for them.
void lock_engine::release(release_handler done) {
    const auto caller = ++last_caller_;
    releases_.emplace_back(caller, std::move(done));
    feed(lock_in::release{caller});
}

void lock_engine::carry_out(const lock_action& a) {
    std::visit([this](const auto& action) { carry_out(action); }, a);
}

// One round trip: the create and the listing are sent back to back (the machine asks for both);
// the server applies them in order, so the listing already contains our node.
void lock_engine::carry_out(const lock_out::create& a) {
    // Until the reply: another acquire of this client may list our node first (a lost reply's
    // recovery takes a while), and must not take it for a stray.
    nodes_.emplace_back(client_, client_nodes::create_in_flight(driver_->path()));
    client_.async_create(create_path_, data_, {.mode = create_mode_, .create_parents = true, .protect = true},
                         boost::asio::bind_executor(net_, [self = shared_from_this(), t = a.ticket](error_code ec, create_result r) {
                             self->forget_create_in_flight();
                             if (!ec) self->nodes_.emplace_back(self->client_, r.path);
                             self->feed(lock_in::created{t, ec, std::move(r.path), r.stat.czxid, r.stat.ephemeral_owner});
                         }));
}

// The engine's reads and deletes go to the connection directly (detail::submit, as the client's
// templates do): their completions and watches run on the network thread, and a node or queue
// that has gone (no_node) is an answer the machine expects, which the observer hears as such.
void lock_engine::carry_out(const lock_out::list& a) {
    request r;
    r.kind = op_kind::get_children;
    r.path = driver_->path();
    r.no_node_is_an_answer = true;  // the queue deleted with its parent: queue again
    submit(detail::connection_of(client_), std::move(r), [self = shared_from_this(), t = a.ticket](const error_code& ec, response&& resp) {
        self->feed(lock_in::listed{t, ec, ec ? std::vector<std::string>{} : std::move(resp.children)});
    });
}

// getData, not exists: no watch is left behind on a node that is already gone. Its owner tells a
// node of our own session that no acquire of this client has (client_nodes): a stray.
void lock_engine::carry_out(const lock_out::watch_node& a) {
    auto path = join_path(driver_->path(), a.name);
    request req;
    req.kind = op_kind::get_data;
    req.path = path;
    req.no_node_is_an_answer = true;  // the node ahead left before we read it
    req.watch = [self = shared_from_this(), t = a.ticket](watch_event e) { self->feed(lock_in::node_changed{t, e.type}); };
    submit(detail::connection_of(client_), std::move(req),
        [self = shared_from_this(), t = a.ticket, path](const error_code& ec, response&& r) {
            const auto owner = ec ? 0 : r.stat.ephemeral_owner;
            const bool stray = !ec && owner != 0 && owner == self->client_.session_id() && !client_nodes::knows(self->client_, path);
            if (stray) self->client_.logger()->warn("{} belongs to this client's session, yet no acquire of this client has it: "
                                                    "a node the process forgot (a create whose reply was lost, or a delete the "
                                                    "servers lost); the waiter behind it deletes it", path);
            self->feed(lock_in::node_read{t, ec, ec ? 0 : r.stat.version, stray, !ec && has_grant_mark(r.data)});
        });
}

// The own node's read is one of the core's ops: an exists, or a getData when the data matters (a
// revocable hold: Curator's revocation request is the node's data). Either way one watch.
void lock_engine::carry_out(const lock_out::watch_own& a) {
    const zk::op read = a.read_data ? zk::op{zk::get_data{a.ticket, a.path, true}} : zk::op{zk::exists{a.ticket, a.path, true}};
    send_op(client_, read, [self = shared_from_this(), read_data = a.read_data](zk::event e) {
        if (const auto* fired = std::get_if<zk::watch_fired>(&e)) return self->feed(lock_in::own_changed{fired->id, fired->type});
        const auto& r = std::get<zk::reply>(e);
        if (r.ec && r.ec != errc::no_node) return self->feed(lock_in::own_read{r.id, r.ec});
        if (!r.stat) return self->feed(lock_in::own_read{r.id, {}, std::nullopt});  // deleted: the hold is lost
        self->feed(lock_in::own_read{r.id, {}, r.stat->ephemeral_owner, r.stat->version, read_data && r.data == revocation_signal});
    });
}

void lock_engine::carry_out(const lock_out::deadline_after& a) {
    deadline_timer_.emplace(net_, asked_at_ + a.delay);
    deadline_timer_->async_wait([self = shared_from_this()](error_code ec) {
        if (!ec) self->feed(lock_in::deadline{});
    });
}

// Most waits and holds of a busy lock are shorter than the delay: they never pay for the watch.
void lock_engine::carry_out(const lock_out::own_watch_later& a) {
    own_timer_.emplace(net_, a.delay);
    own_timer_->async_wait([self = shared_from_this(), t = a.ticket](error_code ec) {
        if (!ec) self->feed(lock_in::own_watch_due{t});
    });
}

void lock_engine::carry_out(const lock_out::touch_own& a) {
    const char* why = a.version < 0 ? "signalling the grant of" : "writing its data back after the revocation request:";
    client_.async_set_data(a.path, a.mark_grant ? with_grant_mark(data_) : data_, a.version,
                           boost::asio::bind_executor(net_, [logger = client_.logger(), p = a.path, why](error_code ec, zkr::stat) {
                               // (bad_version: written again since the request was read; that write stays)
                               if (ec && ec != errc::bad_version) logger->debug("{} {}: {}", why, p, ec.message());
                           }));
}

// The hold requests its stop and runs the recipe's revocation listener (hold::revocation_requested);
// the observer hears it first.
void lock_engine::carry_out(const lock_out::revocation_requested&) {
    client_.logger()->info("hold on {} (token {}): asked to let go (revocation)", node_path_, token_);
    observe(hold_event_kind::revocation_requested);
    if (auto h = hold_.lock()) h->revocation_requested();
}

// Guaranteed: a connection problem does not leave the node behind.
void lock_engine::carry_out(const lock_out::remove_node& a) {
    request r;
    r.kind = op_kind::remove;
    r.path = a.path;
    r.guaranteed = true;
    r.no_node_is_an_answer = true;  // gone already: done
    submit(detail::connection_of(client_), std::move(r), [logger = client_.logger(), p = a.path](const error_code& ec, response&&) {
        if (ec && ec != errc::no_node) logger->warn("removing lock node {}: {}", p, ec.message());
    });
}

// Nothing to send: the connection layer looks for the node of every protected create that gave up
// after it may have reached the server, by its prefix, and deletes it (connection::forget_protected).
void lock_engine::carry_out(const lock_out::remove_created&) {}

// The release fails fast: without a connection the caller hears connection_loss at once instead
// of waiting for one (a guard's destructor must not block through an outage), and the machine
// deletes on reconnection.
void lock_engine::carry_out(const lock_out::delete_own& a) {
    request r;
    r.kind = op_kind::remove;
    r.path = a.path;
    r.fail_fast = true;
    r.no_node_is_an_answer = true;  // gone already (with an old session, or deleted by hand): released
    submit(detail::connection_of(client_), std::move(r), [self = shared_from_this(), t = a.ticket, p = a.path](const error_code& ec, response&&) {
        if (ec && ec != errc::no_node) {
            if (is_retryable(ec))
                self->client_.logger()->warn("release of {} pending: {}; the node is deleted once the connection returns", p, ec.message());
            else
                self->client_.logger()->error("release of {} failed: {}", p, ec.message());
        }
        self->feed(lock_in::deleted{t, ec});
    });
}

void lock_engine::carry_out(const lock_out::queued& a) {
    observed_ahead_.reset();  // each queued is a new node (queued again): a new position
    node_path_ = a.path;
    if (on_queued_) on_queued_(a.path);
}

void lock_engine::carry_out(const lock_out::waiting& a) {
    if (observed_ahead_ != a.ahead) {
        observed_ahead_ = a.ahead;
        observe(hold_event_kind::queued);
    }
    if (on_waiting_) on_waiting_();
}

void lock_engine::carry_out(const lock_out::granted& a) {
    auto h = make_pooled<hold>(client_, a.path, a.token, a.session, shared_from_this());  // (one per grant)
    hold_ = h;
    node_path_ = a.path;
    token_ = a.token;
    granted_at_ = std::chrono::steady_clock::now();
    observe(hold_event_kind::acquired, granted_at_ - asked_at_);
    complete({}, std::move(h));
}

void lock_engine::carry_out(const lock_out::not_granted& a) { complete(a.ec, nullptr); }

void lock_engine::carry_out(const lock_out::hold_changed& a) {
    auto h = hold_.lock();
    if (a.state == hold_state::releasing) releasing_ = h;
    // The observer hears the change before anything it sets off: set_state requests the hold's
    // stop and posts its listeners, which end a leadership term (a selector's thread, a latch's
    // listener), whose own "ended" event must come after this one (issue 43: the order varied).
    switch (a.state) {
        case hold_state::doubtful:
            doubtful_since_ = std::chrono::steady_clock::now();
            observe(hold_event_kind::doubtful);
            break;
        case hold_state::held: observe(hold_event_kind::held_again, std::chrono::steady_clock::now() - doubtful_since_); break;
        case hold_state::lost: observe(hold_event_kind::lost, {}, a.cause); break;
        case hold_state::released: observe(hold_event_kind::released, std::chrono::steady_clock::now() - granted_at_); break;
        case hold_state::releasing: break;
    }
    if (h) h->set_state(a.state, a.cause);
}

void lock_engine::observe(hold_event_kind kind, std::chrono::steady_clock::duration duration, lost_cause cause) {
    const auto& options = client_.options();
    if (!options.observer) return;
    post_to_observer(options, callback_executor(detail::connection_of(client_)),
                     hold_event{kind, driver_->path(), node_path_, observed_ahead_.value_or(0), duration, cause, token_,
                                driver_->rule().kind()});
}

void lock_engine::carry_out(const lock_out::release_done& a) {
    const auto it = std::find_if(releases_.begin(), releases_.end(), [&](const auto& r) { return r.first == a.caller; });
    if (it == releases_.end()) return;
    auto done = std::move(it->second);
    releases_.erase(it);
    done(a.ec);
}

void lock_engine::complete(const error_code& ec, std::shared_ptr<hold> h) {
    if (deadline_timer_) deadline_timer_->cancel();
    if (auto d = std::exchange(done_, {})) d(ec, std::move(h));
    // Safe while feeding: feed() holds a reference of its own until the actions are done.
    acquiring_self_.reset();
}

void lock_engine::forget_create_in_flight() {
    const auto it = std::find_if(nodes_.begin(), nodes_.end(),
                                 [&](const client_nodes& n) { return client_nodes::is_create_in_flight(n.path(), driver_->path()); });
    if (it != nodes_.end()) nodes_.erase(it);
}

// Nothing the machine asked for can matter any more (the deadline went with the acquire's end).
void lock_engine::wind_down() {
    nodes_.clear();
    if (own_timer_) own_timer_->cancel();
    if (observer_) remove_state_observer(detail::connection_of(client_), std::exchange(observer_, 0));
    releasing_.reset();
}

}  // namespace zkr::detail
