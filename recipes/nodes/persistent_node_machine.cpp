#include "persistent_node_machine.hpp"

#include <zkr/error.hpp>

#include <algorithm>

namespace zkr::detail {

namespace {

// A create that another try cannot mend.
bool final_for_create(const boost::system::error_code& ec) {
    return ec == errc::no_auth || ec == errc::invalid_acl || ec == errc::auth_failed || ec == errc::unimplemented || ec == errc::bad_arguments ||
           ec == errc::invalid_path || ec == errc::invalid_argument || ec == errc::data_too_large || ec == errc::no_children_for_ephemerals ||
           ec == errc::no_node || ec == errc::ephemeral_on_local_session;
}

}  // namespace

std::vector<persistent_node_machine::action> persistent_node_machine::resume(const input& e) {
    std::vector<action> out;
    out_ = &out;
    std::visit([this](const auto& ev) { on(ev); }, e);
    out_ = nullptr;
    return out;
}

void persistent_node_machine::on(const node_in::start& s) {
    if (phase_ != phase::idle) return;  // sim-one-way: api-guard
    phase_ = phase::running;
    session_ = s.session;
    create();
}

void persistent_node_machine::on(const node_in::set_data& s) {
    data_ = s.data;
    data_written_ = false;
    if (phase_ == phase::running && !path_.empty()) write();
    // (A create in flight was sent with older data: its reply writes again. No node yet: the
    // next create carries this data.)
}

void persistent_node_machine::on(const node_in::close&) {
    if (phase_ == phase::closing || phase_ == phase::done) return;  // sim-one-way: api-guard
    const bool was_idle = phase_ == phase::idle;
    phase_ = phase::closing;
    retry_ = 0;
    if (was_idle) return finish_close();  // sim-one-way: api-guard
    if (create_) return;  // its reply says what to delete
    if (path_.empty()) return finish_close();
    doomed_ = path_;
    remove();
}

// ---- requests ------------------------------------------------------------------------------

void persistent_node_machine::create() {
    if (create_ || phase_ != phase::running) return;
    create_ = next();
    created_with_ = data_;
    out_->push_back(zk::op{zk::create{create_, config_.path, data_, config_.mode, config_.create_parents, config_.protect, config_.ttl}});
}

// A newer check supersedes an older one: only the newest reply and watch count.
void persistent_node_machine::check(const std::string& path) {
    check_ = next();
    watched_ = path;
    out_->push_back(zk::op{zk::exists{check_, path, true}});
}

void persistent_node_machine::write() {
    if (write_ || path_.empty()) return;  // (one at a time: its reply writes again if data_ moved on)
    write_ = next();
    writing_ = data_;
    out_->push_back(zk::op{zk::set_data{write_, path_, data_, -1}});
}

void persistent_node_machine::remove() {
    remove_ = next();
    out_->push_back(zk::op{zk::remove{remove_, doomed_, -1}});
}

void persistent_node_machine::retry_later() {
    if (retry_) return;
    retry_ = next();
    out_->push_back(zk::op{zk::after{retry_, config_.retry_delay}});
}

// A failure heard while the machine believes it is connected (the connection's state and a
// request's failure come in either order) is tried again after a pause; otherwise the next
// reconnection carries on.
void persistent_node_machine::after_failure(const boost::system::error_code& ec) {
    if (ec == errc::closed) return;  // the client is closed: nothing more can be done
    if (!awaits_connection(ec) || connected_) retry_later();
}

void persistent_node_machine::carry_on() {
    if (phase_ == phase::closing) {
        if (!remove_ && !create_ && !doomed_.empty()) remove();
        return;
    }
    if (phase_ != phase::running || create_) return;
    // Read the node again: a deletion, or a write lost with the connection, shows there.
    if (!path_.empty()) return check(path_);
    create();
}

// ---- replies -------------------------------------------------------------------------------

void persistent_node_machine::on(const zk::reply& r) {
    if (r.id == create_) return created(r);
    if (r.id == check_) return checked(r);
    if (r.id == write_) return written(r);
    if (r.id == remove_) return removed(r);
}

void persistent_node_machine::created(const zk::reply& r) {
    create_ = 0;
    if (phase_ == phase::closing) {
        if (!r.ec) {
            doomed_ = r.path;  // (never ours to tell of: made after the close)
            return remove();
        }
        // A lost reply: a protected node is the client's to remove; an unprotected one ends
        // with its session (ephemeral) or stays (docs/recipes.md).
        return finish_close();
    }
    if (phase_ != phase::running) return;
    if (!r.ec) {
        set_path(r.path);
        data_written_ = created_with_ == data_;
        check(path_);
        if (!data_written_) write();  // sim-one-way: inlined-guard
        return;
    }
    if (r.ec == errc::node_exists) return check(config_.path);  // ours (a retried create, an old
                                                                // incarnation) or another's
    if (r.ec == errc::closed) {  // sim-one-way: client-closed
        phase_ = phase::stopped;     // sim-unreachable: client-closed
        return;                      // sim-unreachable: client-closed
    }
    if (final_for_create(r.ec)) {                  // sim-one-way: final-error
        phase_ = phase::stopped;                    // sim-unreachable: final-error
        out_->push_back(node_out::gave_up{r.ec});  // sim-unreachable: final-error
        return;                                     // sim-unreachable: final-error
    }
    after_failure(r.ec);
}

void persistent_node_machine::checked(const zk::reply& r) {
    if (phase_ != phase::running) return;
    if (r.ec) return after_failure(r.ec);
    if (!r.stat) {  // gone: make it again
        if (path_ == watched_) set_path({});
        return create();
    }
    if (!ours(*r.stat)) {  // another session's: the watch waits for it to go
        if (path_ == watched_) set_path({});
        out_->push_back(node_out::taken{watched_, r.stat->ephemeral_owner});
        return;
    }
    if (path_ != watched_) {  // found ours (node_exists): its data is not known, so write it
        set_path(watched_);
        data_written_ = false;
    }
    if (!data_written_) write();
}

void persistent_node_machine::written(const zk::reply& r) {
    write_ = 0;
    if (phase_ != phase::running) return;
    if (!r.ec) {
        data_written_ = writing_ == data_;
        if (!data_written_) write();  // sim-one-way: inlined-guard
        return;
    }
    if (r.ec == errc::no_node) return;  // gone: the watch makes it again, with data_
    after_failure(r.ec);
}

void persistent_node_machine::removed(const zk::reply& r) {
    remove_ = 0;
    if (phase_ != phase::closing) return;
    if (!r.ec || r.ec == errc::no_node) return finish_close();
    // An ephemeral node of an ended session is gone with it.
    if (r.ec == errc::session_expired && is_ephemeral(config_.mode)) return finish_close();
    if (awaits_connection(r.ec)) return after_failure(r.ec);  // sim-one-way: final-error
    finish_close(r.ec);                                       // sim-unreachable: final-error
}

// ---- events --------------------------------------------------------------------------------

void persistent_node_machine::on(const zk::watch_fired& w) {
    if (w.id != check_ || phase_ != phase::running) return;
    check_ = 0;
    if (w.type == watch_event_type::not_watching) return;  // the session ended: its reconnection carries on
    if (w.type == watch_event_type::node_deleted) {
        if (path_ == watched_) set_path({});
        return create();
    }
    check(watched_);  // data changed or made: watch again
}

void persistent_node_machine::on(const zk::timer_due& t) {
    if (t.id == touch_) {
        touch_ = 0;
        if (phase_ != phase::running || path_.empty()) return;  // (made again: armed again then)
        data_written_ = false;  // a write of the same data: the server's clock for the TTL starts again
        write();
        return arm_touch();
    }
    if (t.id != retry_) return;
    retry_ = 0;
    carry_on();
}

void persistent_node_machine::arm_touch() {
    if (!has_ttl(config_.mode) || config_.ttl.count() <= 0 || touch_) return;
    touch_ = next();
    out_->push_back(zk::op{zk::after{touch_, std::max(config_.ttl / 2, std::chrono::milliseconds(1))}});
}

void persistent_node_machine::on(const zk::connection_changed& c) {
    switch (c.state) {
        case connection_state::suspended: connected_ = false; return;
        case connection_state::lost:
            connected_ = false;
            // The session's ephemeral node went with it.
            if (is_ephemeral(config_.mode)) {
                if (phase_ == phase::closing) {
                    doomed_.clear();
                    if (!create_) finish_close();
                    return;
                }
                set_path({});
            }
            return;
        case connection_state::connected:
        case connection_state::reconnected:
            connected_ = true;
            session_ = c.session;
            return carry_on();
        case connection_state::closed:  // sim-unreachable: client-closed (nothing can be done any more)
            return client_closed();      // sim-unreachable: client-closed
        default: return;  // read_only: no write can be made there; the next read-write connection carries on
    }
}

// ---- helpers -------------------------------------------------------------------------------

// An ephemeral node went with the closed client's session; a persistent one stays.
void persistent_node_machine::client_closed() {  // sim-unreachable: client-closed
    if (phase_ == phase::closing) return finish_close(is_ephemeral(config_.mode) ? boost::system::error_code{} : make_error_code(errc::closed));  // sim-unreachable: client-closed
    if (phase_ != phase::running) return;  // sim-unreachable: client-closed
    phase_ = phase::stopped;                // sim-unreachable: client-closed
    if (is_ephemeral(config_.mode)) set_path({});  // sim-unreachable: client-closed
}

// An ephemeral node is ours only if our session owns it; a persistent one is ours at our path.
bool persistent_node_machine::ours(const zkr::stat& st) const {
    return !is_ephemeral(config_.mode) || st.ephemeral_owner == session_;
}

void persistent_node_machine::set_path(std::string path) {
    if (path == path_) return;
    path_ = std::move(path);
    if (!path_.empty()) watched_ = path_;
    out_->push_back(node_out::path_changed{path_});
    if (!path_.empty()) arm_touch();
    if (!path_.empty() && !first_done_) {
        first_done_ = true;
        out_->push_back(node_out::first_created{});
    }
}

void persistent_node_machine::finish_close(boost::system::error_code ec) {
    if (phase_ == phase::done) return;  // sim-one-way: close-guard
    phase_ = phase::done;
    doomed_.clear();
    set_path({});
    out_->push_back(node_out::closed{ec});
}

}  // namespace zkr::detail
