// The shared count's simulation (test/sim/count_sim.hpp): many random schedules, each checked
// at every read and at quiescence.
//   ZKR_COUNT_SIM_SCHEDULES=<n>  how many (default: 50,000; 2,000 under the sanitizers)
//   ZKR_COUNT_SIM_SEED=<n>       replay one schedule and print its trace
#include "../sim/count_sim.hpp"
#include "sim_env.hpp"

#include "zkr_catch.hpp"

#include <iostream>
#include <string>

namespace {

// (Named apart from the lock simulation's: the two files may share a unity batch.)
#ifdef ZKR_SANITIZED_BUILD
constexpr long default_count_schedules = 2000;
#else
constexpr long default_count_schedules = 50000;
#endif

}  // namespace

TEST_CASE("count simulation: random schedules keep every guarantee") {
    namespace count = zkr::sim::count;
    long successes = 0, took = 0, conflicts = 0, faults = 0, reads = 0;
    zkr::sim::client_reach clients;
    const auto done = zkr::test::run_schedules(
        {"count simulation: random schedules keep every guarantee", "ZKR_COUNT_SIM_SEED", "ZKR_COUNT_SIM_SCHEDULES", default_count_schedules},
        count::draw_schedule, count::run, count::describe, [&](const count::outcome& o) {
            clients += o.clients;
            successes += o.successes;
            took += o.took;
            conflicts += o.conflicts;
            faults += o.faults;
            reads += o.reads;
        });
    if (!done) return;  // (one schedule replayed)
    const auto [n, secs] = *done;
    std::cout << n << " count schedules in " << secs << " s: " << successes << " increments (" << took - successes << " more took with their reply lost), " << conflicts << " compare-and-set conflicts, "
              << faults << " faults, " << reads << " reads applied\n";
    std::cout << "  the simulated clients: " << clients.describe() << "\n";
    CHECK(successes > n);       // the workers do increment
    CHECK(took > successes);    // and some increments took with their reply lost
    CHECK(conflicts > n / 10);  // and meet each other (a version that moved)
    CHECK(faults > n);          // under faults
    CHECK(clients.read_only > n / 50);  // on read-only servers (test/sim/sim_clients.hpp)
    CHECK(clients.refused > n / 20);    // where the workers' writes are refused
    CHECK(clients.replies_lost > n / 20);          // replies lost with their connection
    CHECK(clients.drops_losing_replies > n / 200);  // several at one drop
    CHECK(clients.events_again > n / 30);          // watch events fired again after a drop
}
