// zkr::distributed_atomic_long against a real ZooKeeper: the operations and Curator's bytes;
// increments from many clients at once, promoted to a lock, counted exactly; a write whose reply
// is lost while another client writes is applied once and reported right (CURATOR-584); misuse;
// and zkr and Curator 5.4 processes incrementing one value.
#include "peers.hpp"
#include "process.hpp"
#include "recipe_checks.hpp"
#include "tcp_proxy.hpp"

#include <zkr/distributed_atomic_long.hpp>

#include "zkr_catch.hpp"

#include <atomic>
#include <cstdio>
#include <future>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using zkr::errc;
using zkr::test::connect;

TEST_CASE("atomic long: get, add, compare_and_set and try_set in Curator's 8 bytes, and only the value is left") {
    auto& zk = zkr::test::shared_server();
    auto c = connect(zk.connect_string());
    const auto path = zkr::test::recipe_path("atomic", "n");
    {
        zkr::distributed_atomic_long n(*c, path);
        auto v = n.get();  // missing: 0, and nothing made
        CHECK(v.succeeded);
        CHECK(v.pre_value == 0);
        CHECK_FALSE(c->exists(path).has_value());
        v = n.increment();
        CHECK(v.succeeded);
        CHECK(v.pre_value == 0);
        CHECK(v.post_value == 1);
        CHECK(v.stats.optimistic_tries == 1);
        CHECK(c->get_data(path).data == std::string("\0\0\0\0\0\0\0\1", 8));
        CHECK(c->exists(n.receipt_path()).has_value());  // its receipt, ephemeral
        v = n.add(-6);
        CHECK(v.pre_value == 1);
        CHECK(v.post_value == -5);
        CHECK(c->get_data(path).data == std::string("\xff\xff\xff\xff\xff\xff\xff\xfb", 8));
        v = n.compare_and_set(7, 8);  // not 7
        CHECK_FALSE(v.succeeded);
        CHECK(v.pre_value == -5);
        CHECK(v.post_value == 0);
        v = n.compare_and_set(-5, 40);
        CHECK(v.succeeded);
        CHECK(v.post_value == 40);
        v = n.try_set(1000);
        CHECK(v.succeeded);
        CHECK(v.pre_value == 40);
        CHECK(n.decrement().post_value == 999);
        CHECK(n.get().pre_value == 999);
    }
    // The object gone, its receipt goes with it: the value's node alone is left.
    CHECK(zkr::test::eventually([&] { return zkr::test::nodes_under(*c, path) == 0; }, 5s));
    CHECK(c->get_data(path).data == std::string("\0\0\0\0\0\0\x03\xe7", 8));
    // compare_and_set never makes a missing node (as Curator's).
    zkr::distributed_atomic_long missing(*c, path + "-not-there");
    CHECK_FALSE(missing.compare_and_set(0, 1).succeeded);
    CHECK_FALSE(c->exists(path + "-not-there").has_value());
    c->remove(path);
}

TEST_CASE("atomic long: four clients increment at once, promoted to a lock when they collide, and every increment counts once") {
    auto& zk = zkr::test::shared_server();
    const auto path = zkr::test::recipe_path("atomic-contended", "n");
    constexpr int clients = 4, each = 150;
    std::vector<std::unique_ptr<zkr::client>> cs;
    for (int i = 0; i < clients; ++i) cs.push_back(connect(zk.connect_string()));
    std::atomic<long> promoted{0}, tries{0}, wrong{0};  // (Catch's checks are for this thread only)
    std::vector<std::future<void>> done;
    for (int i = 0; i < clients; ++i)
        done.push_back(std::async(std::launch::async, [&, i] {
            zkr::atomic_long_options o;
            o.optimistic_tries = 1;  // collide often
            o.backoff = 0ms;
            o.promote_to_lock = zkr::atomic_promotion{path + "-lock", 10s, 5};
            if (i % 2) o.receipt_ttl = 60s;  // half with receipts that outlive a session
            zkr::distributed_atomic_long n(*cs[static_cast<std::size_t>(i)], path, o);
            for (int k = 0; k < each;) {
                const auto v = n.increment();
                tries += v.stats.optimistic_tries + v.stats.promoted_tries;
                if (v.stats.promoted_tries) ++promoted;
                if (v.succeeded) {
                    if (v.post_value != v.pre_value + 1) ++wrong;
                    ++k;
                }
            }
        }));
    for (auto& f : done) f.get();
    CHECK(wrong == 0);  // every answer's post_value is its pre_value + 1
    zkr::distributed_atomic_long n(*cs[0], path);
    CHECK(n.get().pre_value == clients * each);
    INFO(promoted << " increments promoted, " << tries << " tries");
    CHECK(promoted > 0);
    CHECK(zkr::test::eventually([&] { return zkr::test::nodes_under(*cs[0], path) == 0; }, 5s));  // every receipt gone
    cs[0]->remove(path);
}

// CURATOR-584: Curator resends a versioned write whose reply was lost, the copy fails on the
// version the first moved, and its loop adds again. Here the reply is lost while another client
// adds too; the receipt says ours took: one add each, and ours reported with its own values.
TEST_CASE("atomic long: a write whose reply is lost while another client writes is applied once and reported right (CURATOR-584)") {
    auto& zk = zkr::test::shared_server();
    zkr::test::tcp_proxy proxy(zk.client_port(0));
    auto ours_client = connect(zkr::test::test_options("127.0.0.1:" + std::to_string(proxy.port()), 30s));  // (no ping meanwhile)
    auto other_client = connect(zk.connect_string());
    const auto path = zkr::test::recipe_path("atomic-lost-reply", "n");
    zkr::distributed_atomic_long ours(*ours_client, path), other(*other_client, path);
    CHECK(ours.try_set(10).succeeded);
    // The add reads the value (its receipt is known), then writes: the write waits in the proxy.
    proxy.pass_requests(1);
    auto added = std::async(std::launch::async, [&] { return ours.add(5); });
    REQUIRE(zkr::test::eventually([&] { return proxy.requests_held() == 1; }, 5s));
    // It reaches the server, and its reply is lost.
    proxy.drop_replies(true);
    proxy.pass_all_requests();
    REQUIRE(zkr::test::eventually([&] { return other.get().pre_value == 15; }, 5s));
    // Then another client adds.
    const auto theirs = other.add(100);
    CHECK(theirs.succeeded);
    CHECK(theirs.pre_value == 15);
    proxy.drop_replies(false);
    proxy.reset_all();  // the connection drops: ours reconnects, and resends or reads again
    REQUIRE(added.wait_for(20s) == std::future_status::ready);
    const auto v = added.get();
    CHECK(v.succeeded);
    CHECK(v.pre_value == 10);
    CHECK(v.post_value == 15);
    CHECK(other.get().pre_value == 115);  // not 120: applied once
}

TEST_CASE("atomic long: misuse and data of another format are refused with what was wrong, and nothing is written") {
    auto& zk = zkr::test::shared_server();
    auto c = connect(zk.connect_string());
    const auto path = zkr::test::recipe_path("atomic-misuse", "n");
    using zkr::test::expect_error;
    expect_error([&] { zkr::distributed_atomic_long n(*c, "no-slash"); }, errc::invalid_path, "invalid atomic long path");
    expect_error([&] { zkr::distributed_atomic_long n(*c, "/"); }, errc::invalid_path, "root");
    expect_error([&] { zkr::distributed_atomic_long n(*c, path, {.optimistic_tries = 0}); }, errc::invalid_argument, "optimistic_tries");
    expect_error(
        [&] {
            zkr::distributed_atomic_long n(*c, path, {.promote_to_lock = zkr::atomic_promotion{path + "/lock"}});
        },
        errc::invalid_argument, "must not be the value's node or under it");
    // A count in Curator's SharedCount format (4 bytes) is not a 64-bit value: refused, left as it was.
    c->create(path, std::string("\0\0\0\x07", 4), {.create_parents = true});
    zkr::distributed_atomic_long n(*c, path);
    expect_error([&] { n.increment(); }, errc::invalid_argument, "holds 4 bytes, not a 64-bit value");
    CHECK(c->get_data(path).data == std::string("\0\0\0\x07", 4));
    c->set_data(path, std::string("\x7f\xff\xff\xff\xff\xff\xff\xff", 8), -1);
    expect_error([&] { n.increment(); }, errc::invalid_argument, "overflows");
    CHECK(n.get().pre_value == INT64_MAX);
    c->set_data(path, "", -1);  // empty reads as 0, as in Curator
    CHECK(n.increment().post_value == 1);
    c->remove(n.receipt_path());
    c->remove(path);
}

TEST_CASE("interop: zkr's distributed_atomic_long and Curator's DistributedAtomicLong increment one value exactly, separate processes") {
    if (!zkr::test::curator_classpath) FAIL("the atomic long interop test needs javac and Debian's Curator (scripts/run installs them)");
    auto& zk = zkr::test::shared_server();
    const auto cs = zk.connect_string();
    const auto path = zkr::test::recipe_path("interop-atomic", "n");
    const auto log = zkr::test::temp_file("curator-atomic");
    auto c = connect(cs);
    constexpr int each = 200;  // (the bytes below are 3 * each)
    std::vector<zkr::test::child_process> peers;
    for (int i = 0; i < 2; ++i)
        peers.push_back(zkr::test::child_process(
            {"/usr/bin/java", "-Xmx128m", "-cp", zkr::test::curator_classpath, "CuratorWorker", cs, "atomiclong", path, std::to_string(each), "0", log}));
    // Ours promotes to Curator's lock path: the two kinds of lock queue together.
    zkr::distributed_atomic_long n(*c, path, {.optimistic_tries = 3, .promote_to_lock = zkr::atomic_promotion{path + "-lock"}});
    for (int k = 0; k < each;)
        if (n.increment().succeeded) ++k;
    for (auto& p : peers) CHECK(p.wait() == 0);
    CHECK(zkr::test::read_lines(log).size() == 2);  // each Curator process's DONE line
    const auto v = n.get().pre_value;
    CHECK(v == 3 * each);
    // Curator reads what zkr wrote: 8 big-endian bytes.
    CHECK(c->get_data(path).data == std::string("\0\0\0\0\0\0\x02\x58", 8));  // 600
    std::remove(log.c_str());
}

TEST_CASE("atomic long: initialize makes a missing value only, and force_set writes whatever is there, as Curator's") {
    auto& zk = zkr::test::shared_server();
    auto c = connect(zk.connect_string());
    const auto path = zkr::test::recipe_path("atomic-force", "n");
    zkr::distributed_atomic_long n(*c, path);
    CHECK(n.initialize(7));
    CHECK_FALSE(n.initialize(9));  // there already: left as it was
    CHECK(n.get().pre_value == 7);
    n.force_set(-3);
    CHECK(c->get_data(path).data == std::string("\xff\xff\xff\xff\xff\xff\xff\xfd", 8));
    CHECK(n.increment().post_value == -2);  // the receipted changes go on from it
    c->remove(n.receipt_path());
    c->remove(path);
    n.force_set(5);  // missing: made
    CHECK(n.get().pre_value == 5);
    c->remove(path);
}
