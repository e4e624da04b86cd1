// The double barrier's simulation (test/sim/double_barrier_sim.hpp): many random schedules, each
// checked after every step and at quiescence.
//   ZKR_DOUBLE_BARRIER_SIM_SCHEDULES=<n>  how many (default: 30,000; 2,000 under the sanitizers)
//   ZKR_DOUBLE_BARRIER_SIM_SEED=<n>       replay one schedule and print its trace
#include "../sim/double_barrier_sim.hpp"
#include "sim_env.hpp"

#include "zkr_catch.hpp"

#include <iostream>
#include <string>

namespace {

#ifdef ZKR_SANITIZED_BUILD
constexpr long default_double_barrier_schedules = 2000;
#else
constexpr long default_double_barrier_schedules = 30000;
#endif

}  // namespace

TEST_CASE("double barrier simulation: random schedules keep every guarantee") {
    namespace barriers = zkr::sim::double_barriers;
    long faults = 0, entered = 0, left = 0, gave_up = 0, lost = 0, late = 0;
    zkr::sim::client_reach clients;
    const auto done = zkr::test::run_schedules(
        {"double barrier simulation: random schedules keep every guarantee", "ZKR_DOUBLE_BARRIER_SIM_SEED", "ZKR_DOUBLE_BARRIER_SIM_SCHEDULES", default_double_barrier_schedules},
        barriers::draw_schedule, barriers::run, barriers::describe, [&](const barriers::outcome& o) {
            clients += o.clients;
            faults += o.faults;
            entered += o.entered;
            left += o.left;
            gave_up += o.gave_up;
            lost += o.lost_replies;
            late += o.entered_after_giving_up;
        });
    if (!done) return;  // (one schedule replayed)
    const auto [n, secs] = *done;
    std::cout << n << " double barrier schedules in " << secs << " s: " << entered << " entered, " << left << " left, " << gave_up
              << " gave up, " << faults << " faults, " << lost << " replies lost, " << late << " entered after giving up\n";
    std::cout << "  the simulated clients: " << clients.describe() << "\n";
    CHECK(faults > n);      // under faults
    CHECK(lost > n / 10);   // replies lost with their connection
    CHECK(left > n);        // rounds completed
    CHECK(gave_up > n / 20);  // and given up
    CHECK(late > 0);          // a give-up fed while the engine runs an outcome
    CHECK(clients.read_only > n / 50);  // on read-only servers (test/sim/sim_clients.hpp)
    CHECK(clients.refused > n / 100);   // where a member's create or delete is refused
    CHECK(clients.replies_lost > n / 10);  // replies lost with their connection (one at a time: a member
                                           // has one request out)
    CHECK(clients.events_again > n / 100);  // watch events fired again after a drop
    CHECK(clients.ended_in_doubt > n / 10);  // sessions ended with a lost reply's request in doubt
}
