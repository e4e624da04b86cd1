// Bad client options are rejected at construction, with a message; nothing connects.
#include <zkr/client.hpp>
#include <zkr/interprocess_mutex.hpp>
#include <zkr/interprocess_semaphore_v2.hpp>

#include "zkr_catch.hpp"

#include <future>

using namespace std::chrono_literals;

namespace {
zkr::client_options with(const std::string& cs) {
    zkr::client_options o;
    o.connect_string = cs;
    return o;
}
}  // namespace

TEST_CASE("connect strings") {
    CHECK_NOTHROW(zkr::client(with("127.0.0.1:2181")));
    CHECK_NOTHROW(zkr::client(with("a:1,b:2,c:3/chroot/app")));
    CHECK_NOTHROW(zkr::client(with("[::1]:2181")));
    CHECK_THROWS_WITH(zkr::client(with("")), zkr::test::contains("connect_string is empty"));
    CHECK_THROWS_WITH(zkr::client(with("localhost")), zkr::test::contains("is not host:port"));
    CHECK_THROWS_WITH(zkr::client(with("localhost:")), zkr::test::contains("is not a number in 1..65535"));
    CHECK_THROWS_WITH(zkr::client(with("localhost:99999")), zkr::test::contains("1..65535"));
    CHECK_THROWS_WITH(zkr::client(with("localhost:21x")), zkr::test::contains("is not a number"));
    CHECK_THROWS_WITH(zkr::client(with("a:1,,b:2")), zkr::test::contains("is not host:port"));
    CHECK_THROWS_WITH(zkr::client(with("a:1/bad/")), zkr::test::contains("invalid chroot"));
    CHECK_THROWS_WITH(zkr::client(with("/chroot")), zkr::test::contains("names no server"));
    try {
        zkr::client c(with(""));
    } catch (const zkr::error& e) {
        CHECK(e.code() == zkr::errc::invalid_argument);
    }
}

TEST_CASE("timeouts, namespace, policy, acl") {
    auto o = with("h:1");
    o.session_timeout = 0ms;
    CHECK_THROWS_WITH(zkr::client(o), zkr::test::contains("session_timeout must be positive"));
    o = with("h:1");
    o.session_timeout = -5ms;
    CHECK_THROWS_WITH(zkr::client(o), zkr::test::contains("got -5 ms"));
    o = with("h:1");
    o.connection_timeout = 0ms;
    CHECK_THROWS_WITH(zkr::client(o), zkr::test::contains("connection_timeout must be positive"));
    o = with("h:1");
    o.blocking_call_spin = -1us;
    CHECK_THROWS_WITH(zkr::client(o), zkr::test::contains("blocking_call_spin must be between 0 and 10 ms") && zkr::test::contains("got -1 us"));
    o = with("h:1");
    o.blocking_call_spin = 20ms;
    CHECK_THROWS_WITH(zkr::client(o), zkr::test::contains("got 20000 us"));
    o = with("h:1");
    o.blocking_call_spin = 0us;
    CHECK_NOTHROW(zkr::client(o));
    o = with("h:1");
    o.name_space = "/app";
    CHECK_THROWS_WITH(zkr::client(o), zkr::test::contains("must not start with '/'"));
    o = with("h:1");
    o.name_space = "a//b";
    CHECK_THROWS_WITH(zkr::client(o), zkr::test::contains("empty segment"));
    o = with("h:1");
    o.retry_policy = nullptr;
    CHECK_THROWS_WITH(zkr::client(o), zkr::test::contains("retry_policy is null"));
    o = with("h:1");
    o.default_acl.clear();
    CHECK_THROWS_WITH(zkr::client(o), zkr::test::contains("default_acl is empty"));
    o = with("h:1");
    o.auth.push_back({"digest", "nopassword"});
    CHECK_THROWS_WITH(zkr::client(o), zkr::test::contains("user:password"));
}

TEST_CASE("an operation before start() fails, a client never started closes cleanly") {
    zkr::client c(with("127.0.0.1:1"));
    boost::system::error_code ec;
    c.exists("/a", ec);
    CHECK(ec == zkr::errc::not_connected);
    // Async: an error_code only, whose message names the likely cause (issue 43 item 14).
    std::promise<boost::system::error_code> heard;
    c.async_exists("/a", [&](boost::system::error_code e, std::optional<zkr::stat>) { heard.set_value(e); });
    const auto async_ec = heard.get_future().get();
    CHECK(async_ec == zkr::errc::not_connected);
    CHECK_THAT(async_ec.message(), zkr::test::contains("never start()ed"));
    c.close();
    c.close();  // idempotent
    c.exists("/a", ec);
    CHECK(ec == zkr::errc::closed);
    CHECK_THROWS_AS(c.start(), zkr::error);
}

TEST_CASE("a lock path in ZooKeeper's system tree is refused, unless a namespace moves it elsewhere") {
    zkr::client plain(with("127.0.0.1:2181"));
    for (const char* p : {"/zookeeper", "/zookeeper/x", "/zookeeper/quota/jobs"}) {
        INFO(p);
        CHECK_THROWS_WITH(zkr::interprocess_mutex(plain, p), zkr::test::contains("system tree"));
        CHECK_THROWS_AS(zkr::interprocess_semaphore_v2(plain, p, 2), zkr::error);
    }
    CHECK_NOTHROW(zkr::interprocess_mutex(plain, "/zookeeperish/x"));
    auto o = with("127.0.0.1:2181");
    o.name_space = "app";
    zkr::client namespaced(o);
    CHECK_NOTHROW(zkr::interprocess_mutex(namespaced, "/zookeeper/x"));  // that is /app/zookeeper/x
}

TEST_CASE("not connected says why: never started, or what was waited for and how long") {
    zkr::client never(with("127.0.0.1:1"));
    CHECK_THROWS_WITH(never.exists("/a"), zkr::test::contains("call client::start() first"));
    auto o = with("127.0.0.1:1");  // nothing listens there
    o.retry_policy = std::make_shared<zkr::retry_n_times>(2, 50ms);
    o.connection_timeout = 300ms;
    zkr::client c(o);
    c.start();
    try {
        c.exists("/a");
        FAIL("no throw");
    } catch (const zkr::error& e) {
        CHECK(e.code() == zkr::errc::not_connected);
        CHECK_THAT(std::string(e.what()), zkr::test::contains("not connected to ZooKeeper at 127.0.0.1:1: waited"));
        CHECK_THAT(std::string(e.what()), zkr::test::contains("block_until_connected()"));
    }
}
