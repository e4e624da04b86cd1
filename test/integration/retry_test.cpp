// Retries against a real server that goes away and comes back.
#include "client_hooks.hpp"  // the client's hooks for tests (src/)
#include "zk_cluster.hpp"

#include "zkr_catch.hpp"

#include "shared_server.hpp"

#include <boost/asio/use_future.hpp>

#include <thread>

using namespace std::chrono_literals;
using clk = std::chrono::steady_clock;

TEST_CASE("a sync operation issued while the server is briefly down succeeds once it returns") {
    zkr::test::zk_cluster zk;
    auto o = zkr::test::test_options(zk.connect_string(), 10s);
    o.connection_timeout = 500ms;  // shorter than the outage: the retry policy must carry it
    o.retry_policy = std::make_shared<zkr::retry_n_times>(20, 200ms);
    zkr::client c(o);
    c.start();
    REQUIRE(c.block_until_connected(10s));
    zk.stop(0);
    REQUIRE(zkr::test::eventually([&] { return c.state() == zkr::connection_state::suspended; }));
    std::thread restarter([&] {
        std::this_thread::sleep_for(1500ms);
        zk.start(0);
    });
    const auto t0 = clk::now();
    auto r = c.create("/during-outage", "x");  // throws if the retries run out
    restarter.join();
    CHECK(r.path == "/during-outage");
    CHECK(clk::now() - t0 >= 1s);
    CHECK(c.get_data("/during-outage").data == "x");
}

TEST_CASE("retries stop when the policy says so, with the last error") {
    zkr::test::zk_cluster zk;
    auto o = zkr::test::test_options(zk.connect_string(), 10s);
    o.connection_timeout = 300ms;
    o.retry_policy = std::make_shared<zkr::retry_n_times>(2, 100ms);
    zkr::client c(o);
    c.start();
    REQUIRE(c.block_until_connected(10s));
    zk.stop(0);
    REQUIRE(zkr::test::eventually([&] { return c.state() == zkr::connection_state::suspended; }));
    boost::system::error_code ec;
    const auto t0 = clk::now();
    c.get_data("/anything", ec);
    const auto took = clk::now() - t0;
    CHECK(ec == zkr::errc::not_connected);
    // 3 attempts each waiting 300 ms for a connection, 2 sleeps of 100 ms.
    CHECK(took >= 1000ms);
    CHECK(took < 3000ms);
    try {
        c.get_data("/anything");
        FAIL("no exception");
    } catch (const zkr::error& e) {
        CHECK(e.code() == zkr::errc::not_connected);
        CHECK(e.path() == "/anything");
    }
}

TEST_CASE("an operation in flight when the connection drops is retried on reconnection") {
    zkr::test::zk_cluster zk;
    auto o = zkr::test::test_options(zk.connect_string(), 10s);
    o.retry_policy = std::make_shared<zkr::retry_forever>(100ms);
    zkr::client c(o);
    c.start();
    REQUIRE(c.block_until_connected(10s));
    c.create("/n", "v");
    // Freeze the server so the request is sent but never answered, then kill it.
    zk.pause(0);
    auto pending = c.async_get_data("/n", boost::asio::use_future);
    std::this_thread::sleep_for(300ms);
    zk.kill(0);
    zk.start(0);
    REQUIRE(pending.wait_for(20s) == std::future_status::ready);
    CHECK(pending.get().data == "v");
}

TEST_CASE("a guaranteed delete that fails during an outage completes once the server is back") {
    zkr::test::zk_cluster zk;
    auto o = zkr::test::test_options(zk.connect_string(), 10s);
    o.connection_timeout = 200ms;
    o.retry_policy = std::make_shared<zkr::retry_n_times>(1, 50ms);
    zkr::client c(o);
    c.start();
    REQUIRE(c.block_until_connected(10s));
    c.create("/doomed", "x");
    zk.stop(0);
    REQUIRE(zkr::test::eventually([&] { return c.state() == zkr::connection_state::suspended; }));
    boost::system::error_code ec;
    c.remove("/doomed", {.guaranteed = true}, ec);
    CHECK(ec == zkr::errc::not_connected);  // the caller hears the truth...
    zk.start(0);
    // ...and the delete goes through once the client reconnects.
    zkr::client observer(zkr::test::test_options(zk.connect_string()));
    observer.start();
    REQUIRE(observer.block_until_connected(10s));
    CHECK(zkr::test::eventually([&] { return !observer.exists("/doomed"); }, 20s));
}

TEST_CASE("protected create: the reply is lost after the server applied it, the node is adopted, not doubled") {
    auto& zk = zkr::test::shared_server();
    auto o = zkr::test::test_options(zk.connect_string());
    o.name_space = zkr::test::unique_namespace("protected-recovery");
    o.retry_policy = std::make_shared<zkr::retry_n_times>(3, 10ms);
    zkr::client c(o);
    c.start();
    REQUIRE(c.block_until_connected(10s));
    c.create("/queue");
    SECTION("ephemeral sequential") {
        const auto before = zkr::detail::requests_sent(zkr::detail::connection_of(c));
        zkr::detail::lose_next_replies(zkr::detail::connection_of(c), 1);
        auto r = c.create("/queue/item-", "x", {.mode = zkr::create_mode::ephemeral_sequential, .protect = true});
        // Recovery looked the node up (list + exists) instead of creating a second one.
        CHECK(zkr::detail::requests_sent(zkr::detail::connection_of(c)) - before == 3);
        const auto kids = c.get_children("/queue").children;
        REQUIRE(kids.size() == 1);
        CHECK("/queue/" + kids[0] == r.path);
        CHECK(r.stat.ephemeral_owner == c.session_id());
        CHECK(c.get_data(r.path).data == "x");
    }
    SECTION("without protection the same loss leaves a duplicate: the reason protect exists") {
        zkr::detail::lose_next_replies(zkr::detail::connection_of(c), 1);
        c.create("/queue/item-", "x", {.mode = zkr::create_mode::ephemeral_sequential});
        CHECK(c.get_children("/queue").children.size() == 2);
    }
}

TEST_CASE("protected create: given up after the server applied it, its node is found by its prefix and deleted") {
    auto& zk = zkr::test::shared_server();
    auto o = zkr::test::test_options(zk.connect_string());
    o.name_space = zkr::test::unique_namespace("protected-orphan");
    o.retry_policy = std::make_shared<zkr::retry_n_times>(0, 10ms);  // the first loss is final
    zkr::client c(o);
    c.start();
    REQUIRE(c.block_until_connected(10s));
    c.create("/queue");
    boost::system::error_code ec;
    SECTION("protected: nothing is left") {
        zkr::detail::lose_next_replies(zkr::detail::connection_of(c), 1);
        c.create("/queue/item-", "x", {.mode = zkr::create_mode::ephemeral_sequential, .protect = true}, ec);
        CHECK(ec == zkr::errc::connection_loss);
        CHECK(zkr::test::eventually([&] { return c.get_children("/queue").children.empty(); }, 10s));
        // A later create is not touched by the clean-up of the first.
        auto r = c.create("/queue/item-", "y", {.mode = zkr::create_mode::ephemeral_sequential, .protect = true});
        std::this_thread::sleep_for(200ms);
        CHECK(c.exists(r.path));
    }
    SECTION("two given up at once: each orphan is looked for once, and each node deleted once") {
        auto& conn = zkr::detail::connection_of(c);
        zkr::client observer(zkr::test::test_options(zk.connect_string()));
        observer.start();
        REQUIRE(observer.block_until_connected(10s));
        const auto before = zkr::detail::requests_sent(conn);
        zkr::detail::lose_next_replies(conn, 2);
        const zkr::create_options protect{.mode = zkr::create_mode::ephemeral_sequential, .protect = true};
        auto first = c.async_create("/queue/item-", "x", protect, boost::asio::use_future);
        auto second = c.async_create("/queue/item-", "y", protect, boost::asio::use_future);
        const auto code_of = [](auto& f) {
            try {
                f.get();
                return boost::system::error_code{};
            } catch (const boost::system::system_error& e) {
                return e.code();
            }
        };
        CHECK(code_of(first) == zkr::errc::connection_loss);
        CHECK(code_of(second) == zkr::errc::connection_loss);
        const auto queue = "/" + o.name_space + "/queue";
        CHECK(zkr::test::eventually([&] { return observer.get_children(queue).children.empty(); }, 10s));
        std::this_thread::sleep_for(300ms);
        // The two creates, one listing for each orphan, one delete for each node found. The second
        // give-up, answered before the first listing, once listed both parents again, and the
        // first node was deleted twice: eight.
        CHECK(zkr::detail::requests_sent(conn) - before == 6);
    }
    SECTION("unprotected, the same loss leaves the node for the session's life: what the clean-up is for") {
        zkr::detail::lose_next_replies(zkr::detail::connection_of(c), 1);
        c.create("/queue/item-", "x", {.mode = zkr::create_mode::ephemeral_sequential}, ec);
        CHECK(ec == zkr::errc::connection_loss);
        std::this_thread::sleep_for(300ms);
        CHECK(c.get_children("/queue").children.size() == 1);
    }
}
