// Revocation against a real ZooKeeper: a revocable holder asked to let go hears it once (listener
// and stop token) and stays held until it releases, with no waiter let in; read-write holders
// ignore the request; a plain mutex takes it as a loss, as documented; misuse of zkr::revoke.
#include "recipe_checks.hpp"

#include <zkr/interprocess_mutex.hpp>
#include <zkr/interprocess_read_write_lock.hpp>
#include <zkr/interprocess_semaphore_v2.hpp>
#include <zkr/leader_latch.hpp>
#include <zkr/revocation.hpp>

#include <boost/asio/use_future.hpp>

#include "zkr_catch.hpp"

#include <atomic>
#include <future>

using namespace std::chrono_literals;
using zkr::errc;
using zkr::hold_state;

namespace {

using zkr::test::connect;
using zkr::test::nodes_under;

std::string revoke_path(const std::string& name) { return zkr::test::recipe_path("revoke-" + name); }

}  // namespace

TEST_CASE("revocation: the holder hears the request once (listener and stop token), stays held, and no waiter gets in until it releases") {
    auto& zk = zkr::test::shared_server();
    const auto path = revoke_path("held");
    auto a = connect(zk.connect_string()), b = connect(zk.connect_string()), revoker = connect(zk.connect_string());
    std::atomic<int> asked_a{0}, asked_b{0};
    zkr::interprocess_mutex holder(*a, path, [&] { ++asked_a; });
    zkr::interprocess_mutex waiter(*b, path, [&] { ++asked_b; });
    holder.acquire();
    const auto stop = holder.stop_token();
    auto waiting = std::async(std::launch::async, [&] {
        waiter.acquire();
        const auto token = waiter.fencing_token();
        waiter.release();
        return token;
    });
    REQUIRE(zkr::test::eventually([&] { return nodes_under(*a, path) == 2; }));
    const auto asked = zkr::revoke(*revoker, path);
    REQUIRE(asked.size() == 1);
    CHECK(asked.front() == holder.node_path());
    CHECK(zkr::test::eventually([&] { return asked_a.load() == 1; }, 10s));
    CHECK(zkr::test::eventually([&] { return stop.stop_requested(); }, 10s));
    // A request, not a loss: still held, and the waiter behind did not take the write for a release.
    CHECK(waiting.wait_for(500ms) == std::future_status::timeout);
    CHECK(holder.state() == hold_state::held);
    CHECK(holder.guarded_multi({zkr::multi_op::check(path)}).size() == 1);
    zkr::revoke(*revoker, path);  // asked again: told once per hold
    std::this_thread::sleep_for(200ms);
    CHECK(asked_a.load() == 1);
    const auto token = holder.fencing_token();
    holder.release();
    CHECK(waiting.get() > token);
    CHECK(asked_b.load() == 0);
    CHECK(nodes_under(*a, path) == 0);
}

TEST_CASE("revocation: an async lock_hold of a revocable mutex hears it too, and one node can be named") {
    auto& zk = zkr::test::shared_server();
    const auto path = revoke_path("async");
    auto a = connect(zk.connect_string());
    std::atomic<int> asked{0};
    zkr::interprocess_mutex m(*a, path, [&] { ++asked; });
    auto hold = m.async_acquire(5s, boost::asio::use_future).get();
    REQUIRE(hold);
    const auto node = hold.node_path();
    zkr::revoke(*a, path, node.substr(node.rfind('/') + 1));  // by name
    CHECK(zkr::test::eventually([&] { return asked.load() == 1; }, 10s));
    CHECK(hold.stop_token().stop_requested());
    CHECK(hold.state() == hold_state::held);
    hold.release();
    zkr::test::expect_error([&] { zkr::revoke(*a, path, node); }, errc::lock_not_held, "is gone");
}

TEST_CASE("revocation: read-write holders are asked but never let a writer in, and a plain mutex takes the write as a loss") {
    auto& zk = zkr::test::shared_server();
    const auto path = revoke_path("rw");
    auto a = connect(zk.connect_string()), b = connect(zk.connect_string()), w = connect(zk.connect_string());
    zkr::interprocess_read_write_lock rw_a(*a, path), rw_b(*b, path), rw_w(*w, path);
    rw_a.read_lock().lock();
    rw_b.read_lock().lock();
    auto writer = std::async(std::launch::async, [&] {
        const bool held = rw_w.write_lock().acquire(10s);
        if (held) rw_w.write_lock().unlock();
        return held;
    });
    REQUIRE(zkr::test::eventually([&] { return nodes_under(*a, path) == 3; }));
    CHECK(zkr::revoke(*a, path).size() == 2);  // both readers
    CHECK(writer.wait_for(500ms) == std::future_status::timeout);
    CHECK(rw_a.read_lock().state() == hold_state::held);
    rw_a.read_lock().unlock();
    rw_b.read_lock().unlock();
    CHECK(writer.get());
}

TEST_CASE("revocation of a mutex that did not opt in: its hold is lost (written by someone else), as interprocess_mutex documents") {
    auto& zk = zkr::test::shared_server();
    const auto path = revoke_path("plain");
    auto a = connect(zk.connect_string());
    zkr::interprocess_mutex m(*a, path);
    m.acquire();
    zkr::revoke(*a, path);
    CHECK(zkr::test::eventually([&] { return m.state() == hold_state::lost; }, 10s));
    boost::system::error_code ec;
    m.release(ec);
    CHECK(ec == errc::lock_lost);
    CHECK(zkr::test::eventually([&] { return nodes_under(*a, path) == 0; }));
}

TEST_CASE("revocation misuse: no holder, a semaphore or a latch, a bad path, a node of another path, an empty listener") {
    auto& zk = zkr::test::shared_server();
    const auto path = revoke_path("misuse");
    auto c = connect(zk.connect_string());
    zkr::test::expect_error([&] { zkr::revoke(*c, path); }, errc::lock_not_held, "nothing holds it");
    c->create(path, "", zkr::create_options{.create_parents = true});
    zkr::test::expect_error([&] { zkr::revoke(*c, path); }, errc::lock_not_held, "nothing holds it");
    zkr::test::expect_error([&] { zkr::revoke(*c, "no-slash"); }, errc::invalid_path, "no-slash");
    zkr::test::expect_error([&] { zkr::revoke(*c, path, "/elsewhere/_c_x-lock-0000000001"); }, errc::invalid_argument, "not one of its nodes");
    zkr::test::expect_error([&] { zkr::interprocess_mutex m(*c, path, std::function<void()>{}); }, errc::invalid_argument,
                            "revocation listener is empty");
    zkr::interprocess_semaphore_v2 s(*c, path + "/sem", 2);
    auto lease = s.acquire();
    zkr::test::expect_error([&] { zkr::revoke(*c, path + "/sem"); }, errc::invalid_argument, "semaphore");
    lease.close();
    zkr::leader_latch latch(*c, path + "/latch");
    latch.start();
    REQUIRE(latch.await_leadership(10s));
    zkr::test::expect_error([&] { zkr::revoke(*c, path + "/latch"); }, errc::invalid_argument, "leader latch");
    CHECK(latch.has_leadership());
    latch.close();
}
