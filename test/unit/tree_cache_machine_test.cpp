// The tree cache's machine (recipes/cache/tree_cache_machine.hpp), event by event, without a server.
#include "../../recipes/cache/tree_cache_machine.hpp"

#include <zkr/error.hpp>

#include "zkr_catch.hpp"

namespace {

using namespace zkr::detail;
using zkr::cache_event;
using zkr::cache_event_type;
using zkr::watch_event_type;

// A machine with what it asked for and what it told, kept across steps.
struct cache {
    tree_cache_machine m;
    std::vector<zk::op> ops;           // every op, in order
    std::vector<cache_event> events;  // every event, in order

    explicit cache(std::string root = "/t", int max_depth = INT_MAX, std::int64_t session = 7, std::size_t window = 1000)
        : cache(tree_cache_config{std::move(root), max_depth, true, window}, session) {}
    cache(tree_cache_config config, std::int64_t session) : m(std::move(config)) { feed(tree_in::start{session}); }

    // The ops and events of this step only.
    std::pair<std::vector<zk::op>, std::vector<cache_event>> feed(const tree_cache_machine::input& e) {
        std::pair<std::vector<zk::op>, std::vector<cache_event>> step;
        for (auto& a : m.resume(e)) {
            if (auto* op = std::get_if<zk::op>(&a)) step.first.push_back(*op);
            else step.second.push_back(std::get<cache_event>(a));
        }
        ops.insert(ops.end(), step.first.begin(), step.first.end());
        events.insert(events.end(), step.second.begin(), step.second.end());
        return step;
    }

    // The newest op of type T on path (its ticket answers it).
    template <typename T>
    zk::ticket newest(const std::string& path) const {
        for (auto it = ops.rbegin(); it != ops.rend(); ++it)
            if (const auto* o = std::get_if<T>(&*it); o && o->path == path) return o->id;
        FAIL("no op of that kind on " << path);
        return 0;
    }

    auto data(const std::string& path, std::string value, std::int32_t version, std::int64_t czxid) {
        zk::reply r;
        r.id = newest<zk::get_data>(path);
        r.data = std::move(value);
        zkr::stat st;
        st.version = version;
        st.czxid = czxid;
        r.stat = st;
        return feed(r);
    }
    auto listing(const std::string& path, std::vector<std::string> names) {
        zk::reply r;
        r.id = newest<zk::get_children>(path);
        r.children = std::move(names);
        return feed(r);
    }
    auto failed(zk::ticket id, zkr::errc code) {
        zk::reply r;
        r.id = id;
        r.ec = make_error_code(code);
        return feed(r);
    }
};

std::vector<cache_event_type> types(const std::vector<cache_event>& events) {
    std::vector<cache_event_type> t;
    for (const auto& e : events) t.push_back(e.type);
    return t;
}

using T = cache_event_type;

// The names of the children of path that the view shows.
std::vector<std::string> children_of(const tree_cache_machine& m, const std::string& path) {
    std::vector<std::string> names;
    for (const auto& [p, n] : m.view())
        if (p.size() > path.size() + 1 && p.compare(0, path.size() + 1, path + "/") == 0 && p.find('/', path.size() + 1) == std::string::npos)
            names.push_back(p.substr(path.size() + 1));
    return names;
}

}  // namespace

TEST_CASE("tree cache machine: reads the root and each child with watches, adds each once, and is initialized after the last read") {
    cache c;
    REQUIRE(c.ops.size() == 2);  // the root's data and children, at once
    CHECK(std::get<zk::get_data>(c.ops[0]).watch);
    CHECK(std::get<zk::get_children>(c.ops[1]).watch);
    c.data("/t", "root", 0, 10);
    auto [ops, events] = c.listing("/t", {"b", "a"});
    CHECK(ops.size() == 4);  // both children's data and children, pipelined
    CHECK(types(events).empty());
    CHECK_FALSE(c.m.initialized());
    c.data("/t/a", "A", 2, 11);
    c.listing("/t/a", {});
    c.data("/t/b", "B", 0, 12);
    CHECK_FALSE(c.m.initialized());
    std::tie(ops, events) = c.listing("/t/b", {});
    CHECK(types(events) == std::vector<T>{T::initialized});
    CHECK(types(c.events) == std::vector<T>{T::added, T::added, T::added, T::initialized});
    CHECK(children_of(c.m, "/t") == std::vector<std::string>{"a", "b"});
    REQUIRE(c.m.view().count("/t/a"));
    CHECK(c.m.view().at("/t/a").data == "A");
    CHECK(c.m.view().at("/t/a").stat.version == 2);
}

TEST_CASE("tree cache machine: a missing root is awaited with an exists watch, initialized at once, added once made") {
    cache c;
    c.failed(c.newest<zk::get_data>("/t"), zkr::errc::no_node);
    auto [ops, events] = c.failed(c.newest<zk::get_children>("/t"), zkr::errc::no_node);
    const auto exists = c.newest<zk::exists>("/t");
    zk::reply missing;
    missing.id = exists;
    std::tie(ops, events) = c.feed(missing);
    CHECK(types(events) == std::vector<T>{T::initialized});
    CHECK(c.m.view().empty());
    std::tie(ops, events) = c.feed(zk::watch_fired{exists, watch_event_type::node_created});
    CHECK(ops.size() == 2);
    c.data("/t", "x", 0, 20);
    CHECK(types(c.events) == std::vector<T>{T::initialized, T::added});
}

TEST_CASE("tree cache machine: a late reply or a lower version never puts an older state back") {
    cache c("/t", 0);  // the root only
    REQUIRE(c.ops.size() == 1);
    const auto first = c.newest<zk::get_data>("/t");
    c.data("/t", "v3", 3, 10);
    // The data changes: a newer read goes out; the first read's reply, were it late, is stale.
    c.feed(zk::watch_fired{first, watch_event_type::node_data_changed});
    const auto second = c.newest<zk::get_data>("/t");
    CHECK(second != first);
    zk::reply late;
    late.id = first;
    late.data = "v2";
    late.stat = zkr::stat{};
    late.stat->version = 2;
    late.stat->czxid = 10;
    CHECK(c.feed(late).second.empty());
    // The newest read itself can never show a lower version of the same node either.
    CHECK(c.data("/t", "v2", 2, 10).second.empty());
    CHECK(c.m.view().at("/t").data == "v3");
    // An old watch firing again is no news: only the newest read's watch counts.
    CHECK(c.feed(zk::watch_fired{first, watch_event_type::node_data_changed}).first.empty());
}

TEST_CASE("tree cache machine: a deleted node is removed after everything under it, by its own watch") {
    cache c;
    c.data("/t", "", 0, 10);
    c.listing("/t", {"a", "b"});
    c.data("/t/a", "A", 0, 11);
    c.listing("/t/a", {"x"});
    c.data("/t/a/x", "X", 0, 13);
    c.listing("/t/a/x", {});
    c.data("/t/b", "B", 0, 12);
    c.listing("/t/b", {});
    REQUIRE(c.m.initialized());
    const auto before = c.events.size();
    // /t/a goes (its child first, on the server): its data watch fires node_deleted.
    auto [ops, events] = c.feed(zk::watch_fired{c.newest<zk::get_data>("/t/a"), watch_event_type::node_deleted});
    REQUIRE(events.size() == 2);
    CHECK(events[0].type == T::removed);
    CHECK(events[0].path == "/t/a/x");
    CHECK(events[1].path == "/t/a");
    REQUIRE(events[1].node);
    CHECK(events[1].node->data == "A");  // the last one shown
    CHECK(children_of(c.m, "/t") == std::vector<std::string>{"b"});
    // The root's listing: a new name is read; one it lacks is removed by its own watch.
    c.feed(zk::watch_fired{c.newest<zk::get_children>("/t"), watch_event_type::node_children_changed});
    std::tie(ops, events) = c.listing("/t", {"c"});
    CHECK(events.empty());
    CHECK(ops.size() == 2);  // c's reads
    std::tie(ops, events) = c.feed(zk::watch_fired{c.newest<zk::get_data>("/t/b"), watch_event_type::node_deleted});
    REQUIRE(types(events) == std::vector<T>{T::removed});
    CHECK(events[0].path == "/t/b");
    c.data("/t/c", "C", 0, 14);
    CHECK(c.events.size() == before + 4);
    CHECK(c.events.back().type == T::added);
}

TEST_CASE("tree cache machine: after a lost session every node is read again: one gone is removed, one made again is removed then added") {
    cache c;
    c.data("/t", "", 0, 10);
    c.listing("/t", {"a", "b"});
    c.data("/t/a", "A", 0, 11);
    c.listing("/t/a", {});
    c.data("/t/b", "B", 0, 12);
    c.listing("/t/b", {});
    REQUIRE(c.m.initialized());
    c.feed(zk::connection_changed{zkr::connection_state::suspended, 7});
    c.feed(zk::connection_changed{zkr::connection_state::lost, 0});
    const auto sent = c.ops.size();
    auto [ops, events] = c.feed(zk::connection_changed{zkr::connection_state::connected, 8});
    CHECK(ops.size() == 6);  // every node's data and children
    CHECK(types(events) == std::vector<T>{T::reconnected});
    CHECK(c.ops.size() == sent + 6);
    c.data("/t", "", 0, 10);
    c.listing("/t", {"a", "b"});
    std::tie(ops, events) = c.failed(c.newest<zk::get_data>("/t/a"), zkr::errc::no_node);
    CHECK(types(events) == std::vector<T>{T::removed});
    std::tie(ops, events) = c.data("/t/b", "B2", 0, 30);  // a new czxid: another node
    CHECK(types(events) == std::vector<T>{T::removed, T::added});
    CHECK(events[0].node->stat.czxid == 12);
    CHECK(events[1].node->stat.czxid == 30);
    // initialized came once, before.
    CHECK(std::count_if(c.events.begin(), c.events.end(), [](const auto& e) { return e.type == T::initialized; }) == 1);
}

TEST_CASE("tree cache machine: a reconnection on the same session sends only the reads that failed") {
    cache c;
    c.data("/t", "", 0, 10);
    c.listing("/t", {"a", "b"});
    c.data("/t/a", "A", 0, 11);
    c.listing("/t/a", {});
    c.feed(zk::connection_changed{zkr::connection_state::suspended, 7});
    c.failed(c.newest<zk::get_data>("/t/b"), zkr::errc::connection_loss);
    c.failed(c.newest<zk::get_children>("/t/b"), zkr::errc::connection_loss);
    CHECK_FALSE(c.m.initialized());  // b was never read
    auto [ops, events] = c.feed(zk::connection_changed{zkr::connection_state::reconnected, 7});
    CHECK(ops.size() == 2);  // b's two reads; the watches of the others were set again by the client
    for (const auto& op : ops) {
        REQUIRE(std::holds_alternative<zk::get_data>(op) != std::holds_alternative<zk::get_children>(op));
        CHECK((std::holds_alternative<zk::get_data>(op) ? std::get<zk::get_data>(op).path : std::get<zk::get_children>(op).path) == "/t/b");
    }
    CHECK(types(events) == std::vector<T>{T::reconnected});
    CHECK(types(c.data("/t/b", "B", 0, 12).second) == std::vector<T>{T::added});
    CHECK(types(c.listing("/t/b", {}).second) == std::vector<T>{T::initialized});
}

TEST_CASE("tree cache machine: the depth limit: nodes at the limit are read without their children") {
    cache c("/t", 1);
    c.data("/t", "", 0, 10);
    auto [ops, events] = c.listing("/t", {"a"});
    REQUIRE(ops.size() == 1);  // a's data only
    CHECK(std::holds_alternative<zk::get_data>(ops[0]));
    std::tie(ops, events) = c.data("/t/a", "A", 0, 11);
    CHECK(types(events) == std::vector<T>{T::added, T::initialized});
}

TEST_CASE("tree cache machine: at most a window of reads in flight, the rest sent as replies come, in order") {
    cache c("/t", INT_MAX, 7, 2);
    REQUIRE(c.ops.size() == 2);
    c.data("/t", "", 0, 10);
    auto [ops, events] = c.listing("/t", {"a", "b"});
    REQUIRE(ops.size() == 2);  // a's two reads fill the window; b's wait
    CHECK(std::get<zk::get_data>(ops[0]).path == "/t/a");
    CHECK(std::get<zk::get_children>(ops[1]).path == "/t/a");
    std::tie(ops, events) = c.data("/t/a", "A", 0, 11);
    REQUIRE(ops.size() == 1);  // a reply makes room for one
    CHECK(std::get<zk::get_data>(ops[0]).path == "/t/b");
    std::tie(ops, events) = c.listing("/t/a", {});
    REQUIRE(ops.size() == 1);
    CHECK(std::get<zk::get_children>(ops[0]).path == "/t/b");
    c.data("/t/b", "B", 0, 12);
    std::tie(ops, events) = c.listing("/t/b", {});
    CHECK(ops.empty());
    CHECK(types(events) == std::vector<T>{T::initialized});
    CHECK(c.m.view().size() == 3);
}

TEST_CASE("tree cache machine: skipped names are never read nor shown, and data over the limit is kept as its stat alone") {
    cache c(tree_cache_config{.root = "/t", .skip_names = {"_c_*", "x"}, .max_data = 3}, 7);
    c.data("/t", "root-data", 0, 10);  // over the limit: no data, its stat
    auto [ops, events] = c.listing("/t", {"_c_1-lock-0001", "a", "x", "xy"});
    CHECK(ops.size() == 4);  // a's and xy's two reads: nothing for the skipped two
    for (const auto& op : ops) {
        const auto path = std::visit([](const auto& o) {
            if constexpr (requires { o.path; }) return o.path;
            else return std::string();
        }, op);
        CHECK((path == "/t/a" || path == "/t/xy"));
    }
    c.data("/t/a", "abc", 0, 11);  // at the limit: kept
    c.listing("/t/a", {});
    c.data("/t/xy", "abcd", 0, 12);
    std::tie(ops, events) = c.listing("/t/xy", {});
    CHECK(types(events) == std::vector<T>{T::initialized});
    CHECK(children_of(c.m, "/t") == std::vector<std::string>{"a", "xy"});
    CHECK(c.m.view().at("/t").data.empty());
    CHECK(c.m.view().at("/t").stat.czxid == 10);
    CHECK(c.m.view().at("/t/a").data == "abc");
    CHECK(c.m.view().at("/t/xy").data.empty());
    // A skipped name that comes later is not read either.
    std::tie(ops, events) = c.feed(zk::watch_fired{c.newest<zk::get_children>("/t"), watch_event_type::node_children_changed});
    std::tie(ops, events) = c.listing("/t", {"_c_1-lock-0001", "_c_2-lock-0002", "a", "x", "xy"});
    CHECK(ops.empty());
    CHECK(events.empty());
}

TEST_CASE("tree cache machine: a read that fails while connected is sent again after the retry delay, not left for a reconnection that already came") {
    cache c;
    c.data("/t", "", 0, 10);
    c.listing("/t", {"b"});
    // The connection dropped and came back; b's read, retried by the client in vain, fails after.
    c.feed(zk::connection_changed{zkr::connection_state::suspended, 7});
    c.feed(zk::connection_changed{zkr::connection_state::reconnected, 7});
    auto [ops, events] = c.failed(c.newest<zk::get_data>("/t/b"), zkr::errc::connection_loss);
    REQUIRE(ops.size() == 1);
    const auto* timer = std::get_if<zk::after>(&ops[0]);
    REQUIRE(timer);
    CHECK(timer->delay == std::chrono::milliseconds(1000));
    CHECK(c.failed(c.newest<zk::get_children>("/t/b"), zkr::errc::operation_timeout).first.empty());  // one timer for both
    CHECK_FALSE(c.m.initialized());
    std::tie(ops, events) = c.feed(zk::timer_due{timer->id});
    CHECK(ops.size() == 2);  // b's two reads, again
    c.data("/t/b", "B", 0, 12);
    CHECK(types(c.listing("/t/b", {}).second) == std::vector<T>{T::initialized});
    // While disconnected, a failure waits for the reconnection (no timer).
    c.feed(zk::connection_changed{zkr::connection_state::suspended, 7});
    c.feed(zk::watch_fired{c.newest<zk::get_data>("/t/b"), watch_event_type::node_data_changed});
    CHECK(c.failed(c.newest<zk::get_data>("/t/b"), zkr::errc::connection_loss).first.empty());
}
