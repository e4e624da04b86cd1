// The distributed barrier's simulation (test/sim/barrier_sim.hpp): many random schedules, each
// checked after every step and at quiescence.
//   ZKR_BARRIER_SIM_SCHEDULES=<n>  how many (default: 50,000; 2,000 under the sanitizers)
//   ZKR_BARRIER_SIM_SEED=<n>       replay one schedule and print its trace
#include "../sim/barrier_sim.hpp"
#include "sim_env.hpp"

#include "zkr_catch.hpp"

#include <chrono>
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
    using zkr::test::env_number;
    if (const auto seed = env_number("ZKR_BARRIER_SIM_SEED")) {
        const auto s = barriers::draw_schedule(static_cast<std::uint64_t>(*seed));
        const auto o = barriers::run(s, true);
        std::cout << barriers::describe(s) << "\n";
        for (const auto& line : o.trace) std::cout << "  " << line << "\n";
        INFO(o.violation);
        CHECK(o.ok);
        return;
    }
    const long n = env_number("ZKR_BARRIER_SIM_SCHEDULES").value_or(default_barrier_schedules);
    const auto start = std::chrono::steady_clock::now();
    long faults = 0, passed = 0, checks = 0, lost = 0;
    for (long i = 0; i < n; ++i) {
        // The lock simulation's seed sequence, so that test/sim/mutate counts schedules alike.
        const auto s = barriers::draw_schedule(1000003ULL * static_cast<std::uint64_t>(i) + 7);
        const auto o = barriers::run(s);
        if (!o.ok)
            FAIL(barriers::describe(s) + ": " + o.violation + "\n  replay: ZKR_BARRIER_SIM_SEED=" + std::to_string(s.seed) +
                 " zkr_unit_tests \"barrier simulation: random schedules keep every guarantee\"");
        faults += o.faults;
        passed += o.passed;
        checks += o.checks;
        lost += o.lost_replies;
    }
    const auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << n << " barrier schedules in " << secs << " s: " << passed << " waits passed, " << checks << " checks, " << faults
              << " faults, " << lost << " replies lost\n";
    CHECK(faults > n);      // under faults
    CHECK(lost > n / 10);   // replies lost with their connection
    CHECK(passed > n);      // waits passed
}
