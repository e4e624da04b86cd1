// zkr::interprocess_multi_lock against a real ZooKeeper: separate processes locking one set in
// opposite orders never deadlock, a timed failure leaves nothing, a member's loss ends the whole
// hold, and members may be lock objects of several kinds.
#include "build_paths.hpp"
#include "recipe_checks.hpp"

#include <zkr/fair_lock.hpp>
#include <zkr/interprocess_multi_lock.hpp>
#include <zkr/interprocess_mutex.hpp>
#include <zkr/interprocess_read_write_lock.hpp>

#include "zkr_catch.hpp"

#include <boost/asio/use_future.hpp>

#include <future>
#include <mutex>

using namespace std::chrono_literals;
using zkr::errc;
using zkr::hold_state;

namespace {

using zkr::test::connect;
using zkr::test::nodes_under;

// Three lock paths under one namespace of their own.
std::vector<std::string> three_paths(const std::string& name) {
    const auto base = zkr::test::recipe_path("multi-" + name, "locks");
    return {base + "/a", base + "/b", base + "/c"};
}

}  // namespace

TEST_CASE("multi-lock: processes locking one set in opposite orders over 200 rounds never deadlock, and hold alone") {
    auto& zk = zkr::test::shared_server();
    const auto paths = three_paths("orders");
    const auto list = paths[0] + "," + paths[1] + "," + paths[2];
    const auto log = zkr::test::temp_file("log"), counter = zkr::test::temp_file("counter");
    constexpr int per_process = 50;
    std::vector<zkr::test::child_process> workers;
    // Curator's InterProcessMultiLock takes its members in list order: these would deadlock there.
    for (const char* recipe : {"multi", "multi_reversed", "multi", "multi_reversed"})
        workers.emplace_back(std::vector<std::string>{ZKR_LOCK_WORKER, zk.connect_string(), recipe, list, std::to_string(per_process), "0",
                                                      log, counter});
    for (auto& w : workers) {
        const int rc = w.wait_for(120s);
        CHECK(rc == 0);  // -1: still running after 2 minutes (a deadlock)
    }
    const auto r = zkr::test::check_log(log);
    CHECK(r.acquisitions == 4 * per_process);
    CHECK(r.max_concurrent == 1);
    CHECK(r.tokens_rise);
    CHECK(zkr::test::read_lines(counter).at(0) == std::to_string(4 * per_process));
    auto c = connect(zk.connect_string());
    for (const auto& p : paths) CHECK(zkr::test::eventually([&] { return nodes_under(*c, p) == 0; }, 15s));
    std::remove(log.c_str());
    std::remove(counter.c_str());
}

TEST_CASE("multi-lock: a timed acquire that cannot take every member releases the ones it took and leaves no node") {
    auto& zk = zkr::test::shared_server();
    const auto paths = three_paths("timed");
    auto holder_client = connect(zk.connect_string());
    auto c = connect(zk.connect_string());
    zkr::interprocess_mutex middle(*holder_client, paths[1]);
    middle.acquire();

    zkr::interprocess_multi_lock multi(*c, {paths[2], paths[0], paths[1]});
    CHECK(multi.paths() == paths);  // acquired in path order, whatever the list's
    const auto started = std::chrono::steady_clock::now();
    CHECK_FALSE(multi.acquire(400ms));
    CHECK(std::chrono::steady_clock::now() - started < 3s);
    CHECK_FALSE(multi.is_held());
    CHECK(multi.state() == hold_state::released);
    CHECK(multi.stop_token().stop_requested());
    CHECK(nodes_under(*c, paths[0]) == 0);  // taken, then released
    CHECK(nodes_under(*c, paths[1]) == 1);  // only the holder's
    CHECK(nodes_under(*c, paths[2]) == 0);  // never reached
    CHECK_FALSE(multi.try_lock());
    CHECK(nodes_under(*c, paths[0]) == 0);

    middle.release();
    REQUIRE(multi.acquire(5s));
    const auto tokens = multi.fencing_tokens();
    REQUIRE(tokens.size() == 3);
    for (std::size_t i = 0; i < 3; ++i) CHECK(nodes_under(*c, paths[i]) == 1);
    // The holder's mutex now waits for the multi-lock's member.
    CHECK_FALSE(middle.acquire(200ms));
    multi.release();
    for (const auto& p : paths) CHECK(nodes_under(*c, p) == 0);
}

TEST_CASE("multi-lock: a member's hold lost (its node deleted by an operator) makes the whole hold lost, and its stop token fires") {
    auto& zk = zkr::test::shared_server();
    const auto paths = three_paths("loss");
    auto c = connect(zk.connect_string());
    auto operator_client = connect(zk.connect_string());
    zkr::interprocess_multi_lock multi(*c, {paths[0], paths[1]});
    multi.acquire();
    REQUIRE(multi.state() == hold_state::held);
    auto stopped = std::make_shared<std::promise<void>>();
    std::stop_callback on_stop(multi.stop_token(), [stopped] { stopped->set_value(); });
    const auto children = operator_client->get_children(paths[1]).children;
    REQUIRE(children.size() == 1);
    operator_client->remove(paths[1] + "/" + children.front());
    CHECK(stopped->get_future().wait_for(10s) == std::future_status::ready);
    CHECK(multi.state() == hold_state::lost);
    CHECK(multi.is_held());  // still this thread's hold until it releases
    boost::system::error_code ec;
    multi.release(ec);
    CHECK(ec == errc::lock_lost);
    CHECK_FALSE(multi.is_held());
    CHECK(nodes_under(*c, paths[0]) == 0);  // the member still held was released too
}

TEST_CASE("multi-lock: members may be a mutex, a fair lock and a read-write lock's writer, re-entrant, and a guard works") {
    auto& zk = zkr::test::shared_server();
    const auto paths = three_paths("objects");
    auto c = connect(zk.connect_string());
    auto other = connect(zk.connect_string());
    zkr::interprocess_mutex m(*c, paths[2]);
    zkr::fair_lock f(*c, paths[0]);
    zkr::interprocess_read_write_lock rw(*c, paths[1]);
    zkr::interprocess_multi_lock multi({m, f, rw.write_lock()});
    CHECK(multi.paths() == paths);
    {
        std::scoped_lock guard(multi);
        CHECK(multi.is_valid());
        multi.lock();  // re-entry: no node more
        for (const auto& p : paths) CHECK(nodes_under(*c, p) == 1);
        // Another session is refused each member while the multi-lock holds.
        zkr::interprocess_mutex m2(*other, paths[2]);
        zkr::fair_lock f2(*other, paths[0]);
        zkr::interprocess_read_write_lock rw2(*other, paths[1]);
        CHECK_FALSE(m2.try_lock());
        CHECK_FALSE(f2.try_lock());
        CHECK_FALSE(rw2.read_lock().try_lock());
        multi.unlock();
        CHECK(multi.is_held());  // one level left
    }
    CHECK_FALSE(multi.is_held());
    for (const auto& p : paths) CHECK(nodes_under(*c, p) == 0);
    // Another thread of this process competes for it like another process.
    multi.lock();
    auto other_thread = std::async(std::launch::async, [&] { return multi.acquire(200ms); });
    CHECK_FALSE(other_thread.get());
    multi.unlock();
}

// Issue 43 item 10: a thread holding a member through the multi-lock that took the member
// directly waited on itself (try_lock_for(1s) the whole second, lock() for ever). Refused at once
// now, as the read-write lock refuses an upgrade.
TEST_CASE("multi-lock: a thread that holds a member through the multi-lock and takes it directly is refused with would_deadlock") {
    auto& zk = zkr::test::shared_server();
    auto c = connect(zk.connect_string());
    const auto a_path = zkr::test::recipe_path("multi-self-a"), b_path = zkr::test::recipe_path("multi-self-b");
    zkr::interprocess_mutex a(*c, a_path);
    zkr::fair_lock b(*c, b_path);
    zkr::interprocess_multi_lock both({zkr::multi_lock_member(a), zkr::multi_lock_member(b)});
    both.lock();
    const auto started = std::chrono::steady_clock::now();
    zkr::test::expect_error([&] { (void)a.try_lock_for(1s); }, errc::would_deadlock, "through an interprocess_multi_lock");
    zkr::test::expect_error([&] { a.lock(); }, errc::would_deadlock, "would queue behind its own node");
    zkr::test::expect_error([&] { b.lock(); }, errc::would_deadlock, "fair_lock");
    CHECK(std::chrono::steady_clock::now() - started < 500ms);
    CHECK(nodes_under(*c, a_path) == 1);  // nothing queued
    // Another thread is no deadlock: it waits its turn.
    auto other = std::async(std::launch::async, [&] { return a.try_lock_for(200ms); });
    CHECK_FALSE(other.get());
    both.unlock();
    a.lock();  // released: the thread takes it directly now
    a.unlock();
    CHECK(zkr::test::eventually([&] { return nodes_under(*c, a_path) == 0 && nodes_under(*c, b_path) == 0; }));
}

// Issue 43 item 7: a transfer stored in ZooKeeper could not be made conditional on holding every
// account: no guarded_multi, no member node paths.
TEST_CASE("multi-lock: guarded_multi commits only while every member's node is ours, and node_paths names them") {
    auto& zk = zkr::test::shared_server();
    auto c = connect(zk.connect_string()), operator_client = connect(zk.connect_string());
    const auto from = zkr::test::recipe_path("multi-guard-42"), to = zkr::test::recipe_path("multi-guard-7");
    const auto ledger = zkr::test::recipe_path("multi-guard-ledger", "transfer");
    zkr::interprocess_multi_lock both(*c, {from, to});
    zkr::test::expect_error([&] { both.guarded_multi({zkr::multi_op::create(ledger, "x")}); }, errc::lock_not_held, "");
    both.lock();
    const auto nodes = both.node_paths();
    REQUIRE(nodes.size() == 2);
    CHECK(nodes[0].rfind(both.paths()[0] + "/", 0) == 0);
    CHECK(nodes[1].rfind(both.paths()[1] + "/", 0) == 0);
    c->create(std::string(zkr::parent_path(ledger)), "", {.create_parents = true});
    const auto r = both.guarded_multi({zkr::multi_op::create(ledger, "42 -> 7: 100")});
    REQUIRE(r.size() == 1);  // the members' checks are left out
    CHECK(c->get_data(ledger).data == "42 -> 7: 100");
    // One member's node deleted by someone else: the next transfer is refused, nothing is written.
    operator_client->remove(nodes[1]);
    zkr::test::expect_error([&] { both.guarded_multi({zkr::multi_op::set_data(ledger, "again")}); }, errc::lock_lost, "");
    CHECK(c->get_data(ledger).data == "42 -> 7: 100");
    both.unlock();
    c->remove(ledger);
    CHECK(zkr::test::eventually([&] { return nodes_under(*c, from) == 0 && nodes_under(*c, to) == 0; }));
}

TEST_CASE("multi-lock async: async_acquire gives a multi_lock_hold that owns every member from any thread, guards a write, and releases them together") {
    auto& zk = zkr::test::shared_server();
    const auto paths = three_paths("async");
    auto c = connect(zk.connect_string()), other = connect(zk.connect_string());
    zkr::interprocess_multi_lock multi(*c, {paths[2], paths[0], paths[1]});
    auto held = multi.async_acquire(5s, boost::asio::use_future).get();
    REQUIRE(held);
    CHECK(held.state() == hold_state::held);
    CHECK_FALSE(held.stop_token().stop_requested());
    CHECK_FALSE(multi.is_held());  // not this thread's hold
    const auto nodes = held.node_paths();
    REQUIRE(nodes.size() == 3);
    for (std::size_t i = 0; i < 3; ++i) CHECK(nodes[i].rfind(paths[i] + "/", 0) == 0);  // in path order
    REQUIRE(held.fencing_tokens().size() == 3);
    // Another client's member lock waits; so does this client's thread hold of the multi-lock.
    zkr::interprocess_mutex b(*other, paths[1]);
    CHECK_FALSE(b.acquire(200ms));
    CHECK_FALSE(multi.acquire(200ms));
    const auto ledger = zkr::test::recipe_path("multi-async-ledger", "transfer");
    c->create(std::string(zkr::parent_path(ledger)), "", {.create_parents = true});
    CHECK(held.guarded_multi({zkr::multi_op::create(ledger, "moved")}).size() == 1);
    // Owned by the object: another thread releases it.
    auto moved = std::move(held);
    CHECK_FALSE(held);
    std::promise<boost::system::error_code> released;
    std::thread([&] { moved.async_release([&](boost::system::error_code e) { released.set_value(e); }); }).join();
    CHECK_FALSE(released.get_future().get());
    CHECK_FALSE(moved);
    CHECK(moved.state() == hold_state::released);
    CHECK(moved.stop_token().stop_requested());
    zkr::test::expect_error([&] { moved.release(); }, errc::lock_not_held, "");
    for (const auto& p : paths) CHECK(nodes_under(*c, p) == 0);
    CHECK(b.acquire(5s));
    b.release();
    c->remove(ledger);
}

TEST_CASE("multi-lock async: a timed async_acquire that cannot take every member completes empty and leaves no node, and a destroyed hold releases") {
    auto& zk = zkr::test::shared_server();
    const auto paths = three_paths("async-timed");
    auto c = connect(zk.connect_string()), holder_client = connect(zk.connect_string());
    zkr::interprocess_mutex middle(*holder_client, paths[1]);
    middle.acquire();
    zkr::interprocess_multi_lock multi(*c, {paths[0], paths[1], paths[2]});
    const auto started = std::chrono::steady_clock::now();
    auto none = multi.async_acquire(400ms, boost::asio::use_future).get();
    CHECK(std::chrono::steady_clock::now() - started < 3s);
    CHECK_FALSE(none);
    CHECK(zkr::test::eventually([&] { return nodes_under(*c, paths[0]) == 0; }));  // taken, then released
    CHECK(nodes_under(*c, paths[1]) == 1);                                          // only the holder's
    CHECK(nodes_under(*c, paths[2]) == 0);                                          // never reached
    middle.release();
    {
        auto held = multi.async_acquire(5s, boost::asio::use_future).get();
        REQUIRE(held);
        for (const auto& p : paths) CHECK(nodes_under(*c, p) == 1);
    }  // destroyed: released without waiting
    for (const auto& p : paths) CHECK(zkr::test::eventually([&] { return nodes_under(*c, p) == 0; }));
    // A member lost ends the whole hold: its stop token fires, and the release says lock_lost.
    auto held = multi.async_acquire(5s, boost::asio::use_future).get();
    REQUIRE(held);
    auto stopped = std::make_shared<std::promise<void>>();
    std::stop_callback on_stop(held.stop_token(), [stopped] { stopped->set_value(); });
    holder_client->remove(held.node_paths()[2]);
    CHECK(stopped->get_future().wait_for(10s) == std::future_status::ready);
    CHECK(held.state() == hold_state::lost);
    boost::system::error_code ec;
    held.release(ec);
    CHECK(ec == errc::lock_lost);
    for (const auto& p : paths) CHECK(zkr::test::eventually([&] { return nodes_under(*c, p) == 0; }));
}

TEST_CASE("multi-lock async: destroying the multi-lock while its async_acquire waits ends it with cancelled and leaves no node") {
    auto& zk = zkr::test::shared_server();
    const auto paths = three_paths("async-cancel");
    auto c = connect(zk.connect_string()), holder_client = connect(zk.connect_string());
    zkr::interprocess_mutex last(*holder_client, paths[2]);
    last.acquire();
    auto multi = std::make_unique<zkr::interprocess_multi_lock>(*c, std::vector<std::string>{paths[0], paths[1], paths[2]});
    auto outcome = multi->async_acquire(30s, boost::asio::use_future);
    REQUIRE(zkr::test::eventually([&] { return nodes_under(*c, paths[2]) == 2; }));  // queued behind the holder
    multi.reset();
    boost::system::error_code ec;
    try {
        (void)outcome.get();
    } catch (const boost::system::system_error& e) {
        ec = e.code();
    }
    CHECK(ec == errc::cancelled);
    for (const auto& p : {paths[0], paths[1]}) CHECK(zkr::test::eventually([&] { return nodes_under(*c, p) == 0; }));
    CHECK(zkr::test::eventually([&] { return nodes_under(*c, paths[2]) == 1; }));  // the holder's
    last.release();
}
