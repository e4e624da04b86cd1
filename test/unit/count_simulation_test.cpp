// The shared count's simulation (test/sim/count_sim.hpp): many random schedules, each checked
// at every read and at quiescence.
//   ZKR_COUNT_SIM_SCHEDULES=<n>  how many (default: 50,000; 2,000 under the sanitizers)
//   ZKR_COUNT_SIM_SEED=<n>       replay one schedule and print its trace
#include "../sim/count_sim.hpp"
#include "sim_env.hpp"

#include "zkr_catch.hpp"

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <optional>
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
    using zkr::test::env_number;
    if (const auto seed = env_number("ZKR_COUNT_SIM_SEED")) {
        const auto s = count::draw_schedule(static_cast<std::uint64_t>(*seed));
        const auto o = count::run(s, true);
        std::cout << count::describe(s) << "\n";
        for (const auto& line : o.trace) std::cout << "  " << line << "\n";
        INFO(o.violation);
        CHECK(o.ok);
        return;
    }
    const long n = env_number("ZKR_COUNT_SIM_SCHEDULES").value_or(default_count_schedules);
    const auto start = std::chrono::steady_clock::now();
    long successes = 0, conflicts = 0, faults = 0, reads = 0;
    for (long i = 0; i < n; ++i) {
        // The lock simulation's seed sequence, so that test/sim/mutate counts schedules alike.
        const auto s = count::draw_schedule(1000003ULL * static_cast<std::uint64_t>(i) + 7);
        const auto o = count::run(s);
        if (!o.ok)
            FAIL(count::describe(s) + ": " + o.violation + "\n  replay: ZKR_COUNT_SIM_SEED=" + std::to_string(s.seed) +
                 " zkr_unit_tests \"count simulation: random schedules keep every guarantee\"");
        successes += o.successes;
        conflicts += o.conflicts;
        faults += o.faults;
        reads += o.reads;
    }
    const auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << n << " count schedules in " << secs << " s: " << successes << " increments, " << conflicts << " compare-and-set conflicts, "
              << faults << " faults, " << reads << " reads applied\n";
    CHECK(successes > n);       // the workers do increment
    CHECK(conflicts > n / 10);  // and meet each other (a version that moved)
    CHECK(faults > n);          // under faults
}
