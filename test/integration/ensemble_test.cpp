// A 3-server ensemble on loopback: failover keeps the session.
#include "zk_cluster.hpp"

#include "zkr_catch.hpp"

#include <future>

using namespace std::chrono_literals;
using zkr::connection_state;

TEST_CASE("ensemble: killing the client's server moves it to another, session kept") {
    zkr::test::zk_cluster zk({.servers = 3});
    zkr::client c(zkr::test::test_options(zk.connect_string(), 6s));
    zkr::test::state_recorder rec(c);
    c.start();
    REQUIRE(c.block_until_connected(15s));
    const auto session = c.session_id();
    c.create("/ephemeral", "x", {.mode = zkr::create_mode::ephemeral});
    int server = -1;
    REQUIRE(zkr::test::eventually([&] { return (server = zk.server_of_session(session)) >= 0; }));

    const auto killed_at = std::chrono::steady_clock::now();
    zk.kill(server);
    REQUIRE(rec.wait_for(connection_state::suspended, 10s));
    REQUIRE(rec.wait_for(connection_state::reconnected, 10s));
    CHECK(std::chrono::steady_clock::now() - killed_at < 6s);
    CHECK(c.session_id() == session);
    const int now_on = zk.server_of_session(session);
    CHECK(now_on >= 0);
    CHECK(now_on != server);
    auto st = c.exists("/ephemeral");
    REQUIRE(st);
    CHECK(st->ephemeral_owner == session);
    const auto states = rec.states();
    CHECK(std::count(states.begin(), states.end(), connection_state::lost) == 0);
}
