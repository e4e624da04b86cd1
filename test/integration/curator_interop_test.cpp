// zkr and Apache Curator (Debian's 5.4, a Java process: test/peers/CuratorWorker.java) on one
// path: the mutexes exclude each other, and so do the read-write locks, both ways; a semaphore in
// Curator's layout never has more holders than its maximum between them.
#include "build_paths.hpp"
#include "peers.hpp"
#include "recipe_checks.hpp"

#include <zkr/interprocess_mutex.hpp>
#include <zkr/interprocess_read_write_lock.hpp>
#include <zkr/leader_latch.hpp>
#include <zkr/leader_selector.hpp>
#include <zkr/revocation.hpp>

#include "zkr_catch.hpp"

#include <atomic>
#include <thread>

using namespace std::chrono_literals;

namespace {

using zkr::test::connect;

zkr::test::child_process curator(const std::string& connect_string, const std::string& recipe, const std::string& path,
                                 int iterations, int hold_ms, const std::string& log) {
    return zkr::test::child_process({"/usr/bin/java", "-Xmx128m", "-cp", zkr::test::curator_classpath, "CuratorWorker", connect_string, recipe, path,
                                     std::to_string(iterations), std::to_string(hold_ms), log});
}

zkr::test::child_process zkr_worker(const std::string& connect_string, const std::string& recipe, const std::string& path,
                                    int iterations, int hold_ms, const std::string& log, const std::string& counter) {
    return zkr::test::child_process({ZKR_LOCK_WORKER, connect_string, recipe, path, std::to_string(iterations), std::to_string(hold_ms),
                                     log, counter});
}

// Two Curator and two zkr processes on one path (Curator's running curator_recipe, zkr's
// zkr_recipe), interleaved; waits for all.
void run_two_of_each(const std::string& curator_recipe, const std::string& zkr_recipe, const std::string& path, int iterations,
                     int hold_ms, const std::string& log, const std::string& counter) {
    const auto cs = zkr::test::shared_server().connect_string();
    std::vector<zkr::test::child_process> workers;
    for (int i = 0; i < 2; ++i) {
        workers.push_back(curator(cs, curator_recipe, path, iterations, hold_ms, log));
        workers.push_back(zkr_worker(cs, zkr_recipe, path, iterations, hold_ms, log, counter));
    }
    for (auto& w : workers) CHECK(w.wait() == 0);
}

// The same recipe on both sides.
void run_two_of_each(const std::string& recipe, const std::string& path, int iterations, int hold_ms, const std::string& log,
                     const std::string& counter) {
    run_two_of_each(recipe, recipe, path, iterations, hold_ms, log, counter);
}

bool logged(const std::string& log, const std::string& kind) {
    for (const auto& line : zkr::test::read_lines(log))
        if (line.rfind(kind + " ", 0) == 0) return true;
    return false;
}

void require_curator() {
    if (!zkr::test::curator_classpath)
        FAIL("the interop tests need javac and Debian's libcurator-recipes-java when configuring (scripts/run installs them)");
}

}  // namespace

TEST_CASE("interop: zkr's and Curator's mutexes on one path exclude each other, separate processes") {
    require_curator();
    const auto path = zkr::test::recipe_path("interop-mutex");
    const auto log = zkr::test::temp_file("log"), counter = zkr::test::temp_file("counter");
    run_two_of_each("mutex", path, 15, 5, log, counter);
    const auto r = zkr::test::check_log(log);
    CHECK(r.acquisitions == 60);
    CHECK(r.max_concurrent == 1);
    std::remove(log.c_str());
    std::remove(counter.c_str());
}

TEST_CASE("interop: zkr's leader_latch and Curator's LeaderLatch on one path elect one leader at a time, separate processes") {
    require_curator();
    auto& zk = zkr::test::shared_server();
    const auto path = zkr::test::recipe_path("interop-latch");
    const auto log = zkr::test::temp_file("log"), counter = zkr::test::temp_file("counter");
    auto c = connect(zk.connect_string());
    zkr::leader_latch ours(*c, path, "zkr-in-test");
    ours.start();
    REQUIRE(ours.await_leadership(10s));
    std::vector<zkr::test::child_process> workers;
    workers.push_back(curator(zk.connect_string(), "latch", path, 1, 200, log));
    workers.push_back(zkr_worker(zk.connect_string(), "latch", path, 1, 200, log, counter));
    workers.push_back(curator(zk.connect_string(), "latch", path, 1, 200, log));
    // Every participant has joined behind us, the Curator ones too, and none leads beside us.
    REQUIRE(zkr::test::eventually([&] { return ours.participants().size() == 4; }, 30s));
    CHECK(ours.leader() == "zkr-in-test");
    std::this_thread::sleep_for(300ms);
    CHECK_FALSE(logged(log, "ACQ"));
    ours.close();
    for (auto& w : workers) CHECK(w.wait() == 0);
    const auto r = zkr::test::check_log(log);
    CHECK(r.acquisitions == 3);
    CHECK(r.max_concurrent == 1);
    std::remove(log.c_str());
    std::remove(counter.c_str());
}

TEST_CASE("interop: zkr's leader_selector and Curator's LeaderSelector on one path lead one at a time, separate processes") {
    require_curator();
    const auto path = zkr::test::recipe_path("interop-selector");
    const auto log = zkr::test::temp_file("log"), counter = zkr::test::temp_file("counter");
    run_two_of_each("selector", path, 1, 50, log, counter);
    const auto r = zkr::test::check_log(log);
    CHECK(r.acquisitions == 4);
    CHECK(r.max_concurrent == 1);
    std::remove(log.c_str());
    std::remove(counter.c_str());
}

TEST_CASE("interop: revocation both ways, zkr::revoke asks a Curator holder and Curator's Revoker asks a zkr holder") {
    require_curator();
    auto& zk = zkr::test::shared_server();
    const auto cs = zk.connect_string();
    auto c = connect(cs);
    const auto log = zkr::test::temp_file("log");
    {
        const auto path = zkr::test::recipe_path("interop-revoke-curator");
        auto holder = curator(cs, "revocable", path, 1, 0, log);
        REQUIRE(zkr::test::eventually([&] { return logged(log, "ACQ"); }, 30s));
        CHECK(zkr::revoke(*c, path).size() == 1);
        CHECK(holder.wait_for(30s) == 0);  // 5: it was never asked
        CHECK(logged(log, "REVOKED"));
    }
    {
        const auto path = zkr::test::recipe_path("interop-revoke-zkr");
        std::atomic<int> asked{0};
        zkr::interprocess_mutex m(*c, path, [&] { ++asked; });
        m.acquire();
        auto revoker = curator(cs, "revoke", path, 1, 0, log);
        CHECK(revoker.wait_for(30s) == 0);
        CHECK(zkr::test::eventually([&] { return asked.load() == 1; }, 10s));
        CHECK(m.state() == zkr::hold_state::held);
        m.release();
    }
    std::remove(log.c_str());
}

TEST_CASE("interop: zkr's and Curator's read-write locks on one path: a writer of either holds alone, separate processes") {
    require_curator();
    const auto path = zkr::test::recipe_path("interop-rw");
    const auto log = zkr::test::temp_file("log"), counter = zkr::test::temp_file("counter");
    run_two_of_each("rw:30", path, 20, 10, log, counter);
    const auto r = zkr::test::check_read_write_log(log);
    INFO(r.reads << " reads, " << r.writes << " writes, at most " << r.max_readers << " readers at once");
    CHECK(r.reads + r.writes == 80);
    CHECK(r.writer_alone);
    CHECK(r.max_readers >= 2);
    std::remove(log.c_str());
    std::remove(counter.c_str());
}

TEST_CASE("interop: a zkr writer keeps a Curator reader out, and a Curator writer keeps a zkr reader out") {
    require_curator();
    auto& zk = zkr::test::shared_server();
    const auto path = zkr::test::recipe_path("interop-rw-both-ways");
    const auto log = zkr::test::temp_file("log");
    auto c = connect(zk.connect_string());
    zkr::interprocess_read_write_lock rw(*c, path);
    {
        rw.write_lock().lock();
        auto reader = curator(zk.connect_string(), "rw:0", path, 1, 0, log);
        REQUIRE(zkr::test::eventually([&] { return rw.write_lock().participant_nodes().size() == 2; }, 30s));  // Curator's reader queued
        std::this_thread::sleep_for(300ms);
        CHECK_FALSE(logged(log, "RACQ"));
        rw.write_lock().unlock();
        CHECK(reader.wait() == 0);
        CHECK(logged(log, "RACQ"));
    }
    {
        auto writer = curator(zk.connect_string(), "rw:100", path, 1, 1500, log);
        REQUIRE(zkr::test::eventually([&] { return logged(log, "WACQ"); }, 30s));
        CHECK_FALSE(rw.read_lock().try_lock_for(300ms));
        CHECK(writer.wait() == 0);
        CHECK(rw.read_lock().try_lock_for(5s));
        rw.read_lock().unlock();
    }
    CHECK(zkr::test::eventually([&] { return zkr::test::nodes_under(*c, path) == 0; }));
    std::remove(log.c_str());
}

TEST_CASE("interop: zkr's semaphore in Curator's layout and Curator's InterProcessSemaphoreV2 on one path never exceed max, separate processes") {
    require_curator();
    const auto path = zkr::test::recipe_path("interop-semaphore");
    const auto log = zkr::test::temp_file("log"), counter = zkr::test::temp_file("counter");
    // Curator's take one lease at a time; zkr's 1 or 2 at random (qty = max waits for every
    // other holder, Curator's too, while it keeps the inner mutex). zkr's start once a Curator
    // process holds (a JVM starts in about a second): the two sides overlap.
    const auto cs = zkr::test::shared_server().connect_string();
    std::vector<zkr::test::child_process> workers;
    for (int i = 0; i < 2; ++i) workers.push_back(curator(cs, "semaphore:2", path, 12, 30, log));
    REQUIRE(zkr::test::eventually([&] { return logged(log, "ACQ"); }, 30s));
    for (int i = 0; i < 2; ++i) workers.push_back(zkr_worker(cs, "curator_semaphore:2:0", path, 12, 30, log, counter));
    for (auto& w : workers) CHECK(w.wait() == 0);
    const auto r = zkr::test::check_log(log);
    CHECK(r.acquisitions == 4 * 12);
    CHECK(r.max_concurrent <= 2);
    CHECK(r.max_concurrent == 2);
    // Half of them Curator's (no fencing token: it logs 0), all of them through.
    int curators = 0;
    for (const auto& line : zkr::test::read_lines(log)) curators += line.rfind("ACQ ", 0) == 0 && line.find(" 0 1") != std::string::npos;
    CHECK(curators == 2 * 12);
    // Both sides' leases and inner mutexes are gone, and their containers with them.
    auto c = connect(zkr::test::shared_server().connect_string());
    CHECK(zkr::test::eventually([&] { return !c->exists(path); }, 15s));
    std::remove(log.c_str());
    std::remove(counter.c_str());
}
