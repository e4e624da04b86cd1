// What every engine does with a machine that speaks zk_ops: feeds it one event at a time on the
// network thread, sends its ops on the connection, runs its timers and feeds it the connection's
// changes, all through its port (client_port: the real connection; the simulation's port runs the
// same engine in its world). The recipe's own side (what an outcome means to it, and how
// long the engine lives) is the Derived class's: zk_engine for the recipes that own their engine,
// lock_engine for an acquisition and its hold.
#pragma once

#include "event_inbox.hpp"
#include "zk_ops.hpp"
#include "zk_port.hpp"

#include <atomic>
#include <memory>
#include <type_traits>
#include <utility>
#include <variant>

namespace zkr::detail {

/// Machine: `resume(input) -> actions`, where input holds every zk::event alternative (and the
/// machine's own inputs) and each action is a zk::op or one of the machine's own outcomes.
/// Derived (CRTP, owned by a shared_ptr) provides:
///   - `void on_outcome(action&&)`: every action that is not a zk::op, on the network thread;
///   - `static constexpr bool completions_keep_alive`: true, a request, watch or timer out keeps
///     the engine alive (a waiter with only its watches out lives on them); false, they hold it
///     weakly (its recipe owns it, and what comes after the recipe's end is dropped);
/// and may provide `void after_events()` (after a feed ran its events) and `void create_sent()`
/// with `void create_answered(const zk::reply&)` (around each create, before its reply is fed).
/// Port: client_port's members (send, make_timers, observe, unobserve, session_id, post).
template <typename Machine, typename Derived, typename Port = client_port>
class basic_zk_engine : public std::enable_shared_from_this<Derived> {
public:
    using input = typename Machine::input;
    using action = typename Machine::action;

    /// Network thread: e into the machine. Events that come while actions are carried out (an
    /// action's handler may answer at once) wait their turn: the machine sees one event at a
    /// time, and every action of one before the next. Once stopped, nothing goes in.
    void feed(input e) {
        if (stopped_) return;
        // The feed that runs the events keeps the engine alive: a completion may drop the last
        // other reference.
        const auto self = inbox_.busy() ? nullptr : this->shared_from_this();
        const bool ran = inbox_.feed(std::move(e), [this](input& next) {
            if (stopped_) return;
            for (auto& a : machine_.resume(std::move(next))) carry_out(std::move(a));
        });
        if constexpr (requires(Derived& d) { d.after_events(); })
            if (ran) derived().after_events();
    }

    /// The machine, for reads on the network thread.
    const Machine& machine() const noexcept { return machine_; }

protected:
    basic_zk_engine(Port port, Machine m) : port_(std::move(port)), machine_(std::move(m)), timers_(port_.make_timers()) {}

    /// The machine hears every connection change from now on (connection_changed, with the
    /// session then), until stop_observing.
    void observe_connection() {
        observer_ = port_.observe([weak = this->weak_from_this()](connection_state s) {
            if (auto self = weak.lock()) self->feed(zk::connection_changed{s, self->port_.session_id()});
        });
    }
    /// Any thread, and more than once.
    void stop_observing() {
        if (const auto id = observer_.exchange(0)) port_.unobserve(id);
    }
    /// Network thread: no event reaches the machine from now on; its timers stop.
    void stop_feeding() {
        stopped_ = true;
        timers_.cancel_all();
    }
    /// Network thread: the machine's timers stop (it hears none of them).
    void cancel_timers() { timers_.cancel_all(); }

    Port port_;

private:
    Derived& derived() noexcept { return static_cast<Derived&>(*this); }

    // What a completion holds: the engine, or a weak reference to it.
    auto completion_ref() {
        if constexpr (Derived::completions_keep_alive) return this->shared_from_this();
        else return this->weak_from_this();
    }
    static std::shared_ptr<Derived> alive(const std::shared_ptr<Derived>& p) noexcept { return p; }
    static std::shared_ptr<Derived> alive(const std::weak_ptr<Derived>& p) noexcept { return p.lock(); }

    // Every request goes the same way: its reply and its watch's event come back on the network
    // thread (the engine sends only from there: a request sent while the client closes is answered
    // there too), never inside the port's send, and each is fed where it comes.
    void carry_out(action&& a) {
        auto* op = std::get_if<zk::op>(&a);
        if (!op) return derived().on_outcome(std::move(a));
        if (const auto* t = std::get_if<zk::after>(op)) return start_timer(*t);
        if constexpr (requires(Derived& d, const zk::reply& r) {
                          d.create_sent();
                          d.create_answered(r);
                      }) {
            if (std::holds_alternative<zk::create>(*op)) {
                derived().create_sent();
                return port_.send(std::move(*op), [ref = completion_ref()](auto&& e) {
                    if (auto self = alive(ref)) {
                        if constexpr (std::is_same_v<std::decay_t<decltype(e)>, zk::reply>) self->create_answered(e);
                        self->feed(std::move(e));
                    }
                });
            }
        }
        port_.send(std::move(*op), [ref = completion_ref()](auto&& e) {
            if (auto self = alive(ref)) self->feed(std::move(e));
        });
    }

    void start_timer(const zk::after& t) {
        timers_.start(t.id, t.delay, [ref = completion_ref()](zk::ticket id) {
            auto self = alive(ref);
            if (self && static_cast<basic_zk_engine&>(*self).timers_.take(id)) self->feed(zk::timer_due{id});
        });
    }

    Machine machine_;
    event_inbox<input> inbox_;
    typename Port::timers timers_;
    std::atomic<std::uint64_t> observer_{0};  // (stop_observing may run on two threads at once)
    bool stopped_ = false;
};

}  // namespace zkr::detail
