#include "value_machine.hpp"

#include <zkr/error.hpp>

namespace zkr::detail {

template <typename Codec>
std::vector<typename value_machine<Codec>::action> value_machine<Codec>::resume(const input& e) {
    std::vector<action> out;
    out_ = &out;
    std::visit([this](const auto& ev) { on(ev); }, e);
    out_ = nullptr;
    return out;
}

template <typename Codec>
void value_machine<Codec>::on(const value_in::start&) {
    read();
}

// A newer read supersedes an older one: only the newest reply and watch count.
template <typename Codec>
void value_machine<Codec>::read() {
    read_ = ++last_ticket_;
    out_->push_back(zk::op{zk::get_data{read_, path_, true}});
}

template <typename Codec>
void value_machine<Codec>::await_creation() {
    exists_ = ++last_ticket_;
    out_->push_back(zk::op{zk::exists{exists_, path_, true}});
}

template <typename Codec>
void value_machine<Codec>::on(const zk::reply& r) {
    if (r.id == read_) {
        if (r.ec == errc::no_node) {
            out_->push_back(value_out::gone{});
            return await_creation();
        }
        if (r.ec) {
            out_->push_back(value_out::read_failed{r.ec});
            return;  // (the next reconnection reads again)
        }
        const auto& st = *r.stat;
        // Replies come in order, so the newest read's is the newest state; still, never a version
        // of the same node older than one applied (defence in depth: see newest-read).
        if (st.czxid == czxid_ && st.version < version_) return;  // sim-one-way: newest-read
        return apply(r.data, st);
    }
    if (r.id == exists_ && !r.ec && r.stat) {
        exists_ = 0;
        read();  // made again before the watch was set
    }
}

// Not ordered with the watch's reads, so only a newer version of the node shown is taken: a node
// deleted and made again, or an older version, is the watch's to bring.
template <typename Codec>
void value_machine<Codec>::on(const value_in::observed& o) {
    if (!value_ || o.stat.czxid != czxid_ || o.stat.version <= version_) return;
    apply(o.data, o.stat);
}

template <typename Codec>
void value_machine<Codec>::apply(const std::string& data, const zkr::stat& st) {
    auto parsed = codec_.decode(data);
    if (!parsed) {
        out_->push_back(value_out::unreadable{data});
        return;
    }
    const bool changed = !value_ || *value_ != *parsed;
    version_ = st.version;
    czxid_ = st.czxid;
    out_->push_back(value_read{*parsed, st.version, st.czxid, changed});
    value_ = std::move(parsed);
}

template <typename Codec>
void value_machine<Codec>::on(const zk::watch_fired& w) {
    if (w.type == watch_event_type::not_watching) return;  // the session went: its reconnection reads again
    if (w.id == read_) return read();                          // changed or deleted: read again
    if (w.id == exists_ && w.type == watch_event_type::node_created) {
        exists_ = 0;
        read();
    }
}

// Every reconnection reads again (and sets the watch again): a change made while the connection
// was down, or on a new session after the old one expired, is seen then.
template <typename Codec>
void value_machine<Codec>::on(const zk::connection_changed& c) {
    if (c.state == connection_state::connected || c.state == connection_state::reconnected) read();
}

template class value_machine<count_codec>;
template class value_machine<bytes_codec>;

}  // namespace zkr::detail
