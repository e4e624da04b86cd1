// The simulated client as an engine's port (recipes/core/zk_port.hpp's client_port is the real
// one): a world runs a machine on the real engine (recipes/core/zk_engine.hpp) and so simulates
// what the engine adds to the machine (one event at a time, events queued while actions run, its
// timers, connection changes heard only while it observes, nothing heard after it stops or after
// its recipe's end), not a copy of it.
//
// One sim_link per machine: the engine's port sends into the link's client (sim_clients, tagged
// with the link's `who`) and leaves there what waits for an answer; the world hands the link each
// reply, watch event and connection change the client delivers for it, and fires its timers.
#pragma once

#include "../../recipes/core/zk_engine.hpp"
#include "sim_clients.hpp"
#include "verdict.hpp"

#include <zkr/detail/unique_function.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace zkr::sim {

/// The first of the ticket's waiters, in the order they were made (lower_bound: a multimap's find
/// may return any of them), is taken out and fed e; false if the ticket has none. (Every world's
/// client hands a reply or a watch event to where its engine waits for it so.)
template <typename Map, typename Event>
bool feed_oldest(Map& waiters, Event&& e) {
    const auto it = waiters.lower_bound(e.id);
    if (it == waiters.end() || it->first != e.id) return false;
    auto feed = std::move(it->second);
    waiters.erase(it);
    feed(std::move(e));
    return true;
}

/// Whether op sets a watch (its event then comes as a watch_fired of its ticket).
inline bool sets_watch(const detail::zk::op& op) {
    return std::visit([](const auto& o) {
        if constexpr (requires { o.watch; }) return o.watch;
        else return false;
    }, op);
}

/// timer_slots' members (recipes/core/timer_slots.hpp) on a world's clock: start arms the ticket
/// and has the clock run on_due(ticket) after delay; take disarms it, false when it was not armed
/// (cancel_all came first: the machine must not hear it); cancel_all disarms every ticket and
/// tells the clock. Clock: start(ticket, delay, std::function<void()>) and cancel_all().
template <typename Clock>
class world_timers {
public:
    explicit world_timers(Clock clock) : clock_(std::move(clock)) {}
    template <typename OnDue>
    void start(detail::zk::ticket id, std::chrono::milliseconds delay, OnDue on_due) {
        armed_.push_back(id);
        clock_.start(id, delay, [on_due = std::move(on_due), id]() mutable { on_due(id); });
    }
    bool take(detail::zk::ticket id) {
        const auto it = std::find(armed_.begin(), armed_.end(), id);
        if (it == armed_.end()) return false;
        armed_.erase(it);
        return true;
    }
    void cancel_all() {
        armed_.clear();
        clock_.cancel_all();
    }

private:
    Clock clock_;
    std::vector<detail::zk::ticket> armed_;
};

template <typename Input>
class sim_link {
public:
    sim_link(sim_clients<Input>& net, int client, std::uint64_t who) : net_(net), client_(client), who_(who), session_(net[client].session) {}

    /// The world's: each op the engine sends, before it joins the client's outbound.
    std::function<void(const detail::zk::op&)> on_send;

    /// The world's: e, which the client delivers for this link, goes where the engine waits for
    /// it (a reply to its request's feed, a watch event to its watch's, a connection change to
    /// its observers). False when nothing waits for it: a reply or an event the engine never asked
    /// for (a connection change while it does not observe is not that: it is not heard); e is
    /// then as it was.
    bool deliver(Input& e) {
        if (auto* r = std::get_if<detail::zk::reply>(&e)) return feed_oldest(replies_, std::move(*r));
        if (auto* w = std::get_if<detail::zk::watch_fired>(&e)) return feed_oldest(watches_, std::move(*w));
        if (const auto* c = std::get_if<detail::zk::connection_changed>(&e)) {
            session_ = c->session;
            auto observers = observers_;  // (an observer may stop observing)
            for (auto& [id, on_change] : observers) on_change(c->state);
            return true;
        }
        return false;
    }

    struct timer {
        detail::zk::ticket id = 0;
        std::chrono::milliseconds delay{0};
        std::function<void()> on_due;
    };
    /// The timers that are running, in the order they were started.
    const std::vector<timer>& timers() const noexcept { return timers_; }
    /// The world's: the i-th running timer runs out.
    void fire_timer(std::size_t i) {
        auto t = std::move(timers_[i]);
        timers_.erase(timers_.begin() + static_cast<std::ptrdiff_t>(i));
        t.on_due();
    }

    /// Whether the engine observes the connection, or has a timer running.
    bool observing() const noexcept { return !observers_.empty(); }
    bool timing() const noexcept { return !timers_.empty(); }

    // ---- the port's side -------------------------------------------------------------------
    template <typename Feed>
    void send(detail::zk::op op, Feed feed) {
        const auto id = sim_clients<Input>::ticket_of(op);
        if (sets_watch(op)) watches_.emplace(id, feed);
        replies_.emplace(id, std::move(feed));
        if (on_send) on_send(op);
        net_.send(net_[client_], who_, std::move(op));
    }
    std::uint64_t observe(std::function<void(connection_state)> on_change) {
        observers_.emplace(++next_observer_, std::move(on_change));
        return next_observer_;
    }
    void unobserve(std::uint64_t id) { observers_.erase(id); }
    std::int64_t session_id() const noexcept { return session_; }

    void start_timer(timer t) { timers_.push_back(std::move(t)); }
    void cancel_timers() { timers_.clear(); }
    /// The network thread runs fn: now, or after run_posts while posts are held.
    void post(detail::unique_function<void()> fn) {
        if (holding_posts_) posts_.push_back(std::move(fn));
        else fn();
    }

    /// The world's: what the engine posts waits (hold_posts) until run_posts runs it, so that an
    /// event the world delivers meanwhile comes first, as a connection change may come before
    /// the start an engine posted.
    void hold_posts() { holding_posts_ = true; }
    void run_posts() {
        holding_posts_ = false;
        for (auto& fn : std::exchange(posts_, {})) fn();
    }

private:
    sim_clients<Input>& net_;
    int client_;
    std::uint64_t who_;
    std::int64_t session_;
    std::multimap<detail::zk::ticket, std::function<void(detail::zk::reply&&)>> replies_;
    std::multimap<detail::zk::ticket, std::function<void(detail::zk::watch_fired&&)>> watches_;
    std::map<std::uint64_t, std::function<void(connection_state)>> observers_;
    std::uint64_t next_observer_ = 0;
    std::vector<timer> timers_;
    bool holding_posts_ = false;
    std::vector<detail::unique_function<void()>> posts_;
};

/// A request, for a world's trace: what it asks of which path.
inline std::string describe_op(const detail::zk::op& op) {
    namespace zk = detail::zk;
    if (const auto* o = std::get_if<zk::get_data>(&op)) return "getData " + o->path;
    if (const auto* o = std::get_if<zk::exists>(&op)) return "exists " + o->path;
    if (const auto* o = std::get_if<zk::get_children>(&op)) return "getChildren " + o->path;
    if (const auto* o = std::get_if<zk::create>(&op)) return "create " + o->path;
    if (const auto* o = std::get_if<zk::set_data>(&op)) return "setData " + o->path;
    if (const auto* o = std::get_if<zk::remove>(&op)) return "delete " + o->path + (o->session ? " (session " + std::to_string(o->session) + ")" : "");
    if (std::holds_alternative<zk::multi>(op)) return "multi";
    return "timer";
}

/// A reply or a watch event, for a world's trace.
template <typename Input>
std::string describe_delivery(const Input& e) {
    if (const auto* r = std::get_if<detail::zk::reply>(&e))
        return "the reply to #" + std::to_string(r->id) +
               (r->ec ? ": " + r->ec.message() : r->stat ? " (a node of session " + std::to_string(r->stat->ephemeral_owner) + ")" : " (no node)");
    if (const auto* w = std::get_if<detail::zk::watch_fired>(&e)) return "the watch event of #" + std::to_string(w->id) + " (type " + std::to_string(static_cast<int>(w->type)) + ")";
    return "an event";
}

/// The world hands e to link (sim_link::deliver); the schedule fails if the engine never asked for
/// it. `who` names the machine in the message.
template <typename Input>
void deliver_asked(sim_link<Input>& link, Input e, verdict& out, const std::string& who) {
    if (!link.deliver(e)) out.violate(who + " got " + describe_delivery(e) + ", which its engine never asked for");
}

/// An engine's port onto a sim_link (client_port's members).
template <typename Input>
class sim_port {
public:
    /// The link's world fires the timers; a cancel takes them off the link.
    struct link_clock {
        std::shared_ptr<sim_link<Input>> link;
        void start(detail::zk::ticket id, std::chrono::milliseconds delay, std::function<void()> on_due) { link->start_timer({id, delay, std::move(on_due)}); }
        void cancel_all() { link->cancel_timers(); }
    };
    using timers = world_timers<link_clock>;

    explicit sim_port(std::shared_ptr<sim_link<Input>> link) : link_(std::move(link)) {}

    timers make_timers() const { return timers(link_clock{link_}); }
    template <typename Feed>
    void send(detail::zk::op op, Feed feed) const {
        link_->send(std::move(op), std::move(feed));
    }
    std::uint64_t observe(std::function<void(connection_state)> on_change) const { return link_->observe(std::move(on_change)); }
    void unobserve(std::uint64_t id) const { link_->unobserve(id); }
    std::int64_t session_id() const { return link_->session_id(); }
    /// The world is the network thread: fn runs now (or when the world runs the held posts).
    bool post(detail::unique_function<void()> fn) const {
        link_->post(std::move(fn));
        return true;
    }

private:
    std::shared_ptr<sim_link<Input>> link_;
};

/// One machine of a world on the real zk_engine: its link, and where its outcomes go (the world's
/// on_outcome, which the engine holds weakly, as it holds a recipe).
template <typename Machine>
class sim_engine {
public:
    using input = typename Machine::input;
    using action = typename Machine::action;

    sim_engine(sim_clients<input>& net, int client, std::uint64_t who, Machine m, std::function<void(const action&)> on_outcome)
        : link_(std::make_shared<sim_link<input>>(net, client, who)),
          sink_(std::make_shared<sink>(std::move(on_outcome))),
          engine_(std::make_shared<engine>(sim_port<input>(link_), std::move(m), sink_)) {}
    /// The engine stops again, as a recipe's destructor stops it (a second stop does nothing).
    ~sim_engine() {
        if (engine_) engine_->stop();
    }
    sim_engine(sim_engine&&) noexcept = default;  // (a moved-from one holds nothing)
    sim_engine& operator=(sim_engine&&) = delete;

    /// The engine starts: it observes the connection and is fed `first`.
    void start(input first) { engine_->start(std::move(first)); }
    /// An event of the world's own (not the client's) into the machine.
    void post(input e) { engine_->post(std::move(e)); }
    /// The engine stops, as the recipe stops it (its last part posted: see let_go).
    void stop() { engine_->stop(); }
    /// Whether the engine holds nothing of the world's: it observes no connection and runs no
    /// timer (true once a stop has run).
    bool let_go() const noexcept { return !link_->observing() && !link_->timing(); }
    /// The recipe ends (its object is gone): what the machine decides from now on goes nowhere.
    void end_recipe() { sink_.reset(); }
    /// After a stop ran: the schedule fails unless let_go().
    void check_let_go(verdict& out, const std::string& who) const {
        if (!let_go()) out.violate(who + "'s engine still observes the connection or runs a timer after it stopped");
    }

    const Machine& machine() const noexcept { return engine_->machine(); }
    sim_link<input>& link() noexcept { return *link_; }
    const sim_link<input>& link() const noexcept { return *link_; }

private:
    struct sink {
        explicit sink(std::function<void(const action&)> f) : on(std::move(f)) {}
        void on_outcome(const action& a) { on(a); }
        std::function<void(const action&)> on;
    };
    using engine = detail::zk_engine<Machine, sink, sim_port<input>>;

    std::shared_ptr<sim_link<input>> link_;
    std::shared_ptr<sink> sink_;
    std::shared_ptr<engine> engine_;
};

}  // namespace zkr::sim
