// Caches side by side on one path, each in its own process but the first: zkr::tree_cache (in this
// process), `zkr watch --json`, Curator 5.4's TreeCache and CuratorCache (test/peers/CuratorWorker.java)
// and Kazoo's TreeCache (test/peers/kazoo_cache_worker.py). One writer makes the same seeded random
// changes for all (creates, writes, whole subtrees deleted, nodes deleted and made again at once, in
// bursts); once it stops, every cache's view equals a fresh read of the tree: paths, data, versions
// and (where the cache shows it) czxids. zkr's views are also checked against their events replayed.
#include "build_paths.hpp"
#include "peers.hpp"
#include "recipe_checks.hpp"

#include <zkr/tree_cache.hpp>

#include "zkr_catch.hpp"

#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <random>
#include <regex>
#include <sstream>
#include <thread>

using namespace std::chrono_literals;

namespace {

// A node as every cache can show it; czxid -1 where a cache does not say it (zkr watch's JSON).
struct node_state {
    std::string data;
    std::int32_t version = 0;
    std::int64_t czxid = -1;
    bool operator==(const node_state&) const = default;
};
using tree_state = std::map<std::string, node_state>;

tree_state read_server_tree(zkr::client& c, const std::string& path) {
    tree_state t;
    boost::system::error_code ec;
    const auto d = c.get_data(path, ec);
    if (ec) return t;
    t[path] = {d.data, d.stat.version, d.stat.czxid};
    for (const auto& name : c.get_children(path, ec).children)
        for (auto& [p, n] : read_server_tree(c, zkr::join_path(path, name))) t[p] = n;
    return t;
}

tree_state without_czxid(tree_state t) {
    for (auto& [p, n] : t) n.czxid = -1;
    return t;
}

std::string describe_tree(const tree_state& t) {
    std::string s;
    for (const auto& [p, n] : t) s += "  " + p + " v" + std::to_string(n.version) + " czxid " + std::to_string(n.czxid) + " '" + n.data + "'\n";
    return s;
}

// A peer's view file (the workers' format: "initialized" or "loading", then PATH\tVERSION\tCZXID\tDATA).
struct peer_view {
    bool initialized = false;
    tree_state nodes;
};
peer_view read_view(const std::string& file) {
    peer_view v;
    std::ifstream in(file);
    std::string line;
    if (!std::getline(in, line)) return v;
    v.initialized = line == "initialized";
    while (std::getline(in, line)) {
        std::istringstream fields(line);
        std::string path, version, czxid, data;
        std::getline(fields, path, '\t');
        std::getline(fields, version, '\t');
        std::getline(fields, czxid, '\t');
        std::getline(fields, data);
        v.nodes[path] = {data, std::stoi(version), std::stoll(czxid)};
    }
    return v;
}

// zkr watch --json's lines replayed: added and updated put the node, removed takes it away.
struct replayed_json {
    bool initialized = false;
    tree_state nodes;
};
replayed_json replay_json(const std::string& file) {
    static const std::regex line_form(R"re(\{"event":"(\w+)"(?:,"path":"([^"]*)")?(?:,"data":"([^"]*)","version":(\d+))?\})re");
    replayed_json r;
    std::ifstream in(file);
    std::string line;
    std::smatch m;
    while (std::getline(in, line)) {
        if (!std::regex_match(line, m, line_form)) continue;
        const auto event = m[1].str();
        if (event == "initialized") r.initialized = true;
        else if (event == "added" || event == "updated") r.nodes[m[2].str()] = {m[3].str(), std::stoi(m[4].str()), -1};
        else if (event == "removed") r.nodes.erase(m[2].str());
    }
    return r;
}

// Deletes a node and everything below it. A delete retried after a connection loss may find its
// node gone already (its first attempt's reply was lost): no_node is then the answer, not a failure.
void remove_tree(zkr::client& c, const std::string& path) {
    boost::system::error_code ec;
    for (const auto& name : c.get_children(path, ec).children) remove_tree(c, zkr::join_path(path, name));
    c.remove(path, {}, ec);
    if (ec && ec != zkr::errc::no_node) throw zkr::error(ec, path, "cannot delete " + path + ": " + ec.message());
}

// The one writer: seeded random changes below root (never root itself: Kazoo's TreeCache makes its
// root at start, and the other caches' handling of a lost root is tested on their own).
class random_writer {
public:
    random_writer(zkr::client& c, std::string root, std::uint64_t seed) : c_(c), root_(std::move(root)), rng_(seed) {}

    void change() {
        const auto nodes = paths();
        const auto& at = nodes[pick(nodes.size())];
        switch (pick(10)) {  // half creates, three in ten writes, the rest deletions
            case 0: case 1: case 2: case 3: case 4: return create_under(at);
            case 5: case 6: case 7:
                if (at != root_) c_.set_data(at, next_data());
                return;
            case 8: {
                const auto gone = deepest_of_three(nodes);
                if (gone != root_) remove_subtree(gone);
                return;
            }
            default: {  // deleted and made again at once, under the same name
                const auto again = deepest_of_three(nodes);
                if (again == root_) return;
                remove_subtree(again);
                boost::system::error_code ec;
                c_.create(again, next_data(), {}, ec);  // (node_exists: a retried create whose first reply was lost)
                return;
            }
        }
    }

private:
    // Deletions mostly near the leaves, so that the tree keeps a few dozen nodes.
    std::string deepest_of_three(const std::vector<std::string>& nodes) {
        std::string deepest;
        for (int i = 0; i < 3; ++i) {
            const auto& p = nodes[pick(nodes.size())];
            if (std::count(p.begin(), p.end(), '/') > std::count(deepest.begin(), deepest.end(), '/')) deepest = p;
        }
        return deepest;
    }
    std::vector<std::string> paths() {
        std::vector<std::string> all;
        for (const auto& [p, n] : read_server_tree(c_, root_)) all.push_back(p);
        return all;
    }
    void create_under(const std::string& parent) {
        if (std::count(parent.begin() + static_cast<std::ptrdiff_t>(root_.size()), parent.end(), '/') >= 3) return;
        static const char* names[] = {"a", "b", "c"};
        boost::system::error_code ec;
        c_.create(zkr::join_path(parent, names[pick(3)]), next_data(), {}, ec);  // (node_exists: no change)
    }
    void remove_subtree(const std::string& path) { remove_tree(c_, path); }
    std::string next_data() { return "v" + std::to_string(++written_); }
    std::size_t pick(std::size_t n) { return static_cast<std::size_t>(rng_() % n); }

    zkr::client& c_;
    std::string root_;
    std::mt19937_64 rng_;
    int written_ = 0;
};

}  // namespace

TEST_CASE("interop: zkr's tree cache and zkr watch, Curator's TreeCache and CuratorCache, and Kazoo's TreeCache follow the same random changes to the same view, separate processes") {
    if (!zkr::test::curator_classpath) FAIL("the cache interop test needs javac and Debian's Curator (scripts/run installs them)");
    if (::access("/usr/lib/python3/dist-packages/kazoo/recipe/cache.py", R_OK) != 0)
        FAIL("the cache interop test needs Debian's python3-kazoo (scripts/run installs it)");
    auto& zk = zkr::test::shared_server();
    const auto cs = zk.connect_string();
    const auto root = zkr::test::recipe_path("interop-cache", "tree");
    // A longer session than the tests' 4 s: three JVMs start beside this process on a loaded
    // machine, and a stall past two thirds of 4 s is a connection loss in the middle of the writes.
    auto c = zkr::test::connect(cs, 10s);
    c->create(root, "", {.create_parents = true});
    const char* replay = std::getenv("ZKR_INTEROP_SEED");
    const auto seed = replay && *replay ? static_cast<std::uint32_t>(std::strtoul(replay, nullptr, 10)) : std::random_device{}();
    INFO("seed " << seed << " (replay with ZKR_INTEROP_SEED=" << seed << ")");
    random_writer w(*c, root, seed);
    for (int i = 0; i < 30; ++i) w.change();  // a tree to load first

    // zkr: one cache here, one in a process of its own (the command line's).
    zkr::tree_cache cache(*c, root);
    std::mutex replay_mutex;
    tree_state replayed;
    auto sub = cache.add_listener([&](const zkr::cache_event& e) {
        std::lock_guard lock(replay_mutex);
        if (e.type == zkr::cache_event_type::added || e.type == zkr::cache_event_type::updated)
            replayed[e.path] = {e.node->data, e.node->stat.version, e.node->stat.czxid};
        if (e.type == zkr::cache_event_type::removed) replayed.erase(e.path);
    });
    cache.start();
    const auto zkr_watch_log = zkr::test::temp_file("watch");
    zkr::test::child_process zkr_watch({"/bin/sh", "-c", "exec \"$0\" watch --json --connect \"$1\" \"$2\" >'" + zkr_watch_log + "'", ZKR_CLI, cs, root});
    struct peer {
        std::string name, view;
        zkr::test::child_process process;
    };
    std::vector<peer> peers;
    for (const char* recipe : {"treecache", "curatorcache"}) {
        const auto view = zkr::test::temp_file(recipe);
        peers.push_back({std::string("Curator's ") + (recipe == std::string("treecache") ? "TreeCache" : "CuratorCache"), view,
                         zkr::test::child_process({"/usr/bin/java", "-Xmx128m", "-cp", zkr::test::curator_classpath, "CuratorWorker", cs, recipe, root, "0", "0", view})});
    }
    const auto kazoo_view = zkr::test::temp_file("kazoo");
    peers.push_back({"Kazoo's TreeCache", kazoo_view, zkr::test::child_process({"/usr/bin/python3", ZKR_KAZOO_CACHE_WORKER, cs, root, kazoo_view})});

    // Every cache loaded before the changes (a JVM starts in a few seconds).
    REQUIRE(cache.wait_initialized(10s));
    for (auto& p : peers) {
        INFO(p.name);
        REQUIRE(zkr::test::eventually([&] { return read_view(p.view).initialized; }, 60s));
    }
    REQUIRE(zkr::test::eventually([&] { return replay_json(zkr_watch_log).initialized; }, 10s));

    // The changes, in bursts with pauses between (a burst outruns the one-shot watches' re-arming).
    std::mt19937 pauses(seed);
    for (int burst = 0; burst < 12; ++burst) {
        for (int i = 0; i < 25; ++i) w.change();
        std::this_thread::sleep_for(std::chrono::milliseconds(pauses() % 60));
    }
    // A tree worth comparing: a burst of deletions can leave only a few nodes (a rehearsal's run
    // left 3), so more changes until there are at least 6 (about 20 usually, at most 40).
    for (int i = 0; i < 200 && read_server_tree(*c, root).size() < 6; ++i) w.change();
    const auto server = read_server_tree(*c, root);
    CHECK(server.size() >= 6);
    const auto to_tree = [](const std::map<std::string, zkr::cached_node>& v) {
        tree_state t;
        for (const auto& [p, n] : v) t[p] = {n.data, n.stat.version, n.stat.czxid};
        return t;
    };
    {  // (the tree in these checks' messages only: a failure after them reads short, its reason last)
        INFO("the server's tree after the changes:\n" << describe_tree(server));
        CHECK(zkr::test::eventually([&] { return to_tree(cache.view()) == server; }, 10s));
        CHECK(zkr::test::eventually([&] {
            std::lock_guard lock(replay_mutex);
            return replayed == server;
        }, 10s));
        CHECK(zkr::test::eventually([&] { return replay_json(zkr_watch_log).nodes == without_czxid(server); }, 10s));
        for (auto& p : peers) {
            const bool converged = zkr::test::eventually([&] { return read_view(p.view).nodes == server; }, 20s);
            INFO(p.name << " shows:\n" << describe_tree(read_view(p.view).nodes));
            CHECK(converged);
        }
    }
    cache.close();
    zkr_watch.kill(SIGTERM);
    for (auto& p : peers) p.process.kill(SIGKILL);
    CHECK(zkr_watch.wait() == 0);
    for (auto& p : peers) p.process.wait();
    for (const auto& f : {zkr_watch_log, kazoo_view}) std::remove(f.c_str());
    for (const auto& p : peers) std::remove(p.view.c_str());
    // No cache wrote: the tree is the writer's alone. Then it goes.
    CHECK(read_server_tree(*c, root) == server);
    remove_tree(*c, std::string(zkr::parent_path(root)));
}
