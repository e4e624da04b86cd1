// What the simulations' tests share: numbers read from the environment (ZKR_SIM_SCHEDULES,
// ZKR_SIM_SEED, ...), and one driver that runs a world's schedules as each of their TEST_CASEs
// does.
#pragma once

#include "zkr_catch.hpp"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>

namespace zkr::test {

/// The variable as a number; nullopt when unset or empty.
inline std::optional<long> env_number(const char* name) {
    if (const char* v = std::getenv(name); v && *v) return std::stol(v);
    return std::nullopt;
}

/// ZKR_SIM_LANE=K/M: a simulation's test runs only the schedules whose index is K modulo M, so
/// that M processes share one run (test/sim/coverage runs each simulation so, one process per
/// core); unset: every schedule. The thresholds a test checks are of the schedules it ran.
struct sim_lane {
    long k = 0, m = 1;
};
inline sim_lane lane_from_env() {
    const char* v = std::getenv("ZKR_SIM_LANE");
    if (!v || !*v) return {};
    sim_lane lane;
    char slash = 0;
    if (std::sscanf(v, "%ld%c%ld", &lane.k, &slash, &lane.m) != 3 || slash != '/' || lane.m < 1 || lane.k < 0 || lane.k >= lane.m)
        FAIL("ZKR_SIM_LANE: say K/M with 0 <= K < M (one of M processes), not '" << v << "'");
    return lane;
}

/// A simulation's test: its TEST_CASE name (for the replay line) and its variables.
struct simulation_test {
    const char* test_name;
    const char* seed_variable;       ///< set: replay that one schedule and print its trace
    const char* schedules_variable;  ///< how many schedules (default below)
    long default_schedules;
};

/// What run_schedules did: how many schedules passed, in how many seconds (none: one replayed).
struct schedules_run {
    long schedules = 0;
    double seconds = 0;
};

/// Runs the world's schedules: with the seed variable set, that one schedule, traced and checked;
/// else the schedules of the lock simulation's seed sequence (so that test/sim/mutate counts
/// schedules alike), failing at the first violation with the command that replays it. `tally`
/// sees each passing schedule's outcome.
template <typename Draw, typename Run, typename Describe, typename Tally>
std::optional<schedules_run> run_schedules(const simulation_test& t, Draw draw, Run run, Describe describe, Tally tally) {
    if (const auto seed = env_number(t.seed_variable)) {
        const auto s = draw(static_cast<std::uint64_t>(*seed));
        const auto o = run(s, true);
        std::cout << describe(s) << "\n";
        for (const auto& line : o.trace) std::cout << "  " << line << "\n";
        INFO(o.violation);
        CHECK(o.ok);
        return std::nullopt;
    }
    const long n = env_number(t.schedules_variable).value_or(t.default_schedules);
    const auto lane = lane_from_env();
    const auto start = std::chrono::steady_clock::now();
    long ran = 0;
    for (long i = lane.k; i < n; i += lane.m, ++ran) {
        const auto s = draw(1000003ULL * static_cast<std::uint64_t>(i) + 7);
        const auto o = run(s, false);
        if (!o.ok)
            FAIL(describe(s) + ": " + o.violation + "\n  replay: " + t.seed_variable + "=" + std::to_string(s.seed) + " zkr_unit_tests \"" +
                 t.test_name + "\"");
        tally(o);
    }
    return schedules_run{ran, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
}

}  // namespace zkr::test
