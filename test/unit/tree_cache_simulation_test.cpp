// The tree cache's simulation (test/sim/tree_cache_sim.hpp): many random schedules, each checked
// at every event and at quiescence.
//   ZKR_TREE_SIM_SCHEDULES=<n>  how many (default: 20,000; 1,000 under the sanitizers)
//   ZKR_TREE_SIM_SEED=<n>       replay one schedule and print its trace
#include "../sim/tree_cache_sim.hpp"
#include "sim_env.hpp"

#include "zkr_catch.hpp"

#include <iostream>
#include <string>

namespace {

#ifdef ZKR_SANITIZED_BUILD
constexpr long default_tree_schedules = 1000;
#else
constexpr long default_tree_schedules = 20000;
#endif

}  // namespace

TEST_CASE("tree cache simulation: random schedules keep every guarantee") {
    namespace tree = zkr::sim::tree;
    long events = 0, changes = 0, faults = 0, reads = 0, closes = 0;
    zkr::sim::client_reach clients;
    const auto done = zkr::test::run_schedules(
        {"tree cache simulation: random schedules keep every guarantee", "ZKR_TREE_SIM_SEED", "ZKR_TREE_SIM_SCHEDULES", default_tree_schedules},
        tree::draw_schedule, tree::run, tree::describe, [&](const tree::outcome& o) {
            clients += o.clients;
            events += o.events;
            changes += o.changes;
            faults += o.faults;
            reads += o.reads;
            closes += o.closes;
        });
    if (!done) return;  // (one schedule replayed)
    const auto [n, secs] = *done;
    std::cout << n << " tree cache schedules in " << secs << " s: " << changes << " changes, " << events << " events, " << faults
              << " faults, " << reads << " reads, " << closes << " caches closed with work on the way\n";
    std::cout << "  the simulated clients: " << clients.describe() << "\n";
    CHECK(changes > n * 5);  // the operator does change the tree
    CHECK(events > changes);  // and the caches hear of it
    CHECK(faults > n * 2);    // under faults
    CHECK(closes > n / 20);   // and caches closed while their engine had work out
    CHECK(clients.read_only > n / 50);   // on read-only servers (test/sim/sim_clients.hpp)
    CHECK(clients.reordered > n / 100);  // retried reads sent in another order than first
    CHECK(clients.replies_lost > n / 20);          // replies lost with their connection
    CHECK(clients.drops_losing_replies > n / 100);  // several at one drop
    CHECK(clients.events_again > n / 30);          // watch events fired again after a drop
}
