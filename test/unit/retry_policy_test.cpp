#include <zkr/error.hpp>
#include <zkr/retry_policy.hpp>

#include "zkr_catch.hpp"

using namespace std::chrono_literals;
using ms = std::chrono::milliseconds;

namespace {
zkr::retry_context ctx(int n, ms elapsed = 0ms, zkr::errc e = zkr::errc::connection_loss) {
    return {n, elapsed, make_error_code(e)};
}
}  // namespace

TEST_CASE("exponential backoff stays within Curator's bounds") {
    zkr::exponential_backoff_retry p(10ms, 5);
    for (int n = 0; n < 5; ++n) {
        ms lo = ms::max(), hi = 0ms;
        for (int i = 0; i < 2000; ++i) {
            auto s = p.next_sleep(ctx(n));
            REQUIRE(s);
            lo = std::min(lo, *s);
            hi = std::max(hi, *s);
        }
        CHECK(lo == 10ms);                           // max(1, r) * base
        CHECK(hi <= 10ms * ((1 << (n + 1)) - 1));     // r < 2^(n+1)
        if (n >= 2) CHECK(hi > 10ms * (1 << n) / 2);  // the range is really used
    }
    CHECK_FALSE(p.next_sleep(ctx(5)));
}

TEST_CASE("max_sleep caps the backoff, and retries are clamped to 29") {
    zkr::exponential_backoff_retry p(1000ms, 100, 1500ms);
    CHECK(p.max_retries() == 29);
    for (int i = 0; i < 500; ++i) CHECK(*p.next_sleep(ctx(20)) <= 1500ms);
    zkr::bounded_exponential_backoff_retry b(10ms, 40ms, 10);
    for (int i = 0; i < 500; ++i) CHECK(*b.next_sleep(ctx(9)) <= 40ms);
    CHECK_FALSE(b.next_sleep(ctx(10)));
}

TEST_CASE("fixed policies") {
    zkr::retry_n_times n(3, 7ms);
    CHECK(*n.next_sleep(ctx(0)) == 7ms);
    CHECK(*n.next_sleep(ctx(2)) == 7ms);
    CHECK_FALSE(n.next_sleep(ctx(3)));
    zkr::retry_one_time one(5ms);
    CHECK(*one.next_sleep(ctx(0)) == 5ms);
    CHECK_FALSE(one.next_sleep(ctx(1)));
    zkr::retry_until_elapsed until(100ms, 30ms);
    CHECK(*until.next_sleep(ctx(0, 0ms)) == 30ms);
    CHECK(*until.next_sleep(ctx(9, 90ms)) == 10ms);  // never sleeps past the deadline
    CHECK_FALSE(until.next_sleep(ctx(10, 100ms)));
    zkr::retry_forever forever(3ms);
    CHECK(*forever.next_sleep(ctx(1'000'000)) == 3ms);
}

TEST_CASE("session_failed_retry_policy never retries an expired session") {
    zkr::session_failed_retry_policy p(std::make_shared<zkr::retry_n_times>(3, 1ms));
    CHECK(p.next_sleep(ctx(0, 0ms, zkr::errc::connection_loss)));
    CHECK_FALSE(p.next_sleep(ctx(0, 0ms, zkr::errc::session_expired)));
}

TEST_CASE("policies reject bad arguments clearly") {
    CHECK_THROWS_WITH(zkr::exponential_backoff_retry(-1ms, 3), zkr::test::contains("base_sleep must not be negative"));
    CHECK_THROWS_WITH(zkr::retry_n_times(-1, 1ms), zkr::test::contains("n must not be negative"));
    CHECK_THROWS_AS(zkr::session_failed_retry_policy(nullptr), zkr::error);
}

TEST_CASE("a user policy derives from retry_policy") {
    struct twice_then_stop : zkr::retry_policy {
        std::optional<ms> next_sleep(const zkr::retry_context& c) const override {
            return c.retries_so_far < 2 ? std::optional<ms>(1ms) : std::nullopt;
        }
    } p;
    const zkr::retry_policy& base = p;
    CHECK(base.next_sleep(ctx(1)));
    CHECK_FALSE(base.next_sleep(ctx(2)));
}

TEST_CASE("the default policy is exponential backoff, 1 s base, 3 retries") {
    auto p = std::dynamic_pointer_cast<const zkr::exponential_backoff_retry>(zkr::default_retry_policy());
    REQUIRE(p);
    CHECK(p->base_sleep() == 1000ms);
    CHECK(p->max_retries() == 3);
}
