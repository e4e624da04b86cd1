// The double barrier under faults, in separate processes: five zkr_barrier_worker processes (each
// a zkr::double_barrier member in a process of its own, reaching the servers through TCP proxies,
// with 10 s sessions) go through 50 rounds of 200 ms each, one barrier path per round, while a
// nemesis acts: a
// server killed with -9 and restarted (the ensemble's leader among them), every connection reset,
// the proxies blackholed briefly, a member paused (within its session: the others must wait for
// it); each kind once in every run, then at random, each followed by 4 rounds. Checked, from the members' log (one O_APPEND
// write per line: the file's order is the real order):
// - in every round, nobody's enter returned before all five had begun to enter, and nobody's leave
//   returned before all five had begun to leave;
// - every member went through every round (nobody waited for ever), with no error;
// - nothing is left under any round's path.
// Named "nemesis" so that CI runs it where it runs the other fault runs (scripts/run).
#include "build_paths.hpp"
#include "process.hpp"
#include "process_nemesis.hpp"
#include "recipe_checks.hpp"

#include "zkr_catch.hpp"

#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

using namespace std::chrono_literals;

namespace {

// One line of a zkr_barrier_worker's log: "<what> <pid> <round> <ns> [message]".
struct step {
    std::string what;
    int round = 0;
    std::string line;  // as written, for a message
};

std::vector<step> steps_in(const std::string& log) {
    std::vector<step> out;
    for (const auto& line : zkr::test::read_finished_lines(log)) {
        std::istringstream in(line);
        step s;
        long pid = 0;
        in >> s.what >> pid >> s.round;
        s.line = line;
        out.push_back(std::move(s));
    }
    return out;
}

void run_barrier_nemesis(int servers, int members, int rounds) {
    constexpr auto session = 10s;
    zkr::test::zk_cluster zk({.servers = servers});
    zkr::test::proxied_servers net(zk);
    const std::string base = "/barrier-fault";
    auto op = zkr::test::connect(zkr::test::test_options(zk.connect_string(), 10s));  // the checker, beside the proxies
    const auto seed = zkr::test::nemesis_seed();
    INFO("seed " << seed << ", " << servers << " server(s)");
    std::mt19937 rng(seed);

    const auto log = zkr::test::temp_file("barrier");
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<zkr::test::child_process> workers;
    for (int i = 0; i < members; ++i)
        workers.emplace_back(std::vector<std::string>{ZKR_BARRIER_WORKER, net.connect_string, "10000", base, std::to_string(members),
                                                      std::to_string(rounds), "200", log});
    // Rounds every member has left, and whether a member reported an error.
    const auto progress = [&] {
        std::map<int, int> left_in;
        bool error = false;
        for (const auto& [what, r, line] : steps_in(log)) {
            if (what == "left") ++left_in[r];
            if (what == "error") error = true;
        }
        int done = 0;
        while (done < rounds && left_in[done] == members) ++done;
        return std::pair<int, bool>{done, error};
    };
    // The faults that keep sessions: process_fault's server kill, reset and brief blackhole, and a
    // member paused for half its session. After each, the members must get through 4 more rounds
    // (within 90 s: else one is stuck) before the next: the faults land mid-round, and they cannot
    // starve the rounds on a slow machine (a sanitized build beside other fault runs).
    std::vector<int> kinds = {0, 1, 2, 4};
    std::shuffle(kinds.begin(), kinds.end(), rng);
    std::vector<std::string> faults;
    int faults_in_rounds = 0;  // begun while the members were still going through rounds
    for (std::size_t n = 0; n < kinds.size() || progress().first < rounds; ++n) {
        const auto [before, error_before] = progress();
        if (error_before) break;
        if (before < rounds) ++faults_in_rounds;
        const int kind = n < kinds.size() ? kinds[n] : kinds[rng() % kinds.size()];
        if (kind == 4) {
            const auto w = rng() % workers.size();
            workers[w].kill(SIGSTOP);
            std::this_thread::sleep_for(session / 2);
            workers[w].kill(SIGCONT);
            faults.push_back("pause member " + std::to_string(w) + " for half its session");
        } else {
            faults.push_back(zkr::test::process_fault(kind, zk, net, workers, session, rng));
        }
        const int want = std::min(rounds, before + 4);
        const bool went_on = zkr::test::eventually([&] {
            const auto [done, error] = progress();
            return done >= want || error;
        }, 90s);
        INFO("after fault " << faults.back() << ": " << progress().first << " rounds done of " << rounds << ", " << want << " wanted");
        REQUIRE(went_on);
    }
    std::string said;
    for (const auto& f : faults) said += f + "; ";
    INFO("faults: " << said);
    for (auto& w : workers) CHECK(w.wait() == 0);
    const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);

    // Per round: how many members have begun to enter and to leave, at each line.
    std::map<int, int> entering, leaving, entered, left;
    int early_enters = 0, early_leaves = 0, errors = 0;
    for (const auto& [what, r, line] : steps_in(log)) {
        if (what == "entering") ++entering[r];
        else if (what == "leaving") ++leaving[r];
        else if (what == "entered") {
            ++entered[r];
            if (entering[r] < members) ++early_enters;
        } else if (what == "left") {
            ++left[r];
            if (leaving[r] < members) ++early_leaves;
        } else {
            ++errors;
            UNSCOPED_INFO(line);
        }
    }
    CHECK(faults_in_rounds >= 4);  // every kind reached the members mid-round
    CHECK(early_enters == 0);
    CHECK(early_leaves == 0);
    CHECK(errors == 0);
    for (int r = 0; r < rounds; ++r) {
        INFO("round " << r);
        CHECK(entered[r] == members);
        CHECK(left[r] == members);
        CHECK(zkr::test::nodes_under(*op, base + "/r" + std::to_string(r)) == 0);
    }
    std::cout << "double barrier nemesis [" << servers << " server(s)]: " << members << " members x " << rounds << " rounds in "
              << elapsed.count() << " ms; faults: " << said << std::endl;
    std::remove(log.c_str());
}

}  // namespace

TEST_CASE("nemesis: double barrier, 5 members x 50 rounds in separate processes, standalone: nobody early, nobody stuck, nothing left") {
    run_barrier_nemesis(1, 5, 50);
}

TEST_CASE("nemesis: double barrier, 5 members x 50 rounds in separate processes, 3-server ensemble: nobody early, nobody stuck, nothing left") {
    run_barrier_nemesis(3, 5, 50);
}
