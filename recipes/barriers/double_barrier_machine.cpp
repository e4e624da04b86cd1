#include "double_barrier_machine.hpp"

#include <zkr/error.hpp>

#include <algorithm>
#include <utility>

namespace zkr::detail {

namespace {
constexpr const char* ready_name = "ready";
}  // namespace

double_barrier_machine::double_barrier_machine(std::string path, std::string id, std::size_t members)
    : path_(std::move(path)), ready_(path_ + "/" + ready_name), own_(path_ + "/" + id), id_(std::move(id)), members_(members) {}

std::vector<double_barrier_machine::action> double_barrier_machine::resume(const input& e) {
    std::vector<action> out;
    out_ = &out;
    std::visit([this](const auto& ev) { on(ev); }, e);
    out_ = nullptr;
    return out;
}

void double_barrier_machine::on(const double_barrier_in::enter&) {
    if (phase_ != phase::idle) return;  // sim-one-way: api-guard
    phase_ = phase::entering;
    go_on();
}

void double_barrier_machine::on(const double_barrier_in::leave&) {
    if (phase_ != phase::entered) return;  // sim-one-way: api-guard
    phase_ = phase::leaving;
    go_on();
}

void double_barrier_machine::on(const double_barrier_in::give_up&) {
    if (phase_ != phase::entering && phase_ != phase::entered && phase_ != phase::leaving) return;
    give_up({});
}

// Stops the enter or leave under way: our node goes first, then gave_up (or failed with why).
void double_barrier_machine::give_up(const boost::system::error_code& why) {
    giving_up_from_ = phase_;
    giving_up_why_ = why;
    phase_ = phase::giving_up;
    watch_ = 0;
    go_on();  // (after the reply of a request in flight, if any: it may still decide)
}

// The phase's next request from what we know now; nothing while a request is in flight (its
// reply goes on).
void double_barrier_machine::go_on() {
    if (pending_) return;
    switch (phase_) {
        case phase::entering:
            if (!node_) return send(step::make_node, zk::create{.path = own_, .mode = create_mode::ephemeral, .parents = true});
            return send(step::check_ready, zk::exists{.path = ready_, .watch = true});
        case phase::entered:
            if (!node_) return send(step::make_node, zk::create{.path = own_, .mode = create_mode::ephemeral, .parents = true});
            return;
        case phase::leaving:
            return send(step::list, zk::get_children{.path = path_});
        // (Giving up: also a node whose create failed with the connection: it may have been made.)
        case phase::giving_up:
            if (node_ || maybe_node_) return send(step::remove_own, zk::remove{.path = own_});
            if (giving_up_why_) return finish(double_barrier_out::failed{giving_up_why_});
            return finish(double_barrier_out::gave_up{});
        default:
            return;  // sim-unreachable: idle-or-done
    }
}

void double_barrier_machine::send(step s, zk::op op) {
    if (s == step::make_node) maybe_node_ = true;
    step_ = s;
    pending_ = ++last_ticket_;
    std::visit([this](auto& o) { o.id = pending_; }, op);
    out_->push_back(std::move(op));
}

void double_barrier_machine::on(const zk::reply& r) {
    if (r.id != pending_) return;  // sim-one-way: double-barrier-ticket-guard
    pending_ = 0;
    const auto s = std::exchange(step_, step::none);
    // What each step takes for done: our node made (a retry of ours finds it), `ready` made by
    // anyone, a node to delete already gone. A listing of a barrier that is gone lists nothing.
    const bool done = !r.ec || (r.ec == errc::node_exists && (s == step::make_node || s == step::make_ready)) ||
                      (r.ec == errc::no_node && (s == step::remove_own || s == step::remove_ready || s == step::list || s == step::count));
    if (!done) {
        if (!awaits_connection(r.ec))                                // sim-one-way: final-error
            return finish(double_barrier_out::failed{r.ec});  // sim-unreachable: final-error
        // A read-only server refuses our writes until the next change of connection; any other
        // failure came from an outage that is over (or is about to be heard of): go on now, the
        // client holds the request until it is connected.
        if (connected_ && r.ec != errc::not_read_only) return go_on();
        owed_ = true;
        return;
    }
    const bool entering = phase_ == phase::entering || (phase_ == phase::giving_up && giving_up_from_ == phase::entering);
    switch (s) {
        case step::make_node:
            node_ = true;
            return go_on();
        case step::check_ready:
            if (entering && r.stat && node_) return pass_enter();
            if (phase_ != phase::entering) return go_on();
            watch_ = r.id;  // set on the missing node: it fires when `ready` is made
            return send(step::count, zk::get_children{.path = path_});
        case step::count: {
            if (phase_ != phase::entering) return go_on();
            const auto n = static_cast<std::size_t>(std::count_if(r.children.begin(), r.children.end(), [](const std::string& c) { return c != ready_name; }));
            if (n >= members_) return send(step::make_ready, zk::create{.path = ready_, .mode = create_mode::persistent, .parents = true});
            // Too few: the ready watch wakes us (if it fired meanwhile, check again now).
            if (!watch_) go_on();
            return;
        }
        case step::make_ready:
            if (entering) return pass_enter();  // sim-one-way: make-ready-only-entering
            return go_on();                     // sim-unreachable: make-ready-only-entering
        case step::list:
            if (phase_ != phase::leaving) return go_on();
            return on_members(r.children);
        case step::remove_own:
            node_ = maybe_node_ = false;
            return go_on();
        case step::watch_member:
            if (phase_ != phase::leaving) return go_on();
            if (!r.stat) return go_on();  // gone already: list again
            watch_ = r.id;
            return;
        case step::remove_ready:
            return finish(double_barrier_out::left{});
        case step::none:
            return;  // sim-unreachable: no-step
    }
}

// Enough entered (a give-up that came meanwhile is too late: the others counted us).
void double_barrier_machine::pass_enter() {
    phase_ = phase::entered;
    watch_ = 0;
    giving_up_why_ = {};
    out_->emplace_back(std::in_place_type<double_barrier_out::entered>);  // (in place: GCC 12 at -O3 misreads a moved temporary)
    go_on();  // (our node, if its session was lost meanwhile)
}

// Leave's one decision, on a listing of the barrier.
void double_barrier_machine::on_members(std::vector<std::string> children) {
    std::erase(children, std::string(ready_name));
    std::sort(children.begin(), children.end());
    if (children.empty()) return send(step::remove_ready, zk::remove{.path = ready_});
    const bool ours = std::binary_search(children.begin(), children.end(), id_);
    if (!ours) {
        node_ = maybe_node_ = false;  // gone with its session (or deleted by someone)
        return send(step::watch_member, zk::exists{.path = path_ + "/" + children.front(), .watch = true});
    }
    if (children.size() == 1) return send(step::remove_own, zk::remove{.path = own_});
    if (children.front() == id_) return send(step::watch_member, zk::exists{.path = path_ + "/" + children.back(), .watch = true});
    send(step::remove_own, zk::remove{.path = own_});
}

void double_barrier_machine::on(const zk::watch_fired& w) {
    if (w.id != watch_) return;
    watch_ = 0;
    // Made, deleted, changed, or the watch ended with its session: only a new look can tell.
    go_on();
}

void double_barrier_machine::on(const zk::connection_changed& c) {
    if (phase_ == phase::idle || phase_ == phase::done) return;  // sim-one-way: stopped-at-end
    if (c.state == connection_state::closed)                                  // sim-one-way: client-closed
        return finish(double_barrier_out::failed{make_error_code(errc::closed)});  // sim-unreachable: client-closed
    if (c.state == connection_state::lost) {
        // The session ended: our node with it, and our watch (its not_watching is not needed).
        // A create of ours in flight may still be made on the new session (the client retries it).
        node_ = false;
        maybe_node_ = pending_ && step_ == step::make_node;
        watch_ = 0;
        connected_ = false;
        owed_ = true;
        // While entering, the others may have counted us, made `ready` and gone through, even
        // left and deleted it, while we were away: we could wait for ever for a round that is
        // over. The enter fails with session_expired instead (its caller may enter again, for a
        // new round); a create of ours still in flight is deleted first, when it comes back.
        if (phase_ == phase::entering) give_up(make_error_code(errc::session_expired));
        return;
    }
    if (!is_connected(c.state)) {
        connected_ = false;  // suspended
        return;
    }
    connected_ = true;
    if (std::exchange(owed_, false)) go_on();
}

void double_barrier_machine::finish(action outcome) {
    phase_ = phase::done;
    pending_ = watch_ = 0;
    out_->push_back(std::move(outcome));
}

}  // namespace zkr::detail
