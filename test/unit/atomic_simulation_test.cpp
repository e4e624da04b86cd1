// The atomic long's simulation (test/sim/atomic_sim.hpp): many random schedules, each checked
// after every step and at quiescence.
//   ZKR_ATOMIC_SIM_SCHEDULES=<n>  how many (default: 30,000; 2,000 under the sanitizers)
//   ZKR_ATOMIC_SIM_SEED=<n>       replay one schedule and print its trace
#include "../sim/atomic_sim.hpp"
#include "sim_env.hpp"

#include "zkr_catch.hpp"

#include <iostream>
#include <string>

namespace {

#ifdef ZKR_SANITIZED_BUILD
constexpr long default_atomic_schedules = 2000;
#else
constexpr long default_atomic_schedules = 30000;
#endif

}  // namespace

TEST_CASE("atomic long simulation: random schedules keep every guarantee") {
    namespace atomic = zkr::sim::atomic;
    long faults = 0, succeeded = 0, not_succeeded = 0, unknown = 0, promoted = 0, lost = 0, late = 0;
    zkr::sim::client_reach clients;
    const auto done = zkr::test::run_schedules(
        {"atomic long simulation: random schedules keep every guarantee", "ZKR_ATOMIC_SIM_SEED", "ZKR_ATOMIC_SIM_SCHEDULES", default_atomic_schedules},
        atomic::draw_schedule, atomic::run, atomic::describe, [&](const atomic::outcome& o) {
            clients += o.clients;
            faults += o.faults;
            succeeded += o.succeeded;
            not_succeeded += o.not_succeeded;
            unknown += o.unknown;
            promoted += o.promoted;
            lost += o.lost_replies;
            late += o.late_writes;
        });
    if (!done) return;  // (one schedule replayed)
    const auto [n, secs] = *done;
    std::cout << n << " atomic long schedules in " << secs << " s: " << succeeded << " succeeded, " << not_succeeded << " not, " << unknown
              << " unknown, " << promoted << " promotions, " << faults << " faults, " << lost << " replies lost, " << late
              << " writes applied after their connection failed\n";
    std::cout << "  the simulated clients: " << clients.describe() << "\n";
    CHECK(faults > n);             // under faults
    CHECK(lost > n / 10);          // replies lost with their connection
    CHECK(succeeded > n);          // changes made
    CHECK(not_succeeded > n / 20);  // and refused (conflicts, compares)
    CHECK(promoted > n / 20);      // and promoted
    CHECK(late > n / 100);         // writes that took after the client heard they failed
    CHECK(clients.read_only > n / 10);  // on read-only servers (test/sim/sim_clients.hpp)
    CHECK(clients.refused > n / 10);    // where writes are refused
    CHECK(clients.replies_lost > n / 2);           // replies lost with their connection
    CHECK(clients.drops_losing_replies > n / 100);  // several at one drop (no watches: no events again)
    CHECK(clients.ended_in_doubt > n / 2);          // sessions ended with a lost reply's write in doubt
}
