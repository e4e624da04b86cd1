// The simulated ZooKeeper's own behaviour, where the lock simulation does not reach it: child
// watches (no lock recipe sets one yet; the next recipes may), and a node put back (restore).
#include "../sim/sim_zookeeper.hpp"

#include "zkr_catch.hpp"

using zkr::watch_event_type;
using zkr::sim::fired_watch;

namespace {

std::vector<watch_event_type> types(const std::vector<fired_watch>& fired) {
    std::vector<watch_event_type> out;
    for (const auto& f : fired) out.push_back(f.type);
    return out;
}

}  // namespace

TEST_CASE("sim zookeeper: a child watch fires once when a child comes or goes, and node_deleted when its node goes") {
    zkr::sim::zookeeper zk;
    const auto s = zk.open_session();
    const auto first = zk.create_sequential(s, "/lock", "lock-", "");
    REQUIRE(first.code == zkr::sim::rc::ok);
    (void)zk.take_fired();

    REQUIRE(zk.watch_children("/lock", s, 7));
    (void)zk.create_sequential(s, "/lock", "lock-", "");
    auto fired = zk.take_fired();
    REQUIRE(fired.size() == 1);
    CHECK(fired[0].session == s);
    CHECK(fired[0].watch_id == 7);
    CHECK(fired[0].type == watch_event_type::node_children_changed);
    // One-shot: a second change fires nothing.
    CHECK(zk.remove(first.path) == zkr::sim::rc::ok);
    CHECK(zk.take_fired().empty());

    // Set again: a child's deletion fires it; a data change of a child does not.
    REQUIRE(zk.watch_children("/lock", s, 8));
    const auto kids = zk.children("/lock");
    REQUIRE(kids);
    REQUIRE(kids->size() == 1);
    CHECK(zk.set_data("/lock/" + kids->front(), "x") == zkr::sim::rc::ok);
    CHECK(zk.take_fired().empty());
    CHECK(zk.remove("/lock/" + kids->front()) == zkr::sim::rc::ok);
    CHECK(types(zk.take_fired()) == std::vector{watch_event_type::node_children_changed});

    // The node itself goes (the empty container is reaped): node_deleted.
    REQUIRE(zk.watch_children("/lock", s, 9));
    zk.reap_containers();
    CHECK(types(zk.take_fired()) == std::vector{watch_event_type::node_deleted});
    CHECK_FALSE(zk.watch_children("/lock", s, 10));  // no node: no watch
}

TEST_CASE("sim zookeeper: a child watch dies with its session, and an ephemeral child's expiry fires the others'") {
    zkr::sim::zookeeper zk;
    const auto a = zk.open_session(), b = zk.open_session();
    (void)zk.create_sequential(a, "/lock", "lock-", "");
    REQUIRE(zk.watch_children("/lock", a, 1));
    REQUIRE(zk.watch_children("/lock", b, 2));
    (void)zk.take_fired();
    zk.expire(a);  // a's node goes: b hears it, a (gone) does not
    const auto fired = zk.take_fired();
    REQUIRE(fired.size() == 1);
    CHECK(fired[0].session == b);
    CHECK(fired[0].type == watch_event_type::node_children_changed);
}

TEST_CASE("sim zookeeper: a restored node is back as it was, and only where it could be") {
    zkr::sim::zookeeper zk;
    const auto s = zk.open_session();
    const auto made = zk.create_sequential(s, "/lock", "lock-", "data");
    REQUIRE(made.code == zkr::sim::rc::ok);
    const auto before = *zk.find(made.path);
    CHECK(zk.remove(made.path) == zkr::sim::rc::ok);
    (void)zk.take_fired();
    CHECK(zk.read(made.path, s, 1, /*exists_watch=*/true) == nullptr);
    REQUIRE(zk.watch_children("/lock", s, 2));

    CHECK(zk.restore(made.path, before) == zkr::sim::rc::ok);
    const auto* back = zk.find(made.path);
    REQUIRE(back);
    CHECK(back->czxid == before.czxid);
    CHECK(back->owner == s);
    CHECK(back->data == "data");
    CHECK(types(zk.take_fired()) == std::vector{watch_event_type::node_created, watch_event_type::node_children_changed});
    CHECK(zk.restore(made.path, before) == zkr::sim::rc::node_exists);

    // Its session gone, or its parent: nothing comes back.
    zk.expire(s);
    CHECK(zk.find(made.path) == nullptr);
    CHECK(zk.restore(made.path, before) == zkr::sim::rc::no_node);
    const auto t = zk.open_session();
    auto orphan = before;
    orphan.owner = t;
    CHECK(zk.restore("/gone/lock-0000000000", orphan) == zkr::sim::rc::no_node);
    CHECK(zk.find("/gone") == nullptr);
}
