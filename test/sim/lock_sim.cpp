#include "lock_sim.hpp"

#include "../../recipes/locks/multi_lock_order.hpp"
#include "../../recipes/queue/grant_mark.hpp"
#include "../../recipes/queue/read_write_rule.hpp"
#include "lock_checks.hpp"
#include "lock_world_engine.hpp"

#include <zkr/path.hpp>
#include <zkr/revocation.hpp>

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>

namespace zkr::sim {

using namespace zkr::detail;
using boost::system::error_code;

std::string_view to_string(recipe r) noexcept {
    switch (r) {
        case recipe::mutex: return "mutex";
        case recipe::cached_mutex: return "cached_mutex";
        case recipe::semaphore_mutex: return "semaphore_mutex";
        case recipe::semaphore: return "semaphore";
        case recipe::shared_semaphore: return "shared_semaphore";
        case recipe::read_write: return "read_write";
        case recipe::latch: return "latch";
        case recipe::revocable_mutex: return "revocable_mutex";
        case recipe::multi_lock: return "multi_lock";
        case recipe::curator_semaphore: return "curator_semaphore";
    }
    return "?";
}

schedule draw_schedule(std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    schedule s;
    s.seed = seed;
    s.kind = static_cast<recipe>(rng() % 7);
    s.clients = 2 + static_cast<int>(rng() % 7);  // 2..8
    s.max_holders = s.kind == recipe::semaphore          ? 2 + static_cast<int>(rng() % 2)
                    : s.kind == recipe::shared_semaphore ? 3
                    : s.kind == recipe::read_write       ? 2 * s.clients  // readers share; a client runs at most two acquires
                                                         : 1;
    s.attempts = 2 + static_cast<int>(rng() % 3);
    s.faults = static_cast<int>(rng() % 7);
    // Drawn last, so that every other schedule's draws are what they were before the multi-lock
    // (the seeds the notes cite still replay): a third of the mutex schedules.
    if (s.kind == recipe::mutex && rng() % 3 == 0) s.kind = recipe::multi_lock;
    // The same for Curator's semaphore layout: a third of the fixed semaphores' schedules.
    if (s.kind == recipe::semaphore && rng() % 3 == 0) s.kind = recipe::curator_semaphore;
    return s;
}

schedule draw_cached_schedule(std::uint64_t seed) {
    auto s = draw_schedule(seed);
    s.kind = recipe::cached_mutex;
    s.max_holders = 1;
    s.clients = 2 + static_cast<int>(seed % 3);  // (few: the queue is empty now and then, and a cache lends)
    s.attempts = 3 + static_cast<int>(seed % 4);
    return s;
}

namespace lock_world {

std::string describe(const zk_lock_input& e) {
    static constexpr const char* names[] = {"start", "reply", "watch fired", "timer due", "connection", "cancel", "release", "reevaluate"};
    std::string text = names[e.index()];
    std::visit([&](const auto& ev) {
        if constexpr (requires { ev.id; }) text += " #" + std::to_string(ev.id);
        if constexpr (requires { ev.ec; }) if (ev.ec) text += " " + ev.ec.message();
        if constexpr (requires { ev.path; }) if (!ev.path.empty()) text += " " + ev.path;
        if constexpr (requires { ev.children; }) if (!ev.children.empty()) text += " [" + std::to_string(ev.children.size()) + " children]";
        if constexpr (requires { ev.type; }) text += " " + std::string(zkr::to_string(ev.type));
        if constexpr (requires { ev.state; }) text += " " + std::string(zkr::to_string(ev.state)) + " s" + std::to_string(ev.session);
    }, e);
    return text;
}

class world final : lock_checks, engine_host {
public:
    world(const schedule& s, const machine_factory& machines, bool traced, const cache_factory& caches)
        : lock_checks(s, machines) {
        out_.traced = traced;
        if (s.kind == recipe::mutex || s.kind == recipe::multi_lock || s.kind == recipe::cached_mutex) {
            rule_ = std::make_shared<lowest_n_rule>(1);
            if (s.kind == recipe::multi_lock) paths_ = multi_lock_paths;
        } else if (s.kind == recipe::latch) {
            rule_ = std::make_shared<lowest_n_rule>(1, queue_kind::latch);
        } else if (s.kind == recipe::revocable_mutex) {
            // The same rule as the mutex's: revocable holders and plain waiters mix on one path, and
            // the operator's writes to holders' nodes stand for revocation requests.
            rule_ = std::make_shared<lowest_n_rule>(1);
        } else if (s.kind == recipe::read_write) {
            rule_ = std::make_shared<read_write_rule>(read_write_rule::side::write);
            read_rule_ = std::make_shared<read_write_rule>(read_write_rule::side::read);
        } else if (s.kind == recipe::curator_semaphore) {
            const auto max = s.max_holders;
            rule_ = std::make_shared<curator_lease_rule>([max] { return max; });
        } else if (s.kind == recipe::shared_semaphore) {
            shared_max_ = 1 + static_cast<int>(rng_() % 3);
            rule_ = std::make_shared<lease_rule>([this] { return shared_max_; }, shared_count_max_tag("/counts/x"));
        } else {
            const auto max = s.max_holders;
            const auto tag = fixed_max_tag(static_cast<std::uint32_t>(max));
            rule_ = std::make_shared<lease_rule>([max] { return max; }, tag);
            fixed_tag_ = tag;
            // Now and then one client's semaphore disagrees on the maximum: the two never hold
            // at once, and the acquire that meets the other's node fails with max_mismatch.
            if (rng_() % 4 == 0) {
                const auto odd_tag = fixed_max_tag(static_cast<std::uint32_t>(max + 1));
                odd_rule_ = std::make_shared<lease_rule>([max] { return max + 1; }, odd_tag);
            }
        }
        faults_left_ = s.faults;
        for (int i = 0; i < s.clients; ++i) {
            client c;
            c.id = i;
            clients_.push_back(std::move(c));
            net_.open();
        }
        // Time passes between `lost` and the new session (open_session), as in production: a
        // machine may decide, start or send meanwhile.
        net_.new_session_waits = true;
        // An own-node watch event tells of an operator's change only if it fired after it.
        net_.on_fired = [this](const sim_clients<zk_lock_input>::connection&, std::uint64_t who, const zk::watch_fired& w) {
            if (own_reads_.count({who, w.id}) && tampered(who)) informative_events_.insert({who, w.id});
        };
        // cached_mutex: most clients cache (the first always), the others queue as usual.
        if (s.kind == recipe::cached_mutex)
            for (auto& c : clients_)
                if (c.id == 0 || pick(4) != 0) c.cache = caches ? caches() : std::make_unique<cache_decisions>();
        for (int i = 0; i < s.clients; ++i) {
            // (Not the client whose semaphore disagrees on the maximum: by its own larger one, it
            // would rightly hold two leases of a semaphore of one.)
            const bool odd = odd_rule_ && i == 0;
            clients_[static_cast<std::size_t>(i)].parallel = pick(3) == 0 && !odd ? 2 : 1;
            for (int w = 0; w < clients_[static_cast<std::size_t>(i)].parallel; ++w) at(pick(20), {timer::next_attempt, i});
        }
    }

    outcome run() {
        run_until_quiet(out_, 200000, [this] { return step(); });
        if (out_.ok) check_quiescent();
        out_.faults = s_.faults - faults_left_;
        out_.cache_grants = cache_grants_;
        return std::move(out_);
    }

private:
    // ---- the scheduler ---------------------------------------------------------------------
    bool step() {
        std::vector<std::pair<int, int>> choices;  // (what, client): 0 server applies, 1 deliver
        for (auto& c : clients_) {
            const auto& n = net_.at(c.id);
            if (n.connected && !n.outbound.empty()) choices.push_back({0, c.id});
            if (!c.calls.empty() || !n.inbound.empty()) choices.push_back({1, c.id});
        }
        const bool can_wait = !timers_.empty();
        if (choices.empty()) {
            check_progress();
            check_strays();
        }
        if (faults_left_ > 0 && pick(100) < 4) return fault(), true;
        if (!choices.empty() && (!can_wait || pick(100) < 85)) {
            const auto [what, id] = choices[pick(choices.size())];
            if (what == 0) {
                apply(clients_[id]);
                operator_during_recovery(clients_[id]);
            } else {
                deliver(clients_[id]);
            }
            return true;
        }
        if (can_wait) return advance(), true;
        if (faults_left_ > 0) return fault(), true;
        return end_a_resurrected_session();
    }

    void advance() {
        const auto it = timers_.begin();
        now_ = it->first;
        const timer t = it->second;
        timers_.erase(it);
        auto& c = clients_[t.client];
        switch (t.what) {
            case timer::engine: {
                // The deadline ends the acquire, as the caller sees it (unless it had ended).
                const auto live = live_.find(t.machine);
                const bool deadline = live != live_.end() && t.ticket == live->second.m->deadline_ticket();
                if (deadline) ended_by_[t.machine].insert("deadline");
                with_engine(t.machine, [&](live_machine&) { t.on_due(); });
                if (deadline) must_have_ended(t.machine, "its deadline");
                break;
            }
            case timer::hold_end:
                if (multi_.count(t.machine)) {
                    if (holds(c, t.machine)) end_multi(c, t.machine, "its hold ends");
                    break;
                }
                if (holds(c, t.machine)) {
                    if (s_.kind == recipe::read_write && is_read_write_writer(node_name(live_.at(t.machine).m->node_path())) &&
                        pick(3) == 0) {
                        start_downgrade(c, t.machine);
                        break;
                    }
                    out_.note("c" + std::to_string(c.id) + " releases", now_);
                    if (c.cache) return cache_released(c, t.machine), check();
                    feed(c, t.machine, release());
                }
                break;
            case timer::next_attempt: start_attempt(c); break;
            case timer::revoke: revoke(c, t.machine); break;
            case timer::let_go:
                if (const auto done = live_.find(t.machine); done != live_.end() && done->second.feeding == 0) live_.erase(done);
                break;
            case timer::cancel:
                if (live_.count(t.machine)) {
                    out_.note("c" + std::to_string(c.id) + " cancels m" + std::to_string(t.machine), now_);
                    ended_by_[t.machine].insert("cancel");
                    feed(c, t.machine, lock_in::cancel{});
                    must_have_ended(t.machine, "its cancel");
                }
                break;
            case timer::expire_session: net_.expire_abandoned(); break;
            case timer::open_session:
                if (net_.at(c.id).opening) net_.reconnect(net_[c.id]);
                break;
        }
        check();
    }

    // ---- faults ------------------------------------------------------------------------------
    void fault() {
        --faults_left_;
        const auto kind = pick(13);
        if (kind == 12) {
            if (s_.kind == recipe::shared_semaphore) change_shared_count();
        } else if (kind == 11) {
            if (pick(3) == 0) close_client(clients_[pick(clients_.size())]);
        } else if (kind >= 8) {
            operator_acts();
        } else if (kind == 0) {
            tally("server restart");
            out_.note("server restart: every connection drops", now_);
            for (auto& c : clients_)
                if (net_.at(c.id).connected) net_.drop_or_reconnect(net_[c.id]);
            lose_the_last_release();
        } else if (kind == 1) {
            tally("containers reaped");
            out_.note("containers reaped", now_);
            zk_.reap_containers();
        } else {
            auto& c = clients_[pick(clients_.size())];
            auto& n = net_[c.id];
            if (c.closed) return finish_fault();
            // The server ends a session only after its client has seen the suspension: a session
            // outlives the client's detection of silence (2/3 of its timeout).
            // (A client on a read-only server is not heard by the majority either.)
            const bool seen = (!n.connected || n.read_only) && !n.opening && !news_on_its_way(n) && zk_.alive(n.session);
            if (n.read_only && kind >= 6) {
                tally("read-only server left for the quorum");
                net_.reconnect(n);
            } else if (n.read_only && kind == 5) {
                tally("connection dropped");
                net_.drop_or_reconnect(n);
            } else if (n.connected && !n.read_only && kind == 7) {
                tally("session ended on a live connection");
                end_session(c, n);
            } else if (n.connected && !n.read_only) {
                tally("connection dropped");
                net_.drop_or_reconnect(n);
            } else if (seen && kind < 4) {
                tally("session expired by the server");
                end_session(c, n);
            } else if (seen && kind == 6 && !n.read_only && pick(2) == 0) {
                tally("connected to a read-only server");
                net_.connect_read_only(n);
            } else if (seen && kind < 6 && !n.read_only) {
                // The client gives the session up (its suspend timer ran out) while the server
                // still keeps it: the old session's nodes live on until it expires.
                tally("session given up by its client");
                end_session(c, n, /*given_up=*/true);
                at(pick(1500), {timer::expire_session, c.id});
            } else if (!n.read_only) {
                tally("reconnect");
                net_.reconnect(n);
            }
        }
        finish_fault();
    }

    void finish_fault() {
        if (faults_left_ == 0) heal();
        check();
    }

    // A third party: an operator deletes a lock node, writes to a participant's node, or deletes
    // the whole queue with its parent. A holder whose node was deleted is not counted by the checker
    // until it has been told (docs/recipes.md: a holder learns of a change to its node through its
    // own-node watch, set 100 ms into a hold; a change before then is seen by its first read), and
    // must never read held after that. A written holder holds on and is counted.
    void operator_acts() {
        const auto queue_path = some_lock_path();
        const auto nodes = zk_.children(queue_path);
        if (!nodes || nodes->empty()) return;
        const auto what = pick(4);
        if (what == 3) {
            // A node that is not a participant: no protect prefix (a hand-made sequential node
            // named like a lock's), or another name. Every machine must look past it; counted, it
            // would hold for ever. Its session is the operator's, which ends at quiescence.
            tally("a foreign node in the queue");
            if (!operator_session_) operator_session_ = zk_.open_session();
            // Or a protected node of another kind of lock (another library's mutex on the same
            // path): no acquire may take part with it; each fails with lock_kind_mismatch.
            const char* names[] = {"lock-", "lease-", "m1-w1-lease-", "__WRIT__", "config-", "_c_operator-config-", nullptr, nullptr};
            const auto which = pick(8);
            if (which == 7) {
                // Or a plain node with the protect prefix (so that the rules parse it) and a name
                // they must refuse: too short, or a sequence with a letter in it.
                const char* odd[] = {"_c_x", "_c_operator-lock-00000000x1", "_c_operator-lease-00000000x1", "_c_operator-__READ__00000000x1"};
                const auto made = zk_.create_ephemeral(operator_session_, queue_path, odd[pick(4)], "");
                out_.note("a foreign node appears: " + made.path, now_);
                return route_fired();
            }
            const char* name = names[which];
            std::string other_kind;
            if (!name) {
                const bool mutex_nodes = s_.kind == recipe::mutex || s_.kind == recipe::revocable_mutex || s_.kind == recipe::multi_lock ||
                                         s_.kind == recipe::cached_mutex;
                other_kind = std::string("_c_operator-") + (mutex_nodes ? "m1-w1-lease-" : "lock-");
                other_kind_present_ = true;
            }
            const auto made = zk_.create_sequential(operator_session_, queue_path, name ? name : other_kind.c_str(), "");
            out_.note("a foreign node appears: " + made.path, now_);
        } else if (what == 2) {
            tally("operator deletes the queue and its parent");
            delete_queue(queue_path, *nodes);
        } else if (what == 1) {
            // Any participant's node: a holder's (a revocation request, an operator's write) or a
            // waiter's. Nothing but a holder's own release may let a waiter hold: the checker
            // counts a written holder as it counts any other, so a waiter behind it that took the
            // write for a release holds beside it. Under marked grants (a shared count) a write to
            // a waiter ahead must not read as its grant mark: with a shrinking count it would give
            // one holder too many (seed 28548085651, before grants were marked by their data).
            std::vector<std::string> targets;
            for (const auto& [id, lm] : live_) {
                if (lm.path != queue_path) continue;
                if (lm.m->state() == hold_state::held || lm.m->phase() == lock_phase::waiting) targets.push_back(lm.m->node_path());
            }
            if (targets.empty()) return;
            const auto path = targets[pick(targets.size())];
            tally("operator writes a node");
            out_.note("operator writes " + path, now_);
            // (revocable_mutex: half of them a revocation request, which a plain node ignores)
            const bool request = s_.kind == recipe::revocable_mutex && pick(2) == 0;
            if (const node* n = zk_.find(path)) {
                written_.insert(n->czxid);
                if (request) revocation_written_.insert(n->czxid);
            }
            zk_.set_data(path, request ? revocation_signal : "operator");
        } else {
            const auto path = queue_path + "/" + (*nodes)[pick(nodes->size())];
            tally("operator deletes a node");
            out_.note("operator deletes " + path, now_);
            tamper(path);
            zk_.remove(path);
        }
        route_fired();
    }

    void delete_queue(const std::string& queue_path, const std::vector<std::string>& nodes) {
        out_.note("operator deletes the queue and its parent", now_);
        for (const auto& n : nodes) tamper(queue_path + "/" + n);
        for (const auto& n : nodes) zk_.remove(queue_path + "/" + n);
        zk_.remove(queue_path);
    }

    // An operator's deletion may land between any two requests; the world pulls it toward the
    // narrowest window of all: a create's recovery still to run (its reply was lost) while other
    // requests of the same client go through (a listing of the queue it will be recovered in, say).
    void operator_during_recovery(const client& c) {
        if (faults_left_ == 0 || pick(8) != 0) return;
        const auto due = net_.lookups_due(net_.at(c.id));
        if (due.empty()) return;
        const auto nodes = zk_.children(due.front());
        if (!nodes) return;
        --faults_left_;
        tally("operator deletes the queue during a create's recovery");
        delete_queue(due.front(), *nodes);
        route_fired();
        finish_fault();
    }

    // By the node's czxid, not its path: a container made again restarts its sequence, and a
    // retried protected create can then make a node of the same path.
    // The shared count changes while holders hold: the driver sends reevaluate to every live
    // machine, holders included. It shrinks at any time, holders or not: a waiter ahead of a holder
    // granted under the larger count must not then hold under the smaller one (seed 6006018025 found
    // that it did, before grants under a shared count were marked: lock_rule::grants_marked).
    void change_shared_count() {
        const int next = 1 + static_cast<int>(pick(3));
        tally("shared count changed");
        shared_max_ = next;
        out_.note("shared count set to " + std::to_string(shared_max_), now_);
        for (auto& c : clients_) call_every_machine(c, lock_in::reevaluate{});
    }

    // The client is closed: its machines hear `closed`, its session ends, it acquires no more.
    void close_client(client& c) {
        if (c.closed) return;
        tally("client closed");
        out_.note("c" + std::to_string(c.id) + " closes", now_);
        // As the connection does: its observers (every machine) hear `closed` first, at once.
        std::vector<std::uint64_t> ids;
        for (const auto& [id, lm] : live_)
            if (lm.client == c.id) ids.push_back(id);
        c.closed = true;
        if (c.cache) {  // (the mutex goes with its client: its kept node with the session)
            c.cache->close();
            c.kept = 0;
            c.lent = false;
        }
        auto& n = net_[c.id];
        const auto session = n.session;
        net_.close(n);  // (what the machines send from now on fails with `closed`)
        for (const auto id : ids) feed(c, id, zk::connection_changed{connection_state::closed, session});
    }

    // The servers lose the last transactions before a re-election (docs/reliability.md,
    // "resurrected nodes": ZOOKEEPER-4785 and kin): here, the delete of the last release. Its node
    // is back, owned by the live session of a client that forgot it: a stray, which a waiter of
    // that client deletes when it reads it (check_strays). Drawn apart from the schedule's other
    // draws, so that the schedules where it does not happen stay as they were.
    void lose_the_last_release() {
        const auto last = std::exchange(last_release_, std::nullopt);
        if (!last || lost_rng_() % 2 != 0) return;
        const auto& c = clients_[static_cast<std::size_t>(last->client)];
        if (c.closed || last->n.owner != net_.at(c.id).session || client_knows(c, last->path)) return;
        // (Into the queue it left: one made anew since restarts its sequence, and a real loss
        // would have lost the new one too.)
        const node* queue = zk_.find(std::string(parent_path(last->path)));
        if (!queue || queue->czxid != last->queue_czxid) return;
        if (zk_.restore(last->path, last->n) != rc::ok) return;
        tally("a release's delete lost by the servers");
        out_.note("the servers lose the delete of " + last->path + ": it is back, owned by c" + std::to_string(c.id) + "'s session", now_);
        resurrected_[last->path] = last->n.czxid;
        route_fired();
    }

    void tally(const char* kind) { ++out_.by_kind[kind]; }

    // (No draw when there is one path: the schedules of one-path recipes stay as they were.)
    std::string some_lock_path() { return paths_.size() == 1 ? paths_.front() : paths_[pick(paths_.size())]; }

    void tamper(const std::string& path) {
        if (const node* n = zk_.find(path)) tampered_.insert(n->czxid);
    }
    bool tampered(std::uint64_t machine) const {
        const auto it = live_.find(machine);
        return it != live_.end() && tampered_.count(it->second.m->token()) > 0;
    }

    void heal() {
        out_.note("faults stop: every client reconnects", now_);
        for (auto& c : clients_) net_.reconnect(net_[c.id]);  // (from a read-only server too: to the quorum)
    }

    // Connection news on its way to n's machines (a suspension they have not heard yet, say).
    static bool news_on_its_way(const sim_clients<zk_lock_input>::connection& n) {
        return std::any_of(n.inbound.begin(), n.inbound.end(),
                           [](const auto& item) { return std::holds_alternative<zk::connection_changed>(item.second); });
    }

    // ---- the server --------------------------------------------------------------------------
    // The server applies c's next request (sim_clients), and the world keeps its own books of
    // what that did: the node a release deleted (which a restart may put back), a downgrade's read
    // node made after its writer had gone, an own-node read answered after an operator's change.
    void apply(client& c) {
        auto& n = net_[c.id];
        std::optional<released_node> release;
        if (const auto* r = std::get_if<zk::remove>(&n.outbound.front().second); r && r->once)
            if (const node* x = zk_.find(r->path)) release = released_node{c.id, r->path, *x, zk_.find(std::string(parent_path(r->path)))->czxid};
        const auto a = net_.apply(n);
        const auto ticket = sim_clients<zk_lock_input>::ticket_of(a.op);
        if (out_.traced)
            out_.note("server applies c" + std::to_string(c.id) + " m" + std::to_string(a.who) + " " + describe_op(a.op) + " #" + std::to_string(ticket) +
                          (a.recovery ? std::string(" (") + a.recovery + ")" : std::string()) + (a.reply.ec ? ": " + a.reply.ec.message() : std::string()),
                      now_);
        if (a.recovery) return check();
        if (std::holds_alternative<zk::set_data>(a.op)) {
            if (refused_on_read_only_.count(a.who))
                out_.violate("m" + std::to_string(a.who) + " writes " + describe_op(a.op) +
                             " again on the read-only connection that refused it (it waits for a read-write one)");
            if (a.reply.ec == errc::not_read_only) refused_writes_.insert({a.who, ticket});
        }
        if (release && !a.reply.ec) last_release_ = std::move(release);
        const auto it = live_.find(a.who);
        if (const auto* create = std::get_if<zk::create>(&a.op);
            create && !is_sequential(create->mode) && !a.reply.ec && it != live_.end() && !zk_.find(it->second.path + "/" + it->second.writer_node))
            orphans_.insert(std::string(node_name(a.reply.path)));
        if (own_reads_.count({a.who, ticket}) && tampered(a.who)) informative_reads_.insert({a.who, ticket});  // read after the change
        check();
    }

    void route_fired() { net_.route_fired(); }

    // ---- the client side: deliveries and the engine --------------------------------------------
    // The next thing c's side hears: a caller's call (first: it arrives after the event at hand),
    // or what its connection delivers next (sim_clients): a reply or a watch event for a machine
    // or for the lock cache, or connection news for every machine of the client.
    void deliver(client& c) {
        if (!c.calls.empty()) {
            auto [id, call] = std::move(c.calls.front());
            c.calls.pop_front();
            deliver_to(c, id, std::move(call));
            return check();
        }
        auto [who, e] = net_.deliver(net_[c.id]);
        if (who == cache_who) {
            cache_delivered(c, e);
        } else if (who != 0) {
            deliver_to(c, who, std::move(e));
        } else {
            std::vector<std::uint64_t> ids;  // (what a machine hears may end another)
            for (const auto& [id, lm] : live_)
                if (lm.client == c.id) ids.push_back(id);
            for (const auto id : ids) deliver_to(c, id, e);
        }
        check();
    }

    void deliver_to(client& c, std::uint64_t id, zk_lock_input e) {
        if (!live_.count(id)) return;
        if (out_.traced) out_.note("c" + std::to_string(c.id) + " m" + std::to_string(id) + " <- " + describe(e), now_);
        // Told of a change to its own node: a read the server answered after it, or the watch
        // event it fired.
        const auto* reply = std::get_if<zk::reply>(&e);
        const auto* fired = std::get_if<zk::watch_fired>(&e);
        const lock_ticket ticket = reply ? reply->id : fired ? fired->id : 0;
        const bool own = (reply || fired) && own_reads_.count({id, ticket});
        bool tells = false;
        if (reply && own && (!reply->ec || reply->ec == errc::no_node))  // (gone: no_node, from a getData)
            tells = informative_reads_.count({id, ticket}) > 0;
        if (fired && own) tells = informative_events_.count({id, ticket}) > 0;
        // (a stale ticket tells nothing: the machine drops it, and a live one follows)
        const auto& m = *live_.at(id).m;
        const std::int64_t token = m.token();
        if (tells && !m.awaits(ticket)) tells = false;
        std::optional<zk::connection_changed> change;
        if (const auto* ev = std::get_if<zk::connection_changed>(&e)) change = *ev;
        if (reply)
            if (const auto ahead = ahead_reads_.find({id, ticket}); ahead != ahead_reads_.end()) note_stray_read(c, id, *reply, ahead->second);
        if (reply && refused_writes_.erase({id, ticket}) && heard_read_only_.count(id)) refused_on_read_only_.insert(id);
        feed(c, id, std::move(e));
        if (tells) told_.insert({id, token});
        if (change) {
            if (change->state == connection_state::read_only) heard_read_only_.insert(id);
            else heard_read_only_.erase(id);
            refused_on_read_only_.erase(id);
            must_doubt(id, *change);
        }
    }

    // The documented bound: a hold reads doubtful (or lost) in the very step the connection layer
    // tells its machine that the connection is suspended or read-only, and lost once the session
    // ended, the client closed or a new session came; never held meanwhile.
    void must_doubt(std::uint64_t id, const zk::connection_changed& change) {
        const auto* ev = &change;
        const auto it = live_.find(id);
        if (it == live_.end() || it->second.m->phase() != lock_phase::holding) return;
        const auto& m = *it->second.m;
        const bool ended = ev->state == connection_state::lost || ev->state == connection_state::closed ||
                           (is_connected(ev->state) && ev->session != m.hold_session());
        const bool doubt = ev->state == connection_state::suspended || ev->state == connection_state::read_only;
        if ((ended || doubt) && m.state() == hold_state::held)
            out_.violate("m" + std::to_string(id) + " still reads held after " + std::string(zkr::to_string(ev->state)));
        if (ended && m.state() == hold_state::doubtful)
            out_.violate("m" + std::to_string(id) + " reads doubtful, not lost, after " + std::string(zkr::to_string(ev->state)));
    }

    void call_every_machine(client& c, const zk_lock_input& e) {
        for (const auto& [id, lm] : live_)
            if (lm.client == c.id) c.calls.push_back({id, e});
    }

    void start_attempt(client& c) {
        if (c.closed || c.attempts_started >= s_.attempts || static_cast<int>(c.running.size()) >= c.parallel) return;
        if (s_.kind == recipe::multi_lock) return start_multi(c);
        if (c.cache && take_from_cache(c)) return;
        const auto id = ++next_machine_;
        const auto timeout = draw_timeout();
        const bool try_only = timeout && timeout->count() == 0;
        const bool odd = odd_rule_ && c.id == 0;
        // A read-write lock's acquires are readers or writers, half and half.
        const lock_rule* rule = odd ? odd_rule_.get() : read_rule_ && pick(2) == 0 ? read_rule_.get() : rule_.get();
        // A fixed semaphore's acquires ask for 1 to max leases at once, as acquire_many does.
        const int weight = s_.kind == recipe::semaphore && !odd ? 1 + static_cast<int>(pick(static_cast<std::size_t>(s_.max_holders))) : 1;
        const auto name = weight > 1 ? lease_node_name(fixed_tag_, static_cast<std::uint32_t>(weight)) : rule->node_name();
        // revocable_mutex: half the acquires revocable (a plain holder ignores a request).
        const bool revocable = s_.kind == recipe::revocable_mutex && pick(2) == 0;
        live_[id] = {c.id, make_machine(c, lock_path, name, {rule, timeout, {}, revocable}), name, rule, weight};
        live_[id].revocable = revocable;
        if (try_only) ended_by_[id].insert("try");
        c.running[id] = false;
        ++c.attempts_started;
        out_.note("c" + std::to_string(c.id) + " acquires (m" + std::to_string(id) + (try_only ? ", try" : "") + ")", now_);
        if (pick(10) == 0) at(pick(300), {timer::cancel, c.id, id});
        start(c, id);
    }

    // A try (zero), a timed acquire (its deadline comes from the machine's deadline_after), or an
    // untimed one (nullopt).
    std::optional<std::chrono::milliseconds> draw_timeout() {
        const auto style = pick(10);
        if (style < 2) return std::chrono::milliseconds(0);
        if (style < 6) return std::chrono::milliseconds(50 + pick(400));
        return std::nullopt;
    }

    // A multi-lock's acquire: two or three of the paths, listed in an order of the caller's own
    // (overlapping sets in opposite orders are what could deadlock), taken in the recipe's order.
    void start_multi(client& c) {
        const auto group = ++next_machine_;
        multi_acquire g;
        const auto timeout = draw_timeout();
        if (timeout) g.deadline = now_ + timeout->count();
        g.order = paths_;
        std::shuffle(g.order.begin(), g.order.end(), rng_);
        if (pick(2) == 0) g.order.pop_back();
        std::string listed;
        for (const auto& p : g.order) listed += " " + p;
        order_by_path(g.order, [](const std::string& p) -> const std::string& { return p; });
        c.running[group] = false;
        ++c.attempts_started;
        out_.note("c" + std::to_string(c.id) + " acquires the multi-lock" + listed + " (g" + std::to_string(group) + (timeout && timeout->count() == 0 ? ", try" : "") + ")", now_);
        multi_[group] = std::move(g);
        start_member(c, group);
    }

    // The next member, with what is left of the one deadline (none left: a try).
    void start_member(client& c, std::uint64_t group) {
        auto& g = multi_.at(group);
        const auto id = ++next_machine_;
        std::optional<std::chrono::milliseconds> timeout;
        if (g.deadline) timeout = std::chrono::milliseconds(std::max<std::int64_t>(0, *g.deadline - now_));
        const auto path = g.order[g.members.size()];
        live_machine lm{c.id, make_machine(c, path, rule_->node_name(), {rule_.get(), timeout}), rule_->node_name(), rule_.get()};
        lm.path = path;
        lm.group = group;
        out_.note("c" + std::to_string(c.id) + " g" + std::to_string(group) + " acquires " + lm.path + " (m" + std::to_string(id) + ")", now_);
        live_[id] = std::move(lm);
        if (timeout && timeout->count() == 0) ended_by_[id].insert("try");
        g.members.push_back(id);
        start(c, id);
    }

    void member_granted(client& c, std::uint64_t group) {
        auto& g = multi_.at(group);
        if (g.members.size() < g.order.size()) return start_member(c, group);
        c.running[group] = true;  // every member granted
        out_.note("c" + std::to_string(c.id) + " holds the multi-lock g" + std::to_string(group), now_);
        at(pick(150), {timer::hold_end, c.id, group});
    }

    // The multi-acquire or its hold ends: every member granted so far is released at once (a lost
    // one's release hears lock_lost), as the recipe's release_all does. (The caller's releases
    // arrive as the caller's calls do, after the event at hand.)
    void end_multi(client& c, std::uint64_t group, const char* why) {
        const auto it = multi_.find(group);
        if (it == multi_.end()) return;
        const auto g = std::move(it->second);
        multi_.erase(it);
        out_.note("c" + std::to_string(c.id) + " g" + std::to_string(group) + " lets go: " + why, now_);
        for (const auto id : g.members)
            if (const auto m = live_.find(id); m != live_.end() && m->second.m->state()) c.calls.push_back({id, release()});
        next(c, group);
    }

    // The writer `writer` takes the read lock (its node gets the writer's sequence, and its decision
    // knows the writer is ours), then releases the write lock once the reader's outcome is in.
    void start_downgrade(client& c, std::uint64_t writer) {
        const auto id = ++next_machine_;
        const auto writer_node = std::string(node_name(live_.at(writer).m->node_path()));
        const auto seq = writer_node.substr(writer_node.size() - 10);
        live_[id] = {c.id, make_machine(c, lock_path, std::string(read_lock_name) + seq, {read_rule_.get(), std::nullopt, decision_context{{writer_node}}}, /*sequenced=*/true),
                     std::string(read_lock_name) + seq, read_rule_.get(), 1, writer, writer_node};
        c.running[id] = false;
        out_.note("c" + std::to_string(c.id) + " downgrades m" + std::to_string(writer) + " (m" + std::to_string(id) + ")", now_);
        start(c, id);
    }

    // A downgrade's reader has its outcome: the writer it follows lets go now.
    void downgrade_done(client& c, std::uint64_t id) {
        const auto writer = live_.at(id).downgrade_of;
        if (!writer || !holds(c, writer)) return;
        out_.note("c" + std::to_string(c.id) + " releases m" + std::to_string(writer) + " after its downgrade", now_);
        feed(c, writer, release());
    }

    // The machine as the engine makes it: its face in ZooKeeper's vocabulary over its decisions.
    // A downgrade's read node is named with its writer's sequence, plain (`sequenced`: as
    // lock_engine makes it for an acquire given a sequence).
    std::unique_ptr<machine> make_machine(const client& c, const std::string& path, const std::string& name, lock_machine::config decisions,
                                          bool sequenced = false) {
        zk_lock_machine::config z;
        if (sequenced) z.mode = create_mode::ephemeral;
        z.decisions = std::move(decisions);
        z.lock_path = std::make_shared<const std::string>(path);
        z.create_path = std::make_shared<const std::string>(path + "/" + name);
        z.forgotten = [this, id = c.id](const std::string& node, std::int64_t owner) { return forgotten(clients_[static_cast<std::size_t>(id)], node, owner); };
        return machines_(std::move(z));
    }

    // A node of our own session that no acquire of this client has, asked of the engines'
    // registry (client_nodes) as lock_engine asks it at the read's reply: a stray, which the
    // waiter behind it deletes. The world makes them as production does: a create that gave up
    // after the server made its node (its removal by prefix is still on its way), or an acquire
    // that ended while its create was in flight. (The checkers judge by the world's own account,
    // client_knows.)
    bool forgotten(const client& c, const std::string& path, std::int64_t owner) {
        if (owner != net_.at(c.id).session || client_nodes::knows(&c, path)) return false;
        // The registry's promise: every node an acquire of the client has, or may be making (a
        // create in flight: any new child of its lock), is known; none is deleted as a stray.
        if (client_knows(c, path))
            out_.violate("c" + std::to_string(c.id) + " takes " + path + " for a stray, though an acquire of its own has it or "
                         "is making it (the engines' registry of the client's nodes, client_nodes, does not know it)");
        out_.note("c" + std::to_string(c.id) + " reads a stray: " + path, now_);
        return true;
    }

    // Something for machine id, as it reaches its engine: a reply or a watch event to the
    // completion that waits for it, connection news to its observers, the caller's calls to the
    // engine itself.
    void feed(client&, std::uint64_t id, zk_lock_input e) {
        if (!live_.count(id)) return;
        if (const auto* r = std::get_if<lock_in::release>(&e)) unanswered_releases_.insert(r->caller);
        with_engine(id, [&](live_machine& lm) { std::visit([&](auto& ev) { reach(lm, id, ev); }, e); });
    }

    // The acquire begins on its engine (lock_engine::start).
    void start(client& c, std::uint64_t id) {
        auto& lm = live_.at(id);
        const auto& n = net_.at(c.id);
        lm.session = n.session;
        lm.engine = std::make_shared<world_engine>(static_cast<engine_host&>(*this), id, *lm.m, &c, lm.path);
        with_engine(id, [&](live_machine& m) { m.engine->start(n.connected, n.session); });
    }

    // f calls into the engine of machine id. A finished machine whose worker is done is then let
    // go, a little later: in production its engine lives on while a completion, a watch or a
    // caller's hold object still holds it (what it registered for its client lives as long).
    // (Never while a call into its engine is under way: an outcome it hands the world may lead the
    // world to feed it again, which its engine queues until its actions are done.)
    template <typename F>
    void with_engine(std::uint64_t id, F f) {
        const auto it = live_.find(id);
        if (it == live_.end()) return;
        auto& lm = it->second;
        ++lm.feeding;
        f(lm);
        if (--lm.feeding == 0 && !lm.letting_go && lm.m->finished() && !clients_[static_cast<std::size_t>(lm.client)].running.count(id)) {
            lm.letting_go = true;
            at(let_go_rng_() % 30, {timer::let_go, lm.client, id});
        }
    }

    void reach(live_machine& lm, std::uint64_t id, zk::reply& r) {
        if (!feed_oldest(lm.replies, r)) out_.violate("m" + std::to_string(id) + " got the reply to #" + std::to_string(r.id) + ", which its engine never asked for or heard already");
    }
    void reach(live_machine& lm, std::uint64_t id, zk::watch_fired& w) {
        if (!feed_oldest(lm.watches, w)) out_.violate("m" + std::to_string(id) + " got the watch event of #" + std::to_string(w.id) + ", which its engine never set or heard already");
    }
    void reach(live_machine& lm, std::uint64_t, zk::connection_changed& e) {
        lm.session = e.session;
        auto observers = lm.observers;  // (an observer may stop observing)
        for (auto& [observer, on_change] : observers) on_change(e.state);
    }
    void reach(live_machine&, std::uint64_t id, zk::timer_due&) { out_.violate("m" + std::to_string(id) + ": a timer from outside its engine"); }
    // The caller's release, through the engine: its answer comes to release_answered.
    void reach(live_machine& lm, std::uint64_t id, lock_in::release& e) {
        lm.engine->release([this, id, client = lm.client, caller = e.caller](const error_code& ec) {
            release_answered(clients_[static_cast<std::size_t>(client)], id, caller, ec);
        });
    }
    template <typename Call>
    void reach(live_machine& lm, std::uint64_t, Call& e) { lm.engine->feed(std::move(e)); }

    // ---- engine_host: the client under the engine, and lock_engine's recipe side --------------
    void send(std::uint64_t id, zk::op op, std::function<void(zk::reply&&)> on_reply, std::function<void(zk::watch_fired&&)> on_watch) override {
        auto& lm = live_.at(id);
        auto& c = clients_[static_cast<std::size_t>(lm.client)];
        const auto ticket = std::visit([](const auto& o) { return o.id; }, op);
        if (std::holds_alternative<zk::create>(op)) {
            // The world's own account of the nodes each acquire has (its checkers' truth: the
            // machine's question about a stray goes to the engine's registry, client_nodes).
            ++lm.creates_in_flight;
            on_reply = [this, id, on_reply = std::move(on_reply)](zk::reply&& r) mutable {
                if (const auto it = live_.find(id); it != live_.end()) {
                    it->second.creates_in_flight = std::max(0, it->second.creates_in_flight - 1);
                    if (!r.ec) it->second.nodes.insert(r.path);
                }
                on_reply(std::move(r));
            };
        }
        // Which reads are of the machine's own node (what they answer may tell of an operator's
        // change), and which of a node ahead (a stray's read).
        const auto* read = std::get_if<zk::get_data>(&op);
        if (std::holds_alternative<zk::exists>(op) || (read && read->path == lm.m->node_path())) own_reads_.insert({id, ticket});
        else if (read) ahead_reads_[{id, ticket}] = read->path;
        if (std::holds_alternative<zk::after>(op)) return out_.violate("m" + std::to_string(id) + ": a timer sent as a request");
        if (std::holds_alternative<zk::multi>(op)) return out_.violate("m" + std::to_string(id) + " sent a multi");
        lm.replies.emplace(ticket, std::move(on_reply));
        if (on_watch) lm.watches.emplace(ticket, std::move(on_watch));
        count_request(c);
        net_.send(net_[c.id], id, std::move(op));
    }
    void start_timer(std::uint64_t id, zk::ticket ticket, std::chrono::milliseconds delay, std::function<void()> on_due) override {
        at(static_cast<std::size_t>(delay.count()), {timer::engine, live_.at(id).client, id, ticket, std::move(on_due)});
    }
    std::uint64_t observe(std::uint64_t id, std::function<void(connection_state)> on_change) override {
        auto& lm = live_.at(id);
        lm.observers.emplace(++lm.last_observer, std::move(on_change));
        return lm.last_observer;
    }
    void unobserve(std::uint64_t id, std::uint64_t observer) override {
        if (const auto it = live_.find(id); it != live_.end()) it->second.observers.erase(observer);
    }
    std::int64_t session_id(std::uint64_t id) override { return live_.at(id).session; }
    void on_outcome(std::uint64_t id, zk_lock_action&& a) override {
        auto& c = clients_[static_cast<std::size_t>(live_.at(id).client)];
        std::visit([&](auto& act) {
            using outcome_type = std::decay_t<decltype(act)>;
            if constexpr (std::is_same_v<outcome_type, zk::op> || std::is_same_v<outcome_type, lock_out::release_done>)
                out_.violate("m" + std::to_string(id) + ": the engine handed on an action of its own");
            else carry_out(c, id, act);
        }, a);
    }

    // No busy loop: a machine that answers a reply with the same request at once (a listing of a
    // missing parent, say) sends thousands in no simulated time. A client's machines send a few
    // each per event (at most 12, more than 6, in 100,000 schedules); a resend after reconnection goes
    // through the network, not here.
    static constexpr int max_requests_per_ms = 32;
    void count_request(client& c) {
        if (c.rate_ms != now_) c.rate_ms = now_, c.rate_count = 0;
        if (++c.rate_count == max_requests_per_ms + 1)
            out_.violate("c" + std::to_string(c.id) + " sent more than " + std::to_string(max_requests_per_ms) +
                    " requests in one simulated millisecond: a busy loop");
    }

    void carry_out(client&, std::uint64_t, const lock_out::notice&) {}
    void carry_out(client&, std::uint64_t, const lock_out::queued&) {}
    void carry_out(client&, std::uint64_t, const lock_out::waiting&) {}
    void carry_out(client& c, std::uint64_t id, const lock_out::granted& a) {
        ++out_.grants;
        if (!outcomes_.insert(id).second) out_.violate("m" + std::to_string(id) + " heard a second outcome (granted)");
        out_.note("c" + std::to_string(c.id) + " granted " + a.path + " token " + std::to_string(a.token), now_);
        // A grant on a listing taken before an operator deleted our node is a hold in the window
        // above (not told yet): its lower token is what lets a fenced resource refuse it.
        // (A read-write lock's writers hold alone: their tokens rise too.)
        // (Per lock path: a multi-lock's members are locks of their own.)
        const auto& path = live_.at(id).path;
        // (Nor a grant of a node already gone with its session: a waiter on a read-only server
        // whose session the quorum expired is granted doubtful, never held, and lost once it
        // re-validates; seed 545170635514, past the CI's schedules, took it for a token gone back.)
        if ((s_.max_holders == 1 || is_read_write_writer(node_name(a.path))) && !tampered_.count(a.token) && zk_.find(a.path)) {
            auto& last = last_token_[path];
            if (a.token <= last) out_.violate("fencing token " + std::to_string(a.token) + " after " + std::to_string(last) + " on " + path);
            last = a.token;
        }
        // First come, first served: the node granted is among those the rule lets hold in the store
        // now. Nodes leave only from ahead of it and later ones sort after it, so what the machine
        // decided on still holds when its grant is heard; a grant past an earlier waiter fails here.
        // (A node gone meanwhile, deleted or with its session, is the window the loss checks watch.)
        // (A client with its own maximum, odd_rule_, decides by that one: the maximum checks watch it.)
        // (A node the servers put back since the decision is ahead of it now, and no waiter.)
        if (const auto fits = nodes_that_fit(path, /*waiters_only=*/true);
            !odd_rule_ && fits && zk_.find(a.path) && !fits->count(std::string(node_name(a.path))))
            out_.violate("c" + std::to_string(c.id) + " granted " + a.path + " ahead of an earlier waiter (first come, first served)");
        // A shared count: the leases in use never exceed the maximum in force at the grant. (A
        // grant on a node an operator deleted adds no lease: the window above; the holds it then
        // sees may be those granted before the count shrank, which keep their leases. Seed
        // 258243774736 took that for an over-grant.)
        if (s_.kind == recipe::shared_semaphore && !tampered_.count(a.token) && valid_holders() > shared_max_)
            out_.violate(std::to_string(valid_holders()) + " holders after a grant under a shared count of " + std::to_string(shared_max_));
        if (rule_->grants_marked() && !odd_rule_) check_granted_in_order(c, path, a.path);
        if (const auto group = live_.at(id).group) return member_granted(c, group);
        if (c.running.count(id)) c.running[id] = true;
        // Now and then the caller lets go inside the grant's own completion (its hold dropped
        // there: lock_engine's complete() hands the hold over while it carries out the grant's
        // actions). The release reaches the engine while it is busy, and waits in its inbox until
        // those actions are done. (Drawn apart from rng_: the schedules where it does not happen
        // stay as they were.)
        if (holds(c, id) && !c.cache && !live_.at(id).revocable && !live_.at(id).downgrade_of && inline_rng_() % 16 == 0) {
            out_.note("c" + std::to_string(c.id) + " lets go inside the grant's completion", now_);
            return feed(c, id, release());
        }
        // A revocable hold lets go only when asked: if a request never reached it, its worker would
        // never finish (the quiescence check).
        if (live_.at(id).revocable) at(pick(100), {timer::revoke, c.id, id});
        else at(pick(150), {timer::hold_end, c.id, id});
        downgrade_done(c, id);
    }
    // A revocable hold is asked to let go: only when a request was written to its node (by the
    // revoker or an operator), once, and its worker then releases.
    void carry_out(client& c, std::uint64_t id, const lock_out::revocation_requested&) {
        const auto& lm = live_.at(id);
        out_.note("c" + std::to_string(c.id) + " m" + std::to_string(id) + " asked to let go", now_);
        if (!lm.revocable) return out_.violate("m" + std::to_string(id) + ", not revocable, was told of a revocation request");
        if (!revocation_told_.insert(id).second) return out_.violate("m" + std::to_string(id) + " was told of a revocation request twice");
        if (!revocation_written_.count(lm.m->token()))
            return out_.violate("m" + std::to_string(id) + " was told of a revocation request that nobody wrote to its node " + lm.m->node_path());
        if (holds(c, id)) at(pick(20), {timer::hold_end, c.id, id});
    }

    // The revoker (zkr::revoke) writes the request to a holder's node while it is there, and
    // again now and then until the hold is asked (an operator's write may overwrite it first).
    void revoke(client& c, std::uint64_t id) {
        if (!holds(c, id) || revocation_told_.count(id)) return;
        const auto& m = *live_.at(id).m;
        if (const node* n = zk_.find(m.node_path()); n && n->owner == m.hold_session()) {
            out_.note("revoker writes the request to " + m.node_path(), now_);
            revocation_written_.insert(n->czxid);
            zk_.set_data(m.node_path(), revocation_signal);
            route_fired();
        }
        at(50 + pick(200), {timer::revoke, c.id, id});
    }

    void carry_out(client& c, std::uint64_t id, const lock_out::not_granted& a) {
        if (!outcomes_.insert(id).second) out_.violate("m" + std::to_string(id) + " heard a second outcome (not granted)");
        // The right outcome: "not acquired in time" only after a deadline or for a try, "cancelled"
        // only after a cancel, "closed" only from a closed client.
        const auto& by = ended_by_[id];
        const char* missing = nullptr;  // the cause this outcome needs and did not have
        if (!a.ec && !by.count("deadline") && !by.count("try")) missing = "a deadline or a try";
        else if (a.ec == errc::cancelled && !by.count("cancel")) missing = "a cancel";
        else if (a.ec == errc::closed && !c.closed) missing = "a close";
        else if (a.ec == errc::lock_kind_mismatch && !other_kind_present_) missing = "another kind's node";
        if (missing) out_.violate("m" + std::to_string(id) + " not granted (" + (a.ec ? a.ec.message() : "timed out") + ") without " + missing);
        out_.note("c" + std::to_string(c.id) + " not granted: " + (a.ec ? a.ec.message() : "timed out"), now_);
        if (const auto group = live_.at(id).group) return end_multi(c, group, "a member was not granted");
        downgrade_done(c, id);
        if (c.running.count(id)) next(c, id);
    }
    void carry_out(client& c, std::uint64_t id, const lock_out::hold_changed& a) {
        auto& last = hold_states_[id];
        if (a.state == hold_state::held && (last == hold_state::lost || last == hold_state::released || last == hold_state::releasing))
            out_.violate("m" + std::to_string(id) + " reads held again after " + std::string(zkr::to_string(last)));
        last = a.state;
        out_.note("c" + std::to_string(c.id) + " hold " + std::string(zkr::to_string(a.state)), now_);
        if (const auto group = live_.at(id).group; group && a.state == hold_state::lost) {
            if (holds(c, group)) end_multi(c, group, "a member's hold was lost");  // its stop token fires; the caller lets go
            return;
        }
        if (a.state == hold_state::lost && holds(c, id)) {
            if (c.cache && c.lent && c.kept == id) cache_returned_lost(c);
            next(c, id);
            // Now and then the caller releases anyway: it must hear lock_lost, and nothing else.
            if (pick(3) == 0) c.calls.push_back({id, release()});
        }
    }
    // A release's caller hears its answer (from the engine: basic_lock_engine).
    void release_answered(client& c, std::uint64_t id, std::uint64_t caller, const error_code& ec) {
        if (tearing_down_) return;  // (see ~lock_state)
        if (!unanswered_releases_.erase(caller))
            out_.violate("m" + std::to_string(id) + " answered release caller " + std::to_string(caller) + ", which did not ask or heard already");
        // The answer names what the hold was: lock_lost only for a hold that reads lost (and a
        // release of a lost hold hears nothing else), lock_not_held for one that had ended
        // otherwise or never was, and any other answer (done, or its delete's failure) for a hold
        // this release ended (released, or releasing while its delete waits for a connection).
        if (const auto it = live_.find(id); it != live_.end()) {
            const auto state = it->second.m->state();
            const bool lost = state == hold_state::lost;
            const bool ended_by_release = state == hold_state::released || state == hold_state::releasing;
            const char* wrong = nullptr;
            if (ec == errc::lock_lost) wrong = lost ? nullptr : "lock_lost for a hold that is not lost";
            else if (lost) wrong = "another answer than lock_lost for a lost hold";
            else if (ec == errc::lock_not_held) wrong = state == hold_state::held || state == hold_state::doubtful ? "lock_not_held for a hold it has" : nullptr;
            else if (!ended_by_release || (!ec && state != hold_state::released)) wrong = "a release's answer for a hold it did not end";
            if (wrong)
                out_.violate("m" + std::to_string(id) + " answered release caller " + std::to_string(caller) + " with " +
                             (ec ? ec.message() : "done") + ": " + wrong);
        }
        out_.note("c" + std::to_string(c.id) + " release done: " + (ec ? ec.message() : "ok"), now_);
        if (holds(c, id)) {
            next(c, id);
            // Now and then the caller releases twice: the second hears lock_not_held.
            if (pick(4) == 0) c.calls.push_back({id, release()});
        }
    }

    // A deadline or a cancel ends the acquire at once, whatever is in flight: the caller's bound
    // is the deadline, not the deadline plus a reply that may never come.
    void must_have_ended(std::uint64_t id, const char* what) {
        if (!outcomes_.count(id)) out_.violate("m" + std::to_string(id) + " still acquiring after " + what);
    }

    static bool holds(const client& c, std::uint64_t id) {
        const auto it = c.running.find(id);
        return it != c.running.end() && it->second;
    }

    // The worker's attempt ended: the machine lives on while a delete is pending.
    void next(client& c, std::uint64_t id) {
        c.running.erase(id);  // feed() lets the machine go once it is finished
        if (!live_.count(id) || !live_.at(id).downgrade_of) ++c.attempts_done;  // a downgrade's reader is part of its writer's attempt
        at(pick(30), {timer::next_attempt, c.id});
        // The worker is done: its mutex goes, and a kept node with it (as the destructor does).
        if (c.cache && c.attempts_started >= s_.attempts && c.running.empty() && c.cache->close() == cache_decisions::action::let_go)
            cache_let_go(c);
    }

    // ---- lock caching (cached_mutex) ------------------------------------------------------------
    // As hold_cache does: the worker's release of its hold goes through the cache first.
    void cache_released(client& c, std::uint64_t id) {
        const auto& m = *live_.at(id).m;
        const bool lent_one = c.lent && c.kept == id;
        const auto a = c.cache->released(m.state() == hold_state::held, lent_one);
        if (lent_one) c.lent = false;
        if (a == cache_decisions::action::release_now) {
            if (lent_one) c.kept = 0;
            return feed(c, id, release());
        }
        if (a == cache_decisions::action::let_go) return out_.violate("c" + std::to_string(c.id) + " cache: let_go at a release");
        c.kept = id;
        out_.note("c" + std::to_string(c.id) + " keeps " + m.node_path() + (a == cache_decisions::action::list ? ", listing" : ""), now_);
        if (a == cache_decisions::action::list) {
            // (Sent once, with a children watch: a listing the connection does not retry.)
            c.cache_listing = ++cache_tickets_;
            count_request(c);
            net_.send(net_[c.id], cache_who, zk::get_children{c.cache_listing, live_.at(id).path, /*watch=*/true, /*once=*/true});
        }
        next(c, id);  // the worker's attempt is over; the machine holds on
    }

    // As interprocess_mutex::acquire_for does: the kept hold, if the cache lends it; while its
    // listing is in flight, the acquire waits for the answer (here: tries again a little later).
    bool take_from_cache(client& c) {
        if (c.cache->current() == cache_decisions::phase::listing) {
            at(1 + pick(5), {timer::next_attempt, c.id});
            return true;
        }
        // (Asked in every phase, as hold_cache::take asks: only a kept node is lent.)
        const auto id = c.lent ? 0 : c.kept;
        const bool alive = id && live_.count(id);  // (a finished machine: its hold was lost)
        const auto a = c.cache->acquire(alive && live_.at(id).m->state() == hold_state::held);
        if (a == cache_decisions::action::let_go) {
            cache_let_go(c);
            return false;  // and it queues anew
        }
        if (a != cache_decisions::action::grant) return false;
        if (!alive) return out_.violate("c" + std::to_string(c.id) + " lent a kept hold whose machine has finished"), true;
        const auto& m = *live_.at(id).m;
        // The promise: a kept node is lent only while its hold reads held (then the hold checks
        // of check() cover it as any holder).
        if (m.state() != hold_state::held)
            out_.violate("c" + std::to_string(c.id) + " lent its kept node " + m.node_path() + ", which reads " + std::string(zkr::to_string(*m.state())));
        c.lent = true;
        c.running[id] = true;
        ++c.attempts_started;
        ++out_.grants;
        ++cache_grants_;
        out_.note("c" + std::to_string(c.id) + " takes back " + m.node_path() + " (no request)", now_);
        at(pick(150), {timer::hold_end, c.id, id});
        return true;
    }

    // The listing's answer and the children watch.
    void cache_delivered(client& c, zk_lock_input& e) {
        if (!c.cache || c.closed) return;
        auto a = cache_decisions::action::none;
        if (const auto* r = std::get_if<zk::reply>(&e)) {
            if (r->id != c.cache_listing) return;  // (an earlier keep's listing)
            // (The kept machine may have finished meanwhile, its hold lost: then not alone. The
            // real cache keeps the hold object alive; here the world lets a finished machine go.)
            const bool alive = c.kept && live_.count(c.kept);
            const auto ours = alive ? std::string(node_name(live_.at(c.kept).m->node_path())) : std::string();
            a = c.cache->listed(alive && !r->ec && r->children == std::vector<std::string>{ours});
        } else if (std::get_if<zk::watch_fired>(&e)) {
            a = c.cache->changed();
        }
        if (a == cache_decisions::action::let_go) cache_let_go(c);
    }

    void cache_let_go(client& c) {
        const auto id = std::exchange(c.kept, 0);
        c.lent = false;
        if (!id || !live_.count(id)) return;
        out_.note("c" + std::to_string(c.id) + " lets its kept node go", now_);
        feed(c, id, release());
    }

    // A lent hold lost: its worker gives it up (interprocess_mutex's release of a lost hold reaches
    // the cache as one that does not read held).
    void cache_returned_lost(client& c) {
        c.cache->released(false, true);
        c.lent = false;
        c.kept = 0;
    }










    // A resurrected node that no waiter of its own client deleted (none waited right behind it,
    // or none acquired that lock again) blocks the waiters behind it until its session ends
    // (docs/reliability.md). Nothing in zkr ends that session, so at quiescence the world does, as
    // the owner process's restart would, and the schedule goes on to its end.
    bool end_a_resurrected_session() {
        for (const auto& [path, czxid] : resurrected_) {
            if (!resurrected(path)) continue;
            const auto owner = zk_.find(path)->owner;
            if (!zk_.alive(owner)) continue;
            tally("a resurrected node's session ended at quiescence");
            out_.note("quiescent with " + path + " back: its session ends", now_);
            for (auto& c : clients_)
                if (auto& n = net_[c.id]; n.session == owner && !c.closed && n.connected) return end_session(c, n), true;
            zk_.expire(owner);
            route_fired();
            return true;
        }
        return false;
    }


    // A release by a new caller (the engine's, one per release call).
    lock_in::release release() { return {++last_caller_}; }




    std::size_t pick(std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(rng_() % n); }
    void at(std::size_t delay, timer t) { timers_.emplace(now_ + static_cast<std::int64_t>(delay), t); }

    // c's session ends: the server expires it, or c gives it up while the server keeps it. The
    // new one connects a while later (open_session).
    void end_session(const client& c, sim_clients<zk_lock_input>::connection& n, bool given_up = false) {
        if (given_up) net_.abandon(n);
        else net_.expire(n);
        at(pick(200), {timer::open_session, c.id});
    }

};

}  // namespace lock_world

machine_factory shipped_machines() { return machines_with<detail::lock_rules>(); }

outcome run(const schedule& s, const machine_factory& machines, bool traced, const cache_factory& caches) {
    return lock_world::world(s, machines, traced, caches).run();
}

}  // namespace zkr::sim
