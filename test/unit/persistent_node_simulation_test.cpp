// The persistent node's simulation (test/sim/persistent_node_sim.hpp): many random schedules, each
// checked after every step and at quiescence.
//   ZKR_NODE_SIM_SCHEDULES=<n>  how many (default: 50,000; 2,000 under the sanitizers)
//   ZKR_NODE_SIM_SEED=<n>       replay one schedule and print its trace
#include "../sim/persistent_node_sim.hpp"
#include "sim_env.hpp"

#include "zkr_catch.hpp"

#include <iostream>
#include <string>

namespace {

#ifdef ZKR_SANITIZED_BUILD
constexpr long default_node_schedules = 2000;
#else
constexpr long default_node_schedules = 50000;
#endif

}  // namespace

TEST_CASE("persistent node simulation: random schedules keep every guarantee") {
    namespace nodes = zkr::sim::nodes;
    long faults = 0, creates = 0, lost = 0, recreated = 0;
    zkr::sim::client_reach clients;
    const auto done = zkr::test::run_schedules(
        {"persistent node simulation: random schedules keep every guarantee", "ZKR_NODE_SIM_SEED", "ZKR_NODE_SIM_SCHEDULES", default_node_schedules},
        nodes::draw_schedule, nodes::run, nodes::describe, [&](const nodes::outcome& o) {
            clients += o.clients;
            faults += o.faults;
            creates += o.creates;
            lost += o.lost_replies;
            recreated += o.recreated;
        });
    if (!done) return;  // (one schedule replayed)
    const auto [n, secs] = *done;
    std::cout << n << " persistent node schedules in " << secs << " s: " << creates << " creates, " << faults << " faults, " << lost
              << " replies lost, " << recreated << " path changes\n";
    std::cout << "  the simulated clients: " << clients.describe() << "\n";
    CHECK(faults > n);       // under faults
    CHECK(lost > n / 10);    // replies lost with their connection
    CHECK(recreated > n);    // nodes made again
    CHECK(clients.read_only > n / 50);  // on read-only servers (test/sim/sim_clients.hpp)
    CHECK(clients.refused > n / 50);    // where creates and deletes are refused
    CHECK(clients.reordered > n / 20);  // retried requests sent in another order than first
    CHECK(clients.lookups > n / 50);    // protected creates recovered, step by step
    CHECK(clients.adopted > n / 200);   // and the node a lost try made adopted
    CHECK(clients.lookups_behind > n / 5000);  // and a read-only server's lookup without it
    CHECK(clients.replies_lost > n / 4);          // replies lost with their connection
    CHECK(clients.drops_losing_replies > n / 20);  // several at one drop
    CHECK(clients.events_again > n / 20);         // watch events fired again after a drop
    CHECK(clients.ended_in_doubt > n / 4);        // sessions ended with a lost reply's request in doubt
}
