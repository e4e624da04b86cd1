// A node's return after its session expires, zkr's persistent_node beside Curator 5.4's
// PersistentNode (bench/peers/CuratorNodeBench.java), each in a process of its own:
//   zkr_nodebench --connect CS [--rounds N] [--curator-classpath CP]
// For each program, N rounds: the harness ends the program's session through the servers (a second
// handle with its id and password, closed: zkr::testing::expire_session), then polls the node
// every millisecond on a session of its own until a node is there again, owned by another
// session. The time from the old session's end to that is the figure (the program's client must
// notice the expiry, start a new session and make the node again). Prints one JSON line: each
// program's times and median in ms.
//   zkr_nodebench peer CS PATH   (the zkr program: a persistent_node at PATH; prints
//                                 "session <id> <password hex>" on each new session)
#include "client_hooks.hpp"  // a session's credentials (src/)
#include "hex.hpp"           // test/support
#include "process.hpp"       // test/support: child processes

#include <zkr/persistent_node.hpp>
#include <zkr/testing.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using clk = std::chrono::steady_clock;

namespace {

int peer(const std::string& cs, const std::string& path) {
    zkr::client_options o;
    o.connect_string = cs;
    o.session_timeout = 10s;
    zkr::client c(o);
    const auto say_session = [&c] {
        const auto [id, password] = zkr::detail::session_credentials(zkr::detail::connection_of(c));
        std::printf("session %lld %s\n", static_cast<long long>(id), zkr::test::hex(password).c_str());
        std::fflush(stdout);
    };
    auto sub = c.add_state_listener([&](zkr::connection_state s) {
        if (s == zkr::connection_state::connected || s == zkr::connection_state::reconnected) say_session();
    });
    c.start();
    zkr::persistent_node node(c, path, zkr::create_mode::ephemeral, "zkr");
    node.start();
    if (!node.wait_for_initial_create(10s)) return 1;
    for (;;) ::pause();  // until killed
}

// The program's sessions, as it prints them ("session <id> <password hex>"), from its output file.
std::vector<std::pair<std::int64_t, std::string>> sessions_in(const std::string& file) {
    std::vector<std::pair<std::int64_t, std::string>> out;
    for (const auto& line : zkr::test::read_finished_lines(file)) {
        std::istringstream in(line);
        std::string word, pw;
        long long id = 0;
        if (in >> word >> id >> pw && word == "session") out.emplace_back(id, zkr::test::unhex(pw));
    }
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.size() == 3 && args[0] == "peer") return peer(args[1], args[2]);
    std::string cs, classpath;
    int rounds = 10;
    for (std::size_t i = 0; i + 1 < args.size(); i += 2) {
        if (args[i] == "--connect") cs = args[i + 1];
        else if (args[i] == "--rounds") rounds = std::stoi(args[i + 1]);
        else if (args[i] == "--curator-classpath") classpath = args[i + 1];
        else {
            std::cerr << "usage: zkr_nodebench --connect CS [--rounds N] [--curator-classpath CP]\n";
            return 2;
        }
    }
    zkr::client_options o;
    o.connect_string = cs;
    zkr::client observer(o);
    observer.start();
    if (!observer.block_until_connected(10s)) return 3;
    boost::system::error_code ignored;
    observer.create("/nodebench", "", {}, ignored);  // (node_exists: made by an earlier run)
    struct program {
        std::string name;
        std::vector<std::string> argv;
        std::string path;
    };
    std::vector<program> programs = {{"zkr persistent_node", {argv[0], "peer", cs, "/nodebench/zkr"}, "/nodebench/zkr"}};
    if (!classpath.empty())
        programs.push_back({"Curator PersistentNode", {"java", "-Xmx256m", "-cp", classpath, "CuratorNodeBench", cs, "/nodebench/curator"}, "/nodebench/curator"});
    std::ostringstream json;  // (a stream: GCC 12 at -O3 warns falsely on long string sums)
    json << "{";
    bool first_program = true;
    for (const auto& p : programs) {
        const auto out = zkr::test::temp_file("nodebench");
        std::vector<std::string> sh = {"/bin/sh", "-c", "exec \"$@\" >'" + out + "'", "sh"};
        sh.insert(sh.end(), p.argv.begin(), p.argv.end());
        zkr::test::child_process process(sh);
        std::vector<double> times;
        for (int r = 0; r < rounds + 1; ++r) {  // (the first round warms up: not counted)
            // The program's current session: the last it printed, once its node is there on it.
            std::pair<std::int64_t, std::string> session;
            const auto ready_by = clk::now() + 30s;
            for (;;) {
                const auto all = sessions_in(out);
                boost::system::error_code ec;
                const auto st = observer.exists(p.path, ec);
                if (!all.empty() && st && st->ephemeral_owner == all.back().first) {
                    session = all.back();
                    break;
                }
                if (clk::now() > ready_by) {
                    std::cerr << p.name << ": no node on a session it printed within 30 s\n";
                    return 1;
                }
                std::this_thread::sleep_for(2ms);
            }
            zkr::testing::expire_session(cs, session.first, session.second);
            const auto ended = clk::now();
            for (;;) {
                boost::system::error_code ec;
                const auto st = observer.exists(p.path, ec);
                if (st && st->ephemeral_owner != session.first) break;
                if (clk::now() - ended > 60s) {
                    std::cerr << p.name << ": the node did not come back within 60 s\n";
                    return 1;
                }
                std::this_thread::sleep_for(1ms);
            }
            if (r > 0) times.push_back(std::chrono::duration<double, std::milli>(clk::now() - ended).count());
        }
        process.kill(SIGKILL);
        process.wait();
        std::remove(out.c_str());
        auto sorted = times;
        std::sort(sorted.begin(), sorted.end());
        json << (first_program ? "" : ",") << '"' << p.name << "\":{\"median_ms\":" << sorted[sorted.size() / 2] << ",\"max_ms\":" << sorted.back()
             << ",\"ms\":[";
        for (std::size_t i = 0; i < times.size(); ++i) json << (i ? "," : "") << times[i];
        json << "]}";
        first_program = false;
    }
    std::cout << json.str() << "}" << std::endl;
    return 0;
}
