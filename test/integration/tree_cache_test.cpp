// zkr::tree_cache against a real ZooKeeper: it waits for a missing path, follows creations, writes
// and deletions anywhere below it with exact events, catches up after its session expired, and
// refuses misuse with a clear error.
#include "recipe_checks.hpp"

#include <zkr/children_cache.hpp>
#include <zkr/node_cache.hpp>
#include <zkr/tree_cache.hpp>

#include <boost/asio/use_future.hpp>

#include "zkr_catch.hpp"

#include <algorithm>
#include <future>
#include <atomic>
#include <climits>
#include <mutex>
#include <thread>

using namespace std::chrono_literals;
using zkr::test::connect;
using zkr::cache_event_type;

namespace {

// The subtree as a fresh read gives it, to a depth.
std::map<std::string, zkr::cached_node> fresh_read(zkr::client& c, const std::string& path, int depth = INT_MAX) {
    std::map<std::string, zkr::cached_node> tree;
    boost::system::error_code ec;
    const auto d = c.get_data(path, ec);
    if (ec) return tree;
    tree[path] = {d.data, d.stat};
    if (depth == 0) return tree;
    for (const auto& name : c.get_children(path, ec).children)
        for (auto& [p, n] : fresh_read(c, zkr::join_path(path, name), depth - 1)) tree[p] = n;
    return tree;
}

// What a cache shows, compared by what the server decides: data, version, czxid.
bool same(const std::map<std::string, zkr::cached_node>& a, const std::map<std::string, zkr::cached_node>& b) {
    if (a.size() != b.size()) return false;
    for (const auto& [path, n] : a) {
        const auto it = b.find(path);
        if (it == b.end() || it->second.data != n.data || it->second.stat.version != n.stat.version || it->second.stat.czxid != n.stat.czxid)
            return false;
    }
    return true;
}

// A listener's log, and the view its events build.
struct event_log {
    std::mutex mutex;
    std::vector<zkr::cache_event> events;
    std::map<std::string, zkr::cached_node> replayed;
    void operator()(const zkr::cache_event& e) {
        std::lock_guard lock(mutex);
        events.push_back(e);
        if (e.type == cache_event_type::added || e.type == cache_event_type::updated) replayed[e.path] = *e.node;
        if (e.type == cache_event_type::removed) replayed.erase(e.path);
    }
    std::map<std::string, zkr::cached_node> replay() {
        std::lock_guard lock(mutex);
        return replayed;
    }
    int count(cache_event_type t) {
        std::lock_guard lock(mutex);
        return static_cast<int>(std::count_if(events.begin(), events.end(), [&](const auto& e) { return e.type == t; }));
    }
    // The index of the first event of type t on path (-1: none).
    int index_of(cache_event_type t, const std::string& path) {
        std::lock_guard lock(mutex);
        for (std::size_t i = 0; i < events.size(); ++i)
            if (events[i].type == t && events[i].path == path) return static_cast<int>(i);
        return -1;
    }
};

}  // namespace

TEST_CASE("tree cache: waits for a missing path, then follows creations, writes and deletions below it with exact events") {
    auto& zk = zkr::test::shared_server();
    const auto path = zkr::join_path(zkr::test::recipe_path("tree-cache"), "follows");
    auto a = connect(zk.connect_string());
    auto other = connect(zk.connect_string());
    zkr::tree_cache cache(*a, path);
    auto log = std::make_shared<event_log>();
    auto sub = cache.add_listener([log](const zkr::cache_event& e) { (*log)(e); });
    cache.start();
    REQUIRE(cache.wait_initialized(5s));
    CHECK(cache.view().empty());
    other->create(path, "root", {.create_parents = true});
    other->create(path + "/a", "A");
    other->create(path + "/a/x", "X");
    other->create(path + "/b", "B");
    other->set_data(path + "/a", "A2");
    CHECK(zkr::test::eventually([&] { return same(cache.view(), fresh_read(*other, path)); }, 5s));
    CHECK(zkr::test::eventually([&] { return same(log->replay(), cache.view()); }, 5s));
    CHECK(cache.get(path + "/a")->data == "A2");
    CHECK(cache.children(path) == std::vector<std::string>{"a", "b"});
    CHECK(log->count(cache_event_type::initialized) == 1);
    // A subtree goes: what is under it is removed first.
    other->remove(path + "/a/x");
    other->remove(path + "/a");
    CHECK(zkr::test::eventually([&] { return log->index_of(cache_event_type::removed, path + "/a") >= 0; }, 5s));
    CHECK(log->index_of(cache_event_type::removed, path + "/a/x") < log->index_of(cache_event_type::removed, path + "/a"));
    // Deleted and made again under the same name: removed, then added (a new node).
    other->remove(path + "/b");
    other->create(path + "/b", "B-again");
    CHECK(zkr::test::eventually([&] { return same(cache.view(), fresh_read(*other, path)); }, 5s));
    CHECK(zkr::test::eventually([&] { return same(log->replay(), cache.view()); }, 5s));
    CHECK(cache.get(path + "/b")->data == "B-again");
    cache.close();
    other->remove(path + "/b");
    other->remove(path);
}

TEST_CASE("tree cache: a change made while its session expired is seen on the new session, and told as differences") {
    auto& zk = zkr::test::shared_server();
    const auto path = zkr::join_path(zkr::test::recipe_path("tree-cache"), "expiry");
    auto a = connect(zk.connect_string());
    auto other = connect(zk.connect_string());
    other->create(path, "r", {.create_parents = true});
    other->create(path + "/gone", "g");
    other->create(path + "/kept", "k");
    zkr::tree_cache cache(*a, path);
    auto log = std::make_shared<event_log>();
    auto sub = cache.add_listener([log](const zkr::cache_event& e) { (*log)(e); });
    cache.start();
    REQUIRE(cache.wait_initialized(5s));
    CHECK(same(cache.view(), fresh_read(*other, path)));
    zkr::test::expire_session(zk.connect_string(), *a);
    other->remove(path + "/gone");
    other->create(path + "/new", "n");
    other->set_data(path + "/kept", "k2");
    CHECK(zkr::test::eventually([&] { return same(cache.view(), fresh_read(*other, path)); }, 15s));
    CHECK(zkr::test::eventually([&] { return same(log->replay(), cache.view()); }, 5s));
    CHECK(log->count(cache_event_type::lost) >= 1);
    CHECK(log->count(cache_event_type::initialized) == 1);  // once per start
    cache.close();
    for (const auto* p : {"/new", "/kept"}) other->remove(path + p);
    other->remove(path);
}

TEST_CASE("tree cache: the depth limit, a listener that throws, and misuse refused with a clear error") {
    auto& zk = zkr::test::shared_server();
    const auto path = zkr::join_path(zkr::test::recipe_path("tree-cache"), "misuse");
    auto a = connect(zk.connect_string());
    zkr::test::expect_error([&] { zkr::tree_cache(*a, "relative/path"); }, zkr::errc::invalid_path, "invalid tree cache path");
    zkr::test::expect_error([&] { zkr::tree_cache(*a, path, {.max_depth = -1}); }, zkr::errc::invalid_argument, "negative");
    zkr::test::expect_error([&] { zkr::tree_cache(*a, path, {.skip_names = {"_c_*", ""}}); }, zkr::errc::invalid_argument, "empty pattern");
    a->create(path + "/child/grandchild", "g", {.create_parents = true});
    zkr::tree_cache one(*a, path, {.max_depth = 1});
    CHECK_THROWS_AS(one.add_listener({}), zkr::error);
    std::atomic<int> heard{0};
    auto thrower = one.add_listener([](const zkr::cache_event&) { throw std::runtime_error("listener failure"); });
    auto counter = one.add_listener([&](const zkr::cache_event&) { ++heard; });
    one.start();
    zkr::test::expect_error([&] { one.start(); }, zkr::errc::invalid_argument, "started already");
    REQUIRE(one.wait_initialized(5s));
    CHECK(same(one.view(), fresh_read(*a, path, 1)));
    CHECK_FALSE(one.get(path + "/child/grandchild"));  // below the limit
    CHECK(zkr::test::eventually([&] { return heard >= 3; }, 5s));  // the other listener still hears
    one.close();
    one.close();  // a second close does nothing
    zkr::test::expect_error([&] { one.start(); }, zkr::errc::invalid_argument, "closed");
    a->remove(path + "/child/grandchild");
    zkr::test::remove_folder(*a, path + "/child");  // (containers: create_parents made them)
    zkr::test::remove_folder(*a, path);
}

TEST_CASE("tree cache: skipped names are neither read nor shown, and data over the limit is shown as its stat alone") {
    auto& zk = zkr::test::shared_server();
    const auto path = zkr::join_path(zkr::test::recipe_path("tree-cache"), "options");
    auto a = connect(zk.connect_string());
    a->create(path + "/kept", "small", {.create_parents = true});
    a->create(path + "/kept/_c_1234-lock-0000000001", "a lock node");
    a->create(path + "/big", std::string(1000, 'x'));
    a->create(path + "/tmp-1", "t");
    zkr::tree_cache cache(*a, path, {.skip_names = {"_c_*", "tmp-*"}, .max_data_bytes = 100});
    cache.start();
    REQUIRE(cache.wait_initialized(5s));
    CHECK(cache.children(path) == std::vector<std::string>{"big", "kept"});
    CHECK(cache.children(path + "/kept").empty());
    CHECK(cache.get(path + "/kept")->data == "small");
    CHECK(cache.get(path + "/big")->data.empty());
    CHECK(cache.get(path + "/big")->stat.data_length == 1000);
    // Growing past the limit, and back.
    a->set_data(path + "/kept", std::string(200, 'y'));
    CHECK(zkr::test::eventually([&] { return cache.get(path + "/kept")->stat.version == 1 && cache.get(path + "/kept")->data.empty(); }, 5s));
    a->set_data(path + "/kept", "small again");
    CHECK(zkr::test::eventually([&] { return cache.get(path + "/kept")->data == "small again"; }, 5s));
    a->create(path + "/tmp-2", "t");
    a->create(path + "/late", "l");
    CHECK(zkr::test::eventually([&] { return cache.get(path + "/late").has_value(); }, 5s));
    CHECK_FALSE(cache.get(path + "/tmp-2"));
    cache.close();
    for (const auto* p : {"/kept/_c_1234-lock-0000000001", "/kept", "/big", "/tmp-1", "/tmp-2", "/late"}) a->remove(path + p);
    zkr::test::remove_folder(*a, path);  // (a container: create_parents made it)
}

TEST_CASE("tree cache: async_wait_initialized completes when initialized, on timeout with false, and with closed, off the network thread") {
    auto& zk = zkr::test::shared_server();
    const auto path = zkr::join_path(zkr::test::recipe_path("tree-cache"), "async");
    auto a = connect(zk.connect_string());
    a->create(path, "r", {.create_parents = true});
    a->create(path + "/x", "x");
    {
        zkr::tree_cache cache(*a, path);
        // Before start(): a zero timeout answers at once, a short one ends with false.
        CHECK_FALSE(cache.async_wait_initialized(0ms, boost::asio::use_future).get());
        CHECK_FALSE(cache.async_wait_initialized(50ms, boost::asio::use_future).get());
        // A callback, asked before start(), completes once the first full read is done.
        std::promise<std::pair<boost::system::error_code, bool>> heard;
        std::promise<std::thread::id> on_thread;
        cache.async_wait_initialized(10s, [&](boost::system::error_code ec, bool done) {
            on_thread.set_value(std::this_thread::get_id());
            heard.set_value({ec, done});
        });
        cache.start();
        auto outcome = heard.get_future();
        REQUIRE(outcome.wait_for(5s) == std::future_status::ready);
        const auto [ec, done] = outcome.get();
        CHECK_FALSE(ec);
        CHECK(done);
        CHECK(on_thread.get_future().get() != std::this_thread::get_id());
        CHECK(cache.get(path + "/x"));  // the view is complete when it completes
        // Once initialized: at once, true.
        CHECK(cache.async_wait_initialized(0ms, boost::asio::use_future).get());
        CHECK_THROWS_AS(cache.async_wait_initialized(-1ms, boost::asio::use_future).get(), boost::system::system_error);
        // A cache closed before it was initialized ends every wait with closed.
        zkr::tree_cache never(*a, path);
        auto pending = never.async_wait_initialized(30s, boost::asio::use_future);
        never.close();
        REQUIRE(pending.wait_for(5s) == std::future_status::ready);
        try {
            pending.get();
            FAIL("a wait on a closed cache completed without an error");
        } catch (const boost::system::system_error& e) {
            CHECK(e.code() == zkr::errc::closed);
        }
        // And node_cache and children_cache have it too.
        zkr::node_cache node(*a, path + "/x");
        node.start();
        CHECK(node.async_wait_initialized(5s, boost::asio::use_future).get());
        cache.close();
        a->remove(path + "/x");
        a->remove(path);
    }
    // A wait answered early leaves no timer behind: the client's destruction, which joins its
    // callback thread, is not held until the 30 s wait would have run out (it was).
    const auto t0 = std::chrono::steady_clock::now();
    a.reset();
    CHECK(std::chrono::steady_clock::now() - t0 < 5s);
}

TEST_CASE("node cache and children cache: one node that does not exist yet, and a parent's children without the parent's own events") {
    auto& zk = zkr::test::shared_server();
    const auto path = zkr::join_path(zkr::test::recipe_path("tree-cache"), "partial");
    auto a = connect(zk.connect_string());
    auto other = connect(zk.connect_string());
    zkr::node_cache node(*a, path + "/config");
    zkr::children_cache kids(*a, path);
    auto node_log = std::make_shared<event_log>(), kids_log = std::make_shared<event_log>();
    auto s1 = node.add_listener([node_log](const zkr::cache_event& e) { (*node_log)(e); });
    auto s2 = kids.add_listener([kids_log](const zkr::cache_event& e) { (*kids_log)(e); });
    node.start();
    kids.start();
    REQUIRE(node.wait_initialized(5s));
    REQUIRE(kids.wait_initialized(5s));
    CHECK_FALSE(node.get());
    CHECK(kids.children().empty());
    other->create(path + "/config", "v1", {.create_parents = true});
    other->create(path + "/worker-1", "w1");
    CHECK(zkr::test::eventually([&] { return node.get() && node.get()->data == "v1"; }, 5s));
    CHECK(zkr::test::eventually([&] { return kids.children() == std::vector<std::string>{"config", "worker-1"}; }, 5s));
    CHECK(kids.get("worker-1")->data == "w1");
    CHECK_FALSE(kids.get("no-such-child"));
    other->set_data(path + "/config", "v2");
    CHECK(zkr::test::eventually([&] { return node.get()->data == "v2"; }, 5s));
    CHECK(zkr::test::eventually([&] { return kids.get("config")->data == "v2"; }, 5s));
    // The children cache's listener hears the children only, never the parent's own events.
    CHECK(zkr::test::eventually([&] { return kids_log->count(cache_event_type::updated) == 1; }, 5s));
    CHECK(kids_log->index_of(cache_event_type::added, path) == -1);
    CHECK(kids_log->index_of(cache_event_type::added, path + "/worker-1") >= 0);
    other->remove(path + "/config");
    CHECK(zkr::test::eventually([&] { return !node.get(); }, 5s));
    CHECK(zkr::test::eventually([&] { return node_log->index_of(cache_event_type::removed, path + "/config") >= 0; }, 5s));
    node.close();
    kids.close();
    other->remove(path + "/worker-1");
    zkr::test::remove_folder(*other, path);  // (a container: create_parents made it)
}
