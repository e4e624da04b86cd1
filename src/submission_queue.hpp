// The connection's submission queue: the requests any thread submits, handed to the network thread
// in submission order, and the gate that start() opens and close() shuts, for requests and for the
// steps run_on_network queues alike.
//   - One queue rather than a post per request: a post made on the network thread waits in that
//     thread's private queue until the running handler returns, so a request another thread
//     submits after it (woken by that handler) would be sent first. A recipe's "remove, then
//     answer the caller" must reach the wire in that order.
//   - The network thread's drain is scheduled, and a step queued, under the queue's lock, which
//     close() takes to shut the gate: whatever passed the gate was queued before the close's own
//     step, so the network loop runs it before it ends. (A step queued after the loop ended would
//     never run, and its caller would wait for ever.)
// Any thread, except drain_into (the network thread). Unit-tested without a server
// (submission_queue_test.cpp).
#pragma once

#include <mutex>
#include <utility>
#include <vector>

namespace zkr::detail {

template <class Item>
class basic_submission_queue {
public:
    enum class refusal { none, not_started, closed };

    /// Opens the gate: `begin` (the network thread's start) runs under the lock, the first time
    /// only. False once closed (nothing runs).
    template <class Begin>
    bool start(Begin&& begin) {
        std::lock_guard lock(mutex_);
        if (!accepting_) return false;
        if (!started_) {
            started_ = true;
            begin();
        }
        return true;
    }
    bool started() const {
        std::lock_guard lock(mutex_);
        return started_;
    }
    /// Shuts the gate. False when it was shut already: one caller closes.
    bool close() {
        std::lock_guard lock(mutex_);
        return std::exchange(accepting_, false);
    }

    /// Queues item (moved from), unless refused (before start, after close: item as it was).
    /// The first item since the last drain calls schedule_drain, under the lock.
    template <class Schedule>
    refusal push(Item& item, Schedule&& schedule_drain) {
        std::lock_guard lock(mutex_);
        if (!accepting_) return refusal::closed;
        if (!started_) return refusal::not_started;
        items_.push_back(std::move(item));
        if (!drain_scheduled_) {
            drain_scheduled_ = true;
            schedule_drain();
        }
        return refusal::none;
    }
    /// Runs queue_step under the lock while the gate is open (before close). False once closed.
    template <class Queue>
    bool if_open(Queue&& queue_step) {
        std::lock_guard lock(mutex_);
        if (!accepting_) return false;
        queue_step();
        return true;
    }

    /// The network thread: the items queued since the last drain, in order, into batch (empty;
    /// the two vectors trade places, so neither allocates once both have grown to a batch's size).
    void drain_into(std::vector<Item>& batch) {
        std::lock_guard lock(mutex_);
        batch.swap(items_);
        drain_scheduled_ = false;
    }

private:
    mutable std::mutex mutex_;
    bool accepting_ = true;
    bool started_ = false;
    bool drain_scheduled_ = false;
    std::vector<Item> items_;
};

}  // namespace zkr::detail
