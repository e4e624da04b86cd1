// The distributed barrier's simulation (test/sim/barrier_sim.hpp): many random schedules, each
// checked after every step and at quiescence.
//   ZKR_BARRIER_SIM_SCHEDULES=<n>  how many (default: 50,000; 2,000 under the sanitizers)
//   ZKR_BARRIER_SIM_SEED=<n>       replay one schedule and print its trace
#include "../sim/barrier_sim.hpp"
#include "sim_env.hpp"

#include "zkr_catch.hpp"

#include <iostream>
#include <string>

namespace {

#ifdef ZKR_SANITIZED_BUILD
constexpr long default_barrier_schedules = 2000;
#else
constexpr long default_barrier_schedules = 50000;
#endif

}  // namespace

TEST_CASE("barrier simulation: random schedules keep every guarantee") {
    namespace barriers = zkr::sim::barriers;
    long faults = 0, passed = 0, checks = 0, lost = 0;
    zkr::sim::client_reach clients;
    const auto done = zkr::test::run_schedules(
        {"barrier simulation: random schedules keep every guarantee", "ZKR_BARRIER_SIM_SEED", "ZKR_BARRIER_SIM_SCHEDULES", default_barrier_schedules},
        barriers::draw_schedule, barriers::run, barriers::describe, [&](const barriers::outcome& o) {
            clients += o.clients;
            faults += o.faults;
            passed += o.passed;
            checks += o.checks;
            lost += o.lost_replies;
        });
    if (!done) return;  // (one schedule replayed)
    const auto [n, secs] = *done;
    std::cout << n << " barrier schedules in " << secs << " s: " << passed << " waits passed, " << checks << " checks, " << faults
              << " faults, " << lost << " replies lost\n";
    std::cout << "  the simulated clients: " << clients.describe() << "\n";
    CHECK(faults > n);      // under faults
    CHECK(lost > n / 10);   // replies lost with their connection
    CHECK(passed > n);      // waits passed
    CHECK(clients.read_only > n / 50);  // on read-only servers (test/sim/sim_clients.hpp)
    CHECK(clients.replies_lost > n / 10);          // replies lost with their connection
    CHECK(clients.drops_losing_replies > n / 200);  // several at one drop
    CHECK(clients.events_again > n / 50);          // watch events fired again after a drop
    CHECK(clients.ended_in_doubt > n / 20);        // sessions ended with a lost reply's request in doubt
}
