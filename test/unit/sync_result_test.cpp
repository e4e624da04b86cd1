// The hand-over of a result to a blocked caller: spin first, then sleep; never spin through a long
// wait. CPU time of the waiting thread tells spinning from sleeping.
#include "sync_result.hpp"

#include "zkr_catch.hpp"

#include <ctime>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using zkr::detail::sync_result;

namespace {

std::chrono::microseconds thread_cpu_time() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return std::chrono::seconds(ts.tv_sec) + std::chrono::microseconds(ts.tv_nsec / 1000);
}

// Waits on r with the given spin on a new thread; returns (value, CPU time the waiter used).
std::future<std::pair<std::string, std::chrono::microseconds>> wait_on(sync_result<std::string>& r,
                                                                       std::chrono::microseconds spin) {
    return std::async(std::launch::async, [&r, spin] {
        const auto before = thread_cpu_time();
        auto v = r.get(spin);
        return std::pair{std::move(v), thread_cpu_time() - before};
    });
}

// Waits until the waiter is in the given phase (a loaded machine may start its thread late, so a
// fixed sleep would guess); false after 10 s.
bool reaches(const sync_result<std::string>& r, sync_result<std::string>::waiting phase) {
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (r.phase() != phase)
        if (std::chrono::steady_clock::now() > until) return false;
        else std::this_thread::sleep_for(100us);
    return true;
}

}  // namespace

TEST_CASE("sync_result: a value set before get() is returned at once, spinning or not") {
    for (auto spin : {0us, 500us}) {
        sync_result<std::string> r;
        r.set("early");
        CHECK(r.get(spin) == "early");
    }
}

TEST_CASE("sync_result: a value set by another thread reaches a sleeping and a spinning waiter") {
    for (auto spin : {0us, 10'000us}) {
        sync_result<std::string> r;
        auto f = wait_on(r, spin);
        std::this_thread::sleep_for(2ms);
        r.set("late");
        CHECK(f.get().first == "late");
    }
}

TEST_CASE("sync_result: a long wait spins only for the spin time, then sleeps") {
    sync_result<std::string> r;
    auto f = wait_on(r, 5'000us);
    std::this_thread::sleep_for(300ms);
    r.set("done");
    const auto [v, cpu] = f.get();
    CHECK(v == "done");
    // Spinning the whole 300 ms would cost about that much CPU; 5 ms of spinning costs at most 5 ms.
    CHECK(cpu < 100ms);
}

TEST_CASE("sync_result: stop_spinning() ends the spin of a waiter that will wait long") {
    sync_result<std::string> r;
    auto f = wait_on(r, 30'000us);
    r.stop_spinning();
    std::this_thread::sleep_for(60ms);
    r.set("y");
    const auto [v, cpu] = f.get();
    CHECK(v == "y");
    CHECK(cpu < 5ms);  // spinning on would have cost up to 30 ms
}

TEST_CASE("sync_result: while enough callers of the process wait, a new waiter sleeps at once") {
    const int limit = zkr::detail::spinning_callers_limit();
    std::vector<sync_result<std::string>> first(static_cast<std::size_t>(limit));
    std::vector<std::future<std::pair<std::string, std::chrono::microseconds>>> waiting;
    for (auto& r : first) waiting.push_back(wait_on(r, 60'000us));
    for (auto& r : first) REQUIRE(reaches(r, sync_result<std::string>::waiting::spinning));
    sync_result<std::string> late;
    auto f = wait_on(late, 60'000us);
    std::this_thread::sleep_for(40ms);
    late.set("late");
    for (auto& r : first) r.set("first");
    const auto [v, cpu] = f.get();
    CHECK(v == "late");
    CHECK(cpu < 5ms);  // had it spun, about 40 ms
    for (auto& w : waiting) CHECK(w.get().first == "first");
}

TEST_CASE("sync_result: handing a result to a spinning waiter tells the setting thread to expect a follow-up") {
    using zkr::detail::follow_up_expected;
    // Spinning: the waiter is awake and will most likely send again at once.
    {
        follow_up_expected = false;
        sync_result<std::string> r;
        auto f = wait_on(r, 10'000'000us);
        // No other caller of this process waits, so it spins.
        REQUIRE(reaches(r, sync_result<std::string>::waiting::spinning));
        r.set("a");
        CHECK(follow_up_expected);
        CHECK(f.get().first == "a");
    }
    // Sleeping (spin 0, or a spin that ended): nothing to expect soon.
    for (auto spin : {0us, 5'000us}) {
        follow_up_expected = false;
        sync_result<std::string> r;
        auto f = wait_on(r, spin);
        REQUIRE(reaches(r, sync_result<std::string>::waiting::asleep));
        std::this_thread::sleep_for(1ms);  // from the phase's store into the wait itself
        r.set("b");
        CHECK_FALSE(follow_up_expected);
        CHECK(f.get().first == "b");
    }
}

TEST_CASE("sync_result: the cores a caller may spin on are those of its affinity mask, not the machine's") {
    cpu_set_t all;
    CPU_ZERO(&all);
    REQUIRE(sched_getaffinity(0, sizeof all, &all) == 0);
    CHECK(zkr::detail::cores_allowed() == CPU_COUNT(&all));
    int first = 0;
    while (!CPU_ISSET(first, &all)) ++first;
    // On a thread of its own, so that this test's mask is left alone.
    const int seen = std::async(std::launch::async, [first] {
                         cpu_set_t one;
                         CPU_ZERO(&one);
                         CPU_SET(first, &one);
                         if (sched_setaffinity(0, sizeof one, &one) != 0) return -1;
                         return zkr::detail::cores_allowed();
                     }).get();
    CHECK(seen == 1);
}

// The futex's hand-over: set() may come before the caller looks, while it spins, between its
// claim of the word and its sleep, or while it sleeps. A lost wake-up hangs this test (ctest's
// timeout fails it); a value from the wrong round fails the check. One object for every round,
// reset between them, as a thread's blocking calls use theirs; the setter thread is not joined
// before the next round begins, so a late wake-up meets the next wait.
TEST_CASE("sync_result: no hand-over is lost, whichever of set() and the caller's sleep comes first") {
    sync_result<int> r;
    std::thread previous;
    for (int i = 0; i < 3000; ++i) {
        r.reset();
        std::thread setter([&r, i] {
            if (i % 3 == 1) std::this_thread::yield();
            if (i % 3 == 2) std::this_thread::sleep_for(50us);
            r.set(i);
        });
        const int got = r.get(i % 2 == 0 ? 0us : 20us);
        if (previous.joinable()) previous.join();
        previous = std::move(setter);
        if (got != i) FAIL("round " << i << " got " << got);
    }
    previous.join();
    SUCCEED("3000 hand-overs");
}
