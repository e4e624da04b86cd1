// The lock state machine run through many seeded schedules on the simulated ZooKeeper.
//   ZKR_SIM_SEED=<n>       replay one schedule and print its trace
//   ZKR_SIM_SCHEDULES=<n>  how many schedules the main test runs (a soak: set it high)
#include "sim_env.hpp"
#include "../sim/lock_sim.hpp"

#include "zkr_catch.hpp"

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <string>

namespace {

using namespace zkr;
using namespace zkr::sim;

#if defined(ZKR_SANITIZED_BUILD)
constexpr long default_schedules = 5000;  // the sanitizers run the same code ten to twenty times slower
#else
constexpr long default_schedules = 100000;
#endif

using zkr::test::env_number;
using zkr::test::lane_from_env;

std::string describe(const schedule& s) {
    return "seed " + std::to_string(s.seed) + ": " + std::string(to_string(s.kind)) + ", " + std::to_string(s.clients) +
           " clients, max " + std::to_string(s.max_holders) + ", " + std::to_string(s.attempts) + " attempts each, " +
           std::to_string(s.faults) + " faults";
}

// Which schedules a test runs: how it draws one from a seed, the variable that replays one, and
// the lock caches' decisions (for cached_mutex schedules; empty: the shipped ones).
struct schedule_set {
    schedule (*draw)(std::uint64_t) = draw_schedule;
    const char* seed_variable = "ZKR_SIM_SEED";
    cache_factory caches;
};
const schedule_set every_recipe;
const schedule_set cached_mutexes{draw_cached_schedule, "ZKR_CACHE_SIM_SEED"};

// The replay of a failed schedule, with its last steps.
std::string replay(const schedule& s, const machine_factory& machines, const char* test, const schedule_set& set = every_recipe) {
    const auto o = run(s, machines, /*traced=*/true, set.caches);
    std::string text = describe(s) + "\n  " + o.violation + "\n  last steps:\n";
    for (const auto& line : o.trace) text += "    " + line + "\n";
    text += "  replay: " + std::string(set.seed_variable) + "=" + std::to_string(s.seed) + " zkr_unit_tests \"" + test + "\"\n";
    return text;
}

// The one schedule the set's seed variable names, run and printed with its trace: true when one
// was named (the test then checks it alone).
bool replayed_named_seed(const schedule_set& set, const machine_factory& machines) {
    const auto seed = env_number(set.seed_variable);
    if (!seed) return false;
    const auto s = set.draw(static_cast<std::uint64_t>(*seed));
    const auto o = run(s, machines, true, set.caches);
    std::cout << describe(s) << "\n";
    for (const auto& line : o.trace) std::cout << "  " << line << "\n";
    INFO(o.violation);
    CHECK(o.ok);
    return true;
}

struct hunt {
    std::optional<schedule> found;
    long schedules = 0;
};

// Runs schedules from seed 1 up until one fails, or `budget` passed.
hunt hunt_violation(const machine_factory& machines, long budget, const schedule_set& set) {
    hunt h;
    for (std::uint64_t seed = 1; h.schedules < budget; ++seed) {
        ++h.schedules;
        const auto s = set.draw(seed);
        if (!run(s, machines, false, set.caches).ok) {
            h.found = s;
            break;
        }
    }
    return h;
}

// ---- planted faults: each is a wrong choice at one of lock_rules' points ----------------------
struct grants_without_owner_check : detail::lock_rules {
    static bool owns(std::int64_t, std::int64_t) { return true; }
};
struct decides_from_stale_view : detail::lock_rules {
    // Takes any node's departure for the departure of everyone ahead of it.
    static void forget(detail::queue_view& view, const std::string& gone) {
        while (view.ahead() > 0 && view.nodes().front() != gone) view.remove(std::string(view.nodes().front()));
        view.remove(gone);
    }
};
struct forgets_pending_delete : detail::lock_rules {
    static constexpr bool keep_pending_delete = false;
};
struct keeps_strays : detail::lock_rules {
    static constexpr bool delete_strays = false;
};

constexpr long planted_budget = 20000;

void expect_found(const char* fault, const machine_factory& machines, const schedule_set& set = every_recipe) {
    const auto start = std::chrono::steady_clock::now();
    const auto h = hunt_violation(machines, planted_budget, set);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
    INFO(fault << ": " << h.schedules << " schedules in " << ms << " ms");
    REQUIRE(h.found);
    std::cout << fault << ": found after " << h.schedules << " schedules (" << ms << " ms)\n"
              << replay(*h.found, machines, "(the planted fault's test; it prints this trace)", set);
}

}  // namespace

TEST_CASE("lock simulation: random schedules keep every guarantee") {
    const auto machines = shipped_machines();
    if (replayed_named_seed(every_recipe, machines)) return;
    const long total = env_number("ZKR_SIM_SCHEDULES").value_or(default_schedules);
    const auto lane = lane_from_env();
    const auto start = std::chrono::steady_clock::now();
    long count = 0, grants = 0, faults = 0, steps = 0;  // (count: the schedules this lane ran)
    std::map<std::string, long> by_kind;
    for (long i = lane.k; i < total; i += lane.m, ++count) {
        // Seeds far from the planted-fault hunts' 1, 2, 3...: a different set of schedules.
        const auto s = draw_schedule(1000003ULL * static_cast<std::uint64_t>(i) + 7);
        const auto o = run(s, machines);
        if (!o.ok) FAIL(replay(s, machines, "lock simulation: random schedules keep every guarantee"));
        grants += o.grants;
        for (const auto& [kind, n] : o.by_kind) by_kind[kind] += n;
        faults += o.faults;
        steps += o.steps;
    }
    const auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << count << " schedules in " << secs << " s (" << static_cast<long>(count / secs) << "/s): " << grants
              << " grants, " << faults << " faults, " << steps << " steps\n  faults that took effect:";
    for (const auto& [kind, n] : by_kind) std::cout << " " << kind << " " << n << ";";
    std::cout << "\n";
    CHECK(grants > count);  // the schedules do hold: most attempts are granted
    CHECK(faults > count);  // and faults were injected
}

TEST_CASE("lock simulation finds a grant without the session-owner check (CURATOR-604)") {
    expect_found("no owner check", machines_with<grants_without_owner_check>());
}

TEST_CASE("lock simulation finds a waiter that decides from a stale view") {
    expect_found("stale view", machines_with<decides_from_stale_view>());
}

TEST_CASE("lock simulation finds a release that forgets its pending delete") {
    expect_found("forgotten delete", machines_with<forgets_pending_delete>());
}

// Only a node the servers put back after losing its delete needs the waiter: every other stray
// the world makes is also removed by the connection's clean-up of protected creates.
TEST_CASE("lock simulation finds a waiter that keeps waiting behind a stray of its own session") {
    expect_found("kept stray", machines_with<keeps_strays>());
}

// ---- lock caching (mutex_options::cache_hold): cached_mutex schedules --------------------------
namespace {

#if defined(ZKR_SANITIZED_BUILD)
constexpr long default_cached_schedules = 2000;
#else
constexpr long default_cached_schedules = 20000;
#endif

// The cached_mutex schedules with a planted fault in the caches' decisions.
template <typename Decisions>
schedule_set cached_mutexes_with() {
    auto set = cached_mutexes;
    set.caches = [] { return std::make_unique<Decisions>(); };
    return set;
}

// Planted faults: each a wrong choice of the cache's decisions.
struct ignores_its_watch : cache_decisions {  // a waiter queued, and the cacher keeps its node
    action changed() override { return action::none; }
};
struct keeps_without_listing : cache_decisions {  // keeps at once, with no watch to hear a waiter by
    action released(bool fresh, bool lent_one) override {
        const auto a = m_.released(fresh, lent_one);
        if (a != action::list) return a;
        m_.listed(true);
        return action::none;
    }
};
struct lends_a_doubtful_hold : cache_decisions {  // lends whatever its hold reads
    action acquire(bool) override { return m_.acquire(true); }
};

}  // namespace

TEST_CASE("lock simulation: lock caching keeps every guarantee") {
    const auto machines = shipped_machines();
    if (replayed_named_seed(cached_mutexes, machines)) return;
    const long total = env_number("ZKR_CACHE_SIM_SCHEDULES").value_or(default_cached_schedules);
    const auto lane = lane_from_env();
    const auto start = std::chrono::steady_clock::now();
    long count = 0, grants = 0, cached = 0, faults = 0, steps = 0;  // (count: the schedules this lane ran)
    for (long i = lane.k; i < total; i += lane.m, ++count) {
        const auto s = draw_cached_schedule(1000003ULL * static_cast<std::uint64_t>(i) + 7);
        const auto o = run(s, machines);
        if (!o.ok) FAIL(replay(s, machines, "lock simulation: lock caching keeps every guarantee", cached_mutexes));
        grants += o.grants;
        cached += o.cache_grants;
        faults += o.faults;
        steps += o.steps;
    }
    const auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << count << " cached_mutex schedules in " << secs << " s: " << grants << " grants (" << cached
              << " taken back from a cache with no request), " << faults << " faults, " << steps << " steps\n";
    CHECK(cached > count / 2);   // the caches do lend
    CHECK(grants - cached > count);  // and hand over to other clients
    CHECK(faults > count);
}

TEST_CASE("lock simulation finds a lock cache that ignores its watch (a waiter behind a kept node)") {
    expect_found("ignores its watch", shipped_machines(), cached_mutexes_with<ignores_its_watch>());
}

TEST_CASE("lock simulation finds a lock cache that keeps a node without a watch") {
    expect_found("keeps without listing", shipped_machines(), cached_mutexes_with<keeps_without_listing>());
}

TEST_CASE("lock simulation finds a lock cache that lends a hold that does not read held") {
    expect_found("lends a doubtful hold", shipped_machines(), cached_mutexes_with<lends_a_doubtful_hold>());
}
