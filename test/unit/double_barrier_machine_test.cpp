// A member of a double barrier (recipes/barriers/double_barrier_machine.hpp), event by event,
// without a server; the Curator bugs it must not have, each by name.
#include "../../recipes/barriers/double_barrier_machine.hpp"
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

template <typename T>
const T* find_member(const std::vector<double_barrier_machine::action>& all) {
    return zkr::test::find_action<T>(all);
}

zk::reply ok_reply(zk::ticket id) { return zkr::test::present_reply(id); }

zk::reply children_reply(zk::ticket id, std::vector<std::string> children) {
    zk::reply r;
    r.id = id;
    r.children = std::move(children);
    r.stat = zkr::stat{};
    return r;
}

// An enter of "m1" (N = 3) up to its count: returns the ready exists' ticket (its watch is set)
// and the count's.
std::pair<zk::ticket, zk::ticket> counting(double_barrier_machine& m) {
    auto a = m.resume(double_barrier_in::enter{});
    const auto* create = find_member<zk::create>(a);
    REQUIRE(create);
    CHECK(create->path == "/db/m1");
    CHECK(create->mode == zkr::create_mode::ephemeral);
    CHECK(create->parents);
    a = m.resume(ok_reply(create->id));
    const auto* ready = find_member<zk::exists>(a);
    REQUIRE(ready);
    CHECK(ready->path == "/db/ready");
    CHECK(ready->watch);
    const auto ready_id = ready->id;
    a = m.resume(absent_reply(ready_id));
    const auto* count = find_member<zk::get_children>(a);
    REQUIRE(count);
    CHECK(count->path == "/db");
    CHECK_FALSE(count->watch);
    return {ready_id, count->id};
}

// A member that has entered (ready was there at its first check).
void entered(double_barrier_machine& m) {
    auto a = m.resume(double_barrier_in::enter{});
    a = m.resume(ok_reply(find_member<zk::create>(a)->id));
    a = m.resume(ok_reply(find_member<zk::exists>(a)->id));
    REQUIRE(find_member<double_barrier_out::entered>(a));
}

}  // namespace

TEST_CASE("double barrier machine: the N-th member makes ready and enters, fewer wait (`ready` itself not counted)") {
    double_barrier_machine m("/db", "m1", 3);
    const auto [ready, count] = counting(m);
    // Two members and a `ready` left from an earlier round's leave in flight: still two.
    auto a = m.resume(children_reply(count, {"m0", "m1", "ready"}));
    CHECK(a.empty());
    CHECK(m.current() == double_barrier_machine::phase::entering);
    // The third arrives and makes ready: our watch fires, and we check again.
    a = m.resume(zk::watch_fired{ready, watch_event_type::node_created});
    const auto* again = find_member<zk::exists>(a);
    REQUIRE(again);
    a = m.resume(ok_reply(again->id));
    CHECK(find_member<double_barrier_out::entered>(a));

    double_barrier_machine last("/db", "m1", 3);
    const auto [ready2, count2] = counting(last);
    a = last.resume(children_reply(count2, {"m0", "m1", "m2"}));
    const auto* make = find_member<zk::create>(a);
    REQUIRE(make);
    CHECK(make->path == "/db/ready");
    CHECK(make->mode == zkr::create_mode::persistent);
    a = last.resume(failed_reply(make->id, errc::node_exists));  // another made it first: as good
    CHECK(find_member<double_barrier_out::entered>(a));
}

// apache/curator GH-1290: Curator's enter returned after one wake-up without counting again, so
// a single member could pass. Here a wake-up only sends a new check.
TEST_CASE("double barrier machine: GH-1290, a wake-up that is not ready's creation never lets a member through") {
    double_barrier_machine m("/db", "m1", 3);
    const auto [ready, count] = counting(m);
    auto a = m.resume(children_reply(count, {"m1"}));
    CHECK(a.empty());
    auto watching = ready;
    for (const auto type : {watch_event_type::node_deleted, watch_event_type::not_watching, watch_event_type::node_data_changed}) {
        INFO(static_cast<int>(type));
        a = m.resume(zk::watch_fired{watching, type});
        CHECK_FALSE(find_member<double_barrier_out::entered>(a));
        REQUIRE(find_member<zk::exists>(a));
        const auto again = find_member<zk::exists>(a)->id;
        a = m.resume(absent_reply(again));
        REQUIRE(find_member<zk::get_children>(a));
        a = m.resume(children_reply(find_member<zk::get_children>(a)->id, {"m1"}));
        CHECK_FALSE(find_member<double_barrier_out::entered>(a));
        watching = again;  // the watch that fires next is the new check's
    }
    CHECK(m.current() == double_barrier_machine::phase::entering);
}

// CURATOR-80 and CURATOR-318: a Curator member whose enter failed or timed out left its node, and
// a late arrival counted it and passed while the others had given up. Giving up deletes ours.
TEST_CASE("double barrier machine: CURATOR-80 and CURATOR-318, a member that gives up deletes its node first") {
    double_barrier_machine m("/db", "m1", 3);
    const auto [ready, count] = counting(m);
    auto a = m.resume(children_reply(count, {"m1"}));
    a = m.resume(double_barrier_in::give_up{});
    const auto* remove = find_member<zk::remove>(a);
    REQUIRE(remove);
    CHECK(remove->path == "/db/m1");
    CHECK_FALSE(find_member<double_barrier_out::gave_up>(a));
    const auto remove_id = remove->id;
    CHECK(m.resume(zk::connection_changed{connection_state::suspended, 7}).empty());
    a = m.resume(failed_reply(remove_id, errc::connection_loss));  // sent again once connected
    CHECK(a.empty());
    a = m.resume(zk::connection_changed{connection_state::reconnected, 7});
    const auto* again = find_member<zk::remove>(a);
    REQUIRE(again);
    a = m.resume(ok_reply(again->id));
    CHECK(find_member<double_barrier_out::gave_up>(a));
    CHECK(m.current() == double_barrier_machine::phase::done);
    // Its ready watch fires later: nothing.
    CHECK(m.resume(zk::watch_fired{ready, watch_event_type::node_created}).empty());
}

TEST_CASE("double barrier machine: a give-up while the create is in flight deletes the node the create may have made") {
    double_barrier_machine m("/db", "m1", 3);
    auto a = m.resume(double_barrier_in::enter{});
    const auto create = find_member<zk::create>(a)->id;
    CHECK(m.resume(double_barrier_in::give_up{}).empty());  // waits for the create's reply
    CHECK(m.resume(zk::connection_changed{connection_state::suspended, 7}).empty());
    a = m.resume(failed_reply(create, errc::connection_loss));  // applied or not: nobody knows
    CHECK(a.empty());
    a = m.resume(zk::connection_changed{connection_state::reconnected, 7});
    const auto* remove = find_member<zk::remove>(a);
    REQUIRE(remove);
    a = m.resume(failed_reply(remove->id, errc::no_node));  // it had not been made
    CHECK(find_member<double_barrier_out::gave_up>(a));
}

TEST_CASE("double barrier machine: a give-up that comes after the count made ready is too late: the member entered") {
    double_barrier_machine m("/db", "m1", 3);
    const auto [ready, count] = counting(m);
    auto a = m.resume(children_reply(count, {"m0", "m1", "m2"}));
    const auto make = find_member<zk::create>(a)->id;
    CHECK(m.resume(double_barrier_in::give_up{}).empty());
    a = m.resume(ok_reply(make));
    CHECK(find_member<double_barrier_out::entered>(a));
    CHECK(m.current() == double_barrier_machine::phase::entered);
}

TEST_CASE("double barrier machine: a session lost while entering fails the enter, after deleting a node its retried create made") {
    double_barrier_machine m("/db", "m1", 3);
    auto a = m.resume(double_barrier_in::enter{});
    const auto create = find_member<zk::create>(a)->id;
    CHECK(m.resume(zk::connection_changed{connection_state::lost, 0}).empty());
    a = m.resume(ok_reply(create));  // retried on the new session, and made there
    const auto* remove = find_member<zk::remove>(a);
    REQUIRE(remove);
    a = m.resume(ok_reply(remove->id));
    const auto* failed = find_member<double_barrier_out::failed>(a);
    REQUIRE(failed);
    CHECK(failed->ec == errc::session_expired);
}

TEST_CASE("double barrier machine: an entered member makes its node again on a new session") {
    double_barrier_machine m("/db", "m1", 3);
    entered(m);
    CHECK(m.resume(zk::connection_changed{connection_state::lost, 0}).empty());
    auto a = m.resume(zk::connection_changed{connection_state::connected, 8});
    const auto* create = find_member<zk::create>(a);
    REQUIRE(create);
    CHECK(create->path == "/db/m1");
    a = m.resume(failed_reply(create->id, errc::node_exists));  // (a retry of ours)
    CHECK(a.empty());
    CHECK(m.current() == double_barrier_machine::phase::entered);
}

TEST_CASE("double barrier machine: leave, the lowest waits for the highest, the others delete theirs and wait for the lowest") {
    // m1 is the lowest of three: it watches the highest, then, alone, deletes its own.
    double_barrier_machine low("/db", "m1", 3);
    entered(low);
    auto a = low.resume(double_barrier_in::leave{});
    a = low.resume(children_reply(find_member<zk::get_children>(a)->id, {"ready", "m3", "m1", "m2"}));
    REQUIRE(find_member<zk::exists>(a));
    CHECK(find_member<zk::exists>(a)->path == "/db/m3");
    CHECK(find_member<zk::exists>(a)->watch);
    const auto highest = find_member<zk::exists>(a)->id;
    CHECK(low.resume(ok_reply(highest)).empty());
    a = low.resume(zk::watch_fired{highest, watch_event_type::node_deleted});
    a = low.resume(children_reply(find_member<zk::get_children>(a)->id, {"ready", "m1"}));
    REQUIRE(find_member<zk::remove>(a));
    CHECK(find_member<zk::remove>(a)->path == "/db/m1");
    a = low.resume(ok_reply(find_member<zk::remove>(a)->id));
    a = low.resume(children_reply(find_member<zk::get_children>(a)->id, {"ready"}));
    REQUIRE(find_member<zk::remove>(a));
    CHECK(find_member<zk::remove>(a)->path == "/db/ready");
    CHECK_FALSE(find_member<double_barrier_out::left>(a));
    a = low.resume(failed_reply(find_member<zk::remove>(a)->id, errc::no_node));  // another leaver deleted it first
    CHECK(find_member<double_barrier_out::left>(a));

    // m2 is not the lowest: it deletes its own node, then waits for the lowest to go.
    double_barrier_machine mid("/db", "m2", 3);
    entered(mid);
    a = mid.resume(double_barrier_in::leave{});
    a = mid.resume(children_reply(find_member<zk::get_children>(a)->id, {"m1", "m2", "m3"}));
    REQUIRE(find_member<zk::remove>(a));
    CHECK(find_member<zk::remove>(a)->path == "/db/m2");
    a = mid.resume(ok_reply(find_member<zk::remove>(a)->id));
    a = mid.resume(children_reply(find_member<zk::get_children>(a)->id, {"m1", "m3"}));
    REQUIRE(find_member<zk::exists>(a));
    CHECK(find_member<zk::exists>(a)->path == "/db/m1");
    a = mid.resume(absent_reply(find_member<zk::exists>(a)->id));  // gone already: list again
    CHECK(find_member<zk::get_children>(a));
    CHECK_FALSE(find_member<double_barrier_out::left>(a));
}

TEST_CASE("double barrier machine: the client's close ends the member with closed, and a server's refusal with its error") {
    double_barrier_machine m("/db", "m1", 3);
    (void)counting(m);
    auto a = m.resume(zk::connection_changed{connection_state::closed, 0});
    const auto* f = find_member<double_barrier_out::failed>(a);
    REQUIRE(f);
    CHECK(f->ec == errc::closed);

    double_barrier_machine refused("/db", "m1", 3);
    a = refused.resume(double_barrier_in::enter{});
    a = refused.resume(failed_reply(find_member<zk::create>(a)->id, errc::no_auth));
    f = find_member<double_barrier_out::failed>(a);
    REQUIRE(f);
    CHECK(f->ec == errc::no_auth);
}
