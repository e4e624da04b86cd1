// The three completion styles: callback, use_future, use_awaitable.
#include "shared_server.hpp"

#include <zkr/detail/asio.hpp>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include "zkr_catch.hpp"

using namespace std::chrono_literals;

namespace {
struct styles_fixture {
    zkr::client c{[] {
        auto o = zkr::test::test_options(zkr::test::shared_server().connect_string());
        o.name_space = zkr::test::unique_namespace("styles");
        return o;
    }()};
    styles_fixture() {
        c.start();
        REQUIRE(c.block_until_connected(10s));
    }
};
}  // namespace

TEST_CASE("callbacks: run on the callback thread, never the caller's") {
    styles_fixture f;
    std::promise<std::pair<boost::system::error_code, zkr::create_result>> created;
    const auto caller = std::this_thread::get_id();
    std::thread::id ran_on;
    f.c.async_create("/cb", "v", {}, [&](boost::system::error_code ec, zkr::create_result r) {
        ran_on = std::this_thread::get_id();
        created.set_value({ec, std::move(r)});
    });
    auto [ec, r] = created.get_future().get();
    CHECK_FALSE(ec);
    CHECK(r.path == "/cb");
    CHECK(ran_on != caller);

    std::promise<zkr::children_result> listed;
    f.c.async_get_children("/", [&](boost::system::error_code e, zkr::children_result c) {
        CHECK_FALSE(e);
        listed.set_value(std::move(c));
    });
    CHECK(listed.get_future().get().children == std::vector<std::string>{"cb"});

    std::promise<boost::system::error_code> failed;
    f.c.async_create("/cb", "v", {}, [&](boost::system::error_code e, zkr::create_result) { failed.set_value(e); });
    CHECK(failed.get_future().get() == zkr::errc::node_exists);
}

// The order a listener or the observer hears events in is the order they were posted in, even
// when one comes from the callback thread itself and the next from another thread while the
// first's handler still runs (a selector's term: "gained" posted by the callback handler that
// starts the term's thread, "ended" by that thread, which may return at once).
TEST_CASE("callbacks: run in the order they were posted, whichever thread posted them") {
    styles_fixture f;
    const auto callbacks = zkr::detail::callback_executor(zkr::detail::connection_of(f.c));
    std::mutex m;
    std::vector<std::string> order;
    std::promise<void> both_ran;
    const auto note = [&](const char* what) {
        std::lock_guard lock(m);
        order.emplace_back(what);
        if (order.size() == 2) both_ran.set_value();
    };
    boost::asio::post(callbacks, [&] {
        boost::asio::post(callbacks, [&] { note("first, from the callback thread"); });
        std::thread([&] { boost::asio::post(callbacks, [&] { note("second, from another thread"); }); }).join();
    });
    REQUIRE(both_ran.get_future().wait_for(10s) == std::future_status::ready);
    std::lock_guard lock(m);
    CHECK(order == std::vector<std::string>{"first, from the callback thread", "second, from another thread"});
}

TEST_CASE("callbacks bound to the user's executor run there") {
    styles_fixture f;
    boost::asio::io_context user;
    bool done = false;
    f.c.async_create("/bound", "", {}, boost::asio::bind_executor(user, [&](boost::system::error_code ec, zkr::create_result) {
        CHECK_FALSE(ec);
        done = true;
    }));
    user.run_for(5s);
    CHECK(done);
}

TEST_CASE("use_future: results, and errors as exceptions") {
    styles_fixture f;
    auto r = f.c.async_create("/fut", "v", {}, boost::asio::use_future).get();
    CHECK(r.path == "/fut");
    auto kids = f.c.async_get_children("/", boost::asio::use_future).get();
    CHECK(kids.children == std::vector<std::string>{"fut"});
    auto again = f.c.async_create("/fut", "v", {}, boost::asio::use_future);
    CHECK_THROWS_AS(again.get(), boost::system::system_error);
    f.c.async_remove("/fut", {}, boost::asio::use_future).get();
    CHECK_FALSE(f.c.async_exists("/fut", boost::asio::use_future).get());
}

TEST_CASE("use_awaitable: in a coroutine") {
    styles_fixture f;
    boost::asio::io_context user;
    bool finished = false;
    boost::asio::co_spawn(
        user,
        [&]() -> boost::asio::awaitable<void> {
            auto r = co_await f.c.async_create("/co", "v", {}, boost::asio::use_awaitable);
            CHECK(r.path == "/co");
            auto kids = co_await f.c.async_get_children("/", boost::asio::use_awaitable);
            CHECK(kids.children == std::vector<std::string>{"co"});
            try {
                co_await f.c.async_create("/co", "v", {}, boost::asio::use_awaitable);
                FAIL("no exception");
            } catch (const boost::system::system_error& e) {
                CHECK(e.code() == zkr::errc::node_exists);
            }
            auto d = co_await f.c.async_get_data("/co", boost::asio::use_awaitable);
            CHECK(d.data == "v");
            finished = true;
        },
        boost::asio::detached);
    user.run_for(10s);
    CHECK(finished);
}
