#include "atomic_long_machine.hpp"

#include "../core/big_endian.hpp"

#include <zkr/error.hpp>

#include <algorithm>
#include <charconv>

namespace zkr::detail {

std::string long_to_data(std::int64_t value, unsigned width) {
    return width == 4 ? big_endian_bytes(static_cast<std::int32_t>(value)) : big_endian_bytes(value);  // sim-one-way: integer
}

std::optional<std::int64_t> long_from_data(std::string_view data, unsigned width) {
    if (data.empty()) return 0;  // Curator reads an empty node as 0 (sim-one-way: long-format)
    if (width == 4) return from_big_endian_bytes<std::int32_t>(data);  // sim-one-way: integer
    return from_big_endian_bytes<std::int64_t>(data);
}

namespace {

// Why a TTL receipt could not be made, and what the server needs.
constexpr const char* ttl_refused = "the server does not allow TTL nodes (receipt_ttl): start it with zookeeper.extendedTypesEnabled=true";

bool connection_failed(const boost::system::error_code& ec) { return awaits_connection(ec) || ec == errc::session_expired; }

std::uint64_t serial_of(const std::string& data) {
    std::uint64_t v = 0;
    const auto [p, e] = std::from_chars(data.data(), data.data() + data.size(), v);
    return e == std::errc() && p == data.data() + data.size() ? v : 0;
}

}  // namespace

std::vector<atomic_long_machine::action> atomic_long_machine::resume(const input& e) {
    std::vector<action> out;
    out_ = &out;
    std::visit([this](const auto& ev) { on(ev); }, e);
    out_ = nullptr;
    return out;
}

void atomic_long_machine::on(const atomic_in::begin& b) {
    if (busy()) return;  // (the class runs one operation at a time)
    req_ = b.request;
    if (b.session) session_ = b.session;  // sim-one-way: begin-session
    attempts_.clear();
    unresolved_ = in_doubt_ = promoted_ = false;
    tries_ = promoted_tries_ = 0;
    read();
}

// One round: the receipt when this operation writes and it is not known (or a write's outcome
// is), and the value. While a write's outcome is unknown the value is read only once the
// receipt's reply is in: a receipt found gone can take no more writes of ours, so the value read
// after it shows every one that took. (Pipelined, the two could be served the other way round:
// the client resends each request that failed with its connection on its own.)
void atomic_long_machine::read() {
    step_ = step::reading;
    value_reply_.reset();
    receipt_reply_.reset();
    const bool need_receipt = req_.what != atomic_request::kind::get && !receipt_.empty() && (unresolved_ || !receipt_known());
    receipt_read_ = need_receipt ? ++last_ticket_ : 0;
    value_read_ = 0;
    if (need_receipt) out_->push_back(zk::op{zk::get_data{receipt_read_, receipt_, false}});
    if (!unresolved_) read_value();
}

void atomic_long_machine::read_value() {
    value_read_ = ++last_ticket_;
    out_->push_back(zk::op{zk::get_data{value_read_, cfg_.path, false}});
}

void atomic_long_machine::on(const zk::reply& r) {
    if (r.ec == errc::closing || r.ec == errc::closed) {  // sim-one-way: client-closed
        if (busy() && (r.id == pending_ || r.id == value_read_ || r.id == receipt_read_)) fail(make_error_code(errc::closed), "the client closed");  // sim-unreachable: client-closed
        return;  // sim-unreachable: client-closed
    }
    if (step_ == step::reading && r.id && (r.id == value_read_ || r.id == receipt_read_)) {
        if (connection_failed(r.ec)) {
            value_read_ = receipt_read_ = 0;
            return await_connection();
        }
        if (r.ec && r.ec != errc::no_node) return fail(r.ec, "reading " + (r.id == value_read_ ? cfg_.path : receipt_));
        (r.id == value_read_ ? value_reply_ : receipt_reply_) = r;
        if (!value_read_) return read_value();  // (the receipt's reply is in: now the value)
        if (value_reply_ && (!receipt_read_ || receipt_reply_)) decide();
        return;
    }
    if (!r.id || r.id != pending_) return;  // a reply of a round given up
    pending_ = 0;
    switch (step_) {
        case step::making_value:
        case step::making_receipt:
            if (step_ == step::making_receipt) {
                if (!r.ec) {
                    receipt_version_ = 0;
                    receipt_session_ = session_;
                } else if (r.ec != errc::node_exists && !connection_failed(r.ec)) {  // sim-one-way: final-error
                    receipt_.clear();  // not made: the next is made under a new name (sim-unreachable: final-error)
                }  // (node_exists: ours, its reply lost and the create resent; the next round reads it)
            }
            if (!r.ec || r.ec == errc::node_exists || r.ec == errc::no_node) return read();  // (no_node: the value went)
            if (connection_failed(r.ec)) return await_connection();  // sim-one-way: final-error
            if (r.ec == errc::unimplemented && step_ != step::making_value && cfg_.receipt_ttl.count() > 0)  // sim-unreachable: final-error
                return fail(r.ec, "creating the receipt " + cfg_.receipt + std::to_string(generation_) + ": " + ttl_refused);  // sim-unreachable: final-error
            return fail(r.ec, "creating " + (step_ == step::making_value ? cfg_.path : cfg_.receipt + std::to_string(generation_)));  // sim-unreachable: final-error
        case step::writing:
            if (!r.ec) {
                ++receipt_version_;
                const auto [pre, post] = attempts_.at(serial_);
                return finish({{}, {}, true, pre, post});
            }
            unresolved_ = true;  // even a conflict: it may be our own write's resent copy
            if (connection_failed(r.ec)) {
                in_doubt_ = true;
                return await_connection();
            }
            if (r.ec == errc::bad_version || r.ec == errc::no_node || r.ec == errc::node_exists) return after_conflict();  // sim-one-way: final-error
            return fail(r.ec, "writing " + cfg_.path);  // sim-unreachable: final-error
        case step::fencing:
            if (!r.ec) {
                ++receipt_version_;
                unresolved_ = in_doubt_ = false;  // no write of ours can take now, and none did
                return read();
            }
            unresolved_ = true;  // the receipt moved (a write of ours took), or went, or the fence's reply was lost: look again
            if (connection_failed(r.ec)) return await_connection();
            return read();
        default: return;
    }
}

void atomic_long_machine::decide() {
    const auto& v = *value_reply_;
    const bool exists = !v.ec;
    std::int64_t value = 0;
    if (exists) {
        const auto parsed = long_from_data(v.data, cfg_.width);
        if (!parsed)  // sim-one-way: long-format
            return fail(make_error_code(errc::invalid_argument),  // sim-unreachable: long-format
                        "the node " + cfg_.path + " holds " + std::to_string(v.data.size()) + " bytes, not a " + bits() + " value (" +  // sim-unreachable: long-format
                            std::to_string(cfg_.width) + " big-endian bytes)");  // sim-unreachable: long-format
        value = *parsed;
        value_version_ = v.stat ? v.stat->version : -1;
        value_czxid_ = v.stat ? v.stat->czxid : 0;
    } else {
        value_version_ = -1;
    }
    last_value_ = value;
    bool receipt_there = false;
    std::uint64_t receipt_serial = 0;
    if (receipt_read_) {
        if (receipt_reply_->ec) {
            receipt_version_ = -1;
            receipt_session_ = 0;
            receipt_.clear();  // gone: never made again under this name (see read())
        } else {
            receipt_there = true;
            receipt_version_ = receipt_reply_->stat ? receipt_reply_->stat->version : -1;
            receipt_session_ = session_;
            receipt_serial = serial_of(receipt_reply_->data);
        }
    }
    if (unresolved_) {
        if (receipt_there) {
            // The receipt names the last write of ours that took.
            if (const auto it = attempts_.find(receipt_serial); it != attempts_.end()) return finish({{}, {}, true, it->second.first, it->second.second});
            // None took so far. One whose request may still arrive can take while the receipt
            // has not moved since it was sent (the value, read after the receipt, says nothing
            // of that moment): then the receipt is moved on first (a fence), so that no write of
            // ours is ever left in doubt behind a new one.
            in_doubt_ = in_doubt_ && receipt_version_ == last_receipt_base_;
            if (in_doubt_) return fence();
        } else if (exists && value_version_ == last_base_ && value_czxid_ == last_czxid_) {
            in_doubt_ = false;  // the receipt went (before the value was read): nothing of ours can take now, and nothing did
        } else {
            return fail(make_error_code(errc::session_expired),
                        "a write's reply was lost with the session (and its receipt with it), and " + cfg_.path +
                            " changed since: whether the write took is unknown");
        }
        unresolved_ = false;
    }
    std::int64_t next = 0;
    switch (req_.what) {
        case atomic_request::kind::get: return finish({{}, {}, true, value, value});
        case atomic_request::kind::compare_and_set:
            if (!exists || value != req_.expected || tries_ >= 1) return give_up(value);  // (it never creates, as Curator's)
            next = req_.operand;
            break;
        case atomic_request::kind::add:
            if (__builtin_add_overflow(value, req_.operand, &next) || (cfg_.width == 4 && next != static_cast<std::int32_t>(next)))  // sim-one-way: overflow
                return fail(make_error_code(errc::invalid_argument),  // sim-unreachable: overflow
                            "adding " + std::to_string(req_.operand) + " to " + std::to_string(value) + " overflows a " + bits() + " value");  // sim-unreachable: overflow
            break;
        case atomic_request::kind::set: next = req_.operand; break;
    }
    if (req_.what != atomic_request::kind::compare_and_set) {
        if (promoted_ ? promoted_tries_ >= cfg_.promoted_tries : tries_ >= cfg_.optimistic_tries)
            return promoted_ || !cfg_.promote ? give_up(value) : ask_for_lock();
    }
    if (!exists) {
        // Made with 0 first (what a missing node reads as): the change itself is always a receipted write.
        step_ = step::making_value;
        pending_ = ++last_ticket_;
        out_->push_back(zk::op{zk::create{pending_, cfg_.path, long_to_data(0, cfg_.width), create_mode::persistent, true}});
        return;
    }
    if (!receipt_known()) {
        // A new name each time: a write in doubt still names the receipt it was sent with, and
        // a receipt made again under that name would start at the version it expects.
        step_ = step::making_receipt;
        pending_ = ++last_ticket_;
        receipt_ = cfg_.receipt + std::to_string(++generation_);
        zk::create c{pending_, receipt_, "0", cfg_.receipt_ttl.count() ? create_mode::persistent_with_ttl : create_mode::ephemeral};
        c.ttl = cfg_.receipt_ttl;
        out_->push_back(zk::op{std::move(c)});
        return;
    }
    if (promoted_ && lock_session_ != session_) return ask_for_lock();  // it died with its session: take it again
    write(value, next, value_version_);
}

// The receipt's version is known, and the receipt still there as far as we know (an ephemeral one
// died with any session but the one it was read or made on).
bool atomic_long_machine::receipt_known() const {
    return receipt_version_ >= 0 && (cfg_.receipt_ttl.count() > 0 || receipt_session_ == session_);
}

void atomic_long_machine::ask_for_lock() {
    step_ = step::locking;
    out_->emplace_back(std::in_place_type<atomic_out::lock_needed>);
}

void atomic_long_machine::write(std::int64_t pre, std::int64_t post, std::int32_t version) {
    ++serial_;
    attempts_[serial_] = {pre, post};
    last_base_ = version;
    last_czxid_ = value_czxid_;
    last_receipt_base_ = receipt_version_;
    ++(promoted_ ? promoted_tries_ : tries_);
    zk::multi m{++last_ticket_, {}};
    if (promoted_) m.ops.push_back(multi_op::check(lock_node_));
    m.ops.push_back(multi_op::set_data(cfg_.path, long_to_data(post, cfg_.width), version));
    m.ops.push_back(multi_op::set_data(receipt_, std::to_string(serial_), receipt_version_));
    pending_ = m.id;
    step_ = step::writing;
    out_->push_back(zk::op{std::move(m)});
}

void atomic_long_machine::after_conflict() {
    step_ = step::sleeping;
    const unsigned tries = std::max(promoted_ ? promoted_tries_ : tries_, 1u);
    timer_ = ++last_ticket_;
    out_->push_back(zk::op{zk::after{timer_, cfg_.backoff * (1 << std::min(tries - 1, 6u))}});
}

// A request failed with the connection: once connected (at once if we still think we are, after
// a pause, so that a connection that is down costs no busy loop), read again.
void atomic_long_machine::await_connection() {
    step_ = step::waiting_connection;
    pending_ = 0;
    timer_ = 0;
    if (!connected_) return;
    timer_ = ++last_ticket_;
    out_->push_back(zk::op{zk::after{timer_, std::max(cfg_.backoff * 16, std::chrono::milliseconds(20))}});
}

void atomic_long_machine::on(const zk::timer_due& t) {
    if (!t.id || t.id != timer_) return;
    timer_ = 0;
    if (step_ == step::sleeping || step_ == step::waiting_connection) read();
}

void atomic_long_machine::on(const zk::connection_changed& c) {
    if (c.state == connection_state::closed) {  // sim-one-way: client-closed
        connected_ = false;  // sim-unreachable: client-closed
        if (busy()) fail(make_error_code(errc::closed), "the client closed");  // sim-unreachable: client-closed
        return;  // sim-unreachable: client-closed
    }
    connected_ = is_connected(c.state);
    if (connected_ && c.session) session_ = c.session;  // sim-one-way: misread-decision
    if (connected_ && step_ == step::waiting_connection) {
        timer_ = 0;
        read();
    }
}

void atomic_long_machine::on(const atomic_in::lock_granted& g) {
    if (step_ != step::locking) return;  // sim-one-way: lock-answer-guard
    promoted_ = true;
    lock_session_ = g.session;
    lock_node_ = g.node;
    read();
}

void atomic_long_machine::on(const atomic_in::lock_refused& r) {
    if (step_ != step::locking) return;
    if (r.ec) return fail(r.ec, "taking the promotion lock");
    give_up(last_value_);
}

// A write of ours whose reply was a connection failure may still arrive and take. Before anything
// else (a new try, or an answer of "not succeeded"), the receipt is moved on from the version that
// write expects: it fails the write if it comes later, or fails itself if the write took (the
// next read says which). So at most one write of ours is ever in doubt: the last.
void atomic_long_machine::fence() {
    step_ = step::fencing;
    pending_ = ++last_ticket_;
    out_->push_back(zk::op{zk::set_data{pending_, receipt_, "fence", receipt_version_}});
}

void atomic_long_machine::give_up(std::int64_t pre) { finish({{}, {}, false, pre, 0}); }

void atomic_long_machine::finish(atomic_out::finished f) {
    f.optimistic_tries = tries_;
    f.receipts_made = generation_;
    f.promoted_tries = promoted_tries_;
    if (promoted_ || step_ == step::locking) out_->emplace_back(std::in_place_type<atomic_out::lock_done>);  // sim-one-way: misread-decision
    step_ = step::idle;
    promoted_ = unresolved_ = in_doubt_ = false;
    pending_ = value_read_ = receipt_read_ = timer_ = 0;
    attempts_.clear();
    out_->push_back(std::move(f));
}

void atomic_long_machine::fail(boost::system::error_code ec, std::string reason) { finish({ec, std::move(reason)}); }

}  // namespace zkr::detail
