// The persistent node's simulation (test/sim/persistent_node_sim.hpp): many random schedules, each
// checked after every step and at quiescence.
//   ZKR_NODE_SIM_SCHEDULES=<n>  how many (default: 50,000; 2,000 under the sanitizers)
//   ZKR_NODE_SIM_SEED=<n>       replay one schedule and print its trace
#include "../sim/persistent_node_sim.hpp"
#include "sim_env.hpp"

#include "zkr_catch.hpp"

#include <chrono>
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
    using zkr::test::env_number;
    if (const auto seed = env_number("ZKR_NODE_SIM_SEED")) {
        const auto s = nodes::draw_schedule(static_cast<std::uint64_t>(*seed));
        const auto o = nodes::run(s, true);
        std::cout << nodes::describe(s) << "\n";
        for (const auto& line : o.trace) std::cout << "  " << line << "\n";
        INFO(o.violation);
        CHECK(o.ok);
        return;
    }
    const long n = env_number("ZKR_NODE_SIM_SCHEDULES").value_or(default_node_schedules);
    const auto start = std::chrono::steady_clock::now();
    long faults = 0, creates = 0, lost = 0, recreated = 0;
    for (long i = 0; i < n; ++i) {
        // The lock simulation's seed sequence, so that test/sim/mutate counts schedules alike.
        const auto s = nodes::draw_schedule(1000003ULL * static_cast<std::uint64_t>(i) + 7);
        const auto o = nodes::run(s);
        if (!o.ok)
            FAIL(nodes::describe(s) + ": " + o.violation + "\n  replay: ZKR_NODE_SIM_SEED=" + std::to_string(s.seed) +
                 " zkr_unit_tests \"persistent node simulation: random schedules keep every guarantee\"");
        faults += o.faults;
        creates += o.creates;
        lost += o.lost_replies;
        recreated += o.recreated;
    }
    const auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << n << " persistent node schedules in " << secs << " s: " << creates << " creates, " << faults << " faults, " << lost
              << " replies lost, " << recreated << " path changes\n";
    CHECK(faults > n);       // under faults
    CHECK(lost > n / 10);    // replies lost with their connection
    CHECK(recreated > n);    // nodes made again
}
