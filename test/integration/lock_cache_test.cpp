// Lock caching (mutex_options::cache_hold) against a real ZooKeeper: a kept node taken back with
// no request, a waiter of another session served once it queues, and a kept node that goes on
// suspension, session expiry and the mutex's destruction. Separate processes under faults:
// nemesis_test.cpp ("mutex_cached").
#include "client_hooks.hpp"  // the client's hooks for tests (src/)
#include "recipe_checks.hpp"

#include "../../recipes/queue/lock_machine.hpp"  // own_watch_delay: the machine's policy

#include <zkr/interprocess_mutex.hpp>

#include "zkr_catch.hpp"

#include <future>

using namespace std::chrono_literals;
using clk = std::chrono::steady_clock;
using zkr::test::connect;
using zkr::test::nodes_under;

namespace {

std::uint64_t requests_sent(zkr::client& c) { return zkr::detail::requests_sent(zkr::detail::connection_of(c)); }

constexpr zkr::mutex_options caching{.cache_hold = true};

}  // namespace

TEST_CASE("lock caching: a re-acquire takes the kept node back with no request, any thread's, and the mutex's end deletes it") {
    auto& zk = zkr::test::shared_server();
    auto c = connect(zk.connect_string());
    auto other = connect(zk.connect_string());
    const auto path = zkr::test::recipe_path("cache-regrant");
    {
        zkr::interprocess_mutex m(*c, path, caching);
        m.lock();
        const auto node = m.node_path();
        const auto token = m.fencing_token();
        m.unlock();
        CHECK(m.state() == zkr::hold_state::released);
        CHECK_FALSE(m.is_acquired_in_this_process());
        // Counted once the hold has set its own-node watch (a plain hold sets it once it has
        // lasted own_watch_delay, kept or not: one request, not one per hold taken back).
        std::this_thread::sleep_for(zkr::detail::own_watch_delay + 150ms);
        // The node stays, alone in the queue (the release's listing was sent before this one).
        CHECK(m.participant_nodes() == std::vector<std::string>{node});
        const auto before = requests_sent(*c);
        for (int i = 0; i < 100; ++i) {
            std::scoped_lock guard(m);
            CHECK(m.node_path() == node);
            CHECK(m.fencing_token() == token);
            CHECK(m.state() == zkr::hold_state::held);
        }
        // Another thread of this process takes it back too, also with try_lock.
        std::async(std::launch::async, [&] {
            REQUIRE(m.try_lock());
            CHECK(m.node_path() == node);
            m.unlock();
        }).get();
        CHECK(requests_sent(*c) == before);  // 101 holds, no request
        CHECK(nodes_under(*other, path) == 1);
    }
    // The mutex's end deletes the kept node (its destructor waits for the delete, as for a hold).
    CHECK(nodes_under(*other, path) == 0);
}

TEST_CASE("lock caching: another session's waiter gets the lock once it queues, also behind a hold in progress here") {
    auto& zk = zkr::test::shared_server();
    auto c = connect(zk.connect_string());
    auto c2 = connect(zk.connect_string());
    const auto path = zkr::test::recipe_path("cache-waiter");
    zkr::interprocess_mutex m(*c, path, caching);
    zkr::interprocess_mutex theirs(*c2, path);

    // Kept: the other session's acquire queues, which lets the kept node go.
    m.lock();
    m.unlock();
    REQUIRE(zkr::test::eventually([&] { return nodes_under(*c2, path) == 1; }));
    const auto start = clk::now();
    REQUIRE(theirs.acquire(5s));
    const auto served = clk::now() - start;
    INFO("served in " << std::chrono::duration_cast<std::chrono::microseconds>(served).count() << " us");
    CHECK(served < 2s);  // (a few round trips; the benchmark measures it: docs/performance.md)
    CHECK_FALSE(m.try_lock());  // the kept node went: this process queues like any other
    theirs.unlock();

    // Lent: the waiter gets it at the end of the hold in progress, not later.
    m.lock();
    m.unlock();  // (kept again: a new node, listed alone)
    m.lock();    // (taken back)
    std::promise<void> let_go;
    std::promise<bool> got;
    auto waiter = std::async(std::launch::async, [&] {
        got.set_value(theirs.acquire(10s));
        let_go.get_future().wait();
        theirs.unlock();  // (by the thread that holds)
    });
    auto granted = got.get_future();
    CHECK(granted.wait_for(300ms) == std::future_status::timeout);  // we hold
    m.unlock();
    REQUIRE(granted.wait_for(5s) == std::future_status::ready);
    CHECK(granted.get());
    CHECK_FALSE(m.try_lock());
    let_go.set_value();
    waiter.get();
    CHECK(m.acquire(5s));  // and this process queues and caches again
    m.unlock();
    CHECK(nodes_under(*c2, path) == 1);
}

// As a pause of this process (or a silent server) looks: nothing heard from the server past the
// C client's receive timeout. The kept hold reads doubtful then, before the network thread notices.
TEST_CASE("lock caching: a kept node is not lent while the connection is silent past the receive timeout: it goes, and the acquire queues anew") {
    auto& zk = zkr::test::shared_server();
    auto c = connect(zk.connect_string());
    auto c2 = connect(zk.connect_string());
    const auto receive_timeout = c->negotiated_session_timeout() * 2 / 3;
    const auto path = zkr::test::recipe_path("cache-silent");
    zkr::interprocess_mutex m(*c, path, caching);
    m.lock();
    const auto node = m.node_path();
    m.unlock();
    REQUIRE(nodes_under(*c2, path) == 1);
    c->exists("/");  // the server heard from us just now: the session outlives the stall below
    std::future<bool> attempt;
    {
        const std::lock_guard stall(zkr::detail::c_client_mutex());  // the network thread cannot run
        std::this_thread::sleep_for(receive_timeout + 200ms);
        // A grant from the cache needs no network thread; this one waits for it: not lent.
        attempt = std::async(std::launch::async, [&] {
            try {
                const bool got = m.try_lock();
                if (got) {
                    CHECK(m.node_path() != node);
                    m.unlock();
                }
                return got;
            } catch (const zkr::error& e) {  // the connection was dropped before, or with, the try
                CHECK((e.code() == zkr::errc::not_connected || e.code() == zkr::errc::connection_loss));
                return false;
            }
        });
        CHECK(attempt.wait_for(300ms) == std::future_status::timeout);
    }
    REQUIRE(attempt.wait_for(15s) == std::future_status::ready);
    INFO("the try after the silence got the lock: " << attempt.get());
    // The kept node was let go: deleted once the network thread ran again.
    CHECK(zkr::test::eventually([&] { return !c2->exists(node); }, 10s));
    REQUIRE(m.acquire(10s));
    CHECK(m.node_path() != node);
    m.unlock();
}

TEST_CASE("lock caching: a kept node's session expires: the next acquire queues anew with a new node") {
    auto& zk = zkr::test::shared_server();
    auto c = connect(zk.connect_string());
    auto c2 = connect(zk.connect_string());
    const auto path = zkr::test::recipe_path("cache-expired");
    zkr::interprocess_mutex m(*c, path, caching);
    m.lock();
    const auto token = m.fencing_token();
    m.unlock();
    REQUIRE(m.participant_nodes().size() == 1);  // (answered after the release's listing: kept)
    zk.expire_session(*c);
    REQUIRE(zkr::test::eventually([&] { return zkr::is_connected(c->state()); }, 10s));
    CHECK(nodes_under(*c2, path) == 0);
    REQUIRE(m.acquire(5s));
    CHECK(m.fencing_token() > token);
    CHECK(m.state() == zkr::hold_state::held);
    m.unlock();
    CHECK(nodes_under(*c2, path) == 1);
}

TEST_CASE("lock caching: once the client is closed, nothing is kept and an acquire fails at once with closed") {
    auto& zk = zkr::test::shared_server();
    const auto path = zkr::test::recipe_path("cache-closed");
    for (const bool kept_first : {false, true}) {
        INFO((kept_first ? "a node kept when the client closes" : "a hold in progress when the client closes"));
        auto c = connect(zk.connect_string());
        zkr::interprocess_mutex m(*c, path, caching);
        m.lock();
        if (kept_first) {
            m.unlock();
            REQUIRE(m.participant_nodes().size() == 1);  // (kept)
        }
        c->close();
        if (!kept_first) m.unlock();  // (never throws: the hold was lost with the client)
        const auto start = clk::now();
        zkr::test::expect_error([&] { m.lock(); }, zkr::errc::closed, "closed");
        CHECK(clk::now() - start < 1s);
    }
    auto other = connect(zk.connect_string());
    CHECK(nodes_under(*other, path) == 0);
}
