// zkr::shared_count against a real ZooKeeper: the view follows every change (another client's,
// a deletion and re-creation, a change made while its session expired), and compare-and-set
// from two clients never loses an increment.
#include "recipe_checks.hpp"

#include <zkr/shared_count.hpp>

#include "zkr_catch.hpp"

#include <atomic>
#include <future>
#include <thread>

using namespace std::chrono_literals;
using zkr::test::connect;

namespace {

std::string count_path(const std::string& name) { return zkr::join_path(zkr::test::recipe_path("count"), name); }

}  // namespace

TEST_CASE("shared count: follows another client's writes, a deletion and re-creation, and a change made while its session expired") {
    auto& zk = zkr::test::shared_server();
    const auto path = count_path("follows");
    auto a = connect(zk.connect_string());
    auto other = connect(zk.connect_string());
    zkr::shared_count count(*a, path, 4);
    CHECK(count.count() == 4);
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
    const auto path = count_path("cas");
    auto a = connect(zk.connect_string());
    auto b = connect(zk.connect_string());
    zkr::shared_count ca(*a, path, 0), cb(*b, path, 0);
    constexpr int each = 40;
    const auto increment = [](zkr::shared_count& c) {
        int tries = 0;
        for (int done = 0; done < each;) {
            const auto seen = c.count();
            if (c.try_set_count(seen, seen + 1)) ++done;
            else std::this_thread::sleep_for(1ms);  // the view catches up through its watch
            ++tries;
        }
        return tries;
    };
    auto ta = std::async(std::launch::async, [&] { return increment(ca); });
    auto tb = std::async(std::launch::async, [&] { return increment(cb); });
    const int tries = ta.get() + tb.get();
    CHECK(tries >= 2 * each);
    CHECK(a->get_data(path).data == std::to_string(2 * each));
    CHECK(zkr::test::eventually([&] { return ca.count() == 2 * each && cb.count() == 2 * each; }, 5s));
    a->remove(path);
}
