#include "lock_engine.hpp"

#include "../../src/observe.hpp"
#include "../../src/pooled.hpp"
#include "../core/zk_port.hpp"

#include <zkr/path.hpp>

#include <algorithm>
#include <cstdio>

#include <spdlog/spdlog.h>

namespace zkr::detail {

using boost::system::error_code;

namespace {

// Our node's path before the protect prefix: "<lock path>/<name>", with the sequence when it is given.
// The usual one (the rule's name, no sequence) is the driver's, made once.
std::shared_ptr<const std::string> node_create_path(const lock_driver& d, const acquire_request& req) {
    if (req.node_name.empty() && !req.sequence) return d.default_create_path();
    auto name = req.node_name.empty() ? d.rule().node_name() : req.node_name;
    if (req.sequence) {
        char digits[11];
        std::snprintf(digits, sizeof digits, "%010u", *req.sequence);
        name += digits;
    }
    return std::make_shared<const std::string>(join_path(d.path(), name));
}

zk_lock_machine::config machine_config(lock_driver& d, acquire_request& req) {
    zk_lock_machine::config c;
    c.decisions = {.rule = &d.rule(), .timeout = req.timeout, .context = {req.held_by_us}, .revocable = d.revocable()};
    c.lock_path = d.shared_path();
    c.create_path = node_create_path(d, req);
    c.data = std::move(req.data);
    c.mode = req.sequence ? create_mode::ephemeral : create_mode::ephemeral_sequential;
    c.forgotten = [client = &d.get_client()](const std::string& path, std::int64_t owner) {
        return owner == client->session_id() && !client_nodes::knows(*client, path);
    };
    return c;
}

}  // namespace

lock_engine::lock_engine(std::shared_ptr<lock_driver> driver, acquire_request req, acquire_handler done)
    : lock_driver_ref{std::move(driver)},
      basic_lock_engine(driver_->get_client(), zk_lock_machine(machine_config(*driver_, req))),
      done_(std::move(done)),
      on_queued_(std::move(req.on_queued)),
      on_waiting_(std::move(req.on_waiting)),
      asked_at_(std::chrono::steady_clock::now()) {}

// (The releases' callers are answered next, by basic_lock_engine's destructor.)
lock_engine::~lock_engine() {
    if (auto d = std::exchange(done_, {})) d(make_error_code(errc::closed), nullptr);
}

void lock_engine::start() {
    // An acquire in progress keeps its engine alive. Its requests, watches and timers usually do,
    // but a waiter that has waited a while has only its watches out, and the loss of its session
    // ends them all: the engine would die with them, and an untimed caller hear "client closed"
    // although the client reconnects at once. The machine queues again on the new session, and
    // the acquire ends only by its own outcome (granted, not granted, cancelled, closed).
    acquiring_self_ = shared_from_this();
    const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - asked_at_);
    start_machine(is_connected(client().state()), client().session_id(), elapsed);
}

void lock_engine::carry_out(const lock_out::notice& a) {
    switch (a.what) {
        case lock_out::notice::stray_found:
            return client().logger()->warn("{} belongs to this client's session, yet no acquire of this client has it: a node the "
                                          "process forgot (a create whose reply was lost, or a delete the servers lost); the "
                                          "waiter behind it deletes it", a.path);
        case lock_out::notice::grant_signal_failed: return client().logger()->debug("signalling the grant of {}: {}", a.path, a.ec.message());
        case lock_out::notice::write_back_failed:
            return client().logger()->debug("writing its data back after the revocation request: {}: {}", a.path, a.ec.message());
        case lock_out::notice::remove_failed: return client().logger()->warn("removing lock node {}: {}", a.path, a.ec.message());
        case lock_out::notice::release_pending:
            return client().logger()->warn("release of {} pending: {}; the node is deleted once the connection returns", a.path, a.ec.message());
        case lock_out::notice::release_failed:
            // The client closed with the delete on its way (a service's shutdown racing its last
            // release): the node goes with the session the close ends; nothing failed.
            if (a.ec == errc::closed) return client().logger()->debug("release of {}: the client closed first; the node goes with its session", a.path);
            return client().logger()->error("release of {} failed: {}", a.path, a.ec.message());
    }
}

// The hold requests its stop and runs the recipe's revocation listener (hold::revocation_requested);
// the observer hears it first.
void lock_engine::carry_out(const lock_out::revocation_requested&) {
    client().logger()->info("hold on {} (token {}): asked to let go (revocation)", node_path_, token_);
    observe(hold_event_kind::revocation_requested);
    if (auto h = hold_.lock()) h->revocation_requested();
}

// (The outcome's path is ours to take: the machine made it for us.)
void lock_engine::carry_out(lock_out::queued&& a) {
    observed_ahead_.reset();  // each queued is a new node (queued again): a new position
    if (on_queued_) on_queued_(a.path);
    node_path_ = std::move(a.path);
}

void lock_engine::carry_out(const lock_out::waiting& a) {
    if (observed_ahead_ != a.ahead) {
        observed_ahead_ = a.ahead;
        observe(hold_event_kind::queued);
    }
    if (on_waiting_) on_waiting_();
}

void lock_engine::carry_out(lock_out::granted&& a) {
    node_path_ = a.path;  // (the node queued: its copy's room serves)
    auto h = make_pooled<hold>(client(), std::move(a.path), a.token, a.session, shared_from_this());  // (one per grant)
    hold_ = h;
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
    const auto& options = client().options();
    if (!options.observer) return;
    post_to_observer(options, callback_executor(detail::connection_of(client())),
                     hold_event{kind, driver_->path(), node_path_, observed_ahead_.value_or(0), duration, cause, token_,
                                driver_->rule().kind()});
}

void lock_engine::complete(const error_code& ec, std::shared_ptr<hold> h) {
    if (auto d = std::exchange(done_, {})) d(ec, std::move(h));
    // Safe while feeding: feed() holds a reference of its own until the actions are done.
    acquiring_self_.reset();
}

}  // namespace zkr::detail
