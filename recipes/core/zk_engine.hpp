// The engine of any machine that speaks zk_ops: feeds it one event at a time on the network
// thread, carries out its ops on the connection (send_op) and its timers, and hands every other
// action (the machine's own outcomes) to the recipe. The machine decides; the engine translates.
#pragma once

#include "event_inbox.hpp"
#include "timer_slots.hpp"
#include "zk_ops.hpp"
#include "zk_port.hpp"

#include <zkr/client.hpp>
#include <zkr/detail/request.hpp>

#include <atomic>
#include <memory>
#include <utility>

namespace zkr::detail {

/// Machine: `std::vector<Machine::action> resume(const Machine::input&)`, where input holds every
/// zk::event alternative (and the machine's own inputs) and action holds zk::op (and the
/// machine's own outcomes). Everything of the machine runs on the network thread.
/// Recipe: `void on_outcome(const Machine::action&)`, run on the network thread for each action
/// that is not a zk::op. The recipe owns its engine, which holds it weakly: an outcome that comes
/// after the recipe's end goes nowhere.
template <typename Machine, typename Recipe>
class zk_engine : public std::enable_shared_from_this<zk_engine<Machine, Recipe>> {
public:
    using input = typename Machine::input;
    using action = typename Machine::action;

    zk_engine(zkr::client& c, Machine m, std::weak_ptr<Recipe> recipe)
        : client_(c), machine_(std::move(m)), recipe_(std::move(recipe)), timers_(network_executor(connection_of(c))) {}

    /// Subscribes to connection changes and feeds `first` (on the network thread). False when the
    /// client's close had begun: the machine never runs, nor hears the close (the recipe answers
    /// for it). When true, the machine hears the close if it comes: the observer was added before
    /// `first` was queued, and so before the close's own step.
    bool start(input first) {
        auto self = this->shared_from_this();
        std::weak_ptr<zk_engine> weak = self;
        observer_ = add_state_observer(connection_of(client_), [weak](connection_state s) {
            if (auto e = weak.lock()) e->feed(zk::connection_changed{s, e->client_.session_id()});
        });
        return post(std::move(first));
    }
    /// Feeds e on the network thread (from any thread). Once the client closes, e is dropped
    /// (false): the machine has heard, or is about to hear, the close from its observer.
    bool post(input e) {
        return run_on_network(connection_of(client_), [self = this->shared_from_this(), e = std::move(e)]() mutable {
            self->feed(std::move(e));
        });
    }
    /// No event reaches the machine from now on; its timers stop. (Any thread, and more than once:
    /// a recipe stops it when its machine is done, on the network thread, and again when it is
    /// destroyed.)
    void stop() {
        if (const auto id = observer_.exchange(0)) remove_state_observer(connection_of(client_), id);
        // (Refused once the client closes: its loop ends, and the timers with it.)
        run_on_network(connection_of(client_), [self = this->shared_from_this()] {
            self->stopped_ = true;
            self->timers_.cancel_all();
        });
    }
    /// The machine, for reads on the network thread.
    const Machine& machine() const noexcept { return machine_; }

private:
    // One event at a time: events that come while actions are carried out wait their turn. Once
    // stopped, the events still queued are dropped.
    void feed(input e) {
        if (stopped_) return;
        inbox_.feed(std::move(e), [this](const input& next) {
            if (stopped_) return;
            for (auto& a : machine_.resume(next)) carry_out(std::move(a));
        });
    }

    void carry_out(action&& a) {
        auto* op = std::get_if<zk::op>(&a);
        if (!op) {
            if (auto recipe = recipe_.lock()) recipe->on_outcome(a);
            return;
        }
        if (const auto* t = std::get_if<zk::after>(op)) return start_timer(*t);
        // The reply and the watch's event come on the network thread, where the machine runs (the
        // engine sends only from there: a request sent while the client closes is answered there
        // too), never inside send_op: each is fed where it comes.
        send_op(client_, std::move(*op), [weak = this->weak_from_this()](auto&& e) {
            if (auto self = weak.lock()) self->feed(std::move(e));
        });
    }

    void start_timer(const zk::after& t) {
        timers_.start(t.id, t.delay, [weak = std::weak_ptr<zk_engine>(this->shared_from_this())](zk::ticket id) {
            if (auto self = weak.lock(); self && self->timers_.take(id)) self->feed(zk::timer_due{id});
        });
    }

    zkr::client& client_;
    Machine machine_;
    std::weak_ptr<Recipe> recipe_;
    std::atomic<std::uint64_t> observer_{0};  // (stop may run on two threads at once)
    event_inbox<input> inbox_;
    bool stopped_ = false;
    timer_slots timers_;
};

}  // namespace zkr::detail
