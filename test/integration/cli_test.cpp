// The zkr command line against a real server: `zkr lock` processes against each other and against
// the library, signals, lock loss, status, demo, `zkr elect` (failover after SIGKILL, --observe),
// `zkr revoke`, and every kind of bad input.
#include "build_paths.hpp"
#include "recipe_checks.hpp"
#include "tcp_proxy.hpp"

#include <zkr/group_member.hpp>
#include <zkr/interprocess_mutex.hpp>
#include <zkr/interprocess_semaphore_mutex.hpp>
#include <zkr/leader_latch.hpp>
#include <zkr/revocation.hpp>

#include "zkr_catch.hpp"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <signal.h>
#include <unistd.h>
#include <sstream>

using namespace std::chrono_literals;
using clk = std::chrono::steady_clock;
using zkr::test::connect;
using zkr::test::nodes_under;

namespace {

// One zkr process, its stdout and stderr in files.
struct cli_run {
    std::string out = zkr::test::temp_file("out");
    std::string err = zkr::test::temp_file("err");
    zkr::test::child_process process;

    explicit cli_run(const std::vector<std::string>& args, const std::string& shell_prefix = "")
        : process(argv(args, shell_prefix)) {}

    std::vector<std::string> argv(const std::vector<std::string>& args, const std::string& prefix) const {
        std::vector<std::string> v = {"/bin/sh", "-c", prefix + "exec \"$0\" \"$@\" >'" + out + "' 2>'" + err + "'", ZKR_CLI};
        v.insert(v.end(), args.begin(), args.end());
        return v;
    }
    int wait() { return process.wait(); }
    static std::string read(const std::string& f) {
        std::ifstream in(f);
        std::stringstream s;
        s << in.rdbuf();
        return s.str();
    }
    std::string stdout_text() const { return read(out); }
    std::string stderr_text() const { return read(err); }
    /// Whether the command's output shows `text` within a few seconds.
    bool says(const std::string& text) const {
        return zkr::test::eventually([&] { return stdout_text().find(text) != std::string::npos; }, 10s);
    }
    ~cli_run() {
        std::remove(out.c_str());
        std::remove(err.c_str());
    }
};

int run_to_end(const std::vector<std::string>& args, std::string* out = nullptr, std::string* err = nullptr) {
    cli_run r(args);
    const int code = r.wait();
    if (out) *out = r.stdout_text();
    if (err) *err = r.stderr_text();
    return code;
}

std::string cli_path(const std::string& name) { return zkr::test::recipe_path("cli-" + name); }

// The most intervals open at once in a log of "start"/"end" lines.
int max_overlap(const std::string& log) {
    int open = 0, most = 0;
    for (const auto& line : zkr::test::read_lines(log)) {
        if (line == "start") most = std::max(most, ++open);
        if (line == "end") --open;
    }
    return most;
}

}  // namespace

TEST_CASE("zkr lock: runs the command with the lock's environment and exits with its status") {
    auto& zk = zkr::test::shared_server();
    const auto path = cli_path("env");
    std::string out;
    CHECK(run_to_end({"lock", "--connect", zk.connect_string(), path, "--", "sh", "-c",
                      "echo \"$ZKR_LOCK_PATH $ZKR_FENCING_TOKEN\"; exit 7"},
                     &out) == 7);
    std::istringstream in(out);
    std::string node;
    long long token = 0;
    in >> node >> token;
    CHECK(node.rfind(path + "/_c_", 0) == 0);
    CHECK(token > 0);
    auto c = connect(zk.connect_string());
    CHECK(nodes_under(*c, path) == 0);
}

TEST_CASE("zkr lock: two or more processes exclude each other, and the library's mutex too") {
    auto& zk = zkr::test::shared_server();
    const auto path = cli_path("exclude");
    const auto log = zkr::test::temp_file("log");
    const std::string body = "echo start >> '" + log + "'; sleep 0.3; echo end >> '" + log + "'";
    std::vector<std::unique_ptr<cli_run>> runs;
    for (int i = 0; i < 3; ++i)
        runs.push_back(std::make_unique<cli_run>(std::vector<std::string>{"lock", "--connect", zk.connect_string(), path, "--",
                                                                          "sh", "-c", body}));
    auto c = connect(zk.connect_string());
    REQUIRE(zkr::test::eventually([&] { return nodes_under(*c, path) >= 1; }));
    zkr::interprocess_mutex m(*c, path);
    CHECK_FALSE(m.try_lock());  // the command line's lock is the library's lock
    for (auto& r : runs) CHECK(r->wait() == 0);
    CHECK(zkr::test::read_lines(log).size() == 6);
    CHECK(max_overlap(log) == 1);
    std::remove(log.c_str());
}

TEST_CASE("zkr lock --max N: at most N commands at once") {
    auto& zk = zkr::test::shared_server();
    const auto path = cli_path("max");
    const auto log = zkr::test::temp_file("log");
    const std::string body = "echo start >> '" + log + "'; sleep 0.6; echo end >> '" + log + "'";
    std::vector<std::unique_ptr<cli_run>> runs;
    for (int i = 0; i < 4; ++i)
        runs.push_back(std::make_unique<cli_run>(std::vector<std::string>{"lock", "--max", "2", "--connect", zk.connect_string(),
                                                                          path, "--", "sh", "-c", body}));
    for (auto& r : runs) CHECK(r->wait() == 0);
    CHECK(max_overlap(log) == 2);
    std::remove(log.c_str());
}

TEST_CASE("zkr lock: -n and -w give up with exit 1 (or -E), leaving nothing behind, signals reach the command") {
    auto& zk = zkr::test::shared_server();
    const auto path = cli_path("conflict");
    auto c = connect(zk.connect_string());
    cli_run holder({"lock", "--connect", zk.connect_string(), path, "--", "sleep", "20"});
    REQUIRE(zkr::test::eventually([&] { return nodes_under(*c, path) == 1; }));
    std::string err;
    auto start = clk::now();
    CHECK(run_to_end({"lock", "-n", "--connect", zk.connect_string(), path, "--", "true"}, nullptr, &err) == 1);
    CHECK_THAT(err, zkr::test::contains("is held"));
    CHECK(run_to_end({"lock", "-n", "-E", "42", "--connect", zk.connect_string(), path, "--", "true"}) == 42);
    start = clk::now();
    CHECK(run_to_end({"lock", "-w", "0.5", "--connect", zk.connect_string(), path, "--", "true"}, nullptr, &err) == 1);
    CHECK(clk::now() - start >= 500ms);
    CHECK_THAT(err, zkr::test::contains("not acquired in time"));
    CHECK(nodes_under(*c, path) == 1);  // only the holder's node
    // SIGTERM to zkr reaches the command; zkr exits with the command's status and frees the lock.
    holder.process.kill(SIGTERM);
    CHECK(holder.wait() == 128 + SIGTERM);
    CHECK(zkr::test::eventually([&] { return nodes_under(*c, path) == 0; }, 5s));
}

// flock's -n never waits: with no server, zkr lock -n gives up within its one connect attempt, and
// -w bounds the connect too (both took the whole 10 s --connect-timeout before).
TEST_CASE("zkr lock: -n and -w bound the connect when no server is reachable") {
    for (const auto& [flags, bound] : std::vector<std::pair<std::vector<std::string>, std::chrono::milliseconds>>{
             {{"-n"}, 2500ms}, {{"-w", "2"}, 3500ms}}) {
        std::vector<std::string> args = {"lock", "--connect", "127.0.0.1:1"};
        args.insert(args.end(), flags.begin(), flags.end());
        args.insert(args.end(), {"/x", "--", "true"});
        INFO(flags.front());
        const auto t0 = clk::now();
        std::string err;
        CHECK(run_to_end(args, nullptr, &err) == 3);
        CHECK(clk::now() - t0 < bound);
        CHECK_THAT(err, zkr::test::contains("cannot reach ZooKeeper"));
    }
}

TEST_CASE("zkr lock: a command that traps SIGTERM decides its own exit, a waiting zkr gives up on a signal") {
    auto& zk = zkr::test::shared_server();
    const auto path = cli_path("trap");
    auto c = connect(zk.connect_string());
    cli_run holder({"lock", "--connect", zk.connect_string(), path, "--", "sh", "-c",
                    "trap 'echo got-term; exit 0' TERM; echo ready; sleep 20 & wait"});
    REQUIRE(holder.says("ready"));  // it holds, and the trap is set
    cli_run waiter({"lock", "--connect", zk.connect_string(), path, "--", "true"});
    REQUIRE(zkr::test::eventually([&] { return nodes_under(*c, path) == 2; }));
    waiter.process.kill(SIGINT);
    CHECK(waiter.wait() == 128 + SIGINT);
    CHECK(zkr::test::eventually([&] { return nodes_under(*c, path) == 1; }, 5s));  // its node went
    holder.process.kill(SIGTERM);
    CHECK(holder.wait() == 0);
    CHECK_THAT(holder.stdout_text(), zkr::test::contains("got-term"));
}

TEST_CASE("zkr lock: when the lock is lost the command is stopped (SIGTERM, then SIGKILL after the grace)") {
    auto& zk = zkr::test::shared_server();
    const auto path = cli_path("lost");
    auto admin = connect(zk.connect_string());
    SECTION("a command that stops on SIGTERM") {
        cli_run r({"lock", "--connect", zk.connect_string(), path, "--", "sh", "-c", "echo ready; exec sleep 20"});
        // Its command runs, so it holds. (Its node alone is not enough: deleted before its listing,
        // the node is a waiter's, and zkr queues again, rightly, and holds with a new one.)
        REQUIRE(r.says("ready"));
        const auto start = clk::now();
        admin->remove(zkr::join_path(path, admin->get_children(path).children.at(0)));
        CHECK(r.wait() == 4);
        CHECK(clk::now() - start < 3s);
        CHECK_THAT(r.stderr_text(), zkr::test::contains("lost the lock"));
    }
    SECTION("a command that ignores SIGTERM, with --lost-exit-code") {
        cli_run r({"lock", "--grace", "1", "--lost-exit-code", "99", "--connect", zk.connect_string(), path, "--", "sh", "-c",
                   "trap '' TERM; echo ready; while :; do sleep 0.1; done"});
        REQUIRE(r.says("ready"));  // it holds, and the trap is set
        const auto start = clk::now();
        admin->remove(zkr::join_path(path, admin->get_children(path).children.at(0)));
        CHECK(r.wait() == 99);
        const auto took = clk::now() - start;
        CHECK(took >= 1s);
        CHECK(took < 4s);
    }
}

namespace {

// Running and not a zombie (an orphan's zombie may wait for a reaper that never comes).
bool alive(pid_t pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) return false;
    const auto close = line.rfind(')');
    return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
}

// The live processes whose command line holds `text`.
std::vector<pid_t> processes_running(const std::string& text) {
    std::vector<pid_t> found;
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
        const auto name = entry.path().filename().string();
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::ifstream in(entry.path() / "cmdline");
        std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
        const pid_t pid = std::stoi(name);
        if (cmdline.find(text) != std::string::npos && alive(pid)) found.push_back(pid);
    }
    return found;
}

// A command whose shell starts a grandchild and waits: "<shell pid> <grandchild pid>" in pids.
std::vector<std::string> family_command(const std::string& pids, bool grandchild_ignores_term = false) {
    const std::string child = grandchild_ignores_term ? "sh -c 'trap \"\" TERM; while :; do sleep 0.1; done' &" : "sleep 300 &";
    return {"sh", "-c", child + " echo $$ $! > " + pids + "; wait"};
}

std::pair<pid_t, pid_t> read_family(const std::string& pids) {
    std::pair<pid_t, pid_t> p{0, 0};
    REQUIRE(zkr::test::eventually([&] {
        std::ifstream in(pids);
        return static_cast<bool>(in >> p.first >> p.second);
    }));
    return p;
}

}  // namespace

TEST_CASE("zkr lock stops the command's whole process group: on loss, on a forwarded signal, and when zkr is killed") {
    auto& zk = zkr::test::shared_server();
    const auto path = cli_path("group");
    const auto pids = zkr::test::temp_file("pids");
    auto admin = connect(zk.connect_string());
    auto args = [&](std::vector<std::string> command) {
        std::vector<std::string> a = {"lock", "--grace", "1", "--connect", zk.connect_string(), path, "--"};
        a.insert(a.end(), command.begin(), command.end());
        return a;
    };
    SECTION("the lock lost: SIGTERM, then SIGKILL after the grace, to the grandchild too") {
        cli_run r(args(family_command(pids, /*grandchild_ignores_term=*/true)));
        const auto [shell, grandchild] = read_family(pids);
        REQUIRE(nodes_under(*admin, path) == 1);
        std::this_thread::sleep_for(200ms);  // the trap is set
        const auto start = clk::now();
        admin->remove(zkr::join_path(path, admin->get_children(path).children.at(0)));
        CHECK(r.wait() == 4);
        CHECK(clk::now() - start < 1s + 1s + 500ms);  // the grace, then SIGKILL
        CHECK_FALSE(alive(shell));
        CHECK_FALSE(alive(grandchild));
    }
    SECTION("a signal sent to zkr reaches the whole group") {
        cli_run r(args(family_command(pids)));
        const auto [shell, grandchild] = read_family(pids);
        r.process.kill(SIGTERM);
        CHECK(r.wait() == 128 + SIGTERM);
        CHECK_FALSE(alive(shell));
        CHECK_FALSE(alive(grandchild));
        CHECK(zkr::test::eventually([&] { return nodes_under(*admin, path) == 0; }, 5s));
    }
    SECTION("the command exits leaving a process in its group: it is stopped before the lock is released") {
        cli_run r(args({"sh", "-c", "sleep 300 & echo $$ $! > " + pids}));
        const auto [shell, grandchild] = read_family(pids);
        CHECK(r.wait() == 0);
        CHECK_FALSE(alive(grandchild));
        CHECK_THAT(r.stderr_text(), zkr::test::contains("leaving processes in its group"));
    }
    SECTION("zkr killed with SIGKILL: the guardian stops the command's group") {
        cli_run r(args(family_command(pids)));
        const auto [shell, grandchild] = read_family(pids);
        r.process.kill(SIGKILL);
        const auto killed = clk::now();
        CHECK(r.wait() == 128 + SIGKILL);
        CHECK(zkr::test::eventually([&] { return !alive(shell) && !alive(grandchild); }, 3s));
        CHECK(clk::now() - killed < 2s);
    }
    SECTION("zkr killed the moment its command starts: the command never runs unguarded") {
        // (Found by a CI rehearsal under load: zkr told the guardian the command's group only
        // after the exec, so a SIGKILL in between left the command running on.)
        // The command's first act kills zkr. The guardian may stop the group before the shell
        // gets as far as writing its pids, so its processes are found by a text of their own (the
        // sleep's unique argument, also in the shell's command line), not by that file.
        const std::string sleep_for = "sleep 300." + std::to_string(::getpid());
        cli_run r(args({"sh", "-c", "kill -9 $PPID; " + sleep_for + " & wait"}));
        CHECK(r.wait() == 128 + SIGKILL);  // killed by the command: the command ran
        CHECK(zkr::test::eventually([&] { return processes_running(sleep_for).empty(); }, 3s));
    }
    std::remove(pids.c_str());
}

TEST_CASE("zkr status: holders, then the queue in order, with data and age") {
    auto& zk = zkr::test::shared_server();
    const auto path = cli_path("status");
    auto c = connect(zk.connect_string());
    std::string out;
    CHECK(run_to_end({"status", "--connect", zk.connect_string(), path}, &out) == 0);
    CHECK_THAT(out, zkr::test::contains("free (no such node: nothing holds or waits)"));
    CHECK(run_to_end({"status", "--json", "--connect", zk.connect_string(), path}, &out) == 0);
    CHECK(out == "{\"path\":\"" + path + "\",\"free\":true,\"other_nodes\":0,\"queues\":[]}\n");
    c->create(zkr::join_path(path, "unrelated"), "", {.create_parents = true});
    CHECK(run_to_end({"status", "--connect", zk.connect_string(), path}, &out) == 0);
    CHECK_THAT(out, zkr::test::contains("free (nothing holds or waits; 1 other node, not zkr's lock or lease nodes)"));
    c->remove(zkr::join_path(path, "unrelated"));
    cli_run holder({"lock", "--connect", zk.connect_string(), path, "--", "sleep", "20"});
    REQUIRE(zkr::test::eventually([&] { return nodes_under(*c, path) == 1; }));
    cli_run waiter({"lock", "--connect", zk.connect_string(), path, "--", "true"});
    REQUIRE(zkr::test::eventually([&] { return nodes_under(*c, path) == 2; }));
    CHECK(run_to_end({"status", "--connect", zk.connect_string(), path}, &out) == 0);
    CHECK_THAT(out, zkr::test::contains("1 holding, 1 waiting"));
    CHECK_THAT(out, zkr::test::contains("holding") && zkr::test::contains("waiting 1"));
    CHECK_THAT(out, zkr::test::contains(":" + std::to_string(holder.process.pid())));  // host:pid of the holder
    CHECK(out.find("holding") < out.find("waiting 1"));
    // The same for scripts: one JSON object, holder first.
    CHECK(run_to_end({"status", "--json", "--connect", zk.connect_string(), path}, &out) == 0);
    CHECK_THAT(out, zkr::test::contains("{\"path\":\"" + path + "\",\"free\":false,\"other_nodes\":0,\"queues\":[{\"kind\":\"lock\","
                                        "\"max_leases\":null,\"holding\":1,\"waiting\":1,\"nodes\":[{\"node\":"));
    CHECK_THAT(out, zkr::test::contains("\"role\":\"holding\",\"position\":0,\"data\":\""));
    CHECK_THAT(out, zkr::test::contains(":" + std::to_string(holder.process.pid()) + "\""));
    CHECK_THAT(out, zkr::test::contains("\"role\":\"waiting\",\"position\":1,"));
    CHECK(out.find("\"holding\",") < out.find("\"waiting\","));
    CHECK(std::count(out.begin(), out.end(), '\n') == 1);
    holder.process.kill(SIGTERM);
    holder.wait();
    CHECK(waiter.wait() == 0);
    // A semaphore: the leases and the maximum.
    const auto sem = cli_path("status-sem");
    cli_run one({"lock", "--max", "2", "--connect", zk.connect_string(), sem, "--", "sleep", "20"});
    REQUIRE(zkr::test::eventually([&] { return nodes_under(*c, sem) == 1; }));
    CHECK(run_to_end({"status", "--connect", zk.connect_string(), sem}, &out) == 0);
    CHECK_THAT(out, zkr::test::contains("semaphore of 2 leases, 1 holding, 0 waiting"));
    CHECK(run_to_end({"status", "--json", "--connect", zk.connect_string(), sem}, &out) == 0);
    CHECK_THAT(out, zkr::test::contains("\"kind\":\"semaphore\",\"max_leases\":2,\"holding\":1,\"waiting\":0,"));
}

TEST_CASE("zkr: bad input gets a clear error and exit 2 (3 when ZooKeeper is unreachable)") {
    auto& zk = zkr::test::shared_server();
    const auto cs = zk.connect_string();
    struct bad {
        std::vector<std::string> args;
        int code;
        std::string says;
    };
    const std::vector<bad> cases = {
        {{}, 2, ""},
        {{"frobnicate"}, 2, "unknown command \"frobnicate\""},
        {{"lock", "--connect", cs, "no-slash", "--", "true"}, 2, "bad PATH \"no-slash\""},
        {{"lock", "--connect", cs, "/a//b", "--", "true"}, 2, "bad PATH"},
        {{"lock", "--connect", cs, "/", "--", "true"}, 2, "root"},
        {{"lock", "--connect", cs, "/x"}, 2, "no COMMAND"},
        {{"lock", "--connect", cs, "--", "true"}, 2, "zkr lock: needs a PATH"},
        {{"lock", "--connect", cs, "/p", "true"}, 2, "zkr lock: needs exactly one PATH, got 2: /p true (the command goes after \"--\""},
        {{"lock", "--frob", "/x", "--", "true"}, 2, "The following argument was not expected: --frob"},
        {{"lock", "-w", "soon", "/x", "--", "true"}, 2, "--wait: must be a number from 0 to 10000000, got \"soon\""},
        {{"lock", "-w", "-1", "/x", "--", "true"}, 2, "--wait: must be a number from 0"},
        {{"lock", "-w", "1", "-n", "/x", "--", "true"}, 2, "exclude each other"},
        {{"lock", "--max", "0", "/x", "--", "true"}, 2, "--max: must be a number from 1"},
        {{"lock", "--max", "1.5", "/x", "--", "true"}, 2, "--max: must be a whole number"},
        {{"lock", "-E", "300", "/x", "--", "true"}, 2, "--conflict-exit-code: must be a number from 0 to 255"},
        {{"lock", "/x", "-w"}, 2, "--wait"},
        {{"lock", "--connect", "", "/x", "--", "true"}, 2, "--connect needs"},
        {{"lock", "--connect", "nohost", "/x", "--", "true"}, 2, "bad --connect: connect_string \"nohost\" is not host:port: invalid argument\n"},
        {{"lock", "--connect", "127.0.0.1:1", "--connect-timeout", "0.5", "/x", "--", "true"}, 3,
         "cannot reach ZooKeeper at 127.0.0.1:1 within 0.5 s"},
        {{"status", "--connect", "127.0.0.1:1", "--connect-timeout", "0.5", "/x"}, 3, "cannot reach ZooKeeper"},
        {{"status", "--connect", cs}, 2, "zkr status: needs a PATH"},
        {{"status", "--connect", cs, "/a", "/b"}, 2, "needs exactly one PATH, got 2: /a /b\n"},
        {{"demo", "extra"}, 2, "takes no PATH"},
        {{"elect", "--connect", cs, "/x"}, 2, "no COMMAND"},
        {{"elect", "--connect", cs, "/p", "./serve"}, 2, "(the command goes after \"--\", as in: zkr elect /p -- COMMAND)"},
        {{"elect", "--json", "/x", "--", "true"}, 2, "--json goes with --observe"},
        {{"elect", "--observe", "/x", "--", "true"}, 2, "--observe runs no COMMAND"},
        {{"revoke", "--connect", cs}, 2, "zkr revoke: needs a PATH"},
        {{"revoke", "--connect", cs, cli_path("revoke-nobody")}, 1, "nothing holds it"},
        {{"status", "--connect", cs, "/x", "--", "ls"}, 2, "takes no COMMAND"},
        {{"demo", "--workers", "0"}, 2, "--workers: must be a number from 1"},
        {{"watch", "--connect", cs}, 2, "zkr watch: needs a PATH"},
        {{"watch", "--connect", cs, "/x", "--depth", "-1"}, 2, "--depth: must be a number from 0"},
        {{"watch", "--connect", cs, "/x", "--", "ls"}, 2, "takes no COMMAND"},
        {{"watch", "--connect", cs, "/x", "--skip", ""}, 2, "empty pattern"},
        {{"members", "--connect", cs}, 2, "zkr members: needs a PATH"},
        {{"members", "--connect", cs, "x"}, 2, "bad PATH \"x\""},
        {{"members", "--connect", cs, "/x", "--", "ls"}, 2, "takes no COMMAND"},
        {{"lock", "--connect", cs, cli_path("no-such-command"), "--", "/no/such/command"}, 127, "cannot run /no/such/command"},
    };
    for (const auto& c : cases) {
        std::string joined;
        for (const auto& a : c.args) joined += a + " ";
        INFO("zkr " << joined);
        std::string err;
        CHECK(run_to_end(c.args, nullptr, &err) == c.code);
        CHECK_THAT(err, zkr::test::contains(c.says));
    }
    for (const char* command : {"lock", "elect", "status", "revoke", "watch", "members", "demo"}) {
        std::string out;
        CHECK(run_to_end({command, "--help"}, &out) == 0);
        CHECK_THAT(out, zkr::test::contains(std::string("usage: zkr ") + command));
    }
    // The one PATH, and the command after "--" (issue 43: the usage showed [PATH...] and no COMMAND).
    for (const auto& [command, usage] : std::vector<std::pair<std::string, std::string>>{
             {"lock", "usage: zkr lock [OPTIONS] PATH -- COMMAND [ARGS...]"},
             {"elect", "usage: zkr elect [OPTIONS] PATH -- COMMAND [ARGS...] (none with --observe)"},
             {"status", "usage: zkr status [OPTIONS] PATH\n"},
             {"revoke", "usage: zkr revoke [OPTIONS] PATH\n"}}) {
        std::string help;
        CHECK(run_to_end({command, "--help"}, &help) == 0);
        CHECK_THAT(help, zkr::test::contains(usage));
    }
    std::string out;
    CHECK(run_to_end({"--help"}, &out) == 0);
    CHECK_THAT(out, zkr::test::contains("Subcommands:"));
    CHECK_THAT(out, zkr::test::contains("elect"));
}

TEST_CASE("zkr demo: starts its own ZooKeeper and shows processes taking a fair lock in turn") {
    cli_run r({"demo", "--workers", "2", "--rounds", "2"}, "unset ZKR_CONNECT; ");
    CHECK(r.wait() == 0);
    const auto out = r.stdout_text();
    CHECK_THAT(out, zkr::test::contains("ZooKeeper serves at 127.0.0.1:"));
    CHECK_THAT(out, zkr::test::contains("worker 1") && zkr::test::contains("worker 2"));
    CHECK_THAT(out, zkr::test::contains("done: 4 turns"));
}

// zkr lock P and zkr lock --max 1 P used to run their commands at once: a mutex's and a
// semaphore's nodes ignored each other. The second kind is refused, naming the node, and status
// shows both kinds when both are there.
TEST_CASE("a mutex and a semaphore on one path: the other kind is refused with the node named, status shows both") {
    auto& zk = zkr::test::shared_server();
    const auto cs = zk.connect_string();
    const auto path = cli_path("two-kinds");
    cli_run holder({"lock", "--connect", cs, path, "--", "sleep", "20"});
    auto c = connect(cs);
    REQUIRE(zkr::test::eventually([&] { return nodes_under(*c, path) == 1; }, 20s));
    std::string err;
    // Exit 2: the path cannot be what the command line asked for (3 would say ZooKeeper failed).
    CHECK(run_to_end({"lock", "--connect", cs, "--max", "1", "-w", "5", path, "--", "true"}, nullptr, &err) == 2);
    CHECK_THAT(err, zkr::test::contains("is a mutex's lock node, and the two kinds do not exclude each other"));
    zkr::interprocess_semaphore_mutex other_kind(*c, path);
    CHECK_THROWS_WITH(other_kind.lock(), zkr::test::contains("is a mutex's lock node"));
    CHECK(nodes_under(*c, path) == 1);  // the refused acquires left nothing behind
    // A lease node and a read-write lock's reader dropped in beside the lock (as by a semaphore
    // from before this check, and a Curator read lock).
    c->create(path + "/_c_manual-m1-w1-lease-", "", {.mode = zkr::create_mode::ephemeral_sequential});
    c->create(path + "/_c_curator-__READ__", "", {.mode = zkr::create_mode::ephemeral_sequential});
    std::string out;
    CHECK(run_to_end({"status", "--connect", cs, path}, &out) == 0);
    CHECK_THAT(out, zkr::test::contains("nodes of 3 kinds of lock (mutex, semaphore, read-write lock, leader latch)"));
    CHECK_THAT(out, zkr::test::contains(": lock, 1 holding, 0 waiting"));
    CHECK_THAT(out, zkr::test::contains(": semaphore of 1 leases, 1 holding"));
    CHECK_THAT(out, zkr::test::contains(": read-write lock, 1 holding, 0 waiting"));
    CHECK_THAT(out, zkr::test::contains("holding (reader)"));
    // And a mutex now meets the lease node: refused too.
    zkr::interprocess_mutex mutex(*c, path);
    CHECK_THROWS_WITH(mutex.try_lock(), zkr::test::contains("is a semaphore's lease"));
    holder.process.kill(SIGTERM);
    CHECK(holder.wait() != 0);
}

namespace {

// The lines of a file that start with `prefix`.
std::vector<std::string> lines_starting(const std::string& file, const std::string& prefix) {
    std::vector<std::string> out;
    for (const auto& line : zkr::test::read_lines(file))
        if (line.rfind(prefix, 0) == 0) out.push_back(line);
    return out;
}

}  // namespace

TEST_CASE("zkr elect: two instances run the command one at a time, the leader's zkr killed with -9, the other takes over and the old command does not outlive it") {
    auto& zk = zkr::test::shared_server();
    const auto path = cli_path("elect");
    const auto log = zkr::test::temp_file("log");
    auto args = [&](const std::string& id) {
        // The command logs "start <id> <its pid> <epoch>" and runs until stopped.
        return std::vector<std::string>{"elect", "--id", id, "--session-timeout", "2", "--connect", zk.connect_string(), path, "--",
                                        "sh", "-c", "echo start " + id + " $$ $ZKR_FENCING_TOKEN >> '" + log + "'; exec sleep 300"};
    };
    auto first = std::make_unique<cli_run>(args("a"));
    REQUIRE(zkr::test::eventually([&] { return lines_starting(log, "start").size() == 1; }, 10s));
    cli_run second(args("b"));
    auto admin = connect(zk.connect_string());
    REQUIRE(zkr::test::eventually([&] { return nodes_under(*admin, path) == 2; }));
    std::this_thread::sleep_for(300ms);
    CHECK(lines_starting(log, "start").size() == 1);  // b waits while a leads

    std::string observed;
    CHECK(run_to_end({"status", "--connect", zk.connect_string(), path}, &observed) == 0);
    CHECK_THAT(observed, zkr::test::contains("leader latch, 1 leading, 1 waiting"));

    std::istringstream first_line(lines_starting(log, "start").at(0));
    std::string word, id;
    pid_t command_a = 0;
    long long epoch_a = 0;
    first_line >> word >> id >> command_a >> epoch_a;
    CHECK(id == "a");
    first->process.kill(SIGKILL);
    const auto killed = clk::now();
    // The guardian stops a's command at once; b leads once a's session has expired (2 s).
    CHECK(zkr::test::eventually([&] { return !alive(command_a); }, 3s));
    REQUIRE(zkr::test::eventually([&] { return lines_starting(log, "start").size() == 2; }, 10s));
    const auto failover = clk::now() - killed;
    INFO("failover after SIGKILL: " << std::chrono::duration_cast<std::chrono::milliseconds>(failover).count() << " ms");
    CHECK(failover < 2s + 1s);  // the session timeout plus one second
    std::istringstream second_line(lines_starting(log, "start").at(1));
    long long epoch_b = 0;
    pid_t command_b = 0;
    second_line >> word >> id >> command_b >> epoch_b;
    CHECK(id == "b");
    CHECK(epoch_b > epoch_a);
    CHECK_FALSE(alive(command_a));
    first.reset();
    second.process.kill(SIGTERM);  // forwarded to its command; b leaves the election
    CHECK(second.wait() == 128 + SIGTERM);
    CHECK(zkr::test::eventually([&] { return nodes_under(*admin, path) == 0; }, 5s));
    std::remove(log.c_str());
}

TEST_CASE("zkr elect --observe prints the leader at every change, and --json one object per line") {
    auto& zk = zkr::test::shared_server();
    const auto path = cli_path("observe");
    auto a = connect(zk.connect_string()), b = connect(zk.connect_string());
    cli_run text({"elect", "--observe", "--connect", zk.connect_string(), path});
    cli_run json({"elect", "--observe", "--json", "--connect", zk.connect_string(), path});
    REQUIRE(zkr::test::eventually([&] { return text.stdout_text().find("no leader") != std::string::npos; }, 10s));
    zkr::leader_latch first(*a, path, "first"), second(*b, path, "second");
    first.start();
    REQUIRE(first.await_leadership(10s));
    REQUIRE(zkr::test::eventually([&] { return text.stdout_text().find("leader first") != std::string::npos; }, 10s));
    REQUIRE(zkr::test::eventually([&] { return json.stdout_text().find("\"leader\":\"first\"") != std::string::npos; }, 10s));
    second.start();
    REQUIRE(zkr::test::eventually([&] { return nodes_under(*a, path) == 2; }));
    std::this_thread::sleep_for(300ms);  // the observers see the queue grow
    first.close();
    REQUIRE(second.await_leadership(10s));
    REQUIRE(zkr::test::eventually([&] { return text.stdout_text().find("leader second") != std::string::npos; }, 10s));
    REQUIRE(zkr::test::eventually([&] { return json.stdout_text().find("\"leader\":\"second\"") != std::string::npos; }, 10s));
    CHECK_THAT(text.stdout_text(), zkr::test::contains("leader first (epoch "));
    CHECK_THAT(text.stdout_text(), zkr::test::contains("leader second (epoch "));
    CHECK_THAT(json.stdout_text(), zkr::test::contains("{\"path\":\"" + path + "\",\"leader\":\"first\","));
    // A change of the queue behind the leader is no change of leader: one line per leader.
    const auto lines = zkr::test::read_lines(text.out);
    CHECK(lines.size() == 3);  // no leader, first, second
    second.close();
    text.process.kill(SIGTERM);
    json.process.kill(SIGTERM);
    CHECK(text.wait() == 0);
    CHECK(json.wait() == 0);
}

TEST_CASE("zkr watch prints a subtree that does not exist yet as it is made, then every change, and --json one object per line") {
    auto& zk = zkr::test::shared_server();
    const auto path = cli_path("watch");
    auto c = connect(zk.connect_string());
    cli_run text({"watch", "--connect", zk.connect_string(), path});
    cli_run json({"watch", "--json", "--depth", "1", "--skip", "s*", "--connect", zk.connect_string(), path});
    REQUIRE(zkr::test::eventually([&] { return text.stdout_text().find("initialized") != std::string::npos; }, 10s));
    REQUIRE(zkr::test::eventually([&] { return json.stdout_text().find("initialized") != std::string::npos; }, 10s));
    // Each change once the last one shows: a change overwritten before the cache reads the node
    // again shows as its last value only (as documented), and this test wants every line.
    const auto shows = [&](const std::string& line, const std::string& json_line = "") {
        return zkr::test::eventually([&] { return text.stdout_text().find(line + "\n") != std::string::npos; }, 10s) &&
               (json_line.empty() || zkr::test::eventually([&] { return json.stdout_text().find(json_line) != std::string::npos; }, 10s));
    };
    c->create(path, "top", {.create_parents = true});
    REQUIRE(shows("added " + path + " (version 0): top"));
    c->create(path + "/a", "one");
    REQUIRE(shows("added " + path + "/a (version 0): one", "\"path\":\"" + path + "/a\",\"data\":\"one\""));
    c->create(path + "/skipped", "by --skip s*");
    REQUIRE(shows("added " + path + "/skipped (version 0): by --skip s*"));
    c->remove(path + "/skipped");
    REQUIRE(shows("removed " + path + "/skipped"));
    c->create(path + "/a/deep", "below the depth of 1");
    REQUIRE(shows("added " + path + "/a/deep (version 0): below the depth of 1"));
    c->set_data(path + "/a", "two");
    REQUIRE(shows("updated " + path + "/a (version 1): two"));
    c->remove(path + "/a/deep");
    c->remove(path + "/a");
    REQUIRE(shows("removed " + path + "/a"));
    REQUIRE(zkr::test::eventually([&] { return json.stdout_text().find("\"removed\",\"path\":\"" + path + "/a\"") != std::string::npos; }, 10s));
    const auto lines = zkr::test::read_lines(text.out);
    const std::vector<std::string> expected = {"initialized", "added " + path + " (version 0): top", "added " + path + "/a (version 0): one",
                                               "added " + path + "/skipped (version 0): by --skip s*", "removed " + path + "/skipped",
                                               "added " + path + "/a/deep (version 0): below the depth of 1", "updated " + path + "/a (version 1): two",
                                               "removed " + path + "/a/deep", "removed " + path + "/a"};
    CHECK(lines == expected);
    CHECK_THAT(json.stdout_text(), zkr::test::contains("{\"event\":\"updated\",\"path\":\"" + path + "/a\",\"data\":\"two\",\"version\":1}"));
    CHECK(json.stdout_text().find("deep") == std::string::npos);     // below --depth 1
    CHECK(json.stdout_text().find("skipped") == std::string::npos);  // --skip s*
    text.process.kill(SIGTERM);
    json.process.kill(SIGTERM);
    CHECK(text.wait() == 0);
    CHECK(json.wait() == 0);
    c->remove(path);
}

TEST_CASE("zkr members prints a group's members once, as JSON, and follows joins, updates and departures with --watch") {
    auto& zk = zkr::test::shared_server();
    const auto group = cli_path("members");
    auto a = connect(zk.connect_string());
    auto b = connect(zk.connect_string());
    std::string out;
    CHECK(run_to_end({"members", "--connect", zk.connect_string(), group}, &out) == 0);  // no group yet: no members
    CHECK(out.empty());
    zkr::group_member ma(*a, group, "w1", "10.0.0.3:8080");
    ma.start();
    REQUIRE(ma.wait_joined(5s));
    auto mb = std::make_unique<zkr::group_member>(*b, group, "curator-7", "10.0.0.7:8080");
    mb->start();
    REQUIRE(mb->wait_joined(5s));
    CHECK(run_to_end({"members", "--connect", zk.connect_string(), group}, &out) == 0);
    CHECK(out == "curator-7\t10.0.0.7:8080\nw1\t10.0.0.3:8080\n");
    CHECK(run_to_end({"members", "--json", "--connect", zk.connect_string(), group}, &out) == 0);
    CHECK(out == "{\"curator-7\":\"10.0.0.7:8080\",\"w1\":\"10.0.0.3:8080\"}\n");
    cli_run text({"members", "--watch", "--connect", zk.connect_string(), group});
    cli_run json({"members", "--watch", "--json", "--connect", zk.connect_string(), group});
    REQUIRE(text.says("w1\t10.0.0.3:8080\n"));
    REQUIRE(json.says("\"w1\":\"10.0.0.3:8080\"}\n"));
    mb.reset();  // leaves
    REQUIRE(text.says("left\tcurator-7\n"));
    REQUIRE(json.says("{\"w1\":\"10.0.0.3:8080\"}\n"));
    ma.set_data("10.0.0.3:9090");
    REQUIRE(text.says("updated\tw1\t10.0.0.3:9090\n"));
    zkr::group_member mc(*b, group, "w2", "10.0.0.4:8080");
    mc.start();
    REQUIRE(text.says("joined\tw2\t10.0.0.4:8080\n"));
    REQUIRE(json.says("{\"w1\":\"10.0.0.3:9090\",\"w2\":\"10.0.0.4:8080\"}\n"));
    text.process.kill(SIGTERM);
    json.process.kill(SIGTERM);
    CHECK(text.wait() == 0);
    CHECK(json.wait() == 0);
    CHECK(zkr::test::read_lines(text.out) == std::vector<std::string>{"curator-7\t10.0.0.7:8080", "w1\t10.0.0.3:8080", "left\tcurator-7",
                                                                       "updated\tw1\t10.0.0.3:9090", "joined\tw2\t10.0.0.4:8080"});
}

TEST_CASE("zkr revoke asks a revocable holder to let go, and names the node") {
    auto& zk = zkr::test::shared_server();
    const auto path = cli_path("revoke");
    auto c = connect(zk.connect_string());
    std::atomic<int> asked{0};
    zkr::interprocess_mutex m(*c, path, [&] { ++asked; });
    m.acquire();
    std::string out;
    CHECK(run_to_end({"revoke", "--connect", zk.connect_string(), path}, &out) == 0);
    CHECK_THAT(out, zkr::test::contains("asked " + m.node_path() + " to let go"));
    CHECK(zkr::test::eventually([&] { return asked.load() == 1; }, 10s));
    CHECK(m.state() == zkr::hold_state::held);
    // The holder writes its own data back over the request: zkr status names it again (issue 43:
    // it showed __REVOKE__ instead of host:pid).
    CHECK(zkr::test::eventually([&] { return c->get_data(m.node_path()).data != zkr::revocation_signal; }, 10s));
    std::string status;
    CHECK(run_to_end({"status", "--connect", zk.connect_string(), path}, &status) == 0);
    CHECK_THAT(status, !zkr::test::contains("__REVOKE__"));
    CHECK_THAT(status, zkr::test::contains(":" + std::to_string(::getpid())));
    m.release();
}

// Issue 43: a plain `zkr lock` waiting behind a revocable holder took `zkr revoke`'s write for the
// release and ran its command beside the holder's (1.08 s). Now the revoked `zkr lock --revocable`
// stops its command and exits 5, and only then does the plain waiter's command start.
TEST_CASE("zkr lock --revocable lets go on zkr revoke (exit 5), and a plain zkr lock behind it runs only after") {
    auto& zk = zkr::test::shared_server();
    const auto path = cli_path("revocable");
    const auto log = zkr::test::temp_file("log");
    const std::string holder_body = "echo start >> '" + log + "'; trap 'echo end >> \"" + log + "\"; exit 0' TERM; sleep 30 & wait";
    const std::string waiter_body = "echo start >> '" + log + "'; echo end >> '" + log + "'";
    cli_run holder({"lock", "--revocable", "--connect", zk.connect_string(), path, "--", "sh", "-c", holder_body});
    auto c = connect(zk.connect_string());
    REQUIRE(zkr::test::eventually([&] { return zkr::test::read_lines(log).size() == 1; }, 10s));
    cli_run waiter({"lock", "--connect", zk.connect_string(), path, "--", "sh", "-c", waiter_body});
    REQUIRE(zkr::test::eventually([&] { return nodes_under(*c, path) == 2; }, 10s));
    std::this_thread::sleep_for(200ms);  // the waiter's watch is set
    // A third party's write first: nothing happens at all.
    auto nodes = c->get_children(path).children;
    const auto by_sequence = [](const std::string& a, const std::string& b) { return a.substr(a.size() - 10) < b.substr(b.size() - 10); };
    c->set_data(zkr::join_path(path, *std::min_element(nodes.begin(), nodes.end(), by_sequence)), "operator");
    std::this_thread::sleep_for(500ms);
    CHECK(zkr::test::read_lines(log).size() == 1);
    std::string out;
    CHECK(run_to_end({"revoke", "--connect", zk.connect_string(), path}, &out) == 0);
    CHECK(holder.wait() == 5);
    CHECK_THAT(holder.stderr_text(), zkr::test::contains("revocation request"));
    CHECK(waiter.wait() == 0);
    CHECK(zkr::test::read_lines(log) == std::vector<std::string>{"start", "end", "start", "end"});
    CHECK(nodes_under(*c, path) == 0);
    CHECK(run_to_end({"lock", "--revocable", "--max", "2", "--connect", zk.connect_string(), path, "--", "true"}) == 2);
    std::remove(log.c_str());
}

// Issue 43 item 4: with --lose-on-doubt a one-server blip made a 4.9 s leader gap: zkr exited
// while disconnected, its node stayed until the session expired, and the message named the wrong
// cause. Now it stops the command, waits for the connection to delete its node, and says why.
TEST_CASE("zkr elect --lose-on-doubt: a suspended connection stops the command, once it returns the node is deleted at once, and the message says why") {
    auto& zk = zkr::test::shared_server();
    zkr::test::tcp_proxy proxy(zk.client_port(0));
    const auto path = cli_path("elect-doubt");
    const auto log = zkr::test::temp_file("log");
    cli_run leader({"elect", "--lose-on-doubt", "--session-timeout", "8", "--connect", "127.0.0.1:" + std::to_string(proxy.port()), path,
                    "--", "sh", "-c", "echo start >> '" + log + "'; trap 'echo stopped >> \"" + log + "\"; exit 0' TERM; sleep 60 & wait"});
    auto c = connect(zk.connect_string());
    REQUIRE(zkr::test::eventually([&] { return zkr::test::read_lines(log).size() == 1; }, 10s));
    proxy.blackhole(true);  // silence: the client suspends after 2/3 of the session timeout
    REQUIRE(zkr::test::eventually([&] { return zkr::test::read_lines(log).size() == 2; }, 15s));
    CHECK(nodes_under(*c, path) == 1);  // the session lives on, and with it the node
    proxy.blackhole(false);
    const auto back = std::chrono::steady_clock::now();
    CHECK(leader.wait() == 4);
    CHECK(nodes_under(*c, path) == 0);  // deleted by zkr itself, long before the session (8 s) would expire
    CHECK(std::chrono::steady_clock::now() - back < 6s);
    CHECK_THAT(leader.stderr_text(), zkr::test::contains("the connection to ZooKeeper was suspended (--lose-on-doubt)"));
    CHECK_THAT(leader.stderr_text(), zkr::test::contains("our node is deleted"));
    std::remove(log.c_str());
}

TEST_CASE("zkr counter gets, sets and adds in either format, concurrent adds lose nothing, and bad input is refused clearly") {
    auto& zk = zkr::test::shared_server();
    const auto cs = zk.connect_string();
    const auto path = cli_path("counter") + "/count";
    auto c = connect(cs);
    std::string out, err;
    // No count yet: get says so (exit 1); add starts at 0 and makes the node and its parents.
    CHECK(run_to_end({"counter", "--connect", cs, path}, &out, &err) == 1);
    CHECK_THAT(err, zkr::test::contains("no count at " + path));
    CHECK(run_to_end({"counter", "--connect", cs, path, "add", "5"}, &out) == 0);
    CHECK(out == "5\n");
    CHECK(c->get_data(path).data == "5");
    CHECK(run_to_end({"counter", "--connect", cs, path, "add", "-7"}, &out) == 0);
    CHECK(out == "-2\n");
    CHECK(run_to_end({"counter", "--connect", cs, path, "get"}, &out) == 0);
    CHECK(out == "-2\n");
    // Three processes add at once: every add is counted.
    {
        std::vector<std::unique_ptr<cli_run>> adders;
        for (int i = 0; i < 3; ++i) adders.push_back(std::make_unique<cli_run>(std::vector<std::string>{"counter", "--connect", cs, path, "add", "10"}));
        for (auto& a : adders) CHECK(a->wait() == 0);
    }
    CHECK(c->get_data(path).data == "28");
    // Curator's format: 4 big-endian bytes, and each format refuses the other's data.
    CHECK(run_to_end({"counter", "--connect", cs, "--format", "int32", path}, &out, &err) == 1);
    CHECK_THAT(err, zkr::test::contains("holds \"28\", not a count in 4 big-endian bytes"));
    CHECK(run_to_end({"counter", "--connect", cs, "--format", "int32", path, "set", "258"}, &out) == 0);
    CHECK(c->get_data(path).data == std::string("\x00\x00\x01\x02", 4));
    CHECK(run_to_end({"counter", "--connect", cs, "--format", "int32", path, "add", "1"}, &out) == 0);
    CHECK(out == "259\n");
    CHECK(run_to_end({"counter", "--connect", cs, path}, &out, &err) == 1);
    CHECK_THAT(err, zkr::test::contains("holds \"\\x00\\x00\\x01\\x03\", not a count in decimal text"));
    // Past the 32-bit range: refused, nothing written.
    CHECK(run_to_end({"counter", "--connect", cs, "--format", "int32", path, "add", "2147483647"}, &out, &err) == 1);
    CHECK_THAT(err, zkr::test::contains("leaves the 32-bit range"));
    CHECK(c->get_data(path).data == std::string("\x00\x00\x01\x03", 4));
    // Bad usage: exit 2, with what was wrong.
    CHECK(run_to_end({"counter", "--connect", cs, path, "add"}, &out, &err) == 2);
    CHECK_THAT(err, zkr::test::contains("add needs a number N"));
    CHECK(run_to_end({"counter", "--connect", cs, path, "add", "1.5"}, &out, &err) == 2);
    CHECK_THAT(err, zkr::test::contains("whole number from -2147483648 to 2147483647, got \"1.5\""));
    CHECK(run_to_end({"counter", "--connect", cs, path, "bump"}, &out, &err) == 2);
    CHECK_THAT(err, zkr::test::contains("unknown action \"bump\""));
    CHECK(run_to_end({"counter", "--connect", cs, path, "get", "3"}, &out, &err) == 2);
    CHECK_THAT(err, zkr::test::contains("unexpected \"3\" after get"));
    CHECK(run_to_end({"counter", "--connect", cs, "--format", "hex", path}, &out, &err) == 2);
    CHECK(run_to_end({"counter", "--connect", cs, "no-slash"}, &out, &err) == 2);
    c->remove(path);
}

TEST_CASE("zkr counter --format int64 is Curator's DistributedAtomicLong: concurrent adds exact, other data refused, no receipt left") {
    auto& zk = zkr::test::shared_server();
    const auto cs = zk.connect_string();
    const auto path = cli_path("counter-int64") + "/count";
    auto c = connect(cs);
    std::string out, err;
    CHECK(run_to_end({"counter", "--connect", cs, "--format", "int64", path}, &out, &err) == 1);
    CHECK_THAT(err, zkr::test::contains("no count at " + path));
    CHECK(run_to_end({"counter", "--connect", cs, "--format", "int64", path, "add", "5000000000"}, &out) == 0);
    CHECK(out == "5000000000\n");
    CHECK(c->get_data(path).data == std::string("\x00\x00\x00\x01\x2a\x05\xf2\x00", 8));
    {
        std::vector<std::unique_ptr<cli_run>> adders;
        for (int i = 0; i < 3; ++i)
            adders.push_back(std::make_unique<cli_run>(std::vector<std::string>{"counter", "--connect", cs, "--format", "int64", path, "add", "-1"}));
        for (auto& a : adders) CHECK(a->wait() == 0);
    }
    CHECK(run_to_end({"counter", "--connect", cs, "--format", "int64", path, "get"}, &out) == 0);
    CHECK(out == "4999999997\n");
    CHECK(run_to_end({"counter", "--connect", cs, "--format", "int64", path, "set", "-3"}, &out) == 0);
    CHECK(out == "-3\n");
    CHECK(c->get_children(path).children.empty());  // every process's receipt deleted
    // Curator's SharedCount (4 bytes) is not a 64-bit value: refused, with what the node holds.
    c->set_data(path, std::string("\x00\x00\x01\x02", 4), -1);
    CHECK(run_to_end({"counter", "--connect", cs, "--format", "int64", path, "add", "1"}, &out, &err) == 1);
    CHECK_THAT(err, zkr::test::contains("holds 4 bytes, not a 64-bit value"));
    CHECK(run_to_end({"counter", "--connect", cs, "--format", "int64", path, "add", "x"}, &out, &err) == 2);
    CHECK_THAT(err, zkr::test::contains("whole 64-bit number, got \"x\""));
    CHECK(zkr::test::eventually([&] { return c->get_children(path).children.empty(); }, 5s));
    c->remove(path);
}

TEST_CASE("zkr register keeps an instance while its command runs, zkr services lists it (and Curator's JSON), and bad input is refused before anything is sent") {
    auto& zk = zkr::test::shared_server();
    const auto cs = zk.connect_string();
    const auto base = cli_path("services");
    auto c = connect(cs);
    struct bad {
        std::vector<std::string> args;
        std::string says;
    };
    for (const auto& b : std::vector<bad>{
             {{"register", "--connect", cs, "--base", base, "--address", "h", "--", "true"}, "no NAME"},
             {{"register", "--connect", cs, "--base", base, "--address", "h", "api"}, "no COMMAND"},
             {{"register", "--connect", cs, "--base", base, "api", "--", "true"}, "--address is required"},
             {{"register", "--connect", cs, "--base", base, "--address", "h", "a/b", "--", "true"}, "invalid service NAME \"a/b\""},
             {{"register", "--connect", cs, "--base", base, "--address", "h", "--id", "..", "api", "--", "true"}, "invalid --id"},
             {{"register", "--connect", cs, "--base", base, "--address", "h", "--port", "70000", "api", "--", "true"}, "--port: must be a number from 0 to 65535"},
             {{"register", "--connect", cs, "--base", base, "--address", "h", "--payload", "hello", "api", "--", "true"}, "payload is not one JSON value"},
             {{"register", "--connect", cs, "--base", base, "--address", "h", "--uri-spec", "{port", "api", "--", "true"}, "not closed"},
             {{"register", "--connect", cs, "--base", "services", "--address", "h", "api", "--", "true"}, "invalid --base"},
             {{"services", "--connect", cs, "--base", base, "a/b"}, "invalid service NAME"},
             {{"services", "--connect", cs, "--base", base, "a", "b"}, "one NAME at most"},
             {{"services", "--connect", cs, "--base", base, "--", "ls"}, "takes no COMMAND"}}) {
        std::string joined;
        for (const auto& a : b.args) joined += a + " ";
        INFO("zkr " << joined);
        std::string err;
        CHECK(run_to_end(b.args, nullptr, &err) == 2);
        CHECK_THAT(err, zkr::test::contains(b.says));
    }
    CHECK_FALSE(c->exists(base));  // nothing was sent
    std::string out, err;
    CHECK(run_to_end({"services", "--connect", cs, "--base", base}, &out) == 0);  // no services yet
    CHECK(out.empty());
    CHECK(run_to_end({"register", "--help"}, &out) == 0);
    CHECK_THAT(out, zkr::test::contains("usage: zkr register [OPTIONS] NAME -- COMMAND [ARGS...]"));
    CHECK(run_to_end({"services", "--help"}, &out) == 0);
    CHECK_THAT(out, zkr::test::contains("usage: zkr services [OPTIONS] [NAME]\n"));

    // The instance exists while the command runs, with the command's environment naming it.
    const auto node = zkr::join_path(zkr::join_path(base, "api"), "r1");
    cli_run reg({"register", "--connect", cs, "--base", base, "--address", "10.0.0.9", "--port", "8080", "--id", "r1", "--payload", "\"v2\"",
                 "--uri-spec", "{scheme}://{address}:{port}", "api", "--", "sh", "-c",
                 "echo \"$ZKR_SERVICE_NAME $ZKR_SERVICE_ID $ZKR_SERVICE_PATH\"; sleep 60"});
    REQUIRE(reg.says("api r1 " + node + "\n"));
    CHECK(c->exists(node)->ephemeral_owner != 0);
    c->create(zkr::join_path(zkr::join_path(base, "api"), "junk"), "not an instance");
    CHECK(run_to_end({"services", "--connect", cs, "--base", base}, &out, &err) == 0);
    CHECK(out == "api\tr1\t10.0.0.9\t8080\t-\tDYNAMIC\tenabled\thttp://10.0.0.9:8080\n");
    CHECK_THAT(err, zkr::test::contains("zkr services: service api: " + base + "/api/junk is not a service instance, left out: not JSON"));
    CHECK(run_to_end({"services", "--connect", cs, "--base", base, "api", "--json"}, &out) == 0);
    CHECK_THAT(out, zkr::test::starts_with(R"({"api":[{"name":"api","id":"r1","address":"10.0.0.9","port":8080,"sslPort":null,"payload":"v2","registrationTimeUTC":)"));
    CHECK_THAT(out, zkr::test::ends_with(R"("serviceType":"DYNAMIC","uriSpec":{"parts":[{"value":"scheme","variable":true},{"value":"://","variable":false},{"value":"address","variable":true},{"value":":","variable":false},{"value":"port","variable":true}]}}]})" "\n"));
    // A signal to zkr reaches the command; once it has exited the instance is gone.
    reg.process.kill(SIGTERM);
    CHECK(reg.wait() == 143);
    CHECK_FALSE(c->exists(node));
    // The command's exit status is zkr's; and zkr killed with -9 leaves nothing once its session ends.
    CHECK(run_to_end({"register", "--connect", cs, "--base", base, "--address", "h", "api", "--", "sh", "-c", "exit 7"}) == 7);
    cli_run killed({"register", "--connect", cs, "--session-timeout", "2", "--base", base, "--address", "h", "--id", "k1", "api", "--", "sh", "-c",
                    "echo up; sleep 60"});
    REQUIRE(killed.says("up\n"));
    const auto killed_node = zkr::join_path(zkr::join_path(base, "api"), "k1");
    CHECK(c->exists(killed_node));
    killed.process.kill(SIGKILL);
    killed.wait();
    CHECK(zkr::test::eventually([&] { return !c->exists(killed_node); }, 10s));
    c->remove(zkr::join_path(zkr::join_path(base, "api"), "junk"));
    CHECK(zkr::test::nodes_under(*c, zkr::join_path(base, "api")) == 0);
}

TEST_CASE("zkr --json lines are JSON whatever the data: control characters escaped, bytes that are not UTF-8 shown as U+FFFD") {
    auto& zk = zkr::test::shared_server();
    const auto group = cli_path("json-bytes");
    auto c = connect(zk.connect_string());
    zkr::create_options o;
    o.create_parents = true;
    c->create(group + "/bin", std::string("a\xff\x01\"", 4), o);
    c->create(group + "/text", "caf\xc3\xa9", o);  // UTF-8 passes as it is
    std::string out;
    CHECK(run_to_end({"members", "--json", "--connect", zk.connect_string(), group}, &out) == 0);
    CHECK(out == "{\"bin\":\"a\xef\xbf\xbd\\u0001\\\"\",\"text\":\"caf\xc3\xa9\"}\n");
}
