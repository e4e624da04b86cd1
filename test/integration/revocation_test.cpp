// Revocation against a real ZooKeeper: a revocable holder asked to let go hears it once (listener
// and stop token) and stays held until it releases, with no waiter let in; read-write holders
// and plain mutexes ignore the request; no write to a holder's node lets a waiter of any recipe
// in; misuse of zkr::revoke.
#include "recipe_checks.hpp"

#include <zkr/fair_lock.hpp>
#include <zkr/interprocess_mutex.hpp>
#include <zkr/interprocess_semaphore_mutex.hpp>
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

TEST_CASE("revocation: read-write holders are asked but never let a writer in") {
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

// Issue 43 item 8: a read-write lock could not be made revocable, and `zkr revoke` on one asked
// holders that could not hear it.
TEST_CASE("revocation: a revocable read-write lock's readers and writer hear the request, and hold on until they release") {
    auto& zk = zkr::test::shared_server();
    const auto path = revoke_path("rw-revocable");
    auto a = connect(zk.connect_string()), b = connect(zk.connect_string());
    std::atomic<int> asked_a{0}, asked_b{0};
    zkr::interprocess_read_write_lock rw_a(*a, path, [&] { ++asked_a; }), rw_b(*b, path, [&] { ++asked_b; });
    rw_a.read_lock().lock();
    rw_b.read_lock().lock();
    CHECK(zkr::revoke(*a, path).size() == 2);
    CHECK(zkr::test::eventually([&] { return asked_a.load() == 1 && asked_b.load() == 1; }, 10s));
    CHECK(rw_a.read_lock().stop_token().stop_requested());
    CHECK(rw_a.read_lock().state() == hold_state::held);
    rw_a.read_lock().unlock();
    rw_b.read_lock().unlock();
    rw_a.write_lock().lock();
    CHECK(zkr::revoke(*b, path).size() == 1);
    CHECK(zkr::test::eventually([&] { return asked_a.load() == 2; }, 10s));
    CHECK(rw_a.write_lock().state() == hold_state::held);
    rw_a.write_lock().unlock();
    zkr::test::expect_error([&] { zkr::interprocess_read_write_lock bad(*a, path, std::function<void()>{}); }, errc::invalid_argument,
                            "revocation listener is empty");
    CHECK(zkr::test::eventually([&] { return nodes_under(*a, path) == 0; }));
}

TEST_CASE("revocation of a mutex that did not opt in: nobody hears the request, and its hold stands") {
    auto& zk = zkr::test::shared_server();
    const auto path = revoke_path("plain");
    auto a = connect(zk.connect_string());
    zkr::interprocess_mutex m(*a, path);
    m.acquire();
    zkr::revoke(*a, path);
    std::this_thread::sleep_for(300ms);  // past the own-node watch's read, which sees the write
    CHECK(m.state() == hold_state::held);
    m.release();
    CHECK(zkr::test::eventually([&] { return nodes_under(*a, path) == 0; }));
}

namespace {

// One recipe's side of the check below: acquire (blocking), try for a while, release, and the node.
struct contender {
    std::function<void()> acquire;
    std::function<bool(std::chrono::milliseconds)> try_for;
    std::function<void()> release;
    std::function<std::string()> node;
};

// Issue 43: `zkr revoke` wrote "__REVOKE__" into a revocable holder's node, and a plain waiter
// behind it took the data change for the release and held beside it for a second. Nothing but the
// holder's own release may let a waiter in: `write` is a revocation request or a third party's
// write, and the waiter (of its own recipe) must not hold until the holder releases.
void check_write_lets_nobody_in(zkr::client& observer, const std::string& path, contender holder, contender waiter,
                                const std::function<void(const std::string& node)>& write) {
    holder.acquire();
    auto waiting = std::async(std::launch::async, [&] {  // (released by the thread that held: a mutex's hold is its thread's)
        const bool held = waiter.try_for(20s);
        if (held) waiter.release();
        return held;
    });
    REQUIRE(zkr::test::eventually([&] { return nodes_under(observer, path) >= 2; }));
    std::this_thread::sleep_for(100ms);  // the waiter's watch is set
    write(holder.node());
    CHECK(waiting.wait_for(700ms) == std::future_status::timeout);
    write(holder.node());  // again, now that any watch it fired is set again
    CHECK(waiting.wait_for(300ms) == std::future_status::timeout);
    holder.release();
    CHECK(waiting.get());
    CHECK(zkr::test::eventually([&] { return nodes_under(observer, path) == 0; }));
}

template <typename Lock>
contender lockable(Lock& l) {
    return {[&l] { l.acquire(); }, [&l](std::chrono::milliseconds t) { return l.acquire(t); }, [&l] { l.release(); },
            [&l] { return l.node_path(); }};
}

contender lease_of(zkr::interprocess_semaphore_v2& s, std::optional<zkr::lease>& held) {
    return {[&] { held = s.acquire(20s); REQUIRE(held); }, [&](std::chrono::milliseconds t) { held = s.acquire(t); return held.has_value(); },
            [&] { held->close(); }, [&] { return held->node_path(); }};
}

}  // namespace

TEST_CASE("writes to lock nodes: a revocation request or a third party's write to the holder's node never lets a waiter of any recipe in") {
    auto& zk = zkr::test::shared_server();
    auto a = connect(zk.connect_string()), b = connect(zk.connect_string()), third = connect(zk.connect_string());
    const auto revoke_it = [&](const std::string& path) { return [&, path](const std::string&) { zkr::revoke(*third, path); }; };
    const auto write_it = [&](const std::string& node) { third->set_data(node, "operator"); };

    SECTION("a revocable mutex holder, a plain mutex waiter, zkr::revoke") {
        const auto path = revoke_path("mix-mutex");
        zkr::interprocess_mutex holder(*a, path, [] {}), waiter(*b, path);
        check_write_lets_nobody_in(*third, path, lockable(holder), lockable(waiter), revoke_it(path));
    }
    SECTION("a revocable fair_lock holder (zkr lock --revocable), a plain fair_lock waiter (zkr lock), zkr::revoke") {
        const auto path = revoke_path("mix-fair");
        zkr::fair_lock holder(*a, path, [] {}), waiter(*b, path);
        check_write_lets_nobody_in(*third, path, lockable(holder), lockable(waiter), revoke_it(path));
    }
    SECTION("mutexes, a third party's write") {
        const auto path = revoke_path("write-mutex");
        zkr::interprocess_mutex holder(*a, path), waiter(*b, path);
        check_write_lets_nobody_in(*third, path, lockable(holder), lockable(waiter), write_it);
    }
    SECTION("semaphore mutexes, a third party's write") {
        const auto path = revoke_path("write-semaphore-mutex");
        zkr::interprocess_semaphore_mutex holder(*a, path), waiter(*b, path);
        check_write_lets_nobody_in(*third, path, lockable(holder), lockable(waiter), write_it);
    }
    SECTION("semaphores of one lease, a third party's write") {
        const auto path = revoke_path("write-semaphore");
        zkr::interprocess_semaphore_v2 holder(*a, path, 1), waiter(*b, path, 1);
        std::optional<zkr::lease> held_a, held_b;
        check_write_lets_nobody_in(*third, path, lease_of(holder, held_a), lease_of(waiter, held_b), write_it);
    }
    SECTION("read-write writers, a revocation request and a third party's write") {
        const auto path = revoke_path("write-rw");
        zkr::interprocess_read_write_lock holder(*a, path), waiter(*b, path);
        check_write_lets_nobody_in(*third, path, lockable(holder.write_lock()), lockable(waiter.write_lock()), revoke_it(path));
        check_write_lets_nobody_in(*third, path, lockable(holder.write_lock()), lockable(waiter.write_lock()), write_it);
    }
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
