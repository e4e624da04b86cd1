// The decisions of one acquisition and the hold it becomes, as a value: events in, actions out.
// No I/O, no clock, no threads. An engine carries the actions out (on the real connection, or on
// the simulated ZooKeeper of test/sim) and feeds every reply, watch event, connection change and
// timer back in. The same machine runs in both.
#pragma once

#include <zkr/connection_state.hpp>
#include <zkr/error.hpp>
#include <zkr/hold_state.hpp>
#include <zkr/observer.hpp>
#include "lock_rule.hpp"
#include <zkr/path.hpp>
#include <zkr/watch_event.hpp>

#include "../core/ticket_book.hpp"

#include <boost/container/small_vector.hpp>
#include <boost/system/error_code.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace zkr::detail {

// A lock_ticket names one request (or timer) the machine asked for. Its reply, or its watch's
// event, comes back with the same ticket; a ticket the machine no longer holds is stale, and the
// event is dropped in one place (resume).

/// A waiter or a hold sets the watch on its own node (which tells it of a deletion or a write by
/// someone else) only once it has lasted this long: most waits and holds of a busy lock are
/// shorter, and the request would cost one in five of a contended cycle. The machine's own policy:
/// it leaves as own_watch_later's delay, so the engine and the simulation cannot disagree on it.
inline constexpr std::chrono::milliseconds own_watch_delay{100};

namespace lock_in {
/// The acquire begins. connected/session: the connection as it is now.
struct start {
    bool connected = false;
    std::int64_t session = 0;
};
/// The create of our node (ephemeral sequential, protected) answered.
struct created {
    lock_ticket ticket = 0;
    boost::system::error_code ec;
    std::string path;
    std::int64_t czxid = 0;
    std::int64_t owner = 0;  ///< the node's ephemeral owner
};
/// The listing of the lock's children answered.
struct listed {
    lock_ticket ticket = 0;
    boost::system::error_code ec;
    std::vector<std::string> children;
};
/// The read (getData with a watch) of a node we wait on answered.
struct node_read {
    lock_ticket ticket = 0;
    boost::system::error_code ec;
    std::int32_t version = 0;
    /// Owned by our own session, yet no acquire of this client has it: a node this process has
    /// forgotten (a create whose reply was lost, or a delete that the servers lost; see
    /// docs/reliability.md, "ZooKeeper's own faults").
    bool stray = false;
    /// Its data carries the grant mark (grant_mark.hpp): under marked grants, the only sign
    /// that it holds that a write by someone else cannot give.
    bool marked = false;
};
/// The watch on a node we wait on fired.
struct node_changed {
    lock_ticket ticket = 0;
    watch_event_type type = watch_event_type::not_watching;
};
/// The exists (or getData, lock_out::watch_own::read_data) with a watch on our own node answered;
/// owner is empty when it does not exist. version: its data version (how many times it was written).
struct own_read {
    lock_ticket ticket = 0;
    boost::system::error_code ec;
    std::optional<std::int64_t> owner;
    std::int32_t version = 0;
    /// Read with its data, which is Curator's revocation request (revocation_signal).
    bool revocation_requested = false;
};
/// The watch on our own node fired.
struct own_changed {
    lock_ticket ticket = 0;
    watch_event_type type = watch_event_type::not_watching;
};
/// The connection changed; session: the session it runs on now (when connected).
struct connection {
    connection_state state = connection_state::latent;
    std::int64_t session = 0;
};
/// The timer of deadline_after ran out.
struct deadline {};
/// The timer of own_watch_later ran out.
struct own_watch_due {
    lock_ticket ticket = 0;
};
/// The caller gives up the acquire (the recipe went away, or cancel()).
struct cancel {};
/// A caller releases the hold. caller: who asks (release_done answers with it).
struct release {
    std::uint64_t caller = 0;
};
/// Our release's delete (or multi) answered. connection_loss without a connection: fail-fast.
struct deleted {
    lock_ticket ticket = 0;
    boost::system::error_code ec;
};
/// The rule's limit changed (a semaphore's shared count): decide again from what we know.
struct reevaluate {};
/// The write that signals our grant (touch_own, version -1) failed with ec. One the connection
/// gave up on (connection_loss once its retry policy gave up: 3 retries by default, a few seconds,
/// while the session lives on) or one a read-only server refused is written again once the hold's
/// session has a read-write connection: a waiter behind us awaits it.
struct touch_failed {
    boost::system::error_code ec;
};
}  // namespace lock_in

using lock_event = std::variant<lock_in::start, lock_in::created, lock_in::listed, lock_in::node_read,
                                lock_in::node_changed, lock_in::own_read, lock_in::own_changed, lock_in::connection,
                                lock_in::deadline, lock_in::own_watch_due, lock_in::cancel, lock_in::release,
                                lock_in::deleted, lock_in::reevaluate, lock_in::touch_failed>;

namespace lock_out {
/// Answer with lock_in::deadline after `delay`: the acquire's timeout, counted from when the caller
/// asked (the engine knows when that was).
struct deadline_after {
    std::chrono::milliseconds delay{0};
};
/// Create our node: `<lock path>/<protect prefix><name><sequence>`, ephemeral sequential, parents
/// as containers. Answer with lock_in::created.
struct create {
    lock_ticket ticket = 0;
};
/// List the lock path's children. Answer with lock_in::listed.
struct list {
    lock_ticket ticket = 0;
};
/// getData with a watch on the lock node `name`. Answer with lock_in::node_read, then the watch's
/// lock_in::node_changed.
struct watch_node {
    lock_ticket ticket = 0;
    std::string name;
};
/// exists with a watch on our own node. Answer with lock_in::own_read, then lock_in::own_changed.
struct watch_own {
    lock_ticket ticket = 0;
    std::string path;
    /// getData instead: a revocable hold reads its node's data for a revocation request (the
    /// same one watch tells it of a deletion too).
    bool read_data = false;
};
/// Answer with lock_in::own_watch_due after `delay`.
struct own_watch_later {
    lock_ticket ticket = 0;
    std::chrono::milliseconds delay{0};
};
/// setData of our own data on our node. version -1: tells the waiter behind us that we hold (a
/// failure answers with lock_in::touch_failed; success, nothing). A version: writes our data back
/// over a revocation request read at that version (a later write by anyone stays), so that the
/// node names its holder again (nothing to answer).
struct touch_own {
    std::string path;
    std::int32_t version = -1;
    /// Our data with the grant mark after it (lock_rule::grants_marked, grant_mark.hpp).
    bool mark_grant = false;
};
/// A guaranteed delete (retried until done, across reconnections). Nothing to answer.
struct remove_node {
    std::string path;
};
/// Our release: a fail-fast delete. Answer with lock_in::deleted.
struct delete_own {
    lock_ticket ticket = 0;
    std::string path;
};
/// Our node is there: the caller's on_queued.
struct queued {
    std::string path;
};
/// We wait behind others (again after a change of the queue ahead): the caller's on_waiting.
struct waiting {
    std::size_t ahead = 0;  ///< participants ahead of ours, as last seen
};
/// The acquire ends with a hold.
struct granted {
    std::string path;
    std::int64_t token = 0;  ///< the node's czxid: the fencing token
    std::int64_t session = 0;
};
/// The acquire ends without a hold: ec, or clear when the timeout passed (or a try did not hold).
struct not_granted {
    boost::system::error_code ec;
};
/// A revocation request was read on our node while it holds (once per hold): the recipe's
/// revocation listener runs and the hold's stop is requested. The hold stays held until released.
struct revocation_requested {};
/// The hold's state changed.
struct hold_changed {
    hold_state state = hold_state::held;
    lost_cause cause = lost_cause::none;  ///< lost: why
};
/// The release's caller may hear its outcome now (the delete may still be pending: then ec is
/// retryable and the machine deletes on reconnection).
struct release_done {
    std::uint64_t caller = 0;
    boost::system::error_code ec;
};
}  // namespace lock_out

using lock_action = std::variant<lock_out::deadline_after, lock_out::create, lock_out::list, lock_out::watch_node, lock_out::watch_own,
                                 lock_out::own_watch_later, lock_out::touch_own, lock_out::remove_node,
                                 lock_out::delete_own, lock_out::queued, lock_out::waiting, lock_out::granted,
                                 lock_out::not_granted, lock_out::revocation_requested, lock_out::hold_changed,
                                 lock_out::release_done>;
/// A machine's answer to one event: room for four actions inside (a machine lives for one acquire,
/// and a vector's first batches were up to three allocations per acquire).
using lock_actions = boost::container::small_vector<lock_action, 4>;

/// Where the machine's protocol makes a choice that safety rests on. The shipped machine uses
/// lock_rules; the simulation's tests plant faults by instantiating the machine with a policy
/// that gets one of these wrong, to prove that the simulation finds it.
struct lock_rules {
    /// CURATOR-604: a node counts as ours only if our current session owns it.
    static bool owns(std::int64_t node_owner, std::int64_t session) { return node_owner == session; }
    /// A node we waited on is gone: only that node left the queue (a waiter ahead may have given
    /// up while the holder still holds).
    static void forget(queue_view& view, const std::string& gone) { view.remove(gone); }
    /// A release whose delete met a lost connection stays releasing and deletes on reconnection.
    static constexpr bool keep_pending_delete = true;
    /// A waiter that reads a stray (lock_in::node_read::stray) deletes it.
    static constexpr bool delete_strays = true;
};

/// How far one machine has come.
enum class lock_phase { idle, queuing, waiting, holding, done };

/// One acquisition and, once granted, its hold (see docs/design.md for the state diagram).
template <typename Rules = lock_rules>
class basic_lock_machine {
public:
    struct config {
        const lock_rule* rule = nullptr;  ///< must outlive the machine
        /// nullopt: wait for ever; zero or less: try once, never queue; more: give up after it.
        std::optional<std::chrono::milliseconds> timeout;
        /// The nodes on this path that the acquiring owner holds already (lock_rule::decide).
        decision_context context;
        /// A revocable hold: its own-node watch reads the node's data, from the grant on, and a
        /// revocation request there is news (lock_out::revocation_requested).
        bool revocable = false;
        bool try_only() const noexcept { return timeout && timeout->count() <= 0; }
    };

    explicit basic_lock_machine(config c) : cfg_(std::move(c)) {}

    /// The actions for e, in order; valid until the next resume (one buffer, reused: a lock cycle
    /// allocates no vector of actions). The caller may move out of them. What e carries (our
    /// node's path, a listing) is moved into the machine rather than copied.
    lock_actions& resume(lock_event&& e) {
        out_buffer_.clear();
        out_ = &out_buffer_;
        std::visit(
            [this](auto& ev) {
                // The one place where stale events are dropped: a reply's ticket is live until its
                // reply comes (a watch's, until its event); everything an attempt asked for dies
                // when it restarts, ends or is granted. Handlers get a copy of the request: they
                // may drop it.
                if constexpr (requires { ev.ticket; }) {
                    if (const auto* r = book_.find(ev.ticket)) on(ev, request(*r));
                } else {
                    on(ev);
                }
            },
            e);
        out_ = nullptr;
        return out_buffer_;
    }
    lock_actions& resume(const lock_event& e) { return resume(lock_event(e)); }

    lock_phase phase() const noexcept {
        if (const auto* a = acquiring()) return a->waiting ? lock_phase::waiting : lock_phase::queuing;
        if (holding()) return lock_phase::holding;
        return std::holds_alternative<idle>(phase_) ? lock_phase::idle : lock_phase::done;
    }
    /// The hold's state once granted; nothing before, nor after an acquire that did not hold.
    std::optional<hold_state> state() const noexcept {
        if (const auto* h = holding()) return h->state;
        return std::nullopt;
    }
    /// Our node's path while it is known (created, or held); empty otherwise.
    const std::string& node_path() const noexcept {
        static const std::string none;
        const auto* n = node();
        return n ? n->path : none;
    }
    /// Our node's czxid (the fencing token) while it is known; 0 otherwise.
    std::int64_t token() const noexcept {
        const auto* n = node();
        return n ? n->token : 0;
    }
    /// The session the hold was granted on; 0 before a grant.
    std::int64_t hold_session() const noexcept {
        const auto* h = holding();
        return h ? h->session : 0;
    }
    /// Whether the machine still waits for this ticket's reply or event (a stale one is dropped).
    bool awaits(lock_ticket t) const { return book_.has(t); }
    /// True once nothing the machine asked for can still matter: the acquire ended without a hold,
    /// or the hold ended (lost, or released with no delete pending), and no create is in flight.
    bool finished() const noexcept {
        // An abandoned create still in flight matters: its node must be removed when it answers.
        if (book_.any([](const request& r) { return r.what == purpose::create; })) return false;
        if (std::holds_alternative<done>(phase_)) return true;
        const auto* h = holding();
        return h && (h->state == hold_state::lost || h->state == hold_state::released);
    }

private:
    enum class purpose { create, list, watch, own, own_timer, release };
    struct request {
        purpose what = purpose::create;
        bool fresh = false;        // list: we know our node exists
        bool await_grant = false;  // watch: the waiter ahead, whose grant is our event too
        bool abandoned = false;    // create: its node, if made, is removed
        std::string name;          // watch: the node's name
    };

    // ---- the phases: each one's fields, so that a wrong combination cannot be written --------
    struct our_node {
        std::string path;
        std::string_view name() const noexcept { return std::string_view(path).substr(path.rfind('/') + 1); }
        std::int64_t token = 0;  // its czxid
        std::int64_t owner = 0;  // its ephemeral owner
    };
    struct idle {};
    // Queuing (our node being made and listed) or waiting (behind others).
    struct acquiring_phase {
        bool waiting = false;
        std::optional<our_node> node;  // once created
        bool list_pending = false;
        queue_view view;
        std::set<std::string> watching;   // nodes whose watch is set
        std::set<std::string> signalled;  // waiters ahead whose grant we already acted on
        int restarts = 0;
        bool deciding_on_listing = false;  // decide() runs on a listing just taken
        std::size_t listing_behind = 0;    // participants behind us in that listing
    };
    struct holding_phase {
        our_node node;
        hold_state state = hold_state::held;
        std::int64_t session = 0;  // the session it was granted on
        std::optional<std::uint64_t> caller;  // the release's caller, until it hears the outcome
        bool asked_to_let_go = false;  // a revocation request was read (and told) already
        bool signal_owed = false;  // our grant's signal failed: written again on a read-write connection of this session
    };
    struct done {};

    acquiring_phase* acquiring() noexcept { return std::get_if<acquiring_phase>(&phase_); }
    const acquiring_phase* acquiring() const noexcept { return std::get_if<acquiring_phase>(&phase_); }
    acquiring_phase* waiting() noexcept {
        auto* a = acquiring();
        return a && a->waiting ? a : nullptr;
    }
    holding_phase* holding() noexcept { return std::get_if<holding_phase>(&phase_); }
    const holding_phase* holding() const noexcept { return std::get_if<holding_phase>(&phase_); }
    /// A hold that still counts: held or doubtful.
    holding_phase* holding_valid() noexcept {
        auto* h = holding();
        return h && (h->state == hold_state::held || h->state == hold_state::doubtful) ? h : nullptr;
    }
    const our_node* node() const noexcept {
        if (const auto* a = acquiring()) return a->node ? &*a->node : nullptr;
        if (const auto* h = holding()) return &h->node;
        return nullptr;
    }

    // ---- the tickets ------------------------------------------------------------------------
    lock_ticket ask(request r) { return book_.ask(std::move(r)); }
    void drop(lock_ticket t) { book_.drop(t); }
    /// Forget what was asked, except the creates (their nodes must go) and what `keep` names.
    void abandon_all(std::initializer_list<purpose> keep = {}) {
        book_.forget_unless([&](request& r) {
            if (r.what == purpose::create) {
                r.abandoned = true;
                return true;
            }
            return std::find(keep.begin(), keep.end(), r.what) != keep.end();
        });
    }
    /// The own-node watch, or the timer that sets it, is out.
    bool own_watch_pending() const { return book_.of(purpose::own) || book_.of(purpose::own_timer); }

    template <typename A>
    void emit(A a) {
        out_->emplace_back(std::move(a));
    }

    // ---- acquiring -------------------------------------------------------------------------
    // A handler that moves to another phase returns at once: the old phase's fields are gone.
    void on(const lock_in::start& e) {
        if (!std::holds_alternative<idle>(phase_)) return;
        connected_ = e.connected;
        session_ = e.session;
        phase_ = acquiring_phase{};
        if (cfg_.timeout && !cfg_.try_only()) emit(lock_out::deadline_after{*cfg_.timeout});
        // A try answers at once: with no connection to try on there is nothing to wait for.
        if (cfg_.try_only() && !connected_) return fail(make_error_code(errc::not_connected));
        create_and_list();
    }

    // One round trip: the create and the listing go back to back, and the server applies them in
    // order, so the listing already holds our node.
    void create_and_list() {
        auto& a = *acquiring();
        a.node.reset();
        emit(lock_out::create{ask({purpose::create})});
        list(false);
    }

    void list(bool fresh) {
        acquiring()->list_pending = true;
        emit(lock_out::list{ask({purpose::list, fresh})});
    }

    // A create's ticket is never dropped before its reply (abandon_all keeps creates).
    void on(lock_in::created& e, const request& r) {
        drop(e.ticket);
        // The create may have landed before it failed (its reply was lost and its retries gave
        // up, or a retry reached a read-only server: the simulation with read-only servers, seed
        // 322000973, found that node ahead of every waiter). The connection removes it, by the
        // create's protect prefix, for every protected create (src/protected_create.hpp): nothing
        // for the machine to ask.
        auto* a = acquiring();
        if (r.abandoned || !a) {
            if (!e.ec) emit(lock_out::remove_node{e.path});  // a node of an abandoned attempt
            return;
        }
        if (e.ec) return fail(e.ec);
        a->node = our_node{std::move(e.path), e.czxid, e.owner};
        emit(lock_out::queued{a->node->path});
        // The pipelined listing came first, so the create was retried, and the listing may be
        // older than our node: it may list a namesake of it, an old node gone since with the queue
        // around it. The queue made anew restarts its sequence, so a protected create's recovery
        // can make the very name again (seed 7580022747: a semaphore mutex held beside the new
        // queue's holder), and a downgrade's reader takes its writer's fixed name (seed
        // 969178907535). So list again (one round trip more, after a lost reply only).
        if (!a->list_pending) list(true);
    }

    void on(lock_in::listed& e, const request& r) {
        drop(e.ticket);
        auto* a = acquiring();
        if (!a) return;
        a->list_pending = false;
        if (e.ec && e.ec != errc::no_node) return fail(e.ec);
        // Replies come in order: a listing before our node happens only when the create was
        // retried, and the create's reply lists again.
        if (!a->node) return;
        // Our node is in the queue, so a missing queue means it went with its parent (deleted by
        // hand, or the server reaped the container): queue again, which makes the parents anew.
        // Listing again instead would spin: nothing would ever bring the parent back.
        if (e.ec) return vanished();
        evaluate(std::move(e.children), r.fresh);
    }

    void evaluate(std::vector<std::string>&& children, bool fresh) {
        auto& a = *acquiring();
        // Two kinds of lock on one path ignore each other's nodes: refuse, as a semaphore refuses
        // one that disagrees on its maximum (the recipe names the node in its message).
        auto [sorted, other_kind] = cfg_.rule->queue(std::move(children));
        if (other_kind) return fail(make_error_code(errc::lock_kind_mismatch));
        const auto ours = std::find(sorted.begin(), sorted.end(), a.node->name());
        const auto behind = ours == sorted.end() ? 0 : static_cast<std::size_t>(sorted.end() - ours - 1);
        if (!a.view.reset(std::move(sorted), a.node->name())) {
            if (!fresh) return list(true);  // listed before our (retried) create landed
            return vanished();
        }
        a.listing_behind = behind;
        a.deciding_on_listing = true;
        decide();
        if (auto* still = acquiring()) still->deciding_on_listing = false;
    }

    // What the owner holds, and which nodes ahead have marked their grant (lock_rule::grants_marked).
    decision_context context_of(const acquiring_phase& a) const {
        if (a.signalled.empty()) return cfg_.context;
        auto context = cfg_.context;
        context.marked_ahead.assign(a.signalled.begin(), a.signalled.end());
        return context;
    }

    void decide() {
        auto& a = *acquiring();
        const auto d = a.view.decide(*cfg_.rule, context_of(a));
        if (d.error) return fail(d.error);
        if (d.holds) return grant();
        // A try that fits waits only to read whether the node ahead has marked its grant.
        if (cfg_.try_only() && !d.awaits_mark) return finish_acquire({}, /*remove=*/true);
        a.waiting = true;
        emit(lock_out::waiting{a.view.ahead()});
        if (!own_watch_pending()) own_watch_later();
        for (const auto& name : d.watch)
            if (a.watching.insert(name).second) watch(name, d.await_grant);
    }

    // Watch only the nodes the rule names. getData, not exists: no watch is left behind on a node
    // that is already gone. A waiter ahead that we await signals its grant by touching its node
    // (a data change, or a version above 0 when we come too late for the change).
    void watch(const std::string& name, bool await_grant) {
        request r{purpose::watch};
        r.await_grant = await_grant;
        r.name = name;
        emit(lock_out::watch_node{ask(std::move(r)), name});
    }

    void on(const lock_in::node_read& e, const request& r) {
        if (e.ec) drop(e.ticket);  // no watch was set
        auto* a = waiting();
        if (!a) return;
        if (e.ec == errc::no_node) {
            a->watching.erase(r.name);
            return node_gone(r.name);
        }
        if (e.ec) return fail(e.ec);
        // Nobody else would ever delete it: it would stay ahead of every waiter, ours too, until
        // our session ends. Its deletion is then the event we wait for.
        if constexpr (Rules::delete_strays)
            if (e.stray) emit(lock_out::remove_node{join_path(parent_path(a->node->path), r.name)});
        if (marks_grant(r) && shows_grant(e)) return granted_ahead(r.name);  // granted before we watched
        // A try waits only to read whether the node ahead has marked its grant: it has not.
        if (cfg_.try_only()) finish_acquire({}, /*remove=*/true);
    }

    void on(const lock_in::node_changed& e, const request& r) {
        drop(e.ticket);
        auto* a = waiting();
        if (!a) return;  // sim-one-way: ticket-guard
        a->watching.erase(r.name);
        if (e.type == watch_event_type::node_deleted) return node_gone(r.name);
        // A data change is never a release: anyone may write the node (a revoker, an operator).
        // Only its deletion, or what a listing shows, lets us hold.
        if (e.type == watch_event_type::not_watching) return;  // the session went: restart comes with it
        if (r.await_grant && !cfg_.rule->grants_marked() && a->signalled.insert(r.name).second) return list(true);
        a->watching.insert(r.name);
        // (a holder ahead that marked its grant: its release is still our event.) Under marked
        // grants the read that sets the watch again tells whether the write was the grant's mark.
        watch(r.name, r.await_grant);
        if (r.await_grant && !cfg_.rule->grants_marked()) granted_ahead(r.name);
    }

    // A write to a node ahead tells of its grant: a waiter's we await, or any under a rule whose
    // grants are marked (every node there writes its mark once, when granted).
    bool marks_grant(const request& r) const { return r.await_grant || cfg_.rule->grants_marked(); }

    // Whether a read of a node ahead shows its grant. Awaited grants are only a hint to list again
    // (the listing decides), so any write will do. Marked grants let us hold: only the mark's data
    // counts, never a write alone (an operator's write into a waiter's node would otherwise make
    // one holder too many once the limit shrinks: the simulation's seed 28548085651).
    bool shows_grant(const lock_in::node_read& e) const { return cfg_.rule->grants_marked() ? e.marked : e.version > 0; }

    // The node ahead `name` holds. A waiter we awaited: list, to watch the holders ahead of it.
    // Under marked grants we may hold now (the view is a superset of the nodes ahead).
    void granted_ahead(const std::string& name) {
        auto& a = *acquiring();
        if (!a.signalled.insert(name).second) return;
        if (!cfg_.rule->grants_marked()) return list(true);
        reconsider();
    }

    // A node ahead of ours is gone. The view is a superset of the nodes really ahead, so when it
    // says we hold, we do. When we already watch every node the rule names, we wait on; otherwise
    // the other nodes the view lists are most likely gone too: list once. (Unless a node may have
    // joined ahead of us while it held: then only a listing tells.)
    void node_gone(const std::string& name) {
        if (cfg_.rule->joins_ahead_of(name)) return list(true);
        auto& a = *acquiring();
        Rules::forget(a.view, name);
        reconsider();
    }

    // Decide again on the view: when we already watch every node the rule names, wait on.
    void reconsider() {
        auto& a = *acquiring();
        const auto d = a.view.decide(*cfg_.rule, context_of(a));
        if (d.error) return fail(d.error);
        if (d.holds) return grant();
        for (const auto& n : d.watch)
            if (!a.watching.count(n)) return list(true);
    }

    // Our node was deleted while we waited (by hand, or with an old session): queue again.
    void vanished() {
        if (++acquiring()->restarts > 100) return fail(make_error_code(errc::no_node));
        restart();
    }

    // A new attempt: only the count of restarts carries over.
    void restart() {
        abandon_all();
        auto& a = *acquiring();
        const auto restarts = a.restarts;
        a = acquiring_phase{};
        a.restarts = restarts;
        create_and_list();
    }

    void grant() {
        auto& a = *acquiring();
        if (!Rules::owns(a.node->owner, session_)) {  // a node of an earlier session never counts as ours; sim-one-way: owner-guard
            emit(lock_out::remove_node{a.node->path});  // sim-unreachable: owner-guard
            return restart();                            // sim-unreachable: owner-guard
        }
        // The predecessors' watches die; the own-node watch (or its timer) passes to the hold.
        abandon_all({purpose::own, purpose::own_timer});
        // A waiter behind us that listed us as a waiter watches only us, for our grant: tell it by
        // touching our node. In a lock of several holders it may hold now too (the limit can
        // cover it as well), or must now watch the holders ahead of us (found by the simulation's
        // progress check: granted with nothing ahead and no signal, we left a waiter that fit
        // waiting until an unrelated release). In a one-holder lock (grants_awaited() false) it
        // only waits for our node to go.
        // A rule whose grants are marked (a shrinking limit) touches always: a waiter behind that
        // fits holds only once we have.
        const bool touch = cfg_.rule->grants_marked() ||
                           (cfg_.rule->grants_awaited() && (a.view.ahead() > 0 || may_be_awaited(a)));
        holding_phase held{std::move(*a.node), hold_state::held, session_, std::nullopt};
        phase_ = std::move(held);
        const auto& h = *holding();
        if (touch) {
            // (on a line of its own: gcov would read the inlined write's branches as this decision's)
            signal_grant();
        }
        // A revocable hold reads its node at once: a request may have come before the grant was
        // heard (a revoker lists the holders from the server's queue).
        if (cfg_.revocable) watch_own();
        else if (!own_watch_pending()) own_watch_later();
        emit(lock_out::granted{h.node.path, h.node.token, h.session});
        // Granted without a connection, or on a read-only one (the quorum may have ended our
        // session meanwhile): doubtful until re-validated on a read-write connection.
        if (!connected_ || read_only_) set_hold(hold_state::doubtful);
    }

    void fail(const boost::system::error_code& ec) { finish_acquire(ec, true); }

    // Tell a waiter behind us that we hold: a write of our node (its data, marked under marked grants).
    void signal_grant() {
        auto& h = *holding();
        h.signal_owed = false;
        emit(lock_out::touch_own{h.node.path, -1, cfg_.rule->grants_marked()});
    }

    // The signal failed: written again now if the connection is read-write (the failure may come
    // after the reconnection: a retry's sleep outlasted the outage), else at its next one. A valid
    // hold's session is the connection's: a new session made the hold lost. (Another failure,
    // no_node say, ends nothing: the own-node watch tells of a node gone.)
    void on(const lock_in::touch_failed& e) {
        auto* h = holding_valid();
        if (!h || (!is_retryable(e.ec) && e.ec != errc::not_read_only)) return;
        if (connected_ && !read_only_) return signal_grant();
        h->signal_owed = true;
    }

    // remove: our node, if made, goes (every way an acquire ends without a hold removes it).
    void finish_acquire(const boost::system::error_code& ec, bool remove) {
        auto& a = *acquiring();
        if (remove && a.node) emit(lock_out::remove_node{a.node->path});
        abandon_all();
        phase_ = done{};
        emit(lock_out::not_granted{ec});
    }

    void on(const lock_in::deadline&) {
        const auto* a = acquiring();
        if (!a) return;
        // "Not acquired in time" would claim someone else holds it. Without a connection and with
        // no node queued, we never found out: say so.
        if (!a->node && !connected_) return fail(make_error_code(errc::not_connected));
        finish_acquire({}, true);  // a create still in flight is abandoned: its reply removes the node
    }

    void on(const lock_in::cancel&) {
        if (acquiring()) fail(make_error_code(errc::cancelled));
    }

    void on(const lock_in::reevaluate&) {
        if (const auto* a = waiting(); a && a->node && !a->view.nodes().empty()) decide();
    }

    // ---- our own node ----------------------------------------------------------------------
    // It tells a waiter that its node was deleted, and a holder that it lost. Set only after a
    // delay: most waits and holds of a busy lock are shorter, and it would cost a request each.
    void own_watch_later() { emit(lock_out::own_watch_later{ask({purpose::own_timer}), own_watch_delay}); }

    void on(const lock_in::own_watch_due& e, const request&) {
        drop(e.ticket);
        if (!book_.of(purpose::own) && (waiting() || holding_valid())) watch_own();
    }

    // After a reconnection the same request re-validates a hold: the node must still exist and
    // belong to our session.
    // A revocable hold's read takes the data too: one watch for both news.
    void watch_own() {
        book_.drop_all(purpose::own);  // a newer watch supersedes it (the same node's event fires both)
        emit(lock_out::watch_own{ask({purpose::own}), node()->path, cfg_.revocable && holding() != nullptr});
    }

    // What we learn about our node, from a read or from its watch, is classified once: a waiter
    // and a holder then read the same news the same way. A write by someone else is no news: no
    // waiter takes it for our release. A revocation request is news to a revocable holder only.
    enum class own_news {
        intact,           // there, and ours
        gone,             // deleted, or no longer our session's
        unwatched,        // the watch ended with the session
        revocation_asked, // there, ours, and its data asks a revocable holder to let go
    };

    // The session our node must belong to: the hold's, or (waiting) the one that made it.
    std::int64_t expected_owner() const {
        const auto* h = holding();
        return h ? h->session : node()->owner;  // (node(): the handlers' guard)
    }

    own_news news_of(const lock_in::own_read& e) const {
        if (!e.owner || !Rules::owns(*e.owner, expected_owner())) return own_news::gone;
        if (e.revocation_requested && cfg_.revocable && holding()) return own_news::revocation_asked;
        return own_news::intact;
    }

    own_news news_of(const lock_in::own_changed& e) const {
        if (e.type == watch_event_type::node_deleted) return own_news::gone;
        if (e.type == watch_event_type::not_watching) return own_news::unwatched;
        return own_news::intact;  // a data change: ours (a touch), or anyone's, which tells nobody anything
    }

    void on(const lock_in::own_read& e, const request&) {
        if (e.ec) return drop(e.ticket);  // no watch was set
        // A live own-node ticket means we have our node (a restart or an end drops the ticket):
        // only a guard, so that a slip of the tickets can never dereference a node we lack.
        const auto* n = node(); if (!n) return;  // sim-one-way: ticket-guard
        on_own_news(news_of(e), /*fired=*/false, e.version);
    }

    void on(const lock_in::own_changed& e, const request&) {
        drop(e.ticket);
        const auto* n = node(); if (!n) return;  // a guard, as in own_read; sim-one-way: ticket-guard
        on_own_news(news_of(e), /*fired=*/true);
    }

    // What each phase does with the news. fired: the watch fired, and must be set again to hear
    // more; otherwise a read answered, with the watch set (after a reconnection it re-validates a
    // doubtful hold). version: the read's data version.
    void on_own_news(own_news news, bool fired, std::int32_t version = 0) {
        if (acquiring()) {
            switch (news) {
                case own_news::gone: return vanished();
                case own_news::unwatched: return;  // the session went: the restart comes with it
                case own_news::intact: case own_news::revocation_asked: break;  // (one line: a waiter is never asked)
            }
            if (fired) watch_own();
            return;
        }
        // A live own-node ticket means a hold that counts (set_hold abandons it): only a guard,
        // on one line so that coverage does not count it as a path.
        auto* h = holding_valid(); if (!h) return;
        switch (news) {
            case own_news::gone: case own_news::unwatched:  // (one line: one path)
                return set_hold(hold_state::lost, news == own_news::gone ? lost_cause::node_deleted : lost_cause::session_ended);
            case own_news::revocation_asked: asked_to_let_go(*h, version); break;
            case own_news::intact: break;
        }
        if (fired) return watch_own();
        if (h->state == hold_state::doubtful && connected_ && !read_only_ && session_ == h->session)
            set_hold(hold_state::held);
    }

    // Once per hold: the recipe hears the request, and our data goes back over it (at the version
    // read), so that the node names its holder again. Our own write fires our watch: a read of
    // our data follows, which is no news.
    void asked_to_let_go(holding_phase& h, std::int32_t version) {
        if (h.asked_to_let_go) return;
        h.asked_to_let_go = true;
        emit(lock_out::revocation_requested{});
        emit(lock_out::touch_own{h.node.path, version, cfg_.rule->grants_marked()});
    }

    // Whether a waiter behind us may have listed us as a waiter. Not when we hold on a listing that
    // shows nobody behind us: a node made later lists later, and sees us hold. (So an uncontended
    // acquire still costs no signal.)
    static bool may_be_awaited(const acquiring_phase& a) { return !a.deciding_on_listing || a.listing_behind > 0; }

    // ---- the connection --------------------------------------------------------------------
    void on(const lock_in::connection& e) {
        connected_ = is_connected(e.state);
        read_only_ = e.state == connection_state::read_only;
        if (connected_) session_ = e.session;
        if (acquiring()) return connection_while_acquiring(e.state);
        auto* h = holding();
        if (!h) return;
        switch (e.state) {
            case connection_state::suspended:
            case connection_state::read_only:
                if (h->state == hold_state::held) set_hold(hold_state::doubtful);
                break;
            case connection_state::connected:
            case connection_state::reconnected:
                if (session_ != h->session) {
                    if (holding_valid()) set_hold(hold_state::lost, lost_cause::session_ended);
                    else if (h->state == hold_state::releasing) finish_release({});  // the node went with it
                } else if (h->state == hold_state::doubtful) {
                    watch_own();  // held again only once re-validated
                } else if (h->state == hold_state::releasing && !book_.of(purpose::release)) {
                    delete_own();
                }
                if (h->signal_owed && holding_valid()) signal_grant();  // (a new session made it lost above)
                break;
            case connection_state::lost:
            case connection_state::closed:
                if (holding_valid())
                    set_hold(hold_state::lost, e.state == connection_state::closed ? lost_cause::client_closed : lost_cause::session_ended);
                else if (h->state == hold_state::releasing) finish_release(make_error_code(errc::connection_loss));
                break;
            default: break;
        }
    }

    void connection_while_acquiring(connection_state s) {
        if (s == connection_state::closed) return fail(make_error_code(errc::closed));
        // A try does not wait through an outage (its node, if any, goes on reconnection).
        if (cfg_.try_only() && !connected_) return fail(make_error_code(errc::connection_loss));
        // A new session: our node belonged to the old one. Remove it (it may outlive us until
        // the server expires the old session) and queue again.
        const auto& a = *acquiring();
        if (connected_ && a.node && !Rules::owns(a.node->owner, session_)) {
            emit(lock_out::remove_node{a.node->path});
            restart();
        }
    }

    // ---- the hold --------------------------------------------------------------------------
    void set_hold(hold_state s, lost_cause cause = lost_cause::none) {
        auto& h = *holding();
        if (h.state == s) return;  // sim-one-way: same-state-guard
        h.state = s;
        if (s != hold_state::held && s != hold_state::doubtful) {
            // The own watch and its timer no longer matter (a pending delete keeps its ticket).
            abandon_all({purpose::release});
        }
        emit(lock_out::hold_changed{s, cause});
    }

    void on(const lock_in::release& e) {
        auto* h = holding_valid();
        if (!h) {
            const auto* ended = holding();
            emit(lock_out::release_done{e.caller, make_error_code(ended && ended->state == hold_state::lost ? errc::lock_lost
                                                                                                              : errc::lock_not_held)});
            return;
        }
        h->caller = e.caller;
        set_hold(hold_state::releasing);
        if (connected_) delete_own();
        else delete_pending(make_error_code(errc::connection_loss));
    }

    // The delete alone: the waiter behind us hears it and decides from its view (or a listing).
    void delete_own() { emit(lock_out::delete_own{ask({purpose::release}), holding()->node.path}); }

    void on(const lock_in::deleted& e, const request&) {
        drop(e.ticket);
        const auto* h = holding();
        if (!h || h->state != hold_state::releasing) return;
        // A read-only server refuses the delete: it is as good as no connection (the node stays,
        // owned by our live session, ahead of every waiter), not a final answer.
        if (!e.ec || e.ec == errc::no_node || (!is_retryable(e.ec) && e.ec != errc::not_read_only))
            return finish_release(e.ec == errc::no_node ? boost::system::error_code{} : e.ec);
        delete_pending(e.ec);
    }

    // No connection: the caller hears it now, and the node goes once the connection returns
    // (read-write: a `connected` or `reconnected` event).
    void delete_pending(const boost::system::error_code& ec) {
        tell_release(ec);
        if constexpr (!Rules::keep_pending_delete) finish_release({});  // sim-unreachable: planted-branch
    }

    void finish_release(const boost::system::error_code& ec) {
        set_hold(hold_state::released);
        tell_release(ec);
    }

    void tell_release(const boost::system::error_code& ec) {
        if (const auto caller = std::exchange(holding()->caller, std::nullopt)) emit(lock_out::release_done{*caller, ec});
    }

    config cfg_;
    lock_actions out_buffer_;
    lock_actions* out_ = nullptr;
    std::variant<idle, acquiring_phase, holding_phase, done> phase_;
    ticket_book<request> book_;
    // The connection as last heard: every phase needs it.
    bool connected_ = false;
    bool read_only_ = false;
    std::int64_t session_ = 0;
};

using lock_machine = basic_lock_machine<>;

}  // namespace zkr::detail
