// Bad input and misuse: a clear error before anything is sent, no crash, nothing left behind.
#include "shared_server.hpp"

#include "zkr_catch.hpp"

#include <boost/asio/use_future.hpp>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

using namespace std::chrono_literals;

namespace {
struct misuse_fixture {
    std::string ns = zkr::test::unique_namespace("misuse");
    zkr::client c{[&] {
        auto o = zkr::test::test_options(zkr::test::shared_server().connect_string());
        o.name_space = ns;
        return o;
    }()};
    misuse_fixture() {
        c.start();
        REQUIRE(c.block_until_connected(10s));
    }
};

void check_rejected(const std::function<void()>& f, zkr::errc code, const std::string& says) {
    try {
        f();
        FAIL("no exception; expected " << says);
    } catch (const zkr::error& e) {
        CHECK(e.code() == code);
        CHECK_THAT(e.what(), zkr::test::contains(says));
    }
}
}  // namespace

TEST_CASE("bad paths are rejected with the reason, for every operation") {
    misuse_fixture f;
    auto& c = f.c;
    check_rejected([&] { c.create("no-slash"); }, zkr::errc::invalid_path, "must start with '/'");
    check_rejected([&] { c.create("/trailing/"); }, zkr::errc::invalid_path, "must not end with '/'");
    check_rejected([&] { c.create("/a//b"); }, zkr::errc::invalid_path, "empty segment");
    check_rejected([&] { c.get_data("/a/../b"); }, zkr::errc::invalid_path, "'..'");
    check_rejected([&] { c.exists("/a/./b"); }, zkr::errc::invalid_path, "'.'");
    check_rejected([&] { c.get_children(std::string("/a\0b", 4)); }, zkr::errc::invalid_path, "NUL");
    check_rejected([&] { c.set_data("/a\tb", "x"); }, zkr::errc::invalid_path, "control character");
    check_rejected([&] { c.remove(""); }, zkr::errc::invalid_path, "empty");
    check_rejected([&] { c.remove("/"); }, zkr::errc::invalid_path, "cannot delete the root");
    check_rejected([&] { c.create("/"); }, zkr::errc::invalid_path, "cannot create the root");
    check_rejected([&] { c.multi({zkr::multi_op::create("bad")}); }, zkr::errc::invalid_path, "multi operation 0");
    boost::system::error_code ec;
    c.create("bad", "", {}, ec);
    CHECK(ec == zkr::errc::invalid_path);
    // Nothing reached the server: the namespace was never even created.
    zkr::client raw(zkr::test::test_options(zkr::test::shared_server().connect_string()));
    raw.start();
    REQUIRE(raw.block_until_connected(10s));
    CHECK_FALSE(raw.exists("/" + f.ns));
}

TEST_CASE("a sync call that throws names its path, however it failed") {
    const auto path_of = [](const std::function<void()>& call) {
        try {
            call();
        } catch (const zkr::error& e) {
            CHECK_THAT(e.what(), zkr::test::contains(e.path()));
            return e.path();
        }
        FAIL("no exception");
        return std::string();
    };
    misuse_fixture f;
    // The server's answer, the check before sending, and the escaped form of a bad byte.
    CHECK(path_of([&] { (void)f.c.get_data("/missing/node"); }) == "/missing/node");
    CHECK(path_of([&] { f.c.remove("/missing/node"); }) == "/missing/node");
    CHECK(path_of([&] { f.c.create("/missing/parent/x"); }) == "/missing/parent/x");
    CHECK(path_of([&] { (void)f.c.get_data("/a/../b"); }) == "/a/../b");
    CHECK(path_of([&] { f.c.set_data("/a\tb", "x"); }) == "/a\\x09b");
    // Refused before anything is queued: never started, then closed.
    zkr::client idle(zkr::test::test_options(zkr::test::shared_server().connect_string()));
    CHECK(path_of([&] { (void)idle.exists("/not/started"); }) == "/not/started");
    idle.close();
    CHECK(path_of([&] { (void)idle.get_children("/after/close"); }) == "/after/close");
}

TEST_CASE("bad arguments: versions, ttl, acl, empty multi, oversized data") {
    misuse_fixture f;
    auto& c = f.c;
    check_rejected([&] { c.set_data("/a", "x", -2); }, zkr::errc::invalid_argument, "version must be -1");
    check_rejected([&] { c.remove("/a", {.version = -7}); }, zkr::errc::invalid_argument, "version");
    check_rejected([&] { c.create("/t", "", {.mode = zkr::create_mode::persistent_with_ttl}); },
                   zkr::errc::invalid_argument, "ttl must be positive");
    check_rejected([&] { c.create("/t", "", {.ttl = 5ms}); }, zkr::errc::invalid_argument, "only allowed with");
    check_rejected([&] { c.create("/t", "", {.acl = zkr::acl_list{}}); }, zkr::errc::invalid_argument, "ACL is empty");
    check_rejected([&] { c.multi({}); }, zkr::errc::invalid_argument, "at least one operation");
    const std::string big(1024 * 1024 + 1, 'x');
    check_rejected([&] { c.create("/big", big); }, zkr::errc::data_too_large, "over ZooKeeper's limit");
    check_rejected([&] { c.set_data("/big", big); }, zkr::errc::data_too_large, "limit");
    // Just under the limit works.
    const std::string fits(1000 * 1000, 'y');
    c.create("/fits", fits);
    CHECK(c.get_data("/fits").data.size() == fits.size());
}

TEST_CASE("async operations report bad input through the completion, not inline") {
    misuse_fixture f;
    auto fut = f.c.async_get_data("relative", boost::asio::use_future);
    try {
        fut.get();
        FAIL("no exception");
    } catch (const boost::system::system_error& e) {
        CHECK(e.code() == zkr::errc::invalid_path);
    }
}

TEST_CASE("close() with operations pending: they complete with closed, no thread is left") {
    auto& zk = zkr::test::shared_server();
    zk.four_letter(0, "ruok");
    const int threads_before = zkr::test::thread_count();
    std::vector<std::future<zkr::data_result>> pending;
    {
        auto o = zkr::test::test_options("127.0.0.1:1");  // nothing listens: operations wait
        o.connection_timeout = 60s;
        zkr::client c(o);
        c.start();
        for (int i = 0; i < 20; ++i) pending.push_back(c.async_get_data("/x", boost::asio::use_future));
        std::this_thread::sleep_for(100ms);
        c.close();
        for (auto& p : pending) {
            REQUIRE(p.wait_for(5s) == std::future_status::ready);
            try {
                p.get();
                FAIL("no exception");
            } catch (const boost::system::system_error& e) {
                CHECK(e.code() == zkr::errc::closed);
            }
        }
        // Use after close: a clear error, at once.
        boost::system::error_code ec;
        c.exists("/x", ec);
        CHECK(ec == zkr::errc::closed);
        CHECK(c.state() == zkr::connection_state::closed);
        CHECK_FALSE(c.block_until_connected(10ms));
    }
    CHECK(zkr::test::thread_count() == threads_before);
}

TEST_CASE("closing a connected client with a watch pending fires not_watching, ephemerals go") {
    misuse_fixture f;
    zkr::client observer(zkr::test::test_options(zkr::test::shared_server().connect_string()));
    observer.start();
    REQUIRE(observer.block_until_connected(10s));
    f.c.create("/eph", "", {.mode = zkr::create_mode::ephemeral});
    std::promise<zkr::watch_event> fired;
    f.c.exists("/nothing", [&](const zkr::watch_event& e) { fired.set_value(e); });
    f.c.close();
    auto fut = fired.get_future();
    REQUIRE(fut.wait_for(5s) == std::future_status::ready);
    CHECK(fut.get().type == zkr::watch_event_type::not_watching);
    CHECK_FALSE(observer.exists("/" + f.ns + "/eph"));
}

TEST_CASE("an unreachable server: block_until_connected is false, operations fail with not_connected") {
    auto o = zkr::test::test_options("127.0.0.1:1");
    o.connection_timeout = 200ms;
    o.retry_policy = std::make_shared<zkr::retry_n_times>(1, 10ms);
    zkr::client c(o);
    c.start();
    CHECK_FALSE(c.block_until_connected(300ms));
    CHECK(c.state() == zkr::connection_state::latent);
    try {
        c.create("/x");
        FAIL("no exception");
    } catch (const zkr::error& e) {
        CHECK(e.code() == zkr::errc::not_connected);
    }
}

TEST_CASE("an unresolvable host name does not crash, the client keeps trying") {
    auto o = zkr::test::test_options("no-such-host.invalid:2181");
    o.connection_timeout = 200ms;
    o.retry_policy = std::make_shared<zkr::retry_n_times>(0, 10ms);
    zkr::client c(o);
    c.start();
    boost::system::error_code ec;
    c.exists("/x", ec);
    CHECK(ec == zkr::errc::not_connected);
}

TEST_CASE("state listeners stop when their subscription goes") {
    misuse_fixture f;
    std::atomic<int> calls{0};
    {
        auto sub = f.c.add_state_listener([&](zkr::connection_state) { ++calls; });
    }
    CHECK_THROWS_AS(f.c.add_state_listener(nullptr), zkr::error);
    f.c.close();
    std::this_thread::sleep_for(100ms);
    CHECK(calls == 0);
}

TEST_CASE("the C client's log lines go to the injected logger at their level, not the default logger") {
    auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(200);
    auto logger = std::make_shared<spdlog::logger>("injected", sink);
    logger->set_level(spdlog::level::debug);
    auto default_sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(200);
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("default", default_sink));
    auto o = zkr::test::test_options("127.0.0.1:1");  // refused: the C client logs an error
    o.logger = logger;
    o.connection_timeout = 300ms;
    {
        zkr::client c(o);
        c.start();
        CHECK_FALSE(c.block_until_connected(500ms));
    }
    bool c_client_error = false;
    for (const auto& line : sink->last_formatted()) {
        if (line.find("zookeeper:") != std::string::npos && line.find("[error]") != std::string::npos &&
            line.find("ZOO_ERROR") != std::string::npos)
            c_client_error = true;
    }
    CHECK(c_client_error);
    CHECK(default_sink->last_formatted().empty());
}
