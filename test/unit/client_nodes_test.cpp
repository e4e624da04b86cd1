// The registry of a client's lock nodes (client_nodes): what the acquires of one client know of
// each other's nodes, across moves of the objects that registered them.
#include "../../recipes/core/client_nodes.hpp"

#include <zkr/client.hpp>

#include "zkr_catch.hpp"

#include <vector>

using zkr::detail::client_nodes;

namespace {
zkr::client_options unstarted() {
    zkr::client_options o;
    o.connect_string = "127.0.0.1:1";  // never started: nothing is sent
    return o;
}
}  // namespace

TEST_CASE("client_nodes: a client knows its acquires' nodes and creates in flight, not another client's") {
    zkr::client a(unstarted()), b(unstarted());
    CHECK_FALSE(client_nodes::knows(a, "/l/_c_x-lock-0000000001"));
    {
        client_nodes node(a, "/l/_c_x-lock-0000000001");
        client_nodes in_flight(a, client_nodes::create_in_flight("/m"));
        CHECK(client_nodes::knows(a, "/l/_c_x-lock-0000000001"));
        CHECK_FALSE(client_nodes::knows(a, "/l/_c_x-lock-0000000002"));
        CHECK(client_nodes::knows(a, "/m/_c_y-lock-0000000007"));  // any new child of /m
        CHECK_FALSE(client_nodes::knows(a, "/mm/_c_y-lock-0000000007"));
        CHECK_FALSE(client_nodes::knows(a, "/m/sub/_c_y-lock-0000000007"));
        CHECK_FALSE(client_nodes::knows(b, "/l/_c_x-lock-0000000001"));
        CHECK_FALSE(client_nodes::knows(b, "/m/_c_y-lock-0000000007"));
        client_nodes same(a, "/l/_c_x-lock-0000000001");  // two registrations of one path
        { const client_nodes gone = std::move(same); }
        CHECK(client_nodes::knows(a, "/l/_c_x-lock-0000000001"));  // the other one still stands
    }
    CHECK_FALSE(client_nodes::knows(a, "/l/_c_x-lock-0000000001"));
    CHECK_FALSE(client_nodes::knows(a, "/m/_c_y-lock-0000000007"));
}

TEST_CASE("client_nodes: a create in flight renamed to its node is known as that node alone, in the room the marker made") {
    zkr::client a(unstarted());
    client_nodes in_flight(a, client_nodes::create_in_flight("/m"));
    const auto* room = in_flight.path().data();
    const std::string node = "/m/_c_01234567-89ab-cdef-fedc-ba9876543210-write-0000000007";
    in_flight.rename(node);
    CHECK(in_flight.path() == node);
    CHECK(in_flight.path().data() == room);  // (no allocation: the marker's own room)
    CHECK(client_nodes::knows(a, node));
    CHECK_FALSE(client_nodes::knows(a, "/m/_c_y-lock-0000000008"));  // no longer any new child of /m
}

TEST_CASE("client_nodes: a create in flight is the lock's path and a slash") {
    CHECK(client_nodes::create_in_flight("/a/lock") == "/a/lock/");
    CHECK(client_nodes::is_create_in_flight("/a/lock/", "/a/lock"));
    CHECK_FALSE(client_nodes::is_create_in_flight("/a/lock", "/a/lock"));
    CHECK_FALSE(client_nodes::is_create_in_flight("/a/lockx", "/a/lock"));
    CHECK_FALSE(client_nodes::is_create_in_flight("/a/lock/x/", "/a/lock"));
    CHECK_FALSE(client_nodes::is_create_in_flight("/b/lock/", "/a/lock"));
}

TEST_CASE("client_nodes: a registration moves with its object, and goes with the last one") {
    zkr::client a(unstarted());
    std::vector<client_nodes> nodes;
    for (int i = 0; i < 40; ++i) nodes.emplace_back(a, "/l/n" + std::to_string(i));  // the vector moves them as it grows
    for (int i = 0; i < 40; ++i) CHECK(client_nodes::knows(a, "/l/n" + std::to_string(i)));
    client_nodes moved = std::move(nodes[3]);
    CHECK(moved.path() == "/l/n3");
    nodes.erase(nodes.begin() + 3);  // moves the rest down; the moved-from one registers nothing
    for (int i = 0; i < 40; ++i) CHECK(client_nodes::knows(a, "/l/n" + std::to_string(i)));
    client_nodes assigned;
    assigned = std::move(moved);
    CHECK(client_nodes::knows(a, "/l/n3"));
    assigned = client_nodes(a, "/l/other");  // the old registration goes, the new one stands
    CHECK_FALSE(client_nodes::knows(a, "/l/n3"));
    CHECK(client_nodes::knows(a, "/l/other"));
    nodes.clear();
    CHECK_FALSE(client_nodes::knows(a, "/l/n0"));
    CHECK(client_nodes::knows(a, "/l/other"));
}

TEST_CASE("client_nodes: many clients come and go, and a new client at a dead one's address knows nothing of it") {
    for (int round = 0; round < 100; ++round) {  // (empty entries are pruned once there are many)
        auto c = std::make_unique<zkr::client>(unstarted());
        const client_nodes n(*c, "/l/round");
        CHECK(client_nodes::knows(*c, "/l/round"));
    }
    zkr::client fresh(unstarted());
    CHECK_FALSE(client_nodes::knows(fresh, "/l/round"));
}
