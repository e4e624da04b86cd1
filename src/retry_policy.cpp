#include <zkr/retry_policy.hpp>

#include <zkr/error.hpp>

#include <algorithm>
#include <random>

namespace zkr {
namespace {

constexpr int max_exponential_retries = 29;  // 2^30 overflows an int, as in Curator.

std::chrono::milliseconds checked_non_negative(std::chrono::milliseconds d, const char* what) {
    if (d.count() < 0)
        throw zkr::error(make_error_code(errc::invalid_argument), {},
                         std::string(what) + " must not be negative, got " + std::to_string(d.count()) + " ms");
    return d;
}

int checked_count(int n, const char* what) {
    if (n < 0)
        throw zkr::error(make_error_code(errc::invalid_argument), {},
                         std::string(what) + " must not be negative, got " + std::to_string(n));
    return n;
}

}  // namespace

exponential_backoff_retry::exponential_backoff_retry(std::chrono::milliseconds base_sleep, int max_retries,
                                                     std::chrono::milliseconds max_sleep)
    : base_(checked_non_negative(base_sleep, "base_sleep")),
      max_retries_(std::min(checked_count(max_retries, "max_retries"), max_exponential_retries)),
      max_sleep_(checked_non_negative(max_sleep, "max_sleep")) {}

std::optional<std::chrono::milliseconds> exponential_backoff_retry::next_sleep(const retry_context& ctx) const {
    if (ctx.retries_so_far >= max_retries_) return std::nullopt;
    thread_local std::mt19937_64 rng{std::random_device{}()};
    const int n = std::clamp(ctx.retries_so_far, 0, max_exponential_retries);
    std::uniform_int_distribution<std::int64_t> dist(0, (std::int64_t{1} << (n + 1)) - 1);
    const std::int64_t factor = std::max<std::int64_t>(1, dist(rng));
    // base * factor may overflow for huge bases; saturate before capping.
    const std::int64_t base = base_.count();
    const std::int64_t limit = std::numeric_limits<std::int64_t>::max() / factor;
    const std::chrono::milliseconds sleep{base > limit ? std::numeric_limits<std::int64_t>::max() : base * factor};
    return std::min(sleep, max_sleep_);
}

bounded_exponential_backoff_retry::bounded_exponential_backoff_retry(std::chrono::milliseconds base_sleep,
                                                                     std::chrono::milliseconds max_sleep,
                                                                     int max_retries)
    : exponential_backoff_retry(base_sleep, max_retries, max_sleep) {}

retry_n_times::retry_n_times(int n, std::chrono::milliseconds sleep_between)
    : n_(checked_count(n, "n")), sleep_(checked_non_negative(sleep_between, "sleep_between")) {}

std::optional<std::chrono::milliseconds> retry_n_times::next_sleep(const retry_context& ctx) const {
    if (ctx.retries_so_far >= n_) return std::nullopt;
    return sleep_;
}

retry_one_time::retry_one_time(std::chrono::milliseconds sleep_between) : retry_n_times(1, sleep_between) {}

retry_until_elapsed::retry_until_elapsed(std::chrono::milliseconds max_elapsed,
                                         std::chrono::milliseconds sleep_between)
    : max_elapsed_(checked_non_negative(max_elapsed, "max_elapsed")),
      sleep_(checked_non_negative(sleep_between, "sleep_between")) {}

std::optional<std::chrono::milliseconds> retry_until_elapsed::next_sleep(const retry_context& ctx) const {
    if (ctx.elapsed >= max_elapsed_) return std::nullopt;
    // Never sleep past the deadline.
    return std::min(sleep_, max_elapsed_ - ctx.elapsed);
}

retry_forever::retry_forever(std::chrono::milliseconds sleep_between)
    : sleep_(checked_non_negative(sleep_between, "sleep_between")) {}

std::optional<std::chrono::milliseconds> retry_forever::next_sleep(const retry_context&) const {
    return sleep_;
}

session_failed_retry_policy::session_failed_retry_policy(std::shared_ptr<const retry_policy> inner)
    : inner_(std::move(inner)) {
    if (!inner_) throw zkr::error(make_error_code(errc::invalid_argument), {}, "inner retry policy is null");
}

std::optional<std::chrono::milliseconds> session_failed_retry_policy::next_sleep(const retry_context& ctx) const {
    if (ctx.last_error == errc::session_expired) return std::nullopt;
    return inner_->next_sleep(ctx);
}

std::shared_ptr<const retry_policy> default_retry_policy() {
    static const auto policy = std::make_shared<const exponential_backoff_retry>(std::chrono::seconds(1), 3);
    return policy;
}

}  // namespace zkr
