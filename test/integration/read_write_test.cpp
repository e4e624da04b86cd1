// zkr::interprocess_read_write_lock against a real ZooKeeper: readers share, a writer holds alone
// (separate processes), first come first served between the two, the downgrade, the refused
// upgrade, and the other kinds of lock refused on its path.
#include "build_paths.hpp"
#include "recipe_checks.hpp"

#include <zkr/interprocess_mutex.hpp>
#include <zkr/interprocess_read_write_lock.hpp>
#include <zkr/path.hpp>

#include <boost/asio/use_future.hpp>

#include "zkr_catch.hpp"

#include <future>
#include <thread>

using namespace std::chrono_literals;
using zkr::hold_state;

namespace {

using zkr::test::connect;
using zkr::test::nodes_under;

std::string rw_path(const std::string& name) { return zkr::test::recipe_path("rw-" + name); }

// One worker process per recipe on one path: every acquire done, a writer alone, writers' tokens
// rising, no lost update, nothing left. Returns the log's figures for the caller's own checks.
zkr::test::read_write_check run_processes(const std::string& name, const std::vector<std::string>& recipes, int iterations,
                                          int hold_ms) {
    auto& zk = zkr::test::shared_server();
    const std::string path = rw_path(name);
    const std::string log = zkr::test::temp_file("log");
    const std::string counter = zkr::test::temp_file("counter");
    std::vector<zkr::test::child_process> workers;
    for (const auto& recipe : recipes)
        workers.emplace_back(std::vector<std::string>{ZKR_LOCK_WORKER, zk.connect_string(), recipe, path, std::to_string(iterations),
                                                      std::to_string(hold_ms), log, counter});
    for (auto& w : workers) CHECK(w.wait() == 0);
    const auto r = zkr::test::check_read_write_log(log);
    INFO(name << ": " << r.reads << " reads, " << r.writes << " writes, at most " << r.max_readers << " readers at once");
    int acquires = 0;
    for (const auto& recipe : recipes) acquires += recipe == "rw_downgrade" ? 2 * iterations : iterations;  // a downgrade: a write, then a read
    CHECK(r.reads + r.writes == acquires);
    CHECK(r.writer_alone);
    CHECK(r.writer_tokens_rise);
    // The writers' read-modify-write outside ZooKeeper lost no update.
    CHECK(zkr::test::read_lines(counter).at(0) == std::to_string(r.writes));
    auto c = connect(zk.connect_string());
    CHECK(zkr::test::eventually([&] { return !c->exists(path); }, 15s));
    std::remove(log.c_str());
    std::remove(counter.c_str());
    return r;
}

}  // namespace

TEST_CASE("read-write lock: separate processes, readers overlap, a writer holds alone, writers' tokens rise, no lost update") {
    const auto r = run_processes("procs-rw", {"rw:30", "rw:30", "rw:30", "rw:30"}, 20, 15);
    CHECK(r.max_readers >= 2);
}

TEST_CASE("read-write lock: separate processes downgrading while others read and write: a writer still holds alone") {
    // Two processes downgrade every time, two read and write (half and half): a downgrade's reader
    // must never let a waiting writer in beside it.
    const auto r = run_processes("procs-downgrade", {"rw_downgrade", "rw:50", "rw_downgrade", "rw:50"}, 12, 10);
    CHECK(r.writes >= 24);  // every downgrading iteration writes first
}

TEST_CASE("read-write lock: three readers of three sessions hold at once, and a writer waits for all of them") {
    auto& zk = zkr::test::shared_server();
    const auto path = rw_path("share");
    std::vector<std::unique_ptr<zkr::client>> clients;
    std::vector<std::unique_ptr<zkr::interprocess_read_write_lock>> locks;
    for (int i = 0; i < 4; ++i) {
        clients.push_back(connect(zk.connect_string()));
        locks.push_back(std::make_unique<zkr::interprocess_read_write_lock>(*clients.back(), path));
    }
    for (int i = 0; i < 3; ++i) REQUIRE(locks[i]->read_lock().try_lock_for(5s));
    for (int i = 0; i < 3; ++i) CHECK(locks[i]->read_lock().state() == hold_state::held);
    auto& writer = locks[3]->write_lock();
    CHECK_FALSE(writer.try_lock());
    auto wrote = std::async(std::launch::async, [&] {
        writer.lock();
        const bool alone = locks[0]->read_lock().participant_nodes().size() == 1;
        writer.unlock();
        return alone;
    });
    for (int i = 0; i < 3; ++i) {
        CHECK(wrote.wait_for(100ms) == std::future_status::timeout);  // a reader still holds
        locks[i]->read_lock().unlock();
    }
    REQUIRE(wrote.wait_for(10s) == std::future_status::ready);
    CHECK(wrote.get());
    CHECK(zkr::test::eventually([&] { return nodes_under(*clients[0], path) == 0; }));
}

TEST_CASE("read-write lock: a waiting writer blocks the readers that come after it (writers never starve)") {
    auto& zk = zkr::test::shared_server();
    const auto path = rw_path("fifo");
    auto a = connect(zk.connect_string()), b = connect(zk.connect_string()), c = connect(zk.connect_string());
    zkr::interprocess_read_write_lock first(*a, path), writer_side(*b, path), late(*c, path);
    first.read_lock().lock();
    std::promise<void> writer_held, writer_done;
    std::thread writer([&] {
        writer_side.write_lock().lock();
        writer_held.set_value();
        std::this_thread::sleep_for(200ms);
        writer_side.write_lock().unlock();
        writer_done.set_value();
    });
    REQUIRE(zkr::test::eventually([&] { return first.read_lock().participant_nodes().size() == 2; }));  // the writer queued
    // A reader that comes now waits behind the writer, although only a reader holds.
    CHECK_FALSE(late.read_lock().try_lock_for(300ms));
    auto late_read = std::async(std::launch::async, [&] {
        late.read_lock().lock();
        late.read_lock().unlock();
    });
    first.read_lock().unlock();
    writer_held.get_future().get();  // the writer comes first
    CHECK(late_read.wait_for(100ms) == std::future_status::timeout);
    writer_done.get_future().get();
    CHECK(late_read.wait_for(10s) == std::future_status::ready);
    writer.join();
    CHECK(zkr::test::eventually([&] { return nodes_under(*a, path) == 0; }));
}

TEST_CASE("read-write lock: a downgrade holds the read lock at once and no waiting writer gets in before it is released") {
    auto& zk = zkr::test::shared_server();
    const auto path = rw_path("downgrade");
    auto a = connect(zk.connect_string()), b = connect(zk.connect_string());
    zkr::interprocess_read_write_lock ours(*a, path), theirs(*b, path);
    ours.write_lock().lock();
    const auto write_token = ours.write_lock().fencing_token();
    std::atomic<bool> writer_holds{false};
    std::thread other([&] {
        theirs.write_lock().lock();
        writer_holds = true;
        theirs.write_lock().unlock();
    });
    REQUIRE(zkr::test::eventually([&] { return ours.write_lock().participant_nodes().size() == 2; }));  // their writer waits
    REQUIRE(ours.read_lock().try_lock());  // at once, though a writer waits: it is behind our own
    // The read node took the write node's place in the queue.
    const auto write_node = std::string(zkr::node_name(ours.write_lock().node_path()));
    const auto read_node = std::string(zkr::node_name(ours.read_lock().node_path()));
    CHECK(read_node.substr(read_node.size() - 10) == write_node.substr(write_node.size() - 10));
    CHECK(ours.read_lock().fencing_token() > write_token);
    ours.write_lock().unlock();
    CHECK(ours.read_lock().state() == hold_state::held);
    std::this_thread::sleep_for(500ms);
    CHECK_FALSE(writer_holds.load());  // their writer still waits: our reader heads the queue
    // Another reader may share with ours? No: it comes after their waiting writer, and waits.
    ours.read_lock().unlock();
    other.join();
    CHECK(writer_holds.load());
    CHECK(zkr::test::eventually([&] { return nodes_under(*a, path) == 0; }));
}

TEST_CASE("read-write lock: an upgrade is refused at once with would_deadlock, and re-entry works on each side") {
    auto& zk = zkr::test::shared_server();
    const auto path = rw_path("upgrade");
    auto a = connect(zk.connect_string());
    zkr::interprocess_read_write_lock rw(*a, path);
    rw.read_lock().lock();
    rw.read_lock().lock();  // re-entrant
    const auto started = std::chrono::steady_clock::now();
    try {
        rw.write_lock().lock();
        FAIL("an upgrade was not refused");
    } catch (const zkr::error& e) {
        CHECK(e.code() == zkr::errc::would_deadlock);
        CHECK_THAT(std::string(e.what()), zkr::test::contains("holds the read lock"));
    }
    CHECK(std::chrono::steady_clock::now() - started < 1s);
    CHECK_THROWS_AS(rw.write_lock().try_lock_for(1s), zkr::error);
    CHECK(nodes_under(*a, path) == 1);  // the refused acquires sent nothing
    rw.read_lock().unlock();
    rw.read_lock().unlock();
    // Without the read lock the write lock is granted, re-entrant, and a downgrade inside it too.
    rw.write_lock().lock();
    rw.write_lock().lock();
    rw.read_lock().lock();
    rw.write_lock().unlock();
    rw.write_lock().lock();  // still ours: one level was left
    rw.write_lock().unlock();
    rw.write_lock().unlock();
    CHECK(rw.read_lock().is_held());
    rw.read_lock().unlock();
    CHECK(zkr::test::eventually([&] { return nodes_under(*a, path) == 0; }));
}

TEST_CASE("read-write lock: a mutex on its path is refused, and the reverse, with the other kind named") {
    auto& zk = zkr::test::shared_server();
    const auto path = rw_path("kinds");
    auto a = connect(zk.connect_string());
    zkr::interprocess_read_write_lock rw(*a, path);
    zkr::interprocess_mutex mutex(*a, path);
    rw.read_lock().lock();
    CHECK_THROWS_WITH(mutex.try_lock(), zkr::test::contains("read-write lock"));
    rw.read_lock().unlock();
    mutex.lock();
    try {
        (void)rw.write_lock().try_lock();
        FAIL("a writer queued beside a mutex");
    } catch (const zkr::error& e) {
        CHECK(e.code() == zkr::errc::lock_kind_mismatch);
    }
    mutex.unlock();
    CHECK(zkr::test::eventually([&] { return nodes_under(*a, path) == 0; }));
}

TEST_CASE("read-write lock: an async read acquire is nobody's thread: it waits behind this thread's write lock") {
    auto& zk = zkr::test::shared_server();
    const auto path = rw_path("async");
    auto a = connect(zk.connect_string());
    zkr::interprocess_read_write_lock rw(*a, path);
    rw.write_lock().lock();
    auto pending = rw.read_lock().async_acquire(300ms, boost::asio::use_future);
    CHECK_FALSE(pending.get());  // timed out: empty
    auto later = rw.read_lock().async_acquire(10s, boost::asio::use_future);
    rw.write_lock().unlock();
    auto hold = later.get();
    CHECK(hold.state() == hold_state::held);
    hold.release();
    CHECK(zkr::test::eventually([&] { return nodes_under(*a, path) == 0; }));
}
