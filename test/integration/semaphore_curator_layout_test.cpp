// interprocess_semaphore_v2 in Curator's layout (semaphore_layout::curator) against a real
// ZooKeeper: zkr processes and sessions among themselves. With Curator's own processes on the same
// path: curator_interop_test.cpp.
#include "build_paths.hpp"
#include "client_hooks.hpp"  // the client's hooks for tests (src/)
#include "recipe_checks.hpp"

#include "../../recipes/queue/lock_driver.hpp"  // a step's cancellation, below

#include <zkr/interprocess_semaphore_mutex.hpp>
#include <zkr/interprocess_semaphore_v2.hpp>

#include <boost/asio/use_future.hpp>

#include "zkr_catch.hpp"

#include <algorithm>
#include <future>
#include <mutex>
#include <thread>

using namespace std::chrono_literals;
using clk = std::chrono::steady_clock;
using zkr::hold_state;
using zkr::test::connect;
using zkr::test::nodes_under;

namespace {

constexpr zkr::semaphore_options curator_layout{zkr::semaphore_layout::curator};

std::string layout_path(const std::string& name) { return zkr::test::recipe_path(name, "curator-sem"); }
std::string leases_of(const std::string& path) { return path + "/leases"; }
std::string locks_of(const std::string& path) { return path + "/locks"; }

// The zkr::error that fn throws, as "<code value>: <what>"; "" when it throws none.
template <typename F>
std::string error_of(F fn) {
    try {
        fn();
    } catch (const zkr::error& e) {
        return std::to_string(e.code().value()) + ": " + e.what();
    }
    return {};
}
std::string code_prefix(zkr::errc e) { return std::to_string(make_error_code(e).value()) + ": "; }

}  // namespace

TEST_CASE("semaphore, Curator's layout: separate processes with random qty never hold more than max, and all get through") {
    auto& zk = zkr::test::shared_server();
    const auto path = layout_path("procs");
    const auto log = zkr::test::temp_file("log"), counter = zkr::test::temp_file("counter");
    std::vector<zkr::test::child_process> workers;
    for (int i = 0; i < 6; ++i)
        workers.emplace_back(std::vector<std::string>{ZKR_LOCK_WORKER, zk.connect_string(), "curator_semaphore:3:0", path, "8", "10",
                                                      log, counter});
    for (auto& w : workers) CHECK(w.wait() == 0);
    const auto r = zkr::test::check_log(log);
    CHECK(r.acquisitions == 6 * 8);
    CHECK(r.max_concurrent <= 3);
    CHECK(r.max_concurrent >= 2);
    CHECK(r.tokens_unique);
    // Nothing is left: the lease and lock nodes went, and the containers with them.
    auto c = connect(zk.connect_string());
    CHECK(zkr::test::eventually([&] { return !c->exists(path); }, 15s));
    std::remove(log.c_str());
    std::remove(counter.c_str());
}

TEST_CASE("semaphore, Curator's layout: one node per lease under path/leases, an inner mutex under path/locks, two round trips") {
    auto& zk = zkr::test::shared_server();
    const auto path = layout_path("layout");
    auto a = connect(zk.connect_string());
    auto watcher = connect(zk.connect_string());  // its requests are not counted
    zkr::test::plain_folder(*a, leases_of(path));  // (never reaped: see plain_folder)
    zkr::test::plain_folder(*a, locks_of(path));
    zkr::interprocess_semaphore_v2 s(*a, path, 3, curator_layout);
    s.acquire().close();
    const auto sent = [&] { return zkr::detail::requests_sent(zkr::detail::connection_of(*a)); };
    // The mutex: create + list (one round trip); each lease: create + list; the mutex's delete
    // goes out without being waited for. (Curator: 5 round trips per lease.) Counted from once the
    // first acquire's inner mutex is gone and the client has sent nothing for 200 ms.
    REQUIRE(zkr::test::eventually([&] { return nodes_under(*watcher, locks_of(path)) == 0 && nodes_under(*watcher, leases_of(path)) == 0; }, 5s));
    REQUIRE(zkr::test::eventually(
        [&] {
            const auto n = sent();
            std::this_thread::sleep_for(200ms);
            return sent() == n;
        },
        10s));
    const auto before = sent();
    auto two = s.acquire_many(2);
    REQUIRE(two.size() == 2);
    CHECK(zkr::test::eventually([&] { return nodes_under(*watcher, locks_of(path)) == 0; }, 5s));
    CHECK(sent() - before == 2 + 2 * 2 + 1);
    CHECK(two[0].node_path() != two[1].node_path());
    for (const auto& l : two) {
        CHECK(zkr::parent_path(l.node_path()) == leases_of(path));
        CHECK(l.node_name().rfind("_c_", 0) == 0);
        CHECK_THAT(l.node_name(), zkr::test::contains("-lease-"));
        CHECK(l.state() == hold_state::held);
    }
    CHECK(two[0].fencing_token() < two[1].fencing_token());
    CHECK(s.participant_nodes().size() == 2);
    CHECK(nodes_under(*a, leases_of(path)) == 2);
    two[0].close();
    CHECK(nodes_under(*a, leases_of(path)) == 1);
    two[1].close();
    CHECK(nodes_under(*a, leases_of(path)) == 0);
}

TEST_CASE("semaphore, Curator's layout: a timed acquire on a full semaphore returns empty in time, all or nothing, leaving no node") {
    auto& zk = zkr::test::shared_server();
    const auto path = layout_path("timed");
    auto a = connect(zk.connect_string());
    auto b = connect(zk.connect_string());
    zkr::interprocess_semaphore_v2 sa(*a, path, 2, curator_layout), sb(*b, path, 2, curator_layout);
    auto held = sa.acquire();
    const auto start = clk::now();
    // One lease is free, two are asked for: the one taken goes back when the time is up.
    CHECK_FALSE(sb.acquire_many(2, 300ms));
    const auto waited = clk::now() - start;
    CHECK(waited >= 300ms);
    CHECK(waited < 300ms + 2s);
    CHECK(zkr::test::eventually([&] { return nodes_under(*a, leases_of(path)) == 1; }, 5s));
    CHECK(zkr::test::eventually([&] { return nodes_under(*a, locks_of(path)) == 0; }, 5s));
    auto second = sb.acquire(0ms);  // tries once: one lease is free
    REQUIRE(second);
    CHECK_FALSE(sb.acquire(0ms));
    CHECK_FALSE(sa.acquire(100ms));
    CHECK(zkr::test::eventually([&] { return nodes_under(*a, leases_of(path)) == 2; }, 5s));
    held.close();
    auto got = sa.acquire(5s);
    REQUIRE(got);
}

TEST_CASE("semaphore, Curator's layout: two clients each asking for qty = max both complete (the inner mutex is held through all leases)") {
    auto& zk = zkr::test::shared_server();
    const auto path = layout_path("no-deadlock");
    auto a = connect(zk.connect_string());
    auto b = connect(zk.connect_string());
    auto c = connect(zk.connect_string());
    zkr::interprocess_semaphore_v2 sa(*a, path, 3, curator_layout), sb(*b, path, 3, curator_layout), sc(*c, path, 3, curator_layout);
    auto one = sc.acquire();  // both must wait, each holding none of the others' leases
    auto fa = std::async(std::launch::async, [&] { return sa.acquire_many(3); });
    auto fb = std::async(std::launch::async, [&] { return sb.acquire_many(3); });
    std::this_thread::sleep_for(200ms);
    one.close();
    // Whoever is first holds all three and then returns them; the other follows. Curator's
    // acquire(3) takes one lease at a time between turns of the inner mutex: both could hold
    // some and wait for ever.
    const auto ready = [](auto& f) { return f.wait_for(0s) == std::future_status::ready; };
    REQUIRE(zkr::test::eventually([&] { return ready(fa) || ready(fb); }, 10s));
    auto first = ready(fa) ? &fa : &fb;
    auto second = first == &fa ? &fb : &fa;
    std::this_thread::sleep_for(200ms);
    CHECK_FALSE(ready(*second));  // all three are the first one's
    first->get().clear();         // returns all three
    REQUIRE(second->wait_for(10s) == std::future_status::ready);
    CHECK(second->get().size() == 3);
}

TEST_CASE("semaphore, Curator's layout: async_acquire, cancel, and a holder's session that expires") {
    auto& zk = zkr::test::shared_server();
    const auto path = layout_path("async");
    auto a = connect(zk.connect_string(), 2s);
    auto b = connect(zk.connect_string(), 2s);
    zkr::interprocess_semaphore_v2 sa(*a, path, 1, curator_layout), sb(*b, path, 1, curator_layout);
    std::promise<void> lost;
    std::once_flag once;
    auto sub = sa.add_hold_listener([&](hold_state s) {
        if (s == hold_state::lost) std::call_once(once, [&] { lost.set_value(); });
    });
    auto held = sa.async_acquire(1, boost::asio::use_future).get();
    REQUIRE(held.size() == 1);
    const auto token = held[0].fencing_token();
    // A waiter cancelled leaves nothing behind: neither its lease node nor the inner mutex.
    auto cancelled = sb.async_acquire(1, boost::asio::use_future);
    REQUIRE(zkr::test::eventually([&] { return nodes_under(*a, leases_of(path)) == 2; }));
    sb.cancel();
    try {
        (void)cancelled.get();
        FAIL("a cancelled acquire completed");
    } catch (const boost::system::system_error& e) {
        CHECK(e.code() == zkr::errc::cancelled);
    }
    CHECK(zkr::test::eventually([&] { return nodes_under(*a, leases_of(path)) == 1 && nodes_under(*a, locks_of(path)) == 0; }, 5s));
    // The holder's session ends: its lease is lost, and the waiter behind gets it.
    auto waiter = std::async(std::launch::async, [&] { return sb.acquire(); });
    REQUIRE(zkr::test::eventually([&] { return nodes_under(*a, leases_of(path)) == 2; }));
    zkr::test::expire_session(zk.connect_string(), *a);
    REQUIRE(lost.get_future().wait_for(10s) == std::future_status::ready);
    CHECK(held[0].state() == hold_state::lost);
    REQUIRE(waiter.wait_for(10s) == std::future_status::ready);
    auto next = waiter.get();
    CHECK(next.fencing_token() > token);
    next.close();
}

TEST_CASE("semaphore, Curator's layout: a zkr-layout semaphore on the same path is refused with the folder named, and bad input at once") {
    auto& zk = zkr::test::shared_server();
    const auto path = layout_path("mixed-layouts");
    auto a = connect(zk.connect_string());
    zkr::interprocess_semaphore_v2 curator_side(*a, path, 2, curator_layout);
    zkr::interprocess_semaphore_v2 zkr_side(*a, path, 2);
    auto held = curator_side.acquire();
    try {
        (void)zkr_side.acquire(1s);
        FAIL("a zkr-layout acquire passed a Curator-layout semaphore");
    } catch (const zkr::error& e) {
        CHECK(e.code() == zkr::errc::lock_kind_mismatch);
        CHECK_THAT(std::string(e.what()), zkr::test::contains(leases_of(path)) && zkr::test::contains("Curator's layout"));
    }
    held.close();
    // Bad input says what was wrong before anything is sent.
    const auto bad_path = error_of([&] { zkr::interprocess_semaphore_v2 s(*a, "no-slash", 2, curator_layout); });
    CHECK(bad_path.rfind(code_prefix(zkr::errc::invalid_path), 0) == 0);
    CHECK_THAT(bad_path, zkr::test::contains("\"no-slash\""));
    const auto bad_max = error_of([&] { zkr::interprocess_semaphore_v2 s(*a, path, 0, curator_layout); });
    CHECK(bad_max.rfind(code_prefix(zkr::errc::invalid_argument), 0) == 0);
    CHECK_THAT(bad_max, zkr::test::contains("max_leases must be at least 1"));
    const auto bad_qty = error_of([&] { (void)curator_side.acquire_many(3); });
    CHECK(bad_qty.rfind(code_prefix(zkr::errc::invalid_argument), 0) == 0);
    CHECK_THAT(bad_qty, zkr::test::contains("max_leases 2"));
}

TEST_CASE("semaphore_mutex, Curator's layout: one holder at a time across clients, released from another thread") {
    auto& zk = zkr::test::shared_server();
    const auto path = layout_path("mutex");
    auto a = connect(zk.connect_string());
    auto b = connect(zk.connect_string());
    zkr::interprocess_semaphore_mutex ma(*a, path, curator_layout), mb(*b, path, curator_layout);
    ma.acquire();
    CHECK(ma.is_held());
    CHECK_FALSE(mb.acquire(200ms));
    std::thread([&] { ma.release(); }).join();
    CHECK(mb.acquire(5s));
    CHECK(zkr::parent_path(mb.node_path()) == leases_of(path));
    mb.release();
}

TEST_CASE("lock_driver: a step of a larger acquire begun before a cancel() never starts (a Curator-layout semaphore's next step)") {
    auto& zk = zkr::test::shared_server();
    const auto path = layout_path("step-cancelled");
    auto a = connect(zk.connect_string());
    auto driver = std::make_shared<zkr::detail::lock_driver>(*a, path, std::make_shared<zkr::lowest_n_rule>(1));
    const auto begun = driver->cancellations();
    driver->cancel();  // with nothing in flight: only the count moves
    CHECK(driver->cancellations() == begun + 1);
    const auto step = [&](std::uint64_t begun_at) {
        zkr::detail::acquire_request req;
        req.begun_at_cancellation = begun_at;
        auto outcome = std::make_shared<std::promise<std::pair<boost::system::error_code, std::shared_ptr<zkr::detail::hold>>>>();
        driver->acquire(std::move(req), [outcome](const boost::system::error_code& ec, std::shared_ptr<zkr::detail::hold> h) {
            outcome->set_value({ec, std::move(h)});
        });
        return outcome->get_future().get();
    };
    const auto [ec, none] = step(begun);
    CHECK(ec == zkr::errc::cancelled);
    CHECK_FALSE(none);
    CHECK_FALSE(a->exists(path));  // nothing was sent
    // A step of an acquire begun after the cancel goes ahead.
    auto [ok, held] = step(driver->cancellations());
    CHECK_FALSE(ok);
    REQUIRE(held);
    CHECK(driver->release_sync(held) == boost::system::error_code());
}
