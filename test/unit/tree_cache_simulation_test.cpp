// The tree cache's simulation (test/sim/tree_cache_sim.hpp): many random schedules, each checked
// at every event and at quiescence.
//   ZKR_TREE_SIM_SCHEDULES=<n>  how many (default: 20,000; 1,000 under the sanitizers)
//   ZKR_TREE_SIM_SEED=<n>       replay one schedule and print its trace
#include "../sim/tree_cache_sim.hpp"
#include "sim_env.hpp"

#include "zkr_catch.hpp"

#include <chrono>
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
    using zkr::test::env_number;
    if (const auto seed = env_number("ZKR_TREE_SIM_SEED")) {
        const auto s = tree::draw_schedule(static_cast<std::uint64_t>(*seed));
        const auto o = tree::run(s, true);
        std::cout << tree::describe(s) << "\n";
        for (const auto& line : o.trace) std::cout << "  " << line << "\n";
        INFO(o.violation);
        CHECK(o.ok);
        return;
    }
    const long n = env_number("ZKR_TREE_SIM_SCHEDULES").value_or(default_tree_schedules);
    const auto start = std::chrono::steady_clock::now();
    long events = 0, changes = 0, faults = 0, reads = 0;
    for (long i = 0; i < n; ++i) {
        // The lock simulation's seed sequence, so that test/sim/mutate counts schedules alike.
        const auto s = tree::draw_schedule(1000003ULL * static_cast<std::uint64_t>(i) + 7);
        const auto o = tree::run(s);
        if (!o.ok)
            FAIL(tree::describe(s) + ": " + o.violation + "\n  replay: ZKR_TREE_SIM_SEED=" + std::to_string(s.seed) +
                 " zkr_unit_tests \"tree cache simulation: random schedules keep every guarantee\"");
        events += o.events;
        changes += o.changes;
        faults += o.faults;
        reads += o.reads;
    }
    const auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << n << " tree cache schedules in " << secs << " s: " << changes << " changes, " << events << " events, " << faults
              << " faults, " << reads << " reads\n";
    CHECK(changes > n * 5);  // the operator does change the tree
    CHECK(events > changes);  // and the caches hear of it
    CHECK(faults > n * 2);    // under faults
}
