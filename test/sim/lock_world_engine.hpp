// The lock world's acquisitions on the real engine (basic_lock_engine), through a port onto the
// world's simulated client. Included by lock_sim.cpp alone.
#pragma once

#include "../../recipes/queue/basic_lock_engine.hpp"
#include "lock_world_client.hpp"
#include "sim_port.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace zkr::sim::lock_world {

// ---- the engine ------------------------------------------------------------------------------
// Each machine runs on the real engine: basic_lock_engine (the base of lock_engine: the acquire's
// start, the caller's releases and their answers, the client's registry of the acquire's nodes,
// the wind-down) on basic_zk_engine (one event at a time: an event that comes while actions are
// carried out waits its turn; requests through a port, timers on the port's timers, connection
// changes heard only while it observes). What the world adds is the port's other side
// (engine_host): the simulated client that sends, delivers, times and tells of the connection;
// and lock_engine's own side: the caller and the hold, which hear the machine's outcomes.
class engine_host {
public:
    /// op from machine `id`: on_reply hears its reply, on_watch (if it sets a watch) its event.
    virtual void send(std::uint64_t id, zk::op op, std::function<void(zk::reply&&)> on_reply,
                      std::function<void(zk::watch_fired&&)> on_watch) = 0;
    /// The machine's timer of `ticket` runs out after delay: on_due runs then.
    virtual void start_timer(std::uint64_t id, zk::ticket ticket, std::chrono::milliseconds delay, std::function<void()> on_due) = 0;
    virtual std::uint64_t observe(std::uint64_t id, std::function<void(connection_state)> on_change) = 0;
    virtual void unobserve(std::uint64_t id, std::uint64_t observer) = 0;
    /// The session the machine's client has, as of the connection news being delivered.
    virtual std::int64_t session_id(std::uint64_t id) = 0;
    /// lock_engine's own side: an outcome of the machine (all but release_done, which
    /// basic_lock_engine answers).
    virtual void on_outcome(std::uint64_t id, zk_lock_action&& a) = 0;

protected:
    ~engine_host() = default;
};

// client_port's members, onto the world.
class world_port {
public:
    // The world's clock runs the machine's timers. A cancel leaves them there: a timer the world
    // has queued still runs out, and its handler then finds it disarmed (take: false), as a wait
    // that had finished before the cancel does in production; the machine hears nothing.
    struct world_clock {
        engine_host* host;
        std::uint64_t id;
        void start(zk::ticket ticket, std::chrono::milliseconds delay, std::function<void()> on_due) { host->start_timer(id, ticket, delay, std::move(on_due)); }
        void cancel_all() {}
    };
    using timers = world_timers<world_clock>;

    world_port(engine_host& host, std::uint64_t id) : host_(&host), id_(id) {}

    timers make_timers() const { return timers(world_clock{host_, id_}); }
    template <typename Feed>
    void send(zk::op op, Feed feed) const {
        std::function<void(zk::watch_fired&&)> on_watch;
        if (sets_watch(op)) on_watch = [feed](zk::watch_fired&& w) mutable { feed(std::move(w)); };
        host_->send(id_, std::move(op), [feed](zk::reply&& r) mutable { feed(std::move(r)); }, std::move(on_watch));
    }
    std::uint64_t observe(std::function<void(connection_state)> on_change) const { return host_->observe(id_, std::move(on_change)); }
    void unobserve(std::uint64_t observer) const { host_->unobserve(id_, observer); }
    std::int64_t session_id() const { return host_->session_id(id_); }

private:
    engine_host* host_;
    std::uint64_t id_;
};

// The machine as the engine holds it (the world's machine, whatever its rules, is virtual: the
// tests plant faults through it).
struct machine_ref {
    using input = zk_lock_input;
    using action = zk_lock_action;
    machine* m = nullptr;
    zk_lock_actions& resume(zk_lock_input&& e) { return m->resume(std::move(e)); }
    bool finished() const { return m->finished(); }
};

// One acquisition's engine: basic_lock_engine, with lock_engine's own side the world's. The
// world owns it (its completions hold it weakly: once the world lets a machine go, what comes for
// it is dropped). Its nodes are registered for the world's client at `owner` (client_nodes).
class world_engine : public basic_lock_engine<world_engine, world_port, machine_ref> {
public:
    static constexpr bool completions_keep_alive = false;

    world_engine(engine_host& host, std::uint64_t id, sim::machine& m, const void* owner, std::string lock_path)
        : basic_lock_engine(world_port(host, id), machine_ref{&m}), host_(host), id_(id), owner_(owner), lock_path_(std::move(lock_path)) {}

    /// As lock_engine::start (the world's clock: no time has passed since the caller asked).
    void start(bool connected, std::int64_t session) { start_machine(connected, session, std::chrono::milliseconds(0)); }

private:
    friend class basic_lock_engine<world_engine, world_port, machine_ref>;
    template <typename Outcome>
    void carry_out(Outcome&& a) {
        host_.on_outcome(id_, zk_lock_action(std::forward<Outcome>(a)));
    }
    const void* nodes_owner() const noexcept { return owner_; }
    std::string_view lock_path() const noexcept { return lock_path_; }
    void wound_down() {}

    engine_host& host_;
    std::uint64_t id_;
    const void* owner_;
    std::string lock_path_;
};

}  // namespace zkr::sim::lock_world
