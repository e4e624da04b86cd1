// zkr::shared_value against a real ZooKeeper: the view follows every change (another client's,
// any bytes, a deletion and re-creation, a change made while its session expired), a write shows
// at once, a conflict shows what beat it, and one value is shared with Curator's SharedValue in a
// process of its own, each side appending by compare-and-set, nothing lost.
#include "client_hooks.hpp"  // requests_sent (src/)
#include "peers.hpp"
#include "recipe_checks.hpp"

#include <zkr/shared_value.hpp>

#include "zkr_catch.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <thread>

using namespace std::chrono_literals;
using zkr::test::connect;

TEST_CASE("shared value: follows another client's writes of any bytes, a deletion and re-creation, and a change made while its session expired") {
    auto& zk = zkr::test::shared_server();
    const auto path = zkr::test::recipe_path("value", "follows");
    auto a = connect(zk.connect_string());
    auto other = connect(zk.connect_string());
    zkr::shared_value value(*a, path, "seed");
    CHECK(value.versioned() == zkr::versioned_value{0, "seed"});
    std::mutex m;
    std::vector<zkr::versioned_value> heard;
    auto sub = value.add_listener([&](const zkr::versioned_value& v) {
        std::lock_guard lock(m);
        heard.push_back(v);
    });
    const auto last_heard = [&] {
        std::lock_guard lock(m);
        return heard.empty() ? zkr::versioned_value{} : heard.back();
    };
    const std::string binary("\x00\xff\x01", 3);
    other->set_data(path, binary);
    CHECK(zkr::test::eventually([&] { return value.value() == binary && last_heard() == zkr::versioned_value{1, binary}; }, 5s));
    other->set_data(path, "");  // empty is a value too
    CHECK(zkr::test::eventually([&] { return value.versioned() == zkr::versioned_value{2, ""} && last_heard().version == 2; }, 5s));
    // Deleted: the last value stays; made again, it is read again.
    other->remove(path);
    std::this_thread::sleep_for(200ms);
    CHECK(value.versioned() == zkr::versioned_value{2, ""});
    other->create(path, "again", {.create_parents = true});
    CHECK(zkr::test::eventually([&] { return value.versioned() == zkr::versioned_value{0, "again"} && last_heard().value == "again"; }, 5s));
    // A change while the session expires: the new session reads it, and sets the watch again.
    zkr::test::expire_session(zk.connect_string(), *a);
    other->set_data(path, "during");
    CHECK(zkr::test::eventually([&] { return value.value() == "during"; }, 10s));
    other->set_data(path, "after");
    CHECK(zkr::test::eventually([&] { return value.value() == "after" && last_heard().value == "after"; }, 5s));
    // Each listener call was a change: never the same bytes twice in a row.
    std::lock_guard lock(m);
    CHECK(std::adjacent_find(heard.begin(), heard.end(), [](const auto& x, const auto& y) { return x.value == y.value; }) == heard.end());
    other->remove(path);
}

TEST_CASE("shared value: a write shows at once, and a conflict shows what beat it") {
    auto& zk = zkr::test::shared_server();
    const auto path = zkr::test::recipe_path("value", "writes");
    auto a = connect(zk.connect_string());
    auto other = connect(zk.connect_string());
    zkr::shared_value value(*a, path, "0");
    value.set_value("1");
    CHECK(value.versioned() == zkr::versioned_value{1, "1"});  // not eventually: when set_value returns
    CHECK(value.try_set_value({1, "1"}, "2"));
    CHECK(value.versioned() == zkr::versioned_value{2, "2"});
    // A stale version, or the right version with other bytes: refused before anything is sent.
    const auto sent = zkr::detail::requests_sent(zkr::detail::connection_of(*a));
    CHECK_FALSE(value.try_set_value({1, "1"}, "x"));
    CHECK_FALSE(value.try_set_value({2, "1"}, "x"));
    CHECK(zkr::detail::requests_sent(zkr::detail::connection_of(*a)) == sent);
    // Another process wrote: the conflict answers false and the view shows the other write then,
    // whether the watch or the read after the conflict brought it.
    for (int i = 0; i < 20; ++i) {
        const auto seen = value.versioned();
        other->set_data(path, "other" + std::to_string(i));
        CHECK_FALSE(value.try_set_value(seen, "mine"));
        CHECK(value.versioned() == zkr::versioned_value{seen.version + 1, "other" + std::to_string(i)});
    }
    CHECK(a->get_data(path).data == "other19");
    a->remove(path);
}

TEST_CASE("shared value: zkr and Curator's SharedValue append to one value by compare-and-set, nothing lost") {
    if (!zkr::test::curator_classpath) FAIL("the shared value interop test needs javac and Debian's Curator (scripts/run installs them)");
    auto& zk = zkr::test::shared_server();
    const auto cs = zk.connect_string();
    const auto path = zkr::test::recipe_path("value", "interop");
    auto a = connect(cs);
    zkr::shared_value value(*a, path, "");
    constexpr int each = 30;
    const auto log = zkr::test::temp_file("value-interop");
    zkr::test::child_process curator({"/usr/bin/java", "-Xmx128m", "-cp", zkr::test::curator_classpath, "CuratorWorker", cs, "sharedvalue", path,
                                      std::to_string(each), "0", log});
    int conflicts = 0;
    for (int done = 0; done < each;) {
        const auto seen = value.versioned();
        if (value.try_set_value(seen, seen.value + "z")) ++done;
        else ++conflicts;
    }
    CHECK(curator.wait() == 0);
    const auto lines = zkr::test::read_lines(log);
    REQUIRE(lines.size() == 1);
    CHECK_THAT(lines[0], zkr::test::starts_with("DONE "));
    const auto data = a->get_data(path);
    CHECK(std::count(data.data.begin(), data.data.end(), 'z') == each);
    CHECK(std::count(data.data.begin(), data.data.end(), 'c') == each);
    CHECK(data.stat.version == 2 * each);  // one version per append: no write beside the appends
    CHECK(zkr::test::eventually([&] { return value.versioned() == zkr::versioned_value{2 * each, data.data}; }, 5s));
    INFO(conflicts << " conflicts on zkr's side");
    a->remove(path);
    std::remove(log.c_str());
}

TEST_CASE("shared value: misuse is refused with a clear error, and nothing is made") {
    auto& zk = zkr::test::shared_server();
    auto a = connect(zk.connect_string());
    try {
        zkr::shared_value bad(*a, "no/slash", "");
        FAIL_CHECK("a relative path was taken");
    } catch (const zkr::error& e) {
        CHECK(e.code() == zkr::errc::invalid_path);
        CHECK_THAT(e.what(), zkr::test::contains("invalid shared value path \"no/slash\""));
    }
    const auto path = zkr::test::recipe_path("value", "misuse");
    zkr::shared_value value(*a, path, "");
    CHECK_THROWS_AS(value.add_listener({}), zkr::error);
    a->remove(path);
}
