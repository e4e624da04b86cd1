// A machine's timers by ticket, kept inside its engine: a slot whose timer ran out (or was
// cancelled) is used again, so that a machine's cycle allocates no timer. Network thread only.
#pragma once

#include "zk_ops.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/container/small_vector.hpp>

#include <algorithm>
#include <chrono>
#include <utility>

namespace zkr::detail {

class timer_slots {
public:
    explicit timer_slots(boost::asio::any_io_executor ex) : ex_(std::move(ex)) {}

    /// The timer of `id` runs out after delay: on_due(id) runs then on the executor (never once
    /// cancel_all has run, nor inside this call). on_due must call take(id) first.
    template <typename OnDue>
    void start(zk::ticket id, std::chrono::milliseconds delay, OnDue on_due) {
        auto slot = std::find_if(slots_.begin(), slots_.end(), [](const entry& e) { return e.id == 0; });
        if (slot == slots_.end()) {
            slots_.emplace_back(ex_);  // (a pending wait moves with its timer)
            slot = slots_.end() - 1;
        }
        slot->id = id;
        slot->timer.expires_after(delay);
        slot->timer.async_wait([on_due = std::move(on_due), id](const boost::system::error_code& ec) mutable {
            if (!ec) on_due(id);
        });
    }
    /// Frees the slot of a timer that ran out; false when cancel_all came first (its wait had
    /// finished already: the machine must not hear it).
    bool take(zk::ticket id) {
        const auto slot = std::find_if(slots_.begin(), slots_.end(), [&](const entry& e) { return e.id == id; });
        if (slot == slots_.end()) return false;
        slot->id = 0;
        return true;
    }
    /// Every timer stops; none is heard any more.
    void cancel_all() {
        for (auto& e : slots_) {
            e.id = 0;
            e.timer.cancel();
        }
    }

private:
    struct entry {
        explicit entry(const boost::asio::any_io_executor& ex) : timer(ex) {}
        zk::ticket id = 0;
        boost::asio::steady_timer timer;
    };
    boost::asio::any_io_executor ex_;
    // Room for two inside: a lock's deadline and its own-node watch's delay.
    boost::container::small_vector<entry, 2> slots_;
};

}  // namespace zkr::detail
