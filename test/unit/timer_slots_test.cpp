// A machine's timers inside its engine (recipes/core/timer_slots.hpp).
#include "../../recipes/core/timer_slots.hpp"

#include "zkr_catch.hpp"

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <vector>

using namespace std::chrono_literals;
using zkr::detail::timer_slots;
using zkr::detail::zk::ticket;

TEST_CASE("timer slots: each timer runs out once, with its ticket, in the order of its delay") {
    boost::asio::io_context io;
    timer_slots slots(io.get_executor());
    std::vector<ticket> due;
    const auto hear = [&](ticket id) {
        if (slots.take(id)) due.push_back(id);
    };
    slots.start(1, 30ms, hear);
    slots.start(2, 1ms, hear);
    io.run();
    CHECK(due == std::vector<ticket>{2, 1});
    CHECK_FALSE(slots.take(1));  // ran out already
    // The slots are free again: more timers run in them.
    slots.start(3, 1ms, hear);
    slots.start(4, 1ms, hear);
    slots.start(5, 2ms, hear);  // (a third at once: one more slot)
    io.restart();
    io.run();
    CHECK(due == std::vector<ticket>{2, 1, 3, 4, 5});
}

TEST_CASE("timer slots: after cancel_all no timer is heard, and its ticket is no longer taken") {
    boost::asio::io_context io;
    timer_slots slots(io.get_executor());
    std::vector<ticket> due;
    slots.start(1, 1ms, [&](ticket id) {
        if (slots.take(id)) due.push_back(id);
    });
    slots.start(2, 1h, [&](ticket id) { due.push_back(id); });
    slots.cancel_all();
    CHECK_FALSE(slots.take(1));
    CHECK_FALSE(slots.take(2));
    io.run();  // (returns at once: both waits were cancelled)
    CHECK(due.empty());
    // A cancelled slot is used again.
    slots.start(3, 1ms, [&](ticket id) {
        if (slots.take(id)) due.push_back(id);
    });
    io.restart();
    io.run();
    CHECK(due == std::vector<ticket>{3});
}
