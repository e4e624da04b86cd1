// A user's tests of code that uses zkr, written with Catch2 against throwaway servers from
// zkr::testing (Debian package libzkr-testing-dev): what the user's code must do when its session
// expires, when its server stalls, and when the ensemble loses its leader.
#if __has_include(<catch2/catch_test_macros.hpp>)
#include <catch2/catch_test_macros.hpp>  // Catch2 3 (Debian 13): main() from Catch2::Catch2WithMain
#else
#define CATCH_CONFIG_MAIN  // Catch2 2 (Debian 12): main() from here
#include <catch2/catch.hpp>
#endif

#include <zkr/testing.hpp>
#include <zkr/zkr.hpp>

#include <chrono>

using namespace std::chrono_literals;
using zkr::testing::eventually;

namespace {

zkr::client_options options_for(const std::string& servers) {
    zkr::client_options o;
    o.connect_string = servers;
    o.session_timeout = 4s;
    return o;
}

}  // namespace

TEST_CASE("a lock held when the session expires is reported lost and can be taken again") {
    zkr::testing::cluster zk;  // one standalone server on a free loopback port
    zkr::client client(options_for(zk.connect_string()));
    client.start();
    REQUIRE(client.block_until_connected(10s));
    zkr::interprocess_mutex lock(client, "/jobs/nightly");
    lock.acquire();
    REQUIRE(lock.state() == zkr::hold_state::held);

    zk.expire_session(client);  // Curator's KillSession
    CHECK(eventually([&] { return lock.state() == zkr::hold_state::lost; }));
    lock.unlock();  // ends the lost hold; never throws
    CHECK(lock.acquire(10s));
    lock.unlock();
}

TEST_CASE("a stalled server makes the client suspend, and it comes back") {
    zkr::testing::cluster zk;
    zkr::client client(options_for(zk.connect_string()));
    client.start();
    REQUIRE(client.block_until_connected(10s));
    zk.pause(0);  // the server answers nothing, as in a long garbage-collection pause
    CHECK(eventually([&] { return client.state() == zkr::connection_state::suspended; }));
    zk.resume(0);
    CHECK(eventually([&] { return zkr::is_connected(client.state()); }));
}

TEST_CASE("a client rides out the loss of the ensemble's leader") {
    zkr::testing::cluster zk({.servers = 3});  // three servers on loopback
    const int leader = zk.leader();
    REQUIRE(leader >= 0);
    zkr::client client(options_for(zk.connect_string()));
    client.start();
    REQUIRE(client.block_until_connected(10s));
    zkr::interprocess_semaphore_v2 gateway(client, "/gateway/slots", 2);

    zk.kill(leader);  // the other two elect a new leader
    CHECK(eventually([&] { return zk.leader() >= 0 && zk.leader() != leader; }, 30s));
    {
        auto lease = gateway.acquire(20s);  // the client moves to a live server
        CHECK(lease.has_value());
    }
    zk.start(leader);  // it rejoins as a follower
    CHECK(zk.serving(leader));
}
