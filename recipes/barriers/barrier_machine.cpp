#include "barrier_machine.hpp"

#include <zkr/error.hpp>

namespace zkr::detail {

std::vector<barrier_machine::action> barrier_machine::resume(const input& e) {
    std::vector<action> out;
    out_ = &out;
    std::visit([this](const auto& ev) { on(ev); }, e);
    out_ = nullptr;
    return out;
}

void barrier_machine::on(const barrier_in::start&) {
    if (phase_ != phase::idle) return;  // sim-one-way: api-guard
    phase_ = phase::waiting;
    check();
}

void barrier_machine::on(const zk::reply& r) {
    // (One check at a time, and its watch fires only after its reply: a reply while waiting is
    // the current check's. The guard keeps it so.)
    if (phase_ != phase::waiting || r.id != check_) return;  // sim-one-way: barrier-ticket-guard
    check_ = 0;
    if (r.ec) {
        if (!awaits_connection(r.ec))                   // sim-one-way: final-error
            return finish(barrier_out::failed{r.ec});  // sim-unreachable: final-error
        // A failure heard while connected came from an outage that is over (or is about to be
        // heard of): the check goes again now; the client holds it until it is connected.
        if (connected_) return check();
        check_later_ = true;
        return;
    }
    if (!r.stat) return finish(barrier_out::passed{});
    watch_ = r.id;  // the node is there: its watch is set
    out_->push_back(barrier_out::seen_set{});
}

void barrier_machine::on(const zk::watch_fired& w) {
    if (phase_ != phase::waiting || w.id != watch_) return;  // sim-one-way: stopped-at-end
    watch_ = 0;
    // Deleted, or changed, or the watch ended with its session: only a new check can tell.
    if (w.type == watch_event_type::not_watching && !connected_) {
        check_later_ = true;
        return;
    }
    check();
}

void barrier_machine::on(const zk::connection_changed& c) {
    if (phase_ != phase::waiting) return;  // sim-one-way: stopped-at-end
    // (read_only counts as connected: an exists is a read, which a read-only server answers.)
    if (!is_connected(c.state)) {
        if (c.state == connection_state::closed)                             // sim-one-way: client-closed
            return finish(barrier_out::failed{make_error_code(errc::closed)});  // sim-unreachable: client-closed
        connected_ = false;  // suspended, lost
        return;
    }
    connected_ = true;
    if (check_later_) check();  // (owed only with no check in flight: check() clears it)
}

void barrier_machine::check() {
    check_later_ = false;
    check_ = ++last_ticket_;
    out_->push_back(zk::op{zk::exists{.id = check_, .path = path_, .watch = true}});
}

void barrier_machine::finish(std::vector<action>::value_type outcome) {
    phase_ = phase::done;
    check_ = watch_ = 0;
    out_->push_back(std::move(outcome));
}

}  // namespace zkr::detail
