// The lock machine in ZooKeeper's vocabulary (recipes/core/zk_ops.hpp): its I/O intents leave as
// zk::op, and replies, watch events, timers and connection changes come back as zk::event. What
// each reply means to the lock is read here, once, for every engine: a node of our own session
// that no acquire of this client has (a stray), a grant's mark in a node's data, a revocation
// request in ours. Pure like the machine it wraps: no I/O, no clock, no threads.
//
// The lock's own outcomes (queued, waiting, granted, ...) pass through unchanged. The decisions
// stay in basic_lock_machine (lock_machine.hpp), whose own vocabulary its unit tests and the
// lock simulation speak; this face is what the engine speaks.
#pragma once

#include "grant_mark.hpp"
#include "lock_machine.hpp"

#include "../core/zk_ops.hpp"

#include <zkr/path.hpp>
#include <zkr/revocation.hpp>

#include <boost/container/small_vector.hpp>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <variant>

namespace zkr::detail {

namespace lock_out {
/// Nothing to decide, something to log: a node of our session that no acquire of this client has
/// (the machine deletes it), or a background request that failed.
struct notice {
    enum kind { stray_found, grant_signal_failed, write_back_failed, remove_failed, release_pending, release_failed } what = stray_found;
    std::string path;
    boost::system::error_code ec;
};
}  // namespace lock_out

namespace lock_in {
/// The acquire begins (this face's start): connected/session, the connection as it is now;
/// elapsed, how long ago the caller asked (the timeout counts from then: the engine's clock).
struct start_after {
    bool connected = false;
    std::int64_t session = 0;
    std::chrono::milliseconds elapsed{0};
};
}  // namespace lock_in

using zk_lock_input = std::variant<lock_in::start_after, zk::reply, zk::watch_fired, zk::timer_due, zk::connection_changed,
                                   lock_in::cancel, lock_in::release, lock_in::reevaluate>;
using zk_lock_action = std::variant<zk::op, lock_out::queued, lock_out::waiting, lock_out::granted, lock_out::not_granted,
                                    lock_out::revocation_requested, lock_out::hold_changed, lock_out::release_done,
                                    lock_out::notice>;
/// Room for four inside, as lock_actions.
using zk_lock_actions = boost::container::small_vector<zk_lock_action, 4>;

template <typename Rules = lock_rules>
class basic_zk_lock_machine {
public:
    using machine = basic_lock_machine<Rules>;
    using input = zk_lock_input;
    using action = zk_lock_action;

    struct config {
        typename machine::config decisions;
        /// The lock's folder: what is listed, and where the nodes ahead are. Shared (never null):
        /// a recipe makes its paths once, not for each acquire.
        std::shared_ptr<const std::string> lock_path;
        /// Our node's path before the protect prefix (and the sequence). Shared, never null.
        std::shared_ptr<const std::string> create_path;
        std::string data;         ///< our node's data
        create_mode mode = create_mode::ephemeral_sequential;
        /// Whether the node at this path, owned by this session, is one the process forgot: owned
        /// by the client's session now, yet no acquire of this client has it (client_nodes). A
        /// question for the client, which alone knows both. Empty: none is.
        std::function<bool(const std::string& path, std::int64_t owner)> forgotten;
    };

    explicit basic_zk_lock_machine(config c) : cfg_(std::move(c)), machine_(std::move(cfg_.decisions)) {}

    /// The actions for e, in order; valid until the next resume (the caller may move out of them).
    zk_lock_actions& resume(zk_lock_input&& e) {
        out_.clear();
        std::visit([this](auto& ev) { on(ev); }, e);
        return out_;
    }

    const machine& decisions() const noexcept { return machine_; }
    /// The ticket of the acquire's deadline (its zk::after), once asked for; 0 before.
    zk::ticket deadline_ticket() const noexcept { return deadline_; }
    bool finished() const noexcept { return machine_.finished(); }

private:
    // What each ticket out there was sent for: how its reply, or its watch's event, reads.
    enum class sent { create, list, watch_node, watch_own, read_own, delete_own, own_timer, deadline, signal_grant, write_back, remove };
    struct out_there {
        out_there(zk::ticket i, sent w, std::string p = {}) : id(i), what(w), path(std::move(p)) {}
        zk::ticket id = 0;
        sent what = sent::create;
        std::string path;  // watch_node: the node (for the stray check); remove: for the log
    };

    // ---- in ---------------------------------------------------------------------------------
    void on(lock_in::start_after& e) {
        elapsed_ = e.elapsed;
        decide(lock_in::start{e.connected, e.session});
    }
    void on(lock_in::cancel& e) { decide(e); }
    void on(lock_in::release& e) { decide(e); }
    void on(lock_in::reevaluate& e) { decide(e); }
    void on(zk::connection_changed& e) { decide(lock_in::connection{e.state, e.session}); }

    void on(zk::timer_due& e) {
        const auto s = take(e.id);
        if (!s) return;
        if (s->what == sent::deadline) return decide(lock_in::deadline{});
        decide(lock_in::own_watch_due{e.id});
    }

    void on(zk::watch_fired& e) {
        const auto s = take(e.id);
        if (!s) return;
        if (s->what == sent::watch_node) return decide(lock_in::node_changed{e.id, e.type});
        decide(lock_in::own_changed{e.id, e.type});
    }

    void on(zk::reply& r) {
        auto* s = find(r.id);
        if (!s) return;
        const auto what = s->what;
        // A read whose watch was set keeps its entry until the watch fires: an exists sets one on
        // a missing node too, a getData only on a node that exists.
        const bool watch_set = (what == sent::watch_own && (!r.ec || r.ec == errc::no_node)) ||
                               ((what == sent::watch_node || what == sent::read_own) && !r.ec);
        auto path = watch_set ? std::string() : std::move(s->path);
        if (!watch_set) erase(s);  // (s is not read again then)
        switch (what) {
            case sent::create: {
                const auto czxid = r.stat ? r.stat->czxid : 0, owner = r.stat ? r.stat->ephemeral_owner : 0;
                return decide(lock_in::created{r.id, r.ec, std::move(r.path), czxid, owner});
            }
            case sent::list: return decide(lock_in::listed{r.id, r.ec, std::move(r.children)});
            case sent::watch_node: return node_read(r, watch_set ? s->path : path);
            case sent::watch_own: case sent::read_own: return own_read(r, what == sent::read_own);
            case sent::delete_own:
                // (no_node: gone already, with an old session or deleted by hand: released)
                if (r.ec && r.ec != errc::no_node)
                    out_.emplace_back(lock_out::notice{is_retryable(r.ec) ? lock_out::notice::release_pending : lock_out::notice::release_failed,
                                                       machine_.node_path(), r.ec});
                return decide(lock_in::deleted{r.id, r.ec});
            case sent::signal_grant:
                if (!r.ec) return;
                out_.emplace_back(lock_out::notice{lock_out::notice::grant_signal_failed, machine_.node_path(), r.ec});
                return decide(lock_in::touch_failed{r.ec});
            case sent::write_back:
                // (bad_version: written again since the revocation request was read; that write stays)
                if (r.ec && r.ec != errc::bad_version) out_.emplace_back(lock_out::notice{lock_out::notice::write_back_failed, machine_.node_path(), r.ec});
                return;
            case sent::remove:
                if (r.ec && r.ec != errc::no_node) out_.emplace_back(lock_out::notice{lock_out::notice::remove_failed, std::move(path), r.ec});
                return;
            case sent::own_timer: case sent::deadline: return;  // (timers have no reply)
        }
    }

    // The read of a node ahead. Its owner tells a node of the client's own session that no
    // acquire of this client has: a stray, which nobody else would ever delete. (path may live in sent_, which
    // the decision below may grow: it is read only before.)
    void node_read(const zk::reply& r, const std::string& path) {
        lock_in::node_read e{r.id, r.ec};
        if (!r.ec && r.stat) {
            const auto owner = r.stat->ephemeral_owner;
            e.version = r.stat->version;
            e.stray = owner != 0 && cfg_.forgotten && cfg_.forgotten(path, owner);
            e.marked = has_grant_mark(r.data);
            if (e.stray) out_.emplace_back(lock_out::notice{lock_out::notice::stray_found, path, {}});
        }
        decide(e);
    }

    // The read of our own node: gone (no stat), or there with its owner, version and data.
    void own_read(const zk::reply& r, bool with_data) {
        if (r.ec && r.ec != errc::no_node) return decide(lock_in::own_read{r.id, r.ec});
        if (!r.stat) return decide(lock_in::own_read{r.id, {}, std::nullopt});  // deleted
        decide(lock_in::own_read{r.id, {}, r.stat->ephemeral_owner, r.stat->version, with_data && r.data == revocation_signal});
    }

    // ---- out --------------------------------------------------------------------------------
    // (The machine's actions are moved out: its buffer is cleared on its next resume.)
    void decide(lock_event&& e) {
        for (auto& a : machine_.resume(std::move(e))) std::visit([this](auto& act) { out(std::move(act)); }, a);
    }

    void out(lock_out::deadline_after&& a) {
        const auto left = a.delay > elapsed_ ? a.delay - elapsed_ : std::chrono::milliseconds{0};
        deadline_ = own_ticket(sent::deadline);
        send(zk::after{deadline_, left});
    }
    // Our node: protected (the connection finds it after a lost reply, and removes it when the
    // create gives up after it may have been applied).
    void out(lock_out::create&& a) {
        note(a.ticket, sent::create);
        send(zk::create{a.ticket, *cfg_.create_path, cfg_.data, cfg_.mode, /*parents=*/true, /*protect=*/true});
    }
    void out(lock_out::list&& a) {
        note(a.ticket, sent::list);
        send(zk::get_children{a.ticket, *cfg_.lock_path, false});
    }
    // getData, not exists: no watch is left behind on a node that is already gone.
    void out(lock_out::watch_node&& a) {
        auto path = join_path(*cfg_.lock_path, a.name);
        note(a.ticket, sent::watch_node, path);
        send(zk::get_data{a.ticket, std::move(path), true});
    }
    // One watch on our node: an exists, or a getData when its data matters (a revocable hold:
    // Curator's revocation request is the node's data).
    void out(lock_out::watch_own&& a) {
        note(a.ticket, a.read_data ? sent::read_own : sent::watch_own);
        if (a.read_data) send(zk::get_data{a.ticket, std::move(a.path), true});
        else send(zk::exists{a.ticket, std::move(a.path), true});
    }
    void out(lock_out::own_watch_later&& a) {
        note(a.ticket, sent::own_timer);
        send(zk::after{a.ticket, a.delay});
    }
    void out(lock_out::touch_own&& a) {
        const auto what = a.version < 0 ? sent::signal_grant : sent::write_back;
        send(zk::set_data{own_ticket(what), std::move(a.path), a.mark_grant ? with_grant_mark(cfg_.data) : cfg_.data, a.version});
    }
    // Guaranteed: a connection problem does not leave the node behind.
    void out(lock_out::remove_node&& a) {
        zk::remove r{own_ticket(sent::remove, a.path), std::move(a.path)};
        r.guaranteed = true;
        send(std::move(r));
    }
    // The release fails fast: without a connection the caller hears connection_loss at once
    // instead of waiting for one, and the machine deletes on reconnection.
    void out(lock_out::delete_own&& a) {
        note(a.ticket, sent::delete_own);
        zk::remove r{a.ticket, std::move(a.path)};
        r.once = true;
        send(std::move(r));
    }
    template <typename Outcome>
    void out(Outcome&& a) {
        out_.emplace_back(std::forward<Outcome>(a));
    }

    template <typename Op>
    void send(Op&& op) {
        out_.emplace_back(std::in_place_type<zk::op>, std::forward<Op>(op));
    }

    // ---- what is out there ------------------------------------------------------------------
    void note(zk::ticket id, sent what) { sent_.emplace_back(id, what); }
    void note(zk::ticket id, sent what, std::string path) { sent_.emplace_back(id, what, std::move(path)); }
    // A ticket of this face's own (a timer, or a request the machine never hears about), apart
    // from the machine's.
    zk::ticket own_ticket(sent what) {
        note(++own_last_, what);
        return own_last_;
    }
    zk::ticket own_ticket(sent what, std::string path) {
        note(++own_last_, what, std::move(path));
        return own_last_;
    }
    out_there* find(zk::ticket id) {
        const auto it = std::find_if(sent_.begin(), sent_.end(), [&](const out_there& s) { return s.id == id; });
        return it == sent_.end() ? nullptr : &*it;
    }
    void erase(out_there* s) { sent_.erase(sent_.begin() + (s - sent_.data())); }
    std::optional<out_there> take(zk::ticket id) {
        auto* s = find(id);
        if (!s) return std::nullopt;
        auto taken = std::move(*s);
        erase(s);
        return taken;
    }

    config cfg_;
    machine machine_;
    zk_lock_actions out_;
    boost::container::small_vector<out_there, 4> sent_;
    zk::ticket own_last_ = zk::ticket{1} << 62;  // (the machine's tickets count up from 1)
    std::chrono::milliseconds elapsed_{0};
    zk::ticket deadline_ = 0;
};

using zk_lock_machine = basic_zk_lock_machine<>;

}  // namespace zkr::detail
