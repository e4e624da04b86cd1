#include "listener_registry.hpp"

#include <zkr/detail/unique_function.hpp>

#include "zkr_catch.hpp"

#include <cstdint>
#include <memory>
#include <vector>

// The connection's observers: unique_functions (an engine's weak pointer stays inside one), called
// through their entries on the network thread.
using observers = zkr::detail::listener_registry<zkr::detail::unique_function<void(int)>>;

TEST_CASE("listener registry: call_each calls the listeners in the order added, and none removed") {
    observers r;
    std::vector<int> calls;
    const auto first = r.add([&](int v) { calls.push_back(v * 10 + 1); });
    r.add([&](int v) { calls.push_back(v * 10 + 2); });
    r.call_each(1);
    CHECK(calls == std::vector<int>{11, 12});
    r.remove(first);
    r.call_each(2);
    CHECK(calls == std::vector<int>{11, 12, 22});
}

TEST_CASE("listener registry: a listener removed by one called before it in the same round is not called") {
    observers r;
    std::vector<int> calls;
    std::uint64_t second = 0;
    r.add([&](int) {
        calls.push_back(1);
        r.remove(second);  // (also added during the round: no deadlock, and not called in it)
        r.add([&](int) { calls.push_back(3); });
    });
    second = r.add([&](int) { calls.push_back(2); });
    r.call_each(0);
    CHECK(calls == std::vector<int>{1});
    r.call_each(0);  // the one added in the first round is called from the next one on
    CHECK(calls == std::vector<int>{1, 1, 3});
}

TEST_CASE("listener registry: take_each calls every listener once, last, and leaves none") {
    observers r;
    std::vector<int> calls;
    auto kept = std::make_shared<int>(7);  // a move-only callable's state lives in its entry
    r.add([&, kept](int v) { calls.push_back(v + *kept); });
    r.add([&](int v) { calls.push_back(v); });
    r.take_each(100);
    CHECK(calls == std::vector<int>{107, 100});
    CHECK(r.empty());
    CHECK(kept.use_count() == 1);  // the entry went with the take
    r.call_each(1);
    CHECK(calls.size() == 2);
}
