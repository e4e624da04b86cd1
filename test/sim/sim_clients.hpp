// The simulated clients of any world whose machines speak zk_ops: each client's connection to the
// in-memory server (requests not applied yet, what comes back in order, watch events held while it
// is disconnected), and the faults production's connection has, made the way it makes them:
//   - a dropped connection: it drops at a point of what the server sent on it. The client read
//     what came before (its machines hear that in turn); each reply after it is lost (below), and
//     each watch event after it comes again after the reconnection (the client sets its watches
//     again), unless its watch came with a lost reply. Each request not applied yet is retried
//     after the reconnection or fails with connection_loss, now or after the reconnection (the
//     retry policy decides, connection::abandon_inflight); the machine hears `suspended` before
//     or after those failures, and watch events wait for the reconnection. Each retried request
//     sleeps on a timer of its own (connection::retry_or_finish), so once connected the retries
//     go in any order, before or after what was sent meanwhile;
//   - an expired session: each request not applied yet fails with session_expired or is retried on
//     the new session (again the retry policy), the machine hears `lost`, then not_watching for
//     every watch it had not heard fire, then `connected` on the new session (at once, or once the world
//     reconnects it: new_session_waits);
//   - a reply lost with its connection (a drop's, or lose_reply's: the connection drops at that
//     reply): the request was applied, the machine never hears its reply; the client retries the
//     request after the reconnection or fails it with connection_loss. A failed protected
//     create's node is removed by the client once it is connected again, and a retry on a new
//     session draws a new name prefix, as the client does. A session the client gave up while the
//     server kept it ends before the client's sessions have ended twice more (given_up_outlives).
//   - a partition that outlasts the session (a world calls lose_reply, then expire, with what
//     books of its own it keeps on an expiry): the request whose reply was lost is in doubt as its
//     session ends; the machines hear `suspended`, then `lost`, and the request is retried on the
//     new session or failed (client_reach::ended_in_doubt counts those meetings, whatever faults
//     made them).
//   - a protected create retried after a connection loss recovers as the connection does
//     (src/connection_protected.cpp, decisions in src/protected_create.hpp): a listing of the parent
//     for a child with its prefix, the check of the one found (adopted if this session owns it or it
//     is persistent), then a create if none was adopted. Each is a request of its own, so anything
//     may happen between them: the node found goes, the session ends, the connection drops again.
//   - a read-only server (read_only_servers; client_options::can_be_read_only): a client
//     that reconnects may find only a server cut off from the quorum. The machine hears
//     `read_only`; the server keeps the session (as ZooKeeper before 3.7 did; the lock world's
//     do too: docs/reliability.md), answers reads and refuses every write (not_read_only); the
//     client goes to a server of the quorum at its next reconnection (through `suspended`, then
//     `reconnected`). The server's reads and watch events are the quorum's as they happen: a
//     server cut off earlier would be behind, its reads older and its watches' events held until
//     the reconnection, consistently. Holding the events alone while reads run ahead is a history
//     ZooKeeper cannot make (a tree cache then saw a node's deletion after a listing that had it
//     again). The behind view is modelled for one read only, as the lock world does: a protected
//     create's lookup on a server cut off by the drop lists none of what the quorum made since.
//   - requests as the connection starts them (send): one sent at most once fails at once without
//     a connection, and its failure on a drop comes before the reconnection (no retry sleeps
//     first); a guaranteed delete is retried until done, across drops and sessions and past a
//     read-only server; a closed client (close) sends and hears nothing more.
// A world owns one sim_clients, picks which client's next request the server applies and which
// reply or event a machine hears next, and keeps its own checkers. Requests and replies carry a
// tag of the world's (`who`: the machine, or another part of the client such as a worker), so
// that a world with more than one requester per client routes replies back.
#pragma once

#include "client_reach.hpp"
#include "sim_zookeeper.hpp"
#include "verdict.hpp"
#include "zk_client_sim.hpp"

#include <zkr/path.hpp>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <tuple>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace zkr::sim {

/// A uniform pick in [0, n) from the world's stream (0 when n is 0).
inline std::size_t pick(std::mt19937_64& rng, std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(rng() % n); }

/// Input: the machine's input variant (it holds every zk::event alternative).
template <typename Input>
class sim_clients {
public:
    /// One client's connection.
    struct connection {
        int id = 0;
        std::int64_t session = 0;
        bool connected = true;
        bool read_only = false;  ///< connected to a server cut off from the quorum
        std::int64_t dropped_at_zxid = 0;      ///< the last write applied when its connection last dropped
        std::int64_t read_only_seen_zxid = 0;  ///< the last write its read-only server has (for a protected create's lookup)
        long sessions_ended = 0;               ///< its sessions that expired or that it gave up
        bool lost_replies = false;             ///< its last drop lost a reply, and it is not connected since
        bool closed = false;                   ///< closed by its owner (close): it sends and hears nothing more
        bool opening = false;                  ///< its session ended; the new one is not connected yet (new_session_waits)
        std::deque<std::pair<std::uint64_t, detail::zk::op>> outbound;  ///< (who, op) not applied yet
        std::vector<std::pair<std::uint64_t, detail::zk::op>> retrying;  ///< (who, op) to be tried again once connected
        std::deque<std::pair<std::uint64_t, Input>> inbound;            ///< (who, reply or event), in order
        std::deque<std::pair<std::uint64_t, Input>> stashed;            ///< watch events while disconnected
        std::deque<std::pair<std::uint64_t, Input>> late;               ///< failures heard after the reconnection
        std::vector<std::pair<std::int64_t, detail::zk::op>> escaped;    ///< (session, op): failed, yet still on its way (late_applies)
    };
    /// What the server did with a request (for the world's trace).
    struct applied {
        std::uint64_t who = 0;
        detail::zk::op op;
        const detail::zk::reply& reply;
        /// A step of a protected create's recovery ("lookup", "check"): the connection's own
        /// request, whose reply no machine hears (reply: what the server answered it); nullptr for
        /// the request itself.
        const char* recovery = nullptr;
    };
    /// What the runs of this world reached so far.
    client_reach reach;

    sim_clients(zookeeper& zk, std::mt19937_64& rng, verdict& out) : zk_(zk), rng_(rng), out_(out) {}

    /// Opt-in (it draws from the world's stream): a request that failed with connection_loss
    /// when its connection dropped may have reached a server all the same, which applies it
    /// later (an ensemble's server forwards it to the leader while the client reconnects
    /// elsewhere), while its session lives. The world applies such a request with apply_escaped.
    bool late_applies = false;

    /// A reconnection by drop_or_reconnect finds a read-only server one time in three (see above).
    bool read_only_servers = true;

    /// Opt-in: after `lost`, the new session connects only when the world next calls reconnect
    /// (or drop_or_reconnect), as production's new handle connects a while after the loss was
    /// told (src/connection.cpp: notify, then reset_handle and open_handle). Meanwhile c is
    /// disconnected and opening: its machines may decide, be started and send, and expire and
    /// abandon do nothing (no session is connected). Off: the new session connects at once.
    bool new_session_waits = false;

    /// The world's, optional: each watch event as the server fires it for c's `who`, before it is
    /// on its way (a world that judges what an event could tell, by when it fired).
    std::function<void(const connection& c, std::uint64_t who, const detail::zk::watch_fired&)> on_fired;

    /// c's `who` sends op, as the connection starts it (src/connection_ops.cpp, start_op): on a
    /// closed client it fails with `closed`, and a request sent at most once (sent_once) fails at
    /// once with connection_loss while c is not connected; anything else waits in c's outbound
    /// (for the reconnection, if c is not connected).
    void send(connection& c, std::uint64_t who, detail::zk::op op) {
        if (c.closed) return fail(c, {who, std::move(op)}, errc::closed);
        if (!c.connected && sent_once(op)) return fail(c, {who, std::move(op)}, errc::connection_loss);
        c.outbound.emplace_back(who, std::move(op));
    }

    /// A new client with a session of its own.
    connection& open() {
        connection c;
        c.id = static_cast<int>(clients_.size());
        c.session = zk_.open_session();
        clients_.push_back(std::move(c));
        return clients_.back();
    }
    std::vector<connection>& all() noexcept { return clients_; }
    connection& operator[](int id) { return clients_[static_cast<std::size_t>(id)]; }
    const connection& at(int id) const { return clients_[static_cast<std::size_t>(id)]; }

    /// The server applies c's next request; the reply joins c's inbound, and the watches it fired
    /// go where they belong.
    applied apply(connection& c) {
        auto [who, op] = std::move(c.outbound.front());
        c.outbound.pop_front();
        if (const auto* r = std::get_if<detail::zk::remove>(&op); r && r->session != 0 && r->session != c.session) {
            // Sent for a session that has ended: the client fails it without sending it.
            fail(c, {who, op}, errc::session_expired);
            return {who, std::move(op), std::get<detail::zk::reply>(c.inbound.back().second)};
        }
        const auto ticket = ticket_of(op);
        if (c.read_only && is_write(op) && guaranteed(op)) {
            // The connection keeps a guaranteed delete for a server of the quorum.
            no_reply_ = {};
            no_reply_.id = ticket;
            c.retrying.emplace_back(who, std::move(op));
            return {who, c.retrying.back().second, no_reply_, "kept for the quorum"};
        }
        if (c.read_only && is_write(op) && !recovering_.count({c.id, who, ticket})) {
            // (A protected create's recovery reads first; its create is refused when it comes.)
            ++reach.refused;
            fail(c, {who, op}, errc::not_read_only);
            return {who, std::move(op), std::get<detail::zk::reply>(c.inbound.back().second)};
        }
        std::string prefix;
        if (const auto* create = std::get_if<detail::zk::create>(&op); create && create->protect) {
            auto& p = prefixes_[{c.id, who, ticket}];
            if (p.empty()) p = "_c_" + std::to_string(++next_prefix_) + "-";
            prefix = p;
            if (const auto it = recovering_.find({c.id, who, ticket}); it != recovering_.end()) return recover(c, who, std::move(op), it);
        }
        const auto watch_id = ++next_watch_;
        routes_[watch_id] = {c.id, c.session, ticket, who};
        const auto before = zk_.last_zxid();
        auto r = apply_op(zk_, c.session, op, watch_id, prefix);
        unanswered_[{c.id, who, ticket}] = {who, op, watch_id, before};
        c.inbound.emplace_back(std::piecewise_construct, std::forward_as_tuple(who),
                               std::forward_as_tuple(std::in_place_type<detail::zk::reply>, std::move(r)));
        const auto& reply = std::get<detail::zk::reply>(c.inbound.back().second);
        route_fired();
        return {who, std::move(op), reply};
    }

    /// The next reply or event c's machine hears.
    std::pair<std::uint64_t, Input> deliver(connection& c) {
        auto next = std::move(c.inbound.front());
        c.inbound.pop_front();
        if (const auto* r = std::get_if<detail::zk::reply>(&next.second)) {
            unanswered_.erase({c.id, next.first, r->id});
            prefixes_.erase({c.id, next.first, r->id});
            recovering_.erase({c.id, next.first, r->id});
        }
        return next;
    }

    /// A reply c has not heard yet is lost with the connection (see above): the connection drops
    /// at that reply, so that the replies and events the server sent after it are lost too. False
    /// if c has none to lose or is disconnected.
    bool lose_reply(connection& c) {
        if (!c.connected) return false;
        const auto sent = sent_by_server(c);
        std::vector<std::size_t> replies;  // (their places in `sent`)
        for (std::size_t k = 0; k < sent.size(); ++k)
            if (std::holds_alternative<detail::zk::reply>(c.inbound[sent[k]].second)) replies.push_back(k);
        if (replies.empty()) return false;
        drop(c, sent, replies[pick(rng_, replies.size())]);
        return true;
    }

    /// Whether a create of c's `who` ever lost its reply.
    bool lost_a_create(int client, std::uint64_t who) const { return lost_creates_.count({client, who}) > 0; }

    /// Fired watches go to their client if its session is still the one that set them (held while
    /// it is disconnected). Call after every change the world makes on the server.
    void route_fired() {
        for (const auto& f : zk_.take_fired()) {
            const auto it = routes_.find(f.watch_id);
            if (it == routes_.end()) continue;
            auto& c = clients_[static_cast<std::size_t>(it->second.client)];
            if (c.session != it->second.session) continue;
            const detail::zk::watch_fired w{it->second.ticket, f.type};
            if (on_fired) on_fired(c, it->second.who, w);
            // (In place: GCC 14 at -O3 misreads a moved temporary variant holding a reply.)
            (c.connected ? c.inbound : c.stashed)
                .emplace_back(std::piecewise_construct, std::forward_as_tuple(it->second.who), std::forward_as_tuple(std::in_place_type<detail::zk::watch_fired>, w));
        }
    }

    /// The connection drops (a connected client), at a random point of what the server sent on
    /// it (see drop), or comes back (a disconnected one).
    void drop_or_reconnect(connection& c) {
        if (c.closed) return;
        if (!c.connected) {
            if (read_only_servers && pick(rng_, 3) == 0) return connect_read_only(c);
            return reconnect(c);
        }
        const auto sent = sent_by_server(c);
        drop(c, sent, pick(rng_, sent.size() + 1));
    }

    void reconnect(connection& c) {
        if (c.connected && c.read_only) drop_or_reconnect(c);  // (it leaves the read-only server)
        if (c.connected || c.closed) return;
        out_.note("c" + std::to_string(c.id) + (c.opening ? " connects its new session " + std::to_string(c.session) : " reconnected"));
        c.connected = true;
        c.lost_replies = false;
        remove_orphans(c);
        send_retries(c);
        tell(c, detail::zk::connection_changed{std::exchange(c.opening, false) ? connection_state::connected : connection_state::reconnected, c.session});
        for (auto& w : c.stashed) c.inbound.push_back(std::move(w));
        c.stashed.clear();
        for (auto& f : c.late) c.inbound.push_back(std::move(f));
        c.late.clear();
    }

    /// A disconnected c finds only a read-only server (see above).
    void connect_read_only(connection& c) {
        if (c.connected || c.closed) return;
        out_.note("c" + std::to_string(c.id) + " connected to a read-only server");
        ++reach.read_only;
        c.connected = true;
        c.read_only = true;
        c.opening = false;  // (a new session may be made on a read-only server)
        c.lost_replies = false;
        // The server was cut off from the quorum now, or by the partition that dropped this
        // connection: then it lacks what the quorum applied since (for a protected create's lookup).
        c.read_only_seen_zxid = pick(rng_, 2) == 0 ? c.dropped_at_zxid : zk_.last_zxid();
        send_retries(c);
        tell(c, detail::zk::connection_changed{connection_state::read_only, c.session});
        for (auto& w : c.stashed) c.inbound.push_back(std::move(w));  // (its events are the quorum's: see above)
        c.stashed.clear();
        for (auto& f : c.late) c.inbound.push_back(std::move(f));
        c.late.clear();
    }

    /// c's session expires; it is connected again at once, on a new session.
    void expire(connection& c) {
        if (c.closed || c.opening) return;
        out_.note("c" + std::to_string(c.id) + " session expired");
        end_session(c, /*server_keeps=*/false);
    }

    /// c gives its session up as lost (suspended past the session timeout: src/connection.cpp)
    /// while the server keeps it, with its ephemeral nodes, until expire_abandoned ends it: a
    /// server restarted, or cut off from the client, for longer than the session timeout. The
    /// machines hear what an expiry tells them, and the new session meets the old one's nodes.
    void abandon(connection& c) {
        if (c.closed || c.opening) return;
        if (c.connected) drop_or_reconnect(c);  // (suspended first)
        out_.note("c" + std::to_string(c.id) + " gives session " + std::to_string(c.session) + " up as lost; the server keeps it");
        abandoned_.push_back({c.session, c.id, c.sessions_ended + 1});
        end_session(c, /*server_keeps=*/true);
    }

    /// How many of its client's later session ends a given-up session outlives at most. Each one
    /// takes a session timeout at least (an expiry, or a give-up after as long suspended), and the
    /// server ends the given-up session within about one: it cannot keep it through many. (A
    /// machine remembers a few of its earlier sessions: persistent_node_machine keeps 8.)
    static constexpr long given_up_outlives = 2;

    /// The server ends a session its client gave up (abandon); false if there is none.
    bool expire_abandoned() {
        if (abandoned_.empty()) return false;
        end_given_up(pick(rng_, abandoned_.size()));
        route_fired();
        return true;
    }

private:
    void end_given_up(std::size_t i) {
        out_.note("the server ends the given-up session " + std::to_string(abandoned_[i].session));
        zk_.expire(abandoned_[i].session);
        abandoned_.erase(abandoned_.begin() + static_cast<std::ptrdiff_t>(i));
    }

    void end_session(connection& c, bool server_keeps) {
        // A session c gave up earlier that the server still keeps ends first if this is the end
        // it cannot outlive (given_up_outlives).
        ++c.sessions_ended;
        if (c.lost_replies) ++reach.ended_in_doubt;
        c.lost_replies = false;
        for (std::size_t i = abandoned_.size(); i > 0; --i)
            if (abandoned_[i - 1].client == c.id && c.sessions_ended - abandoned_[i - 1].ended_at > given_up_outlives) end_given_up(i - 1);
        route_fired();
        // Its watches end as the connection ends them: after `lost`, each one the client has not
        // heard fire says not_watching, the ones that fired while it was away too.
        std::vector<std::pair<std::uint64_t, detail::zk::watch_fired>> ended;
        for (const auto id : zk_.watches_of(c.session))
            if (const auto it = routes_.find(id); it != routes_.end())
                ended.push_back({it->second.who, {it->second.ticket, watch_event_type::not_watching}});
        for (const auto& [who, e] : c.stashed)
            if (const auto* w = std::get_if<detail::zk::watch_fired>(&e)) ended.push_back({who, {w->id, watch_event_type::not_watching}});
        if (!server_keeps) zk_.expire(c.session);
        c.session = zk_.open_session();
        // Each request not applied yet is retried on the new session, in any order (its own
        // timer), or fails.
        for (auto& r : c.outbound) c.retrying.push_back(std::move(r));
        c.outbound.clear();
        std::vector<std::pair<std::uint64_t, detail::zk::op>> kept;
        for (auto& r : c.retrying) {
            if (guaranteed(r.second) || (pick(rng_, 2) == 0 && !bound_to_a_session(r.second) && !sent_once(r.second))) {
                new_prefix_for(c, r);
                kept.push_back(std::move(r));
            } else {
                fail(c, r, errc::session_expired);
            }
        }
        c.retrying = std::move(kept);
        send_retries(c);
        c.read_only = false;
        c.stashed.clear();
        tell(c, detail::zk::connection_changed{connection_state::lost, 0});
        for (const auto& [who, w] : ended)
            c.inbound.emplace_back(std::piecewise_construct, std::forward_as_tuple(who), std::forward_as_tuple(std::in_place_type<detail::zk::watch_fired>, w));
        if (new_session_waits) {
            c.connected = false;
            c.opening = true;
            return;  // (reconnect connects it)
        }
        c.connected = true;
        remove_orphans(c);
        tell(c, detail::zk::connection_changed{connection_state::connected, c.session});
        for (auto& f : c.late) c.inbound.push_back(std::move(f));
        c.late.clear();
    }

public:
    /// The server applies one of c's escaped requests (see late_applies), if its session still
    /// lives: the request and the reply that goes nowhere (the client heard connection_loss).
    /// Nothing if c has none, or its session ended (the request is dropped then).
    std::optional<std::pair<detail::zk::op, detail::zk::reply>> apply_escaped(connection& c) {
        if (c.escaped.empty()) return std::nullopt;
        const auto i = pick(rng_, c.escaped.size());
        auto [session, op] = std::move(c.escaped[i]);
        c.escaped.erase(c.escaped.begin() + static_cast<std::ptrdiff_t>(i));
        if (!zk_.alive(session)) return std::nullopt;
        auto r = apply_op(zk_, session, op, 0);
        out_.note("c" + std::to_string(c.id) + "'s escaped request #" + std::to_string(r.id) + " applied late" + (r.ec ? ": " + r.ec.message() : ""));
        route_fired();
        return std::pair{std::move(op), std::move(r)};
    }

    /// c's owner closes it: what it had sent, retried or not read yet goes nowhere, and the server
    /// ends its session (its ephemeral nodes go). Its machines hear `closed` from the world, at
    /// once (as the connection's observers do); what they send later fails with `closed`.
    void close(connection& c) {
        out_.note("c" + std::to_string(c.id) + " closes");
        c.closed = true;
        c.connected = false;
        c.opening = false;
        c.read_only = false;
        c.outbound.clear();
        c.retrying.clear();
        c.inbound.clear();
        c.stashed.clear();
        c.late.clear();
        c.escaped.clear();
        c.lost_replies = false;
        zk_.expire(c.session);
        route_fired();
    }

    /// Whether the server still keeps a session some client gave up (abandon).
    bool keeps_given_up() const noexcept { return !abandoned_.empty(); }

    /// The parents of c's protected creates whose recovery lists the parent next (a retried create
    /// whose first try's reply was lost): an operator's change there meets the recovery's window.
    std::vector<std::string> lookups_due(const connection& c) const {
        std::vector<std::string> parents;
        for (const auto& [who, op] : c.outbound) {
            const auto it = recovering_.find({c.id, who, ticket_of(op)});
            if (it != recovering_.end() && it->second.found.empty())
                parents.emplace_back(parent_path(std::get<detail::zk::create>(op).path));
        }
        return parents;
    }

    /// Whether the watch that c's `who` set with its request `ticket` is still set on the server
    /// (registered with its reply, and not fired).
    bool watching(const connection& c, std::uint64_t who, detail::zk::ticket ticket) const {
        for (const auto id : zk_.watches_of(c.session))
            if (const auto it = routes_.find(id);
                it != routes_.end() && it->second.client == c.id && it->second.who == who && it->second.ticket == ticket)
                return true;
        return false;
    }

    /// Every client connected again (the faults are over). A session a client gave up may still
    /// be kept by the server: quiescence may come within its session timeout.
    void heal() {
        for (auto& c : clients_) reconnect(c);
    }

    /// Every machine of c hears a connection change (tag 0: a world whose clients have more than
    /// one machine routes it itself).
    void tell(connection& c, const detail::zk::connection_changed& change, std::uint64_t who = 0) {
        c.inbound.emplace_back(std::piecewise_construct, std::forward_as_tuple(who), std::forward_as_tuple(std::in_place_type<detail::zk::connection_changed>, change));
    }

    static detail::zk::ticket ticket_of(const detail::zk::op& op) {
        return std::visit([](const auto& o) { return o.id; }, op);
    }

private:
    // Where in c's inbound the replies and watch events the server sent on the connection are, in
    // order (the failures and connection changes the client makes itself are not on it). Only
    // those after the last connection change: what came before it came on an earlier connection
    // (or session), and the client read it before it learned of the change.
    std::vector<std::size_t> sent_by_server(const connection& c) const {
        std::size_t first = 0;
        for (std::size_t i = c.inbound.size(); i > 0; --i)
            if (std::holds_alternative<detail::zk::connection_changed>(c.inbound[i - 1].second)) {
                first = i;
                break;
            }
        std::vector<std::size_t> sent;
        for (std::size_t i = first; i < c.inbound.size(); ++i) {
            const auto& [who, e] = c.inbound[i];
            const auto* r = std::get_if<detail::zk::reply>(&e);
            const auto* w = std::get_if<detail::zk::watch_fired>(&e);
            if ((r && unanswered_.count({c.id, who, r->id})) || (w && w->type != watch_event_type::not_watching)) sent.push_back(i);
        }
        return sent;
    }

    // c's connection drops after the client read the first `cut` of what the server sent on it
    // (`sent`: sent_by_server(c)): its machines hear those in turn. After the cut, each reply is lost: its
    // request was applied, and the client retries it or fails it with connection_loss as one it
    // never sent. Each watch event after the cut comes again after the reconnection (the client
    // sets its watches again, and the server fires those that fired meanwhile), unless its watch
    // came with a reply lost here: never registered, it is not set again. The requests not applied
    // yet are retried or fail (now or after the reconnection); the machines hear `suspended`
    // before or after the failures, as the client library may queue either first.
    void drop(connection& c, const std::vector<std::size_t>& sent, std::size_t cut) {
        out_.note("c" + std::to_string(c.id) + " disconnected");
        c.connected = false;
        c.read_only = false;
        c.dropped_at_zxid = zk_.last_zxid();
        std::vector<std::pair<std::uint64_t, detail::zk::op>> lost;
        std::set<std::pair<std::uint64_t, detail::zk::ticket>> unregistered;  // (who, ticket): watches of lost replies
        std::deque<std::pair<std::uint64_t, Input>> read;
        for (std::size_t i = 0, k = 0; i < c.inbound.size(); ++i) {
            auto& item = c.inbound[i];
            const bool on_wire = k < sent.size() && sent[k] == i;
            if (on_wire) ++k;
            if (!on_wire || k <= cut) {
                read.push_back(std::move(item));
            } else if (const auto* r = std::get_if<detail::zk::reply>(&item.second)) {
                const auto key = std::tuple{c.id, item.first, r->id};
                auto request = unanswered_.at(key);
                unanswered_.erase(key);
                routes_.erase(request.watch_id);  // the client never heard its watch was set
                unregistered.insert({item.first, r->id});
                out_.note("c" + std::to_string(c.id) + " lost the reply to #" + std::to_string(r->id));
                ++reach.replies_lost;
                // Its server may have been cut off from the quorum before it had the request: the
                // leader applied it, and no reply came (what a read-only server then lacks).
                c.dropped_at_zxid = std::min(c.dropped_at_zxid, request.zxid_before);
                if (std::holds_alternative<detail::zk::create>(request.op)) lost_creates_.insert({c.id, request.who});
                lost.emplace_back(request.who, std::move(request.op));
            } else if (const auto* w = std::get_if<detail::zk::watch_fired>(&item.second); !unregistered.count({item.first, w->id})) {
                ++reach.events_again;
                c.stashed.push_back(std::move(item));
            }
        }
        c.inbound = std::move(read);
        c.lost_replies = !lost.empty();
        if (lost.size() > 1) ++reach.drops_losing_replies;
        const bool notify_first = pick(rng_, 2) == 0;
        if (notify_first) tell(c, detail::zk::connection_changed{connection_state::suspended, c.session});
        for (auto& request : lost) retry_or_fail(c, std::move(request), /*reply_lost=*/true);
        for (auto& request : c.outbound) retry_or_fail(c, std::move(request), /*reply_lost=*/false);
        c.outbound.clear();
        if (!notify_first) tell(c, detail::zk::connection_changed{connection_state::suspended, c.session});
    }

    // A request caught by a drop (`reply_lost`: it was applied) is retried after the
    // reconnection (the client cannot know whether the server had it: a protected create looks
    // first), or fails with connection_loss: now, or after the reconnection when the retry policy
    // tried in vain and its sleep outlasted the outage. One not applied may still reach a server
    // (late_applies).
    void retry_or_fail(connection& c, std::pair<std::uint64_t, detail::zk::op> request, bool reply_lost) {
        if (guaranteed(request.second) || (pick(rng_, 2) == 0 && !sent_once(request.second))) {
            look_up_first(c, request);
            c.retrying.push_back(std::move(request));
            return;
        }
        // (A request sent once fails as the drop is noticed: no retry sleeps first.)
        fail(c, request, errc::connection_loss, !sent_once(request.second) && pick(rng_, 2) == 0 ? c.late : c.inbound);
        if (!reply_lost && late_applies && pick(rng_, 2) == 0) c.escaped.push_back({c.session, std::move(request.second)});
    }

    // The retried requests go out among what was sent while disconnected, each when its own
    // retry timer fires.
    void send_retries(connection& c) {
        if (c.retrying.empty()) return;
        std::vector<std::pair<std::uint64_t, detail::zk::ticket>> in_order;  // (the retries first, as first sent)
        for (const auto& r : c.retrying) in_order.push_back({r.first, ticket_of(r.second)});
        for (const auto& r : c.outbound) in_order.push_back({r.first, ticket_of(r.second)});
        std::shuffle(c.retrying.begin(), c.retrying.end(), rng_);
        for (auto& r : c.retrying) c.outbound.insert(c.outbound.begin() + static_cast<std::ptrdiff_t>(pick(rng_, c.outbound.size() + 1)), std::move(r));
        c.retrying.clear();
        for (std::size_t i = 0; i < in_order.size(); ++i)
            if (in_order[i] != std::pair{c.outbound[i].first, ticket_of(c.outbound[i].second)}) {
                ++reach.reordered;
                break;
            }
    }

    // A protected create the client tries again after a connection loss: the try looks for the
    // node an earlier one may have made before it creates (protected_create::failed).
    void look_up_first(connection& c, const std::pair<std::uint64_t, detail::zk::op>& request) {
        const auto* create = std::get_if<detail::zk::create>(&request.second);
        if (create && create->protect) recovering_[{c.id, request.first, ticket_of(request.second)}] = {};
    }

    struct recovery {
        std::string found;  ///< empty: the lookup is next; else the check of this node
    };
    using request_key = std::tuple<int, std::uint64_t, detail::zk::ticket>;  // (client, who, ticket)

    // The server applies the next step of a protected create's recovery; the connection sends the
    // step after it (back on the queue: whatever the client sent meanwhile goes first).
    applied recover(connection& c, std::uint64_t who, detail::zk::op op, typename std::map<request_key, recovery>::iterator it) {
        const auto& create = std::get<detail::zk::create>(op);
        const auto key = it->first;
        step_reply_ = {};
        step_reply_.id = ticket_of(op);
        if (it->second.found.empty()) {
            // The listing (after a sync, so the server has every write the leader had): a child
            // with our prefix is checked next; none, the create is sent.
            ++reach.lookups;
            auto found = zk_.find_protected(std::string(parent_path(create.path)), prefixes_.at(key));
            if (found && c.read_only && found->stat.czxid > c.read_only_seen_zxid) {
                // A read-only server cut off before the node was made: it lists none. (Its create
                // is then refused; the client looks for the node again on the quorum: an orphan.)
                ++reach.lookups_behind;
                found.reset();
            }
            if (found) {
                it->second.found = found->path;
                step_reply_.path = found->path;
            } else {
                recovering_.erase(it);
            }
            c.outbound.emplace_back(who, op);
            return {who, std::move(op), step_reply_, "lookup"};
        }
        // The check of the node found: ours if this session owns it or it is persistent.
        const auto found = std::move(it->second.found);
        recovering_.erase(it);
        const node* n = zk_.find(found);
        if (n && (!is_ephemeral(create.mode) || n->owner == c.session)) {
            ++reach.adopted;
            out_.note("c" + std::to_string(c.id) + " adopts its node " + found);
            detail::zk::reply r;
            r.id = ticket_of(op);
            r.path = found;
            r.stat = stat_of(*n);
            unanswered_[key] = {who, op, 0, zk_.last_zxid()};
            c.inbound.emplace_back(std::piecewise_construct, std::forward_as_tuple(who),
                                   std::forward_as_tuple(std::in_place_type<detail::zk::reply>, std::move(r)));
            return {who, std::move(op), std::get<detail::zk::reply>(c.inbound.back().second), "check"};
        }
        // Gone since the lookup: created under the same prefix. Another session's: a node of an
        // earlier session, so the create draws a new prefix (protected_create::adopts).
        if (n) {
            step_reply_.stat = stat_of(*n);
            prefixes_.erase(key);
        } else {
            step_reply_.ec = make_error_code(errc::no_node);
        }
        c.outbound.emplace_back(who, op);
        return {who, std::move(op), step_reply_, "check"};
    }

    struct sent_request {
        std::uint64_t who = 0;
        detail::zk::op op;
        std::uint64_t watch_id = 0;
        std::int64_t zxid_before = 0;  // the last write applied before it
    };
    struct orphan {
        int client = 0;
        std::string path;
    };

    // A protected create retried on a new session gets a new name prefix, and one given up on is
    // done with its own: a node an earlier try made under the old prefix (its reply lost) is the
    // client's to remove. (An ephemeral one of an ended session is gone already.)
    void new_prefix_for(connection& c, const std::pair<std::uint64_t, detail::zk::op>& request) {
        recovering_.erase({c.id, request.first, ticket_of(request.second)});
        const auto it = prefixes_.find({c.id, request.first, ticket_of(request.second)});
        if (it == prefixes_.end()) return;
        const auto& create = std::get<detail::zk::create>(request.second);
        if (const auto found = zk_.find_protected(std::string(parent_path(create.path)), it->second + std::string(node_name(create.path))))
            orphans_.push_back({c.id, found->path});
        prefixes_.erase(it);
    }

    // The client removes the node of a protected create it gave up on, once connected (an
    // ephemeral one of an ended session is gone already).
    void remove_orphans(connection& c) {
        for (auto it = orphans_.begin(); it != orphans_.end();) {
            if (it->client != c.id) {
                ++it;
                continue;
            }
            if (const node* n = zk_.find(it->path); n && (n->owner == 0 || n->owner == c.session)) {
                out_.note("c" + std::to_string(c.id) + " removes its orphan " + it->path);
                zk_.remove(it->path);
            }
            it = orphans_.erase(it);
        }
        route_fired();
    }

    // What a read-only server refuses.
    static bool is_write(const detail::zk::op& op) {
        return std::holds_alternative<detail::zk::create>(op) || std::holds_alternative<detail::zk::set_data>(op) ||
               std::holds_alternative<detail::zk::remove>(op) || std::holds_alternative<detail::zk::multi>(op);
    }

    // A request the client sends only on one session (zk::remove's session): never retried on a new one.
    static bool bound_to_a_session(const detail::zk::op& op) {
        const auto* r = std::get_if<detail::zk::remove>(&op);
        return r && r->session != 0;
    }
    // A delete the client retries until it is done (zk::remove's guaranteed): across drops and
    // sessions, and past a read-only server.
    static bool guaranteed(const detail::zk::op& op) {
        const auto* r = std::get_if<detail::zk::remove>(&op);
        return r && r->guaranteed;
    }
    // A request the client sends at most once (zk::remove's and zk::get_children's once): never retried.
    static bool sent_once(const detail::zk::op& op) {
        if (const auto* r = std::get_if<detail::zk::remove>(&op)) return r->once;
        if (const auto* l = std::get_if<detail::zk::get_children>(&op)) return l->once;
        return false;
    }

    struct route {
        int client = 0;
        std::int64_t session = 0;
        detail::zk::ticket ticket = 0;
        std::uint64_t who = 0;
    };

    // A request given up on. A protected create's node that a lost try made is the client's to
    // remove (src/protected_create.hpp).
    void fail(connection& c, const std::pair<std::uint64_t, detail::zk::op>& request, errc why) { fail(c, request, why, c.inbound); }
    void fail(connection& c, const std::pair<std::uint64_t, detail::zk::op>& request, errc why, std::deque<std::pair<std::uint64_t, Input>>& to) {
        new_prefix_for(c, request);
        detail::zk::reply failed;
        failed.id = ticket_of(request.second);
        failed.ec = make_error_code(why);
        to.emplace_back(std::piecewise_construct, std::forward_as_tuple(request.first),
                               std::forward_as_tuple(std::in_place_type<detail::zk::reply>, std::move(failed)));
    }

    zookeeper& zk_;
    std::mt19937_64& rng_;
    verdict& out_;
    std::vector<connection> clients_;
    std::map<std::uint64_t, route> routes_;
    std::uint64_t next_watch_ = 0;
    std::map<request_key, sent_request> unanswered_;  // applied, reply not heard
    std::map<request_key, std::string> prefixes_;     // a protected create's, for all its tries
    std::map<request_key, recovery> recovering_;      // a protected create whose next try recovers first
    detail::zk::reply step_reply_;                     // the server's answer to the last recovery step
    detail::zk::reply no_reply_;                       // (a guaranteed delete kept for the quorum: no answer)
    std::uint64_t next_prefix_ = 0;
    std::vector<orphan> orphans_;
    std::set<std::pair<int, std::uint64_t>> lost_creates_;
    struct given_up {
        std::int64_t session = 0;
        int client = 0;
        long ended_at = 0;  // the client's sessions_ended once it gave this one up
    };
    std::vector<given_up> abandoned_;  // sessions given up by their clients, kept by the server
};

}  // namespace zkr::sim
