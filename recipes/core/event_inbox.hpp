// A machine sees one event at a time, and every action of one before the next: events that come
// while the actions are carried out (an action's handler may answer at once) wait their turn here.
#pragma once

#include <boost/container/small_vector.hpp>

#include <cstddef>
#include <utility>

namespace zkr::detail {

template <typename Event>
class event_inbox {
public:
    /// Whether a feed further up this thread's stack is running its events.
    bool busy() const noexcept { return running_; }

    /// Unless busy(), runs step(event) on e and then on every event queued meanwhile, in order;
    /// otherwise queues e. Returns whether this call ran them (false: the running feed takes e).
    template <typename Step>
    bool feed(Event&& e, Step&& step) {
        if (running_) {
            events_.push_back(std::move(e));
            return false;
        }
        running_ = true;
        struct done {
            event_inbox& inbox;
            ~done() {
                inbox.events_.clear();
                inbox.running_ = false;
            }
        } const end{*this};
        step(e);  // (nothing waits: e runs where it is, not moved into the inbox and out)
        // By index, and each event moved out before its step: a step may queue more (the vector
        // may move). Room for a few events inside the inbox: an engine's events seldom queue
        // more than that deep, and a vector's first pushes were three allocations per acquire (a
        // deque's map and block before that).
        for (std::size_t i = 0; i < events_.size(); ++i) {
            Event next = std::move(events_[i]);
            step(next);  // (a step may move out of it: the event is its own)
        }
        return true;
    }

private:
    boost::container::small_vector<Event, 4> events_;
    bool running_ = false;
};

}  // namespace zkr::detail
