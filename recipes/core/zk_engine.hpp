// The engine of a recipe that owns its machine's engine (a cache, a node, a barrier, a counter):
// basic_zk_engine's feeding, ops, timers and connection changes, with every other action handed to
// the recipe. The machine decides; the engine translates.
#pragma once

#include "basic_zk_engine.hpp"

#include <memory>
#include <utility>

namespace zkr::detail {

/// Recipe: `void on_outcome(const Machine::action&)`, run on the network thread for each action
/// that is not a zk::op. The recipe owns its engine, which holds it weakly: an outcome that comes
/// after the recipe's end goes nowhere, and so does a reply, an event or a timer that comes after
/// the engine's.
template <typename Machine, typename Recipe, typename Port = client_port>
class zk_engine : public basic_zk_engine<Machine, zk_engine<Machine, Recipe, Port>, Port> {
    using base = basic_zk_engine<Machine, zk_engine<Machine, Recipe, Port>, Port>;

public:
    using typename base::action;
    using typename base::input;
    static constexpr bool completions_keep_alive = false;

    zk_engine(Port port, Machine m, std::weak_ptr<Recipe> recipe) : base(std::move(port), std::move(m)), recipe_(std::move(recipe)) {}

    /// Subscribes to connection changes and feeds `first` (on the network thread). False when the
    /// client's close had begun: the machine never runs, nor hears the close (the recipe answers
    /// for it). When true, the machine hears the close if it comes: the observer was added before
    /// `first` was queued, and so before the close's own step.
    bool start(input first) {
        this->observe_connection();
        return post(std::move(first));
    }
    /// Feeds e on the network thread (from any thread). Once the client closes, e is dropped
    /// (false): the machine has heard, or is about to hear, the close from its observer.
    bool post(input e) {
        return this->port_.post([self = this->shared_from_this(), e = std::move(e)]() mutable {
            self->feed(std::move(e));
        });
    }
    /// No event reaches the machine from now on; its timers stop. (Any thread, and more than once:
    /// a recipe stops it when its machine is done, on the network thread, and again when it is
    /// destroyed.)
    void stop() {
        this->stop_observing();
        // (Refused once the client closes: its loop ends, and the timers with it.)
        this->port_.post([self = this->shared_from_this()] { self->stop_feeding(); });
    }

    void on_outcome(action&& a) {
        if (auto recipe = recipe_.lock()) recipe->on_outcome(a);
    }

private:
    std::weak_ptr<Recipe> recipe_;
};

}  // namespace zkr::detail
