// The tree cache under faults, in separate processes: three `zkr watch --json` processes (each a
// tree cache in a process of its own, reaching the servers through TCP proxies, with 2 s sessions)
// follow a subtree while this process writes random changes to it, and a nemesis acts meanwhile:
// a server killed with -9 and restarted (the ensemble's leader among them), every connection
// reset, the proxies blackholed briefly or past the session timeout (the caches' sessions expire),
// a cache process paused past its session timeout; each kind once in every run, then at random. Once the changes and the faults stop, each
// process's event log, replayed strictly (added only for a path not shown, under a parent shown;
// updated only for a newer version of a node shown; removed only for a node shown, after what is
// under it), equals a fresh read of the tree. Named "nemesis" so that CI runs it where it runs the
// other fault runs (scripts/run).
#include "build_paths.hpp"
#include "recipe_checks.hpp"
#include "process_nemesis.hpp"

#include "zkr_catch.hpp"

#include <signal.h>

#include <atomic>
#include <fstream>
#include <random>
#include <regex>
#include <thread>

using namespace std::chrono_literals;

namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr auto fault_time = 5s;
#else
constexpr auto fault_time = 8s;
#endif

// path -> (version, data), as a fresh read gives it.
using plain_tree = std::map<std::string, std::pair<std::int32_t, std::string>>;

bool read_plain_tree(zkr::client& c, const std::string& path, plain_tree& out) {
    boost::system::error_code ec;
    const auto d = c.get_data(path, ec);
    if (ec == zkr::errc::no_node) return true;
    if (ec) return false;
    const auto kids = c.get_children(path, ec);
    if (ec == zkr::errc::no_node) return true;
    if (ec) return false;
    out[path] = {d.stat.version, d.data};
    for (const auto& name : kids.children)
        if (!read_plain_tree(c, zkr::join_path(path, name), out)) return false;
    return true;
}

// A watch log replayed strictly; `error` names the first event that is no exact difference.
struct strict_replay {
    plain_tree nodes;
    bool initialized = false;
    std::string error;
};

strict_replay replay_strictly(const std::string& file, const std::string& root) {
    static const std::regex line_form(R"re(\{"event":"(\w+)"(?:,"path":"([^"]*)")?(?:,"data":"([^"]*)","version":(\d+))?\})re");
    strict_replay r;
    std::ifstream in(file);
    std::string line;
    std::smatch m;
    for (int n = 1; std::getline(in, line) && r.error.empty(); ++n) {
        if (!std::regex_match(line, m, line_form)) {
            if (in.peek() != EOF) r.error = "line " + std::to_string(n) + " is not an event: " + line;
            continue;  // (the last line may be half written)
        }
        const auto event = m[1].str(), path = m[2].str();
        const auto at = "line " + std::to_string(n) + " (" + line + "): ";
        const auto shown = r.nodes.find(path);
        if (event == "initialized") {
            r.initialized = true;
        } else if (event == "added") {
            if (shown != r.nodes.end()) r.error = at + "added a node shown already";
            else if (path != root && !r.nodes.count(std::string(zkr::parent_path(path)))) r.error = at + "added without its parent";
            else r.nodes[path] = {std::stoi(m[4].str()), m[3].str()};
        } else if (event == "updated") {
            const auto version = std::stoi(m[4].str());
            if (shown == r.nodes.end()) r.error = at + "updated a node not shown";
            else if (version <= shown->second.first) r.error = at + "updated to version " + std::to_string(version) + " from " + std::to_string(shown->second.first);
            else shown->second = {version, m[3].str()};
        } else if (event == "removed") {
            const auto below = r.nodes.upper_bound(path);
            if (shown == r.nodes.end()) r.error = at + "removed a node not shown";
            else if (below != r.nodes.end() && below->first.rfind(path + "/", 0) == 0) r.error = at + "removed before " + below->first;
            else r.nodes.erase(shown);
        }
    }
    return r;
}

void run_cache_nemesis(int servers) {
    constexpr auto session = 2s;  // the caches' (zkr watch --session-timeout 2)
    zkr::test::zk_cluster zk({.servers = servers});
    zkr::test::proxied_servers net(zk);
    const auto& proxied = net.connect_string;
    const std::string root = "/cache-fault/tree";
    auto writer = zkr::test::connect(zkr::test::test_options(zk.connect_string(), 10s));
    writer->create(root, "", {.create_parents = true});
    const auto seed = zkr::test::nemesis_seed();
    INFO("seed " << seed << ", " << servers << " server(s)");
    std::mt19937 rng(seed);

    // The writer: random changes below root; a change that fails (a server down) is skipped.
    std::mt19937 write_rng(seed + 1);
    int written = 0;
    const auto change = [&] {
        plain_tree now;
        if (!read_plain_tree(*writer, root, now) || now.empty()) return;
        std::vector<std::string> paths;
        for (const auto& [p, n] : now) paths.push_back(p);
        const auto& at = paths[write_rng() % paths.size()];
        boost::system::error_code ec;
        const auto depth = std::count(at.begin() + static_cast<std::ptrdiff_t>(root.size()), at.end(), '/');
        static const char* names[] = {"a", "b", "c"};
        const auto roll = write_rng() % 10;  // half creates, a third writes, the rest deletions
        if (roll < 5) {
            if (depth < 3) writer->create(zkr::join_path(at, names[write_rng() % 3]), "v" + std::to_string(++written), {}, ec);
            return;
        }
        switch (roll) {
            case 5: case 6: case 7:
                if (at != root) writer->set_data(at, "v" + std::to_string(++written), -1, ec);
                return;
            default: {
                // Mostly near the leaves (the deepest of three), so that the tree keeps a few dozen nodes.
                std::string gone = at;
                for (int i = 0; i < 2; ++i) {
                    const auto& other = paths[write_rng() % paths.size()];
                    if (std::count(other.begin(), other.end(), '/') > std::count(gone.begin(), gone.end(), '/')) gone = other;
                }
                if (gone == root) return;
                for (auto it = now.rbegin(); it != now.rend(); ++it)
                    if (it->first == gone || it->first.rfind(gone + "/", 0) == 0) writer->remove(it->first, {}, ec);
                return;
            }
        }
    };
    for (int i = 0; i < 30; ++i) change();

    std::vector<std::string> logs;
    std::vector<zkr::test::child_process> caches;
    for (int i = 0; i < 3; ++i) {
        logs.push_back(zkr::test::temp_file("watch"));
        caches.emplace_back(std::vector<std::string>{"/bin/sh", "-c", "exec \"$0\" watch --json --session-timeout 2 --connect \"$1\" \"$2\" >'" + logs.back() + "'",
                                                     ZKR_CLI, proxied, root});
    }
    for (const auto& log : logs) REQUIRE(zkr::test::eventually([&] { return replay_strictly(log, root).initialized; }, 20s));

    std::atomic<bool> writing{true};
    std::thread writes([&] {
        while (writing) {
            change();
            std::this_thread::sleep_for(5ms);
        }
    });
    // Every kind of fault once, in a random order, then random ones until the time is up.
    const auto until = std::chrono::steady_clock::now() + fault_time;
    const auto faults = zkr::test::process_faults_while([&] { return std::chrono::steady_clock::now() < until; }, zk, net, caches, session, rng);
    writing = false;
    writes.join();
    std::string said;
    for (const auto& f : faults) said += f + "; ";
    INFO("faults: " << said);
    for (int i = 0; i < zk.size(); ++i) REQUIRE(zk.wait_serving(i));

    plain_tree server;
    REQUIRE(zkr::test::eventually([&] { server.clear(); return read_plain_tree(*writer, root, server); }, 20s));
    for (std::size_t i = 0; i < logs.size(); ++i) {
        strict_replay r;
        const bool converged = zkr::test::eventually([&] {
            r = replay_strictly(logs[i], root);
            return !r.error.empty() || r.nodes == server;
        }, 40s);
        INFO("cache " << i << ": " << r.nodes.size() << " nodes shown, the server " << server.size() << " (" << written << " written)");
        CHECK(r.error == "");
        CHECK(converged);
        CHECK(r.nodes == server);
    }
    // The faults took effect: every cache lost its session at least once (a blackhole past the
    // session timeout is in every run), and came back.
    for (const auto& log : logs) {
        std::ifstream in(log);
        std::string line;
        int lost = 0;
        while (std::getline(in, line)) lost += line == R"({"event":"lost"})";
        CHECK(lost >= 1);
    }
    for (auto& c : caches) c.kill(SIGTERM);
    for (auto& c : caches) CHECK(c.wait() == 0);
    for (const auto& log : logs) std::remove(log.c_str());
}

}  // namespace

TEST_CASE("nemesis: tree caches in zkr watch processes stay exact through server kills, connection resets, blackholes and paused processes, standalone") {
    run_cache_nemesis(1);
}

TEST_CASE("nemesis: tree caches in zkr watch processes stay exact through leader kills, connection resets, blackholes and paused processes, ensemble") {
    run_cache_nemesis(3);
}
