#include "count_machine.hpp"

#include <zkr/error.hpp>

namespace zkr::detail {

std::vector<count_machine::action> count_machine::resume(const input& e) {
    std::vector<action> out;
    out_ = &out;
    std::visit([this](const auto& ev) { on(ev); }, e);
    out_ = nullptr;
    return out;
}

void count_machine::on(const count_in::start&) { read(); }

// A newer read supersedes an older one: only the newest reply and watch count.
void count_machine::read() {
    read_ = ++last_ticket_;
    out_->push_back(zk::op{zk::get_data{read_, path_, true}});
}

void count_machine::await_creation() {
    exists_ = ++last_ticket_;
    out_->push_back(zk::op{zk::exists{exists_, path_, true}});
}

void count_machine::on(const zk::reply& r) {
    if (r.id == read_) {
        if (r.ec == errc::no_node) {
            out_->push_back(count_out::gone{});
            return await_creation();
        }
        if (r.ec) {
            out_->push_back(count_out::read_failed{r.ec});
            return;  // (the next reconnection reads again)
        }
        return apply(r);
    }
    if (r.id == exists_ && !r.ec && r.stat) {
        exists_ = 0;
        read();  // made again before the watch was set
    }
}

void count_machine::apply(const zk::reply& r) {
    const auto& st = *r.stat;
    // Replies come in order, so the newest read's is the newest state; still, never a version of
    // the same node older than one applied.
    if (st.czxid == czxid_ && st.version < version_) return;
    const auto parsed = count_from_data(r.data, format_);
    if (!parsed) {
        out_->push_back(count_out::unreadable{r.data});
        return;
    }
    const bool changed = !value_ || *value_ != *parsed;
    value_ = *parsed;
    version_ = st.version;
    czxid_ = st.czxid;
    out_->push_back(count_out::value_read{*parsed, st.version, st.czxid, changed});
}

void count_machine::on(const zk::watch_fired& w) {
    if (w.type == watch_event_type::not_watching) return;  // the session went: its reconnection reads again
    if (w.id == read_) return read();                          // changed or deleted: read again
    if (w.id == exists_ && w.type == watch_event_type::node_created) {
        exists_ = 0;
        read();
    }
}

// Every reconnection reads again (and sets the watch again): a change made while the connection
// was down, or on a new session after the old one expired, is seen then.
void count_machine::on(const zk::connection_changed& c) {
    if (c.state == connection_state::connected || c.state == connection_state::reconnected) read();
}

}  // namespace zkr::detail
