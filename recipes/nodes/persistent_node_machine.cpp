#include "persistent_node_machine.hpp"

#include <zkr/error.hpp>

#include <algorithm>
#include <utility>

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
    // Never started, or stopped (the client closed, or a create that cannot succeed): nothing to do.
    const bool nothing_to_do = phase_ == phase::idle || phase_ == phase::stopped;
    phase_ = phase::closing;
    retry_ = 0;
    if (nothing_to_do) return finish_close();  // sim-one-way: api-guard
    if (!path_.empty()) {  // known ours: a read of it under way does not matter any more
        doomed_ = path_;
        doomed_version_ = -1;
        check_ = 0;
        reading_ = false;
    }
    // Not known: a create whose reply was lost, or an earlier session's, may have left a node at
    // a plain path: read it. (A create, a read or a delete under way says more by its reply. A
    // protected node is the client's to remove; a sequential one's name is not known.)
    else if (!config_.protect && !is_sequential(config_.mode))
        suspect_ = config_.path;
    close_next();
}

// While closing: delete what is known to be ours, read what may be, wait out a node of an earlier
// session, and finish once nothing that decides what is left is under way.
void persistent_node_machine::close_next() {
    if (create_ || remove_) return;  // their replies carry on
    if (!doomed_.empty()) return remove();
    if (reading_ || waiting_out_) return;
    if (!suspect_.empty()) return check(suspect_);
    finish_close();
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
    reading_ = true;
    out_->push_back(zk::op{zk::exists{check_, path, true}});
}

void persistent_node_machine::write() {
    if (write_ || path_.empty()) return;  // (one at a time: its reply writes again if data_ moved on)
    write_ = next();
    writing_ = data_;
    out_->push_back(zk::op{zk::set_data{write_, path_, data_, -1}});
}

// Sent once (a failure is read before another try), and an ephemeral node's only on the session
// that owns it: sent again, after it took or on a later session, a delete could meet another
// process's node made at the path meanwhile.
void persistent_node_machine::remove() {
    remove_ = next();
    out_->push_back(zk::op{zk::remove{remove_, doomed_, doomed_version_, /*once=*/true, is_ephemeral(config_.mode) ? session_ : 0}});
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
    if (phase_ == phase::closing) return close_next();
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
            doomed_version_ = -1;
        } else if (r.ec != errc::closed && !config_.protect && !is_sequential(config_.mode)) {
            // It may have been made (a lost reply, or node_exists for a retry of one): read it.
            // A protected node is the client's to remove; an unprotected sequential one cannot be
            // found, and ends with its session (ephemeral) or stays (docs/recipes.md).
            suspect_ = config_.path;
        }
        return close_next();
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
    reading_ = false;
    if (phase_ == phase::closing) return checked_while_closing(r);
    if (phase_ != phase::running) return;
    if (r.ec) return after_failure(r.ec);
    if (!r.stat) {  // gone: make it again
        if (path_ == watched_) set_path({});
        return create();
    }
    if (!ours(*r.stat)) {  // another session's: the watch waits for it to go
        if (path_ == watched_) set_path({});
        out_->push_back(node_out::taken{watched_, r.stat->ephemeral_owner, left_by_earlier_session(*r.stat)});
        return;
    }
    if (path_ != watched_) {  // found ours (node_exists): its data is not known, so write it
        set_path(watched_);
        data_written_ = false;
    }
    if (!data_written_) write();
}

// A read while closing: a node there that is ours is deleted; one an earlier session of ours left
// is waited out (its watch says when it goes). ZooKeeper has no delete conditional on a node's
// owner, and a version does not tell a node from one made again in its place: deleting it could
// delete another process's node made there meanwhile.
// (No read is under way while a node known ours is to be deleted: the close drops the check of
// that node, and close_next reads nothing while it has a delete to make.)
void persistent_node_machine::checked_while_closing(const zk::reply& r) {
    // A read of another path, from before the close (an earlier incarnation's): read the node to delete.
    if (!suspect_.empty() && watched_ != suspect_) return close_next();  // sim-one-way: rare-stale-read
    if (r.ec) {
        suspect_ = watched_;  // read it again
        return after_failure(r.ec);
    }
    if (r.stat && left_by_earlier_session(*r.stat)) {
        waiting_out_ = true;  // (suspect_ stays: read again when the watch fires)
        return;
    }
    if (r.stat && ours(*r.stat)) {
        doomed_ = watched_;
        doomed_version_ = r.stat->version;
    }
    suspect_.clear();
    close_next();
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
    if (!r.ec || r.ec == errc::no_node) {
        // Gone. (A read planned of the same node after a session loss is not needed either.)
        doomed_.clear();
        suspect_.clear();
        return close_next();
    }
    // Changed since it was read (a write of ours still on its way, or another's); or the session
    // ended, and its node with it, unless the client gave the session up while the server kept it
    // (read on the next session).
    if (r.ec == errc::bad_version || (r.ec == errc::session_expired && is_ephemeral(config_.mode))) {
        read_doomed_again();
        return close_next();
    }
    // Unknown whether it took: sent again, it could delete a node made at the path meanwhile.
    if (awaits_connection(r.ec)) {  // sim-one-way: final-error
        read_doomed_again();
        return after_failure(r.ec);
    }
    finish_close(r.ec);  // sim-unreachable: final-error
}

// ---- events --------------------------------------------------------------------------------

void persistent_node_machine::on(const zk::watch_fired& w) {
    if (w.id == check_ && phase_ == phase::closing) {  // an earlier session's node changed or went
        check_ = 0;
        reading_ = waiting_out_ = false;
        return close_next();  // read it again
    }
    if (w.id != check_ || phase_ != phase::running) return;
    check_ = 0;
    reading_ = false;  // (a reply still to come of this check is not heard any more)
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
            session_ended();
            // The session's ephemeral node went with it, unless the client gave the session up
            // while the server kept it: then it is an earlier session's node, waited out.
            if (is_ephemeral(config_.mode)) {
                if (phase_ == phase::closing) return close_next();
                set_path({});
            }
            return;
        case connection_state::connected:
        case connection_state::reconnected:
            connected_ = true;
            if (c.session != session_) session_ended();  // (a new session without a `lost` heard)
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
    return !is_ephemeral(config_.mode) || (session_ != 0 && st.ephemeral_owner == session_);
}

bool persistent_node_machine::left_by_earlier_session(const zkr::stat& st) const {
    return is_ephemeral(config_.mode) && st.ephemeral_owner != 0 &&
           std::find(earlier_sessions_.begin(), earlier_sessions_.end(), st.ephemeral_owner) != earlier_sessions_.end();
}

// The session ended (or was given up): a node it owns is ours from now on only to delete. A few
// are kept: the server ends a session it keeps within a session timeout.
void persistent_node_machine::session_ended() {
    if (session_ == 0) return;
    earlier_sessions_.push_back(std::exchange(session_, 0));
    if (earlier_sessions_.size() > 8) earlier_sessions_.erase(earlier_sessions_.begin());
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

// While closing, after a session loss or a delete whose outcome is unknown: the node to delete was
// ours, and may now be gone, an earlier session's, or another's made in its place; read it before
// deleting anything.
void persistent_node_machine::read_doomed_again() {
    if (!doomed_.empty()) suspect_ = std::exchange(doomed_, {});
}

void persistent_node_machine::finish_close(boost::system::error_code ec) {
    if (phase_ == phase::done) return;  // sim-one-way: close-guard
    phase_ = phase::done;
    doomed_.clear();
    set_path({});
    out_->push_back(node_out::closed{ec});
}

}  // namespace zkr::detail
