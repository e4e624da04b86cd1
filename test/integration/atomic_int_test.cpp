// zkr::distributed_atomic_int against a real ZooKeeper: Curator's DistributedAtomicInteger bytes
// (4, big-endian), the 32-bit range kept, a long's 8 bytes refused, and zkr and Curator 5.4
// processes incrementing one integer exactly. (Everything else is distributed_atomic_long's
// recipe, tested there.)
#include "peers.hpp"
#include "process.hpp"
#include "recipe_checks.hpp"

#include <zkr/distributed_atomic_int.hpp>

#include "zkr_catch.hpp"

#include <cstdio>
#include <vector>

using zkr::errc;
using zkr::test::connect;

TEST_CASE("atomic integer: Curator's 4 bytes, the 32-bit range kept, and a long's 8 bytes refused with what was found") {
    auto& zk = zkr::test::shared_server();
    auto c = connect(zk.connect_string());
    const auto path = zkr::test::recipe_path("atomic-int", "n");
    using zkr::test::expect_error;
    expect_error([&] { zkr::distributed_atomic_int n(*c, "no-slash"); }, errc::invalid_path, "invalid atomic integer path");
    zkr::distributed_atomic_int n(*c, path);
    CHECK(n.get().pre_value == 0);
    auto v = n.add(258);
    CHECK(v.succeeded);
    CHECK(v.post_value == 258);
    CHECK(c->get_data(path).data == std::string("\0\0\x01\x02", 4));
    CHECK(n.compare_and_set(258, INT32_MAX).succeeded);
    expect_error([&] { n.increment(); }, errc::invalid_argument, "overflows a 32-bit value");
    CHECK(n.get().pre_value == INT32_MAX);
    CHECK(n.try_set(INT32_MIN).succeeded);
    expect_error([&] { n.decrement(); }, errc::invalid_argument, "overflows a 32-bit value");
    CHECK(c->get_data(path).data == std::string("\x80\0\0\0", 4));
    // An atomic long's 8 bytes are not an integer: refused, left as they were.
    c->set_data(path, std::string("\0\0\0\0\0\0\0\x07", 8), -1);
    expect_error([&] { n.increment(); }, errc::invalid_argument, "holds 8 bytes, not a 32-bit value (4 big-endian bytes)");
    CHECK(c->get_data(path).data == std::string("\0\0\0\0\0\0\0\x07", 8));
    c->remove(n.receipt_path());
    c->remove(path);
    // initialize and force_set write 4 bytes too.
    CHECK(n.initialize(1));
    CHECK_FALSE(n.initialize(2));
    n.force_set(-1);
    CHECK(c->get_data(path).data == std::string("\xff\xff\xff\xff", 4));
    c->remove(path);
}

TEST_CASE("interop: zkr's distributed_atomic_int and Curator's DistributedAtomicInteger increment one value exactly, separate processes") {
    if (!zkr::test::curator_classpath) FAIL("the atomic integer interop test needs javac and Debian's Curator (scripts/run installs them)");
    auto& zk = zkr::test::shared_server();
    const auto cs = zk.connect_string();
    const auto path = zkr::test::recipe_path("interop-atomic-int", "n");
    const auto log = zkr::test::temp_file("curator-atomic-int");
    auto c = connect(cs);
    constexpr int each = 100;
    zkr::test::child_process peer(
        {"/usr/bin/java", "-Xmx128m", "-cp", zkr::test::curator_classpath, "CuratorWorker", cs, "atomicint", path, std::to_string(each), "0", log});
    zkr::distributed_atomic_int n(*c, path, {.optimistic_tries = 3, .promote_to_lock = zkr::atomic_promotion{path + "-lock"}});
    for (int k = 0; k < each;)
        if (n.increment().succeeded) ++k;
    CHECK(peer.wait() == 0);
    CHECK(zkr::test::read_lines(log).size() == 1);  // the Curator process's DONE line
    CHECK(n.get().pre_value == 2 * each);
    CHECK(c->get_data(path).data == std::string("\0\0\0\xc8", 4));  // 200, as Curator wrote and read it
    std::remove(log.c_str());
}
