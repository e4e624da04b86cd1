// Holds that belong to whoever acquired them (coroutines on several threads), async operations
// that outlive their recipe object, stop tokens tied to Asio objects, and deadlines with no server.
#include "recipe_checks.hpp"

#include <zkr/cancellation_link.hpp>
#include <zkr/fair_lock.hpp>
#include <zkr/interprocess_mutex.hpp>
#include <zkr/interprocess_semaphore_mutex.hpp>
#include <zkr/interprocess_semaphore_v2.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include "zkr_catch.hpp"

#include <atomic>
#include <future>
#include <thread>

using namespace std::chrono_literals;
using clk = std::chrono::steady_clock;
using zkr::test::connect;

namespace {

// One hold of any recipe with async_acquire, as a lock_hold (a semaphore's: its one lease).
template <typename Recipe>
boost::asio::awaitable<zkr::lock_hold> acquire_one(Recipe& r) {
    if constexpr (std::is_same_v<Recipe, zkr::interprocess_semaphore_v2>) {
        auto leases = co_await r.async_acquire(1, 10s, boost::asio::use_awaitable);
        if (leases.empty()) co_return zkr::lock_hold{};
        co_return std::move(leases.front());
    } else {
        co_return co_await r.async_acquire(10s, boost::asio::use_awaitable);
    }
}

template <typename Recipe>
std::unique_ptr<Recipe> make_recipe(zkr::client& c, const std::string& path) {
    if constexpr (std::is_same_v<Recipe, zkr::interprocess_semaphore_v2>) return std::make_unique<Recipe>(c, path, 1);
    else return std::make_unique<Recipe>(c, path);
}

// 4 coroutines on an io_context run by 2 threads: each acquires, awaits a timer, releases, 50
// times. A coroutine may resume on either thread; its hold is its lock_hold's, so its release
// always ends its own hold (never lock_not_held, never someone else's).
template <typename Recipe>
void coroutines_take_turns() {
    auto& zk = zkr::test::shared_server();
    const auto path = zkr::test::recipe_path("coroutines");
    auto c = connect(zk.connect_string());
    auto recipe = make_recipe<Recipe>(*c, path);
    boost::asio::io_context io;
    constexpr int coroutines = 4, rounds = 50;
    std::atomic<int> holding{0}, most_at_once{0}, completed{0}, failures{0}, resumed_elsewhere{0};
    std::vector<std::int64_t> tokens;
    std::mutex tokens_mutex;
    for (int i = 0; i < coroutines; ++i) {
        boost::asio::co_spawn(
            io,
            [&]() -> boost::asio::awaitable<void> {
                boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor);
                for (int round = 0; round < rounds; ++round) {
                    const auto before = std::this_thread::get_id();
                    zkr::lock_hold h = co_await acquire_one(*recipe);
                    if (!h) {
                        ++failures;
                        continue;
                    }
                    if (std::this_thread::get_id() != before) ++resumed_elsewhere;
                    const int now = ++holding;
                    int seen = most_at_once.load();
                    while (now > seen && !most_at_once.compare_exchange_weak(seen, now)) {
                    }
                    {
                        std::lock_guard lock(tokens_mutex);
                        tokens.push_back(h.fencing_token());
                    }
                    timer.expires_after(1ms);
                    co_await timer.async_wait(boost::asio::use_awaitable);
                    --holding;
                    co_await h.async_release(boost::asio::use_awaitable);  // throws on lock_not_held
                    ++completed;
                }
            },
            [&](std::exception_ptr e) {
                if (e) ++failures;
            });
    }
    std::thread second([&] { io.run(); });
    io.run();
    second.join();
    CHECK(failures == 0);
    CHECK(completed == coroutines * rounds);
    CHECK(most_at_once == 1);
    CHECK(std::is_sorted(tokens.begin(), tokens.end()));
    CHECK(std::adjacent_find(tokens.begin(), tokens.end()) == tokens.end());
    INFO("resumed on the other thread " << resumed_elsewhere << " times");
    CHECK(zkr::test::eventually([&] { return zkr::test::nodes_under(*c, path) == 0; }, 5s));
}

}  // namespace

TEST_CASE("coroutines on two threads take an interprocess_mutex in turn, and each release ends its own hold") {
    coroutines_take_turns<zkr::interprocess_mutex>();
}
TEST_CASE("coroutines on two threads take a fair_lock in turn, and each release ends its own hold") {
    coroutines_take_turns<zkr::fair_lock>();
}
TEST_CASE("coroutines on two threads take a one-lease semaphore in turn, and each release ends its own hold") {
    coroutines_take_turns<zkr::interprocess_semaphore_v2>();
}

// The recipe object goes while its async acquire waits: the acquire ends with cancelled, and its
// completion touches nothing of the object (ASan checks that in the sanitized build).
template <typename Recipe>
void pending_acquire_outlives_recipe() {
    auto& zk = zkr::test::shared_server();
    const auto path = zkr::test::recipe_path("outlived");
    auto a = connect(zk.connect_string());
    auto b = connect(zk.connect_string());
    auto holder = make_recipe<Recipe>(*a, path);
    boost::asio::io_context io;
    std::optional<zkr::lock_hold> held;
    boost::asio::co_spawn(io, [&]() -> boost::asio::awaitable<void> { held = co_await acquire_one(*holder); }, boost::asio::detached);
    io.run();
    REQUIRE(held);
    REQUIRE(*held);

    auto waiter = make_recipe<Recipe>(*b, path);
    std::promise<boost::system::error_code> outcome;
    if constexpr (std::is_same_v<Recipe, zkr::interprocess_semaphore_v2>)
        waiter->async_acquire(1, 10s, [&](boost::system::error_code ec, std::vector<zkr::lease>) { outcome.set_value(ec); });
    else
        waiter->async_acquire(10s, [&](boost::system::error_code ec, zkr::lock_hold) { outcome.set_value(ec); });
    REQUIRE(zkr::test::eventually([&] { return zkr::test::nodes_under(*a, path) == 2; }, 5s));
    waiter.reset();
    auto f = outcome.get_future();
    REQUIRE(f.wait_for(5s) == std::future_status::ready);
    CHECK(f.get() == zkr::errc::cancelled);
    CHECK(zkr::test::eventually([&] { return zkr::test::nodes_under(*a, path) == 1; }, 5s));
    held->release();
    CHECK(zkr::test::eventually([&] { return zkr::test::nodes_under(*a, path) == 0; }, 5s));
}

TEST_CASE("an async acquire pending when its interprocess_mutex is destroyed ends with cancelled") {
    pending_acquire_outlives_recipe<zkr::interprocess_mutex>();
}
TEST_CASE("an async acquire pending when its fair_lock is destroyed ends with cancelled") {
    pending_acquire_outlives_recipe<zkr::fair_lock>();
}
TEST_CASE("an async acquire pending when its semaphore is destroyed ends with cancelled") {
    pending_acquire_outlives_recipe<zkr::interprocess_semaphore_v2>();
}

TEST_CASE("a cancellation_link cancels a coroutine's timer when its hold is lost") {
    auto& zk = zkr::test::shared_server();
    const auto path = zkr::test::recipe_path("linked");
    auto c = connect(zk.connect_string());
    auto other = connect(zk.connect_string());
    zkr::interprocess_mutex m(*c, path);
    boost::asio::io_context io;
    boost::system::error_code waited;
    std::atomic<bool> acquired{false};
    clk::time_point cancelled_at;
    boost::asio::co_spawn(
        io,
        [&]() -> boost::asio::awaitable<void> {
            auto hold = co_await m.async_acquire(5s, boost::asio::use_awaitable);
            boost::asio::steady_timer long_job(co_await boost::asio::this_coro::executor, 60s);
            zkr::cancellation_link link(hold.stop_token(), long_job.get_executor(), [&] { long_job.cancel(); });
            acquired = true;
            try {
                co_await long_job.async_wait(boost::asio::use_awaitable);
            } catch (const boost::system::system_error& e) {
                waited = e.code();
            }
            cancelled_at = clk::now();
        },
        boost::asio::detached);
    std::thread runner([&] { io.run(); });
    REQUIRE(zkr::test::eventually([&] { return acquired.load(); }, 10s));
    std::this_thread::sleep_for(300ms);  // the holder watches its own node from 100 ms on
    const auto nodes = m.participant_nodes();
    REQUIRE(nodes.size() == 1);
    const auto deleted_at = clk::now();
    other->remove(nodes.front());
    runner.join();  // the coroutine ends once its timer is cancelled
    CHECK(waited == boost::asio::error::operation_aborted);
    CHECK(cancelled_at - deleted_at < 2s);
}

TEST_CASE("no server reachable: try_lock answers at once, every timed call within its duration") {
    auto o = zkr::test::test_options("127.0.0.1:1");
    o.connection_timeout = 15s;  // the default: no call may lean on it
    zkr::client c(o);
    c.start();
    zkr::interprocess_mutex m(c, "/unreachable/lock");
    zkr::fair_lock f(c, "/unreachable/lock");
    zkr::interprocess_semaphore_mutex sm(c, "/unreachable/sem");
    zkr::interprocess_semaphore_v2 sem(c, "/unreachable/sem2", 2);
    // Returns how long fn took; it must fail with not_connected (nobody could be asked).
    auto timed = [](const char* what, auto fn) {
        INFO(what);
        const auto t0 = clk::now();
        try {
            fn();
            FAIL_CHECK("no error");
        } catch (const boost::system::system_error& e) {  // zkr::error, or use_future's
            CHECK(e.code() == zkr::errc::not_connected);
        }
        return clk::now() - t0;
    };
    const auto slack = zkr::test::scheduling_slack;
    CHECK(timed("mutex try_lock", [&] { (void)m.try_lock(); }) < slack);
    CHECK(timed("fair_lock try_lock", [&] { (void)f.try_lock(); }) < slack);
    CHECK(timed("semaphore_mutex try_lock", [&] { (void)sm.try_lock(); }) < slack);
    CHECK(timed("semaphore acquire(0ms)", [&] { (void)sem.acquire(0ms); }) < slack);
    CHECK(timed("mutex try_lock_for(500ms)", [&] { (void)m.try_lock_for(500ms); }) < 500ms + slack);
    CHECK(timed("fair_lock try_lock_for(500ms)", [&] { (void)f.try_lock_for(500ms); }) < 500ms + slack);
    CHECK(timed("semaphore_mutex try_lock_for(500ms)", [&] { (void)sm.try_lock_for(500ms); }) < 500ms + slack);
    CHECK(timed("mutex acquire(2s)", [&] { (void)m.acquire(2s); }) < 2s + slack);
    CHECK(timed("semaphore acquire(2, 500ms)", [&] { (void)sem.acquire_many(2, 500ms); }) < 500ms + slack);
    CHECK(timed("async_acquire(500ms)", [&] { (void)m.async_acquire(500ms, boost::asio::use_future).get(); }) < 500ms + slack);
    CHECK(timed("async_acquire(0ms)", [&] { (void)f.async_acquire(0ms, boost::asio::use_future).get(); }) < slack);
}
