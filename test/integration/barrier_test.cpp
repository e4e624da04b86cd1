// zkr::distributed_barrier against a real ZooKeeper: waiters in other sessions pass when the
// barrier is removed and not before; timed, zero and async waits; a wait through a server restart
// and a session expiry; misuse; and with Curator 5.4's DistributedBarrier (Java processes,
// test/peers/CuratorWorker.java) and Kazoo 2.8's Barrier (test/peers/kazoo_barrier_worker.py) on
// one path, both ways.
#include "build_paths.hpp"
#include "peers.hpp"
#include "process.hpp"
#include "recipe_checks.hpp"

#include <zkr/distributed_barrier.hpp>

#include <boost/asio/use_future.hpp>

#include "zkr_catch.hpp"

#include <atomic>
#include <functional>
#include <future>
#include <thread>

using namespace std::chrono_literals;
using zkr::errc;
using zkr::test::connect;

namespace {

bool has_line(const std::string& file, const std::string& prefix) {
    for (const auto& l : zkr::test::read_lines(file))
        if (l.rfind(prefix, 0) == 0) return true;
    return false;
}

}  // namespace

TEST_CASE("barrier: waiters in other sessions pass once it is removed, not before, and nothing is left") {
    auto& zk = zkr::test::shared_server();
    const auto path = zkr::test::recipe_path("barrier", "gate");
    auto owner = connect(zk.connect_string());
    zkr::distributed_barrier b(*owner, path);
    CHECK_FALSE(b.is_set());
    b.set_barrier();
    b.set_barrier();  // set already: fine
    CHECK(b.is_set());
    std::vector<std::unique_ptr<zkr::client>> clients;
    std::vector<std::future<void>> waiters;
    std::atomic<int> passed{0};
    for (int i = 0; i < 3; ++i) {
        clients.push_back(connect(zk.connect_string()));
        waiters.push_back(std::async(std::launch::async, [&, c = clients.back().get()] {
            zkr::distributed_barrier mine(*c, path);
            mine.wait_on_barrier();
            ++passed;
        }));
    }
    // An operator's write to the barrier is not its removal.
    owner->set_data(path, "x");
    std::this_thread::sleep_for(500ms);
    CHECK(passed == 0);
    b.remove_barrier();
    for (auto& w : waiters) REQUIRE(w.wait_for(10s) == std::future_status::ready);
    CHECK(passed == 3);
    b.remove_barrier();  // not set: fine
    CHECK_FALSE(owner->exists(path));
}

TEST_CASE("barrier: timed waits end in time, a zero timeout is one check, a negative one is refused") {
    auto& zk = zkr::test::shared_server();
    const auto path = zkr::test::recipe_path("barrier", "timed");
    auto c = connect(zk.connect_string());
    zkr::distributed_barrier b(*c, path);
    CHECK(b.wait_on_barrier(0ms));  // not set
    CHECK(b.wait_on_barrier(1s));
    b.set_barrier();
    CHECK_FALSE(b.wait_on_barrier(0ms));
    const auto t0 = std::chrono::steady_clock::now();
    CHECK_FALSE(b.wait_on_barrier(300ms));
    const auto took = std::chrono::steady_clock::now() - t0;
    CHECK(took >= 300ms);
    CHECK(took < 2s);
    CHECK_THROWS_WITH(b.wait_on_barrier(-1ms), zkr::test::contains("negative"));
    // Removed during a timed wait: true, well before its timeout.
    auto waiting = std::async(std::launch::async, [&] { return b.wait_on_barrier(20s); });
    std::this_thread::sleep_for(200ms);
    auto other = connect(zk.connect_string());
    zkr::distributed_barrier(*other, path).remove_barrier();
    REQUIRE(waiting.wait_for(10s) == std::future_status::ready);
    CHECK(waiting.get());
}

TEST_CASE("barrier: async waits complete on the callback thread, with true, false on timeout, closed when the object or the client goes") {
    auto& zk = zkr::test::shared_server();
    const auto path = zkr::test::recipe_path("barrier", "async");
    auto c = connect(zk.connect_string());
    zkr::distributed_barrier b(*c, path);
    b.set_barrier();
    auto timed_out = b.async_wait_on_barrier(200ms, boost::asio::use_future);
    REQUIRE(timed_out.wait_for(5s) == std::future_status::ready);
    CHECK_FALSE(timed_out.get());

    std::promise<std::pair<boost::system::error_code, bool>> heard;
    std::atomic<bool> on_caller{true};
    const auto caller = std::this_thread::get_id();
    b.async_wait_on_barrier(30s, [&](boost::system::error_code ec, bool ok) {
        on_caller = std::this_thread::get_id() == caller;
        heard.set_value({ec, ok});
    });
    std::this_thread::sleep_for(200ms);
    b.remove_barrier();
    auto answer = heard.get_future();
    REQUIRE(answer.wait_for(10s) == std::future_status::ready);
    const auto [ec, ok] = answer.get();
    CHECK_FALSE(ec);
    CHECK(ok);
    CHECK_FALSE(on_caller);

    // The object destroyed under a wait: closed.
    b.set_barrier();
    std::future<bool> orphaned;
    {
        zkr::distributed_barrier gone(*c, path);
        orphaned = gone.async_wait_on_barrier(30s, boost::asio::use_future);
    }
    REQUIRE(orphaned.wait_for(5s) == std::future_status::ready);
    CHECK_THROWS_AS(orphaned.get(), boost::system::system_error);
    // The client closed under a sync wait: it throws closed; a wait after the close too.
    auto own = connect(zk.connect_string());
    zkr::distributed_barrier mine(*own, path);
    auto blocked = std::async(std::launch::async, [&] { mine.wait_on_barrier(); });
    std::this_thread::sleep_for(300ms);
    own->close();
    REQUIRE(blocked.wait_for(10s) == std::future_status::ready);
    try {
        blocked.get();
        FAIL_CHECK("a wait went on past its client's close");
    } catch (const zkr::error& e) {
        CHECK(e.code() == errc::closed);
    }
    CHECK_THROWS_WITH(mine.wait_on_barrier(1s), zkr::test::contains("closed"));
    b.remove_barrier();
}

TEST_CASE("barrier: a wait goes on through a server restart and a session expiry, and passes on the removal after them") {
    zkr::test::zk_cluster zk;
    auto c = connect(zk.connect_string(), 8s);
    auto owner = connect(zk.connect_string(), 8s);
    zkr::distributed_barrier b(*owner, "/restart/gate");
    b.set_barrier();
    auto waiting = std::async(std::launch::async, [&] { return zkr::distributed_barrier(*c, "/restart/gate").wait_on_barrier(60s); });
    std::this_thread::sleep_for(300ms);
    zk.stop(0);
    std::this_thread::sleep_for(1s);
    zk.start(0);
    REQUIRE(c->block_until_connected(20s));
    zkr::test::expire_session(zk.connect_string(), *c);
    REQUIRE(zkr::test::eventually([&] { return zkr::is_connected(c->state()); }, 20s));
    std::this_thread::sleep_for(300ms);
    CHECK(waiting.wait_for(0s) == std::future_status::timeout);  // still set: still waiting
    REQUIRE(owner->block_until_connected(20s));
    b.remove_barrier();
    REQUIRE(waiting.wait_for(20s) == std::future_status::ready);
    CHECK(waiting.get());
}

TEST_CASE("barrier: misuse is refused before anything is sent") {
    auto& zk = zkr::test::shared_server();
    auto c = connect(zk.connect_string());
    CHECK_THROWS_WITH(zkr::distributed_barrier(*c, "no-slash"), zkr::test::contains("invalid barrier path"));
    CHECK_THROWS_WITH(zkr::distributed_barrier(*c, "/"), zkr::test::contains("root"));
    CHECK_THROWS_WITH(zkr::distributed_barrier(*c, "/a/"), zkr::test::contains("invalid barrier path"));
}

namespace {

// A peer's barrier process (Curator's or Kazoo's): "wait" or "set" (holding it hold_ms), logging
// WAITING and PASSED, or SET and REMOVING.
using peer_process = std::function<zkr::test::child_process(const std::string& mode, const std::string& log, int hold_ms)>;

// Both ways on one path: zkr sets and the peer waits (it passes only after zkr removes the
// barrier); the peer sets and zkr waits (it passes only after the peer began its removal).
void check_interop(const std::string& path, const std::string& who, const peer_process& peer) {
    auto c = connect(zkr::test::shared_server().connect_string());
    // The barrier's parent a plain node: as a container (what a barrier makes), the test servers
    // reap it within 500 ms of the barrier's removal, and Kazoo's Barrier.create (ensure_path:
    // exists on the parent, then create) fails with NoNodeError when the reap falls between the two
    // (a rehearsal's run: the setter never set). Each library's own handling of a missing parent is
    // tested on its own.
    const auto parent = std::string(zkr::parent_path(path));
    zkr::test::plain_folder(*c, parent);
    zkr::distributed_barrier b(*c, path);
    b.set_barrier();
    const auto wait_log = zkr::test::temp_file(who + "-barrier-wait");
    auto waiter = peer("wait", wait_log, 0);
    REQUIRE(zkr::test::eventually([&] { return has_line(wait_log, "WAITING"); }, 60s));
    std::this_thread::sleep_for(1s);
    CHECK_FALSE(has_line(wait_log, "PASSED"));
    b.remove_barrier();
    CHECK(waiter.wait() == 0);
    CHECK(has_line(wait_log, "PASSED"));
    const auto set_log = zkr::test::temp_file(who + "-barrier-set");
    auto setter = peer("set", set_log, 1500);
    REQUIRE(zkr::test::eventually([&] { return has_line(set_log, "SET"); }, 60s));
    CHECK(b.is_set());
    CHECK(b.wait_on_barrier(30s));
    CHECK(has_line(set_log, "REMOVING"));
    CHECK(setter.wait() == 0);
    CHECK_FALSE(c->exists(path));
    c->remove(parent);
    std::remove(wait_log.c_str());
    std::remove(set_log.c_str());
}

}  // namespace

TEST_CASE("interop: zkr's distributed_barrier and Curator's DistributedBarrier on one path, both ways, separate processes") {
    if (!zkr::test::curator_classpath) FAIL("the barrier interop test needs javac and Debian's Curator (scripts/run installs them)");
    const auto cs = zkr::test::shared_server().connect_string();
    const auto path = zkr::test::recipe_path("interop-barrier", "curator");
    check_interop(path, "curator", [&](const std::string& mode, const std::string& log, int hold_ms) {
        return zkr::test::child_process({"/usr/bin/java", "-Xmx128m", "-cp", zkr::test::curator_classpath, "CuratorWorker", cs, "barrier-" + mode,
                                         path, "0", std::to_string(hold_ms), log});
    });
}

TEST_CASE("interop: zkr's distributed_barrier and Kazoo's Barrier on one path, both ways, separate processes") {
    const auto cs = zkr::test::shared_server().connect_string();
    const auto path = zkr::test::recipe_path("interop-barrier", "kazoo");
    check_interop(path, "kazoo", [&](const std::string& mode, const std::string& log, int hold_ms) {
        return zkr::test::child_process({"/usr/bin/python3", ZKR_KAZOO_BARRIER_WORKER, cs, mode, path, std::to_string(hold_ms), log});
    });
}
