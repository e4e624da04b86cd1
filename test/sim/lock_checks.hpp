// The lock world's state, and the checkers that judge it against what the lock recipes promise.
// Included by lock_sim.cpp alone.
#pragma once

#include "../../recipes/queue/read_write_rule.hpp"
#include "lock_world_client.hpp"
#include "verdict.hpp"

#include <zkr/path.hpp>

#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace zkr::sim::lock_world {

// ---- the world's state ----------------------------------------------------------------------
// Everything the world knows, as the scheduler, the faults, the simulated client and the checkers
// share it.
class lock_state {
protected:
    lock_state(const schedule& s, const machine_factory& machines)
        : s_(s), machines_(machines), rng_(s.seed ^ 0x9e3779b97f4a7c15ULL), lost_rng_(s.seed ^ 0x5851f42d4c957f2dULL),
          inline_rng_(s.seed ^ 0x2545f4914f6cdd1dULL), let_go_rng_(s.seed ^ 0x9fb21c651e98df25ULL) {}
    // The engines go first, while the state they reach is whole: a run that ends early (a broken
    // promise) may leave an engine with a release unanswered, which it answers as it dies
    // (releases-at-death), into the world. Its answer is dropped then: the run is over. (Without
    // this, the members declared after live_ were gone by then: a planted bug's run crashed with a
    // corrupted heap instead of naming its seed.)
    ~lock_state() {
        tearing_down_ = true;
        live_.clear();
    }
    bool tearing_down_ = false;

    const schedule& s_;
    const machine_factory& machines_;
    std::mt19937_64 rng_;
    std::mt19937_64 lost_rng_;  // whether the servers lose a release's delete (apart from rng_)
    std::mt19937_64 inline_rng_;  // whether a caller lets go inside its grant's completion (apart from rng_)
    std::mt19937_64 let_go_rng_;  // how long a finished acquire's engine lives on (apart from rng_)
    zookeeper zk_;
    std::shared_ptr<lock_rule> rule_, odd_rule_;
    std::shared_ptr<lock_rule> read_rule_;  // read_write: rule_ is the writers'; both agree on the queue and its holders
    std::int64_t operator_session_ = 0;  // owns the foreign nodes an operator drops into the queue
    std::map<std::uint64_t, std::set<std::string>> ended_by_;  // what may end each acquire: try, deadline, cancel
    std::string fixed_tag_;  // a fixed semaphore's max tag (its weighted nodes' names)
    int shared_max_ = 0;  // shared_semaphore: the count's value now
    bool other_kind_present_ = false;  // an operator made a node of another kind of lock on the path
    std::vector<client> clients_;
    std::map<std::uint64_t, live_machine> live_;
    std::multimap<std::int64_t, timer> timers_;
    std::int64_t now_ = 0;
    std::uint64_t next_machine_ = 0;
    // Each machine's reads of its own node, and its reads of a node ahead (the path read), by
    // (machine, ticket).
    std::set<std::pair<std::uint64_t, lock_ticket>> own_reads_;
    std::map<std::pair<std::uint64_t, lock_ticket>, std::string> ahead_reads_;
    lock_ticket cache_tickets_ = 0;  // the lock caches' listings
    long cache_grants_ = 0;          // holds taken back from a cache
    std::map<std::string, std::int64_t> last_token_;  // by lock path
    std::vector<std::string> paths_{lock_path};       // the lock paths of this schedule
    std::map<std::uint64_t, multi_acquire> multi_;    // the multi-lock acquires in progress
    int faults_left_ = 0;
    std::set<std::int64_t> written_;   // the czxids of lock nodes an operator wrote
    std::set<std::int64_t> granted_nodes_;  // the czxids of lock nodes some machine was granted on
    std::set<std::uint64_t> heard_read_only_;  // machines whose last connection news was read_only
    // A read-only server answers every write the same way: a machine that heard its write refused
    // there writes again only on other connection news (no loop of refused writes). The writes
    // refused (machine, ticket), and the machines that heard one on a read-only connection.
    std::set<std::pair<std::uint64_t, lock_ticket>> refused_writes_;
    std::set<std::uint64_t> refused_on_read_only_;
    std::set<std::string> orphans_;  // downgrades' read nodes made after their writer had gone
    std::set<std::int64_t> tampered_;  // the czxids of lock nodes an operator deleted or wrote
    std::set<std::pair<std::uint64_t, std::int64_t>> told_;  // machines told of such a change to their node
    std::set<std::int64_t> revocation_written_;  // the czxids of lock nodes a revocation request was written to
    std::set<std::uint64_t> revocation_told_;    // revocable machines told of a request
    // Own-node reads the server answered after the change, and own-node watch events it fired.
    std::set<std::pair<std::uint64_t, lock_ticket>> informative_reads_, informative_events_;
    std::set<std::uint64_t> outcomes_;
    std::uint64_t last_caller_ = 0;
    std::set<std::uint64_t> unanswered_releases_;  // callers of releases fed to a live machine, not answered yet
    std::map<std::uint64_t, hold_state> hold_states_;
    struct released_node {
        int client = 0;
        std::string path;
        node n;
        std::int64_t queue_czxid = 0;  // the queue it was in
    };
    std::optional<released_node> last_release_;  // the last release's delete since the last restart
    std::map<std::string, std::int64_t> resurrected_;  // the nodes the servers put back: path -> czxid
    struct stray_read {
        std::int64_t czxid = 0;
        std::string path;
    };
    std::map<std::pair<std::uint64_t, lock_ticket>, stray_read> stray_reads_;  // a waiter's read of a stray
    outcome out_;
    // The clients' connections (after what they use: the server, the stream, the verdict).
    sim_clients<zk_lock_input> net_{zk_, rng_, out_};
};

// ---- the checkers -----------------------------------------------------------------------------
// What the lock recipes promise, judged on the world's state: at most the maximum of holders and
// no hold on a node that is not the holder's, progress once nothing is in flight, grants in queue
// order under a shared count, strays deleted, every release answered and nothing left at the end.
class lock_checks : protected lock_state {
protected:
    using lock_state::lock_state;

    // ---- the checker ---------------------------------------------------------------------------
    // The maximum in force: the shared count's, or the fixed one.
    int max_now() const { return s_.kind == recipe::shared_semaphore ? shared_max_ : s_.max_holders; }

    // The lock nodes in the store that the rule lets hold now: the first ones whose weights fit the
    // maximum. None known while a written node is in the queue: it tells the waiter behind it of a
    // grant that did not happen, and that waiter then takes the real one for the same and waits for
    // that node to go (docs/recipes.md). Only where grants are awaited (several holders): in a
    // one-holder lock a write tells nobody anything, and first come, first served is checked still.
    // waiters_only: without the nodes the servers put back (lose_the_last_release), which hold
    // their place as a holder does but are nobody's: no earlier waiter for first come, first served.
    std::optional<std::set<std::string>> nodes_that_fit(const std::string& path, bool waiters_only = false) const {
        const auto kids = zk_.children(path);
        if (!kids) return std::set<std::string>{};
        auto queue = rule_->queue(*kids).sorted;
        // A downgrade's read node made after its writer had gone (its session lost meanwhile) sits
        // ahead of writers that may hold: it never holds (its rule fails it with lock_lost once it
        // lists) and leaves at once, so it is no earlier waiter.
        std::erase_if(queue, [&](const std::string& n) { return orphans_.count(n) > 0; });
        if (waiters_only) std::erase_if(queue, [&](const std::string& n) { return resurrected(path + "/" + n); });
        if (rule_->grants_awaited())
            for (const auto& name : queue)
                if (const node* n = zk_.find(path + "/" + name); n && written_.count(n->czxid)) return std::nullopt;
        const auto holders = rule_->holders(queue);
        return std::set<std::string>(queue.begin(), queue.begin() + static_cast<std::ptrdiff_t>(holders));
    }

    // Under marked grants (a shared count), grants go in queue order: a node holds only behind
    // nodes that were granted. A waiter granted past one that never held may be joined by it once
    // the count shrinks: one holder too many, which the count check sees only after a shrink and
    // that waiter's own grant (a write into a waiter's node, taken for its grant mark, did that:
    // seed 28548085651). This check sees it at the grant that broke the order.
    void check_granted_in_order(const client& c, const std::string& path, const std::string& node_path) {
        const node* ours = zk_.find(node_path);
        if (!ours) return;  // deleted by an operator meanwhile: the window the loss checks watch
        granted_nodes_.insert(ours->czxid);
        const auto kids = zk_.children(path);
        if (!kids) return;
        const auto name = std::string(node_name(node_path));
        for (const auto& ahead : rule_->queue(*kids).sorted) {
            if (ahead == name) return;
            // (A node the servers put back since the decision is nobody's: it waits for nothing.)
            if (const node* n = zk_.find(path + "/" + ahead); n && !granted_nodes_.count(n->czxid) && !resurrected(path + "/" + ahead))
                return out_.violate("c" + std::to_string(c.id) + " granted " + node_path + " ahead of " + ahead +
                                    ", which has never held (grants under a shared count go in queue order)");
        }
    }

    // Holds that read held and are not in a documented window (see check()).
    int valid_holders() const {
        int held = 0;
        for (const auto& [id, lm] : live_) {
            const auto& m = *lm.m;
            if (m.state() == hold_state::held && !not_yet_told_lost(clients_[lm.client], id) &&
                !tampered_.count(m.token()))
                held += lm.weight;
        }
        return held;
    }

    void check() {
        if (!out_.ok) return;
        std::map<std::string, int> held;  // by lock path
        std::string writer;  // a read-write lock's writer that holds
        for (const auto& [id, lm] : live_) {
            const auto& m = *lm.m;
            if (m.state() != hold_state::held) continue;  // (nothing before a grant)
            // A session the server ended while its connection lived: the holder cannot know until
            // its client hears of it (docs/recipes.md: a process paused past its session acts on
            // until it runs again; only a fencing token protects then).
            if (not_yet_told_lost(clients_[lm.client], id)) continue;
            // Told that its connection is read-only: a hold granted or kept then reads doubtful
            // (docs/recipes.md; the majority may have ended the session meanwhile).
            if (heard_read_only_.count(id))
                return out_.violate("c" + std::to_string(lm.client) + " reads held on a read-only connection: " + m.node_path());
            if (tampered_.count(m.token())) {
                if (told_.count({id, m.token()}))
                    return out_.violate("c" + std::to_string(lm.client) + " reads held after being told that its node " + m.node_path() +
                                   " was changed by someone else");
                continue;  // the documented window: not told yet
            }
            // A downgrade: its reader and its writer, held at once by one owner, count as the writer.
            if (lm.downgrade_of && live_.count(lm.downgrade_of) && live_.at(lm.downgrade_of).m->state() == hold_state::held) continue;
            held[lm.path] += lm.weight;
            if (is_read_write_writer(node_name(m.node_path()))) writer = m.node_path();
            const node* n = zk_.find(m.node_path());
            if (!n || n->owner != m.hold_session())
                return out_.violate("c" + std::to_string(lm.client) + " reads held, but its node " + m.node_path() +
                               (n ? " belongs to session " + std::to_string(n->owner) : " is gone"));
        }
        if (!writer.empty() && held[lock_path] > 1)
            return out_.violate("a writer holds with others: " + writer + " and " + std::to_string(held[lock_path] - 1) + " more");
        for (const auto& [path, n] : held)
            if (n > s_.max_holders)
                return out_.violate(std::to_string(n) + " leases held at once on " + path + " (max " + std::to_string(s_.max_holders) + ")");
    }

    // Progress: once nothing is in flight anywhere (no request, reply, event or connection change
    // on its way, every client connected), no waiter whose node is among the holders the rule
    // names on the server's own queue may still wait. It has heard everything it will hear: a
    // reevaluate that decided nothing, or a departure it missed, would leave it there until some
    // later, unrelated event.
    void check_progress() {
        if (!out_.ok || odd_rule_) return;  // a disagreeing maximum refuses instead of holding
        // A node of a session its client gave up holds its place until the server expires it: a
        // waiter behind it waits for that (as behind a crashed holder), not stuck.
        if (net_.keeps_given_up()) return;
        // (Connected to the quorum: on a read-only server a holder's writes wait, the signal of
        // its grant too, which a waiter behind it may await.)
        for (const auto& c : clients_)
            if (!net_.at(c.id).connected || net_.at(c.id).read_only || !quiet(c)) return;
        // Lock caching's promise to waiters: with nothing in flight, a cacher keeps its node only
        // while it is alone in the queue (another node there fired its watch, and it let go).
        for (const auto& c : clients_)
            if (c.cache && c.cache->current() == cache_decisions::phase::kept && c.kept && live_.count(c.kept)) {
                const auto ours = std::string(node_name(live_.at(c.kept).m->node_path()));
                if (const auto kids = zk_.children(lock_path); kids && *kids != std::vector<std::string>{ours})
                    return out_.violate("c" + std::to_string(c.id) + " keeps its node " + ours + " with nothing in flight, although " +
                                        std::to_string(kids->size()) + " nodes are queued");
            }
        std::map<std::string, std::optional<std::set<std::string>>> fitting;  // by lock path
        for (const auto& path : paths_) fitting[path] = nodes_that_fit(path);
        const int max = max_now();
        for (const auto& [id, lm] : live_) {
            const auto& m = *lm.m;
            if (m.phase() != lock_phase::waiting) continue;
            const auto name = std::string(node_name(m.node_path()));
            if (const auto& fits = fitting.at(lm.path); fits && fits->count(name))
                return out_.violate("c" + std::to_string(lm.client) + " waits with nothing in flight, although its node " + name +
                               " is among the " + std::to_string(max) + " that hold");
        }
    }

    // What the face asks the client at this reply (is the node ahead of our session, and
    // forgotten?), asked here on its own: the reads that must end in the node's delete.
    void note_stray_read(const client& c, std::uint64_t id, const zk::reply& r, const std::string& path) {
        const auto it = live_.find(id);
        if (it == live_.end() || r.ec || !r.stat || r.stat->ephemeral_owner != net_.at(c.id).session) return;
        const auto& m = *it->second.m;
        if (m.phase() != lock_phase::waiting || !m.awaits(r.id) || client_knows(c, path)) return;
        stray_reads_[{id, r.id}] = {r.stat->czxid, path};
    }

    // The promise on strays (docs/reliability.md): a waiter that reads a node of its own session
    // which no acquire of its client has deletes it. Judged when that client is idle (nothing in
    // flight, nothing to send again): the delete has been applied by then, and the watch fired.
    void check_strays() {
        for (const auto& [read, stray] : stray_reads_) {
            const auto [id, ticket] = read;
            const auto it = live_.find(id);
            if (it == live_.end() || it->second.m->phase() != lock_phase::waiting || !it->second.m->awaits(ticket)) continue;
            const auto& c = clients_[static_cast<std::size_t>(it->second.client)];
            // (Its watch still set: not fired yet, on the client's session now.)
            if (!idle(c) || !net_.watching(net_.at(c.id), id, ticket)) continue;
            if (const node* n = zk_.find(stray.path); n && n->czxid == stray.czxid)
                return out_.violate("m" + std::to_string(id) + " read " + stray.path + ", a node of its own session that no "
                                    "acquire of its client has (a stray), and waits behind it with nothing in flight");
        }
    }

    // Nothing of c's on its way: no request, reply, event, connection news, retry or call.
    bool quiet(const client& c) const {
        const auto& n = net_.at(c.id);
        return n.outbound.empty() && n.inbound.empty() && n.retrying.empty() && n.stashed.empty() && n.late.empty() && c.calls.empty();
    }
    bool idle(const client& c) const { return net_.at(c.id).connected && !net_.at(c.id).read_only && quiet(c); }

    // Whether the node at path is one the servers put back (lose_the_last_release), still there.
    bool resurrected(const std::string& path) const {
        const auto it = resurrected_.find(path);
        const node* n = it == resurrected_.end() ? nullptr : zk_.find(path);
        return n && n->czxid == it->second;
    }

    bool not_yet_told_lost(const client& c, std::uint64_t id) const {
        for (const auto& [who, e] : net_.at(c.id).inbound)
            if (who == 0 || who == id)
                if (const auto* change = std::get_if<zk::connection_changed>(&e); change && change->state == connection_state::lost) return true;
        return false;
    }

    void check_quiescent() {
        if (!unanswered_releases_.empty())
            return out_.violate("release caller " + std::to_string(*unanswered_releases_.begin()) + " never heard the outcome");
        for (const auto& c : clients_)
            if (!c.closed && c.attempts_done < s_.attempts)
                return out_.violate("c" + std::to_string(c.id) + " never finished: a waiter was not granted after the faults stopped");
        if (operator_session_) zk_.expire(std::exchange(operator_session_, 0));  // its foreign nodes go
        for (const auto& path : zk_.descendants("/locks")) {
            const node* n = zk_.find(path);
            if (n && !n->container) return out_.violate("node left at quiescence: " + path);
        }
    }

    bool client_knows(const client& c, const std::string& path) const {
        for (const auto& [id, lm] : live_)
            if (lm.client == c.id && !lm.m->finished() &&
                (lm.nodes.count(path) || (lm.creates_in_flight > 0 && parent_path(path) == lm.path)))
                return true;
        return false;
    }
};

}  // namespace zkr::sim::lock_world
