// A wait on a distributed barrier (recipes/barriers/barrier_machine.hpp), event by event, without a
// server.
#include "../../recipes/barriers/barrier_machine.hpp"
#include "zk_actions.hpp"

#include <zkr/error.hpp>

#include "zkr_catch.hpp"

namespace {

using namespace zkr::detail;
using zkr::connection_state;
using zkr::errc;
using zkr::test::absent_reply;
using zkr::test::failed_reply;
using zkr::watch_event_type;

using barrier_actions = std::vector<barrier_machine::action>;

template <typename T>
const T* find_barrier(const barrier_actions& all) {
    return zkr::test::find_action<T>(all);
}

zk::reply set_reply(zk::ticket id) { return zkr::test::present_reply(id); }

// A wait that found the barrier set: returns the ticket of the exists whose watch is set.
zk::ticket waiting_on(barrier_machine& m) {
    auto a = m.resume(barrier_in::start{});
    const auto* check = find_barrier<zk::exists>(a);
    REQUIRE(check);
    CHECK(check->path == "/b");
    CHECK(check->watch);
    const auto id = check->id;
    a = m.resume(set_reply(id));
    CHECK(find_barrier<barrier_out::seen_set>(a));
    CHECK_FALSE(find_barrier<barrier_out::passed>(a));
    CHECK_FALSE(find_barrier<zk::exists>(a));
    return id;
}

}  // namespace

TEST_CASE("barrier machine: a barrier not set passes at the first check") {
    barrier_machine m("/b");
    const auto a = m.resume(barrier_in::start{});
    const auto* check = find_barrier<zk::exists>(a);
    REQUIRE(check);
    const auto done = m.resume(absent_reply(check->id));
    CHECK(find_barrier<barrier_out::passed>(done));
    CHECK(m.done());
}

TEST_CASE("barrier machine: a set barrier waits on its watch, and passes only on a check that finds it gone") {
    barrier_machine m("/b");
    const auto watch = waiting_on(m);
    // The node deleted: the watch fires, and a new check decides (the event alone does not).
    auto a = m.resume(zk::watch_fired{watch, watch_event_type::node_deleted});
    CHECK_FALSE(find_barrier<barrier_out::passed>(a));
    REQUIRE(find_barrier<zk::exists>(a));
    const auto again = find_barrier<zk::exists>(a)->id;
    // Made again before the check got there: still set, waiting on the new watch.
    a = m.resume(set_reply(again));
    CHECK(find_barrier<barrier_out::seen_set>(a));
    CHECK_FALSE(m.done());
    a = m.resume(zk::watch_fired{again, watch_event_type::node_deleted});
    REQUIRE(find_barrier<zk::exists>(a));
    const auto third = find_barrier<zk::exists>(a)->id;
    CHECK(find_barrier<barrier_out::passed>(m.resume(absent_reply(third))));
}

TEST_CASE("barrier machine: any event of the watch sends a check (a data change too)") {
    barrier_machine m("/b");
    const auto watch = waiting_on(m);
    const auto a = m.resume(zk::watch_fired{watch, watch_event_type::node_data_changed});
    CHECK(find_barrier<zk::exists>(a));
    CHECK_FALSE(find_barrier<barrier_out::passed>(a));
}

TEST_CASE("barrier machine: a watch ended with its session is checked again once connected") {
    barrier_machine m("/b");
    const auto watch = waiting_on(m);
    CHECK(m.resume(zk::connection_changed{connection_state::lost, 0}).empty());
    CHECK(m.resume(zk::watch_fired{watch, watch_event_type::not_watching}).empty());
    const auto a = m.resume(zk::connection_changed{connection_state::connected, 9});
    const auto* check = find_barrier<zk::exists>(a);
    REQUIRE(check);
    CHECK(find_barrier<barrier_out::passed>(m.resume(absent_reply(check->id))));
}

TEST_CASE("barrier machine: a check failed with the connection goes again when connected, at once if connected already") {
    barrier_machine m("/b");
    auto a = m.resume(barrier_in::start{});
    const auto first = find_barrier<zk::exists>(a)->id;
    m.resume(zk::connection_changed{connection_state::suspended, 7});
    CHECK(m.resume(failed_reply(first, errc::connection_loss)).empty());
    a = m.resume(zk::connection_changed{connection_state::reconnected, 7});
    REQUIRE(find_barrier<zk::exists>(a));
    const auto second = find_barrier<zk::exists>(a)->id;
    // A failure heard after the reconnection: sent again at once.
    a = m.resume(failed_reply(second, errc::connection_loss));
    REQUIRE(find_barrier<zk::exists>(a));
    const auto third = find_barrier<zk::exists>(a)->id;
    // A reconnection with nothing owed sends nothing.
    m.resume(zk::connection_changed{connection_state::suspended, 7});
    a = m.resume(zk::connection_changed{connection_state::reconnected, 7});
    CHECK_FALSE(find_barrier<zk::exists>(a));
    CHECK(find_barrier<barrier_out::passed>(m.resume(absent_reply(third))));
}

TEST_CASE("barrier machine: stale replies and watches are ignored") {
    barrier_machine m("/b");
    const auto watch = waiting_on(m);
    CHECK(m.resume(absent_reply(watch)).empty());  // the reply of a check answered already
    CHECK(m.resume(zk::watch_fired{watch + 5, watch_event_type::node_deleted}).empty());
    CHECK_FALSE(m.done());
}

TEST_CASE("barrier machine: the client closed ends the wait with closed, and a final error ends it with that error") {
    barrier_machine m("/b");
    waiting_on(m);
    const auto a = m.resume(zk::connection_changed{connection_state::closed, 0});
    const auto* f = find_barrier<barrier_out::failed>(a);
    REQUIRE(f);
    CHECK(f->ec == errc::closed);
    CHECK(m.done());

    barrier_machine other("/b");
    const auto first = find_barrier<zk::exists>(other.resume(barrier_in::start{}))->id;
    const auto ended = other.resume(failed_reply(first, errc::no_auth));
    const auto* g = find_barrier<barrier_out::failed>(ended);
    REQUIRE(g);
    CHECK(g->ec == errc::no_auth);
}
