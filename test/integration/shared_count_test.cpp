// zkr::shared_count against a real ZooKeeper: the view follows every change (another client's,
// a deletion and re-creation, a change made while its session expired), compare-and-set from two
// clients never loses an increment, and in Curator's format one count is shared with Curator's
// SharedCount and Kazoo's Counter, each in a process of its own.
#include "build_paths.hpp"
#include "peers.hpp"
#include "recipe_checks.hpp"

#include <zkr/shared_count.hpp>

#include "zkr_catch.hpp"

#include <atomic>
#include <cstdio>
#include <future>
#include <thread>

using namespace std::chrono_literals;
using zkr::test::connect;

TEST_CASE("shared count: follows another client's writes, a deletion and re-creation, and a change made while its session expired") {
    auto& zk = zkr::test::shared_server();
    const auto path = zkr::test::recipe_path("count", "follows");
    auto a = connect(zk.connect_string());
    auto other = connect(zk.connect_string());
    zkr::shared_count count(*a, path, 4);
    CHECK(count.count() == 4);
    count.set_count(5);
    CHECK(count.count() == 5);  // not eventually: when set_count returns
    std::atomic<int> heard{0};
    auto sub = count.add_listener([&](std::int32_t v) { heard = v; });
    other->set_data(path, "9");
    CHECK(zkr::test::eventually([&] { return count.count() == 9 && heard == 9; }, 5s));
    // Deleted: the last value stays; made again, it is read again.
    other->remove(path);
    std::this_thread::sleep_for(200ms);
    CHECK(count.count() == 9);
    other->create(path, "12", {.create_parents = true});
    CHECK(zkr::test::eventually([&] { return count.count() == 12 && heard == 12; }, 5s));
    // A change while the session expires: the new session reads it.
    zkr::test::expire_session(zk.connect_string(), *a);
    other->set_data(path, "15");
    CHECK(zkr::test::eventually([&] { return count.count() == 15; }, 10s));
    other->set_data(path, "16");  // and the watch was set again on the new session
    CHECK(zkr::test::eventually([&] { return count.count() == 16 && heard == 16; }, 5s));
    other->remove(path);
}

TEST_CASE("shared count: compare-and-set from two clients never loses an increment") {
    auto& zk = zkr::test::shared_server();
    const auto path = zkr::test::recipe_path("count", "cas");
    auto a = connect(zk.connect_string());
    auto b = connect(zk.connect_string());
    zkr::shared_count ca(*a, path, 0), cb(*b, path, 0);
    constexpr int each = 40;
    // No wait between tries: once a try fails, count() already shows a newer value (the watch's,
    // or the one read after the conflict).
    std::atomic<int> stale_after_conflict{0};
    const auto increment = [&](zkr::shared_count& c) {
        int tries = 0;
        for (int done = 0; done < each;) {
            const auto seen = c.count();
            if (c.try_set_count(seen, seen + 1)) ++done;
            else if (c.count() == seen) ++stale_after_conflict;
            ++tries;
        }
        return tries;
    };
    auto ta = std::async(std::launch::async, [&] { return increment(ca); });
    auto tb = std::async(std::launch::async, [&] { return increment(cb); });
    const int tries = ta.get() + tb.get();
    CHECK(tries >= 2 * each);
    CHECK(stale_after_conflict == 0);
    CHECK(a->get_data(path).data == std::to_string(2 * each));
    CHECK(zkr::test::eventually([&] { return ca.count() == 2 * each && cb.count() == 2 * each; }, 5s));
    a->remove(path);
}

TEST_CASE("shared count in Curator's format: zkr, Curator's SharedCount and Kazoo's Counter increment one count, no increment lost") {
    if (!zkr::test::curator_classpath) FAIL("the count interop test needs javac and Debian's Curator (scripts/run installs them)");
    auto& zk = zkr::test::shared_server();
    const auto cs = zk.connect_string();
    const auto path = zkr::test::recipe_path("count", "interop");
    auto a = connect(cs);
    const zkr::shared_count_options curator_format{.format = zkr::count_format::int32_big_endian};
    zkr::shared_count count(*a, path, 0, curator_format);
    CHECK(a->get_data(path).data == std::string(4, '\0'));  // the seed, as Curator writes it
    constexpr int each = 30;
    const auto log = zkr::test::temp_file("count-interop");
    zkr::test::child_process curator({"/usr/bin/java", "-Xmx128m", "-cp", zkr::test::curator_classpath, "CuratorWorker", cs, "sharedcount", path,
                                      std::to_string(each), "0", log});
    zkr::test::child_process kazoo({"/usr/bin/python3", ZKR_KAZOO_COUNTER_WORKER, cs, path, std::to_string(each), log});
    for (int done = 0; done < each;) {
        const auto seen = count.count();
        if (count.try_set_count(seen, seen + 1)) ++done;
    }
    CHECK(curator.wait() == 0);
    CHECK(kazoo.wait() == 0);
    CHECK(zkr::test::read_lines(log).size() == 2);  // each peer's DONE line: it read and wrote the bytes
    CHECK(a->get_data(path).data == zkr::count_to_data(3 * each, zkr::count_format::int32_big_endian));
    CHECK(zkr::test::eventually([&] { return count.count() == 3 * each; }, 5s));
    // A zkr process of the text format is told what the node holds, not given a wrong number.
    try {
        zkr::shared_count text(*a, path, 0);
        FAIL_CHECK("a count in Curator's format was read as text");
    } catch (const zkr::error& e) {
        CHECK(e.code() == zkr::errc::invalid_argument);
        CHECK_THAT(e.what(), zkr::test::contains("\\x00\\x00\\x00Z") && zkr::test::contains("not a count in decimal text"));
    }
    a->remove(path);
    std::remove(log.c_str());
}
