// Retry policies: how often and after what sleep a failed ZooKeeper operation is tried again.
#pragma once

#include <boost/system/error_code.hpp>

#include <chrono>
#include <memory>
#include <optional>

namespace zkr {

/// What a policy is told about the failure it rules on.
struct retry_context {
    int retries_so_far = 0;                 ///< 0 before the first retry.
    std::chrono::milliseconds elapsed{0};   ///< Since the first attempt started.
    boost::system::error_code last_error;   ///< Always a retryable error (see is_retryable).
};

/// Decides whether a retryable failure is tried again, and after how long.
/// Policies are immutable and shared between operations and threads: next_sleep must be
/// thread-safe. The sleep happens on an Asio timer of the client, never on a ZooKeeper thread.
/// Derive from it to write your own.
class retry_policy {
public:
    virtual ~retry_policy() = default;
    /// The time to sleep before the next attempt, or nullopt to give up with the last error.
    virtual std::optional<std::chrono::milliseconds> next_sleep(const retry_context& ctx) const = 0;
};

/// Curator's ExponentialBackoffRetry: sleep = base * max(1, uniform random in [0, 2^(n+1))),
/// capped at max_sleep; at most max_retries retries (clamped to 29, as Curator does).
class exponential_backoff_retry : public retry_policy {
public:
    /// Throws zkr::error (invalid_argument) for a negative sleep or retry count.
    exponential_backoff_retry(std::chrono::milliseconds base_sleep, int max_retries,
                              std::chrono::milliseconds max_sleep = std::chrono::milliseconds::max());
    std::optional<std::chrono::milliseconds> next_sleep(const retry_context& ctx) const override;

    std::chrono::milliseconds base_sleep() const noexcept { return base_; }     ///< The base of the backoff.
    int max_retries() const noexcept { return max_retries_; }                    ///< After clamping to 29.
    std::chrono::milliseconds max_sleep() const noexcept { return max_sleep_; }  ///< The cap of one sleep.

private:
    std::chrono::milliseconds base_;
    int max_retries_;
    std::chrono::milliseconds max_sleep_;
};

/// Exponential backoff whose sleep never exceeds max_sleep (Curator's BoundedExponentialBackoffRetry).
class bounded_exponential_backoff_retry : public exponential_backoff_retry {
public:
    /// As exponential_backoff_retry's, with max_sleep required.
    bounded_exponential_backoff_retry(std::chrono::milliseconds base_sleep,
                                      std::chrono::milliseconds max_sleep, int max_retries);
};

/// At most n retries, each after the same sleep.
class retry_n_times : public retry_policy {
public:
    /// Throws zkr::error (invalid_argument) for a negative n or sleep.
    retry_n_times(int n, std::chrono::milliseconds sleep_between);
    std::optional<std::chrono::milliseconds> next_sleep(const retry_context& ctx) const override;

private:
    int n_;
    std::chrono::milliseconds sleep_;
};

/// One retry after the given sleep.
class retry_one_time : public retry_n_times {
public:
    /// Throws zkr::error (invalid_argument) for a negative sleep.
    explicit retry_one_time(std::chrono::milliseconds sleep_between);
};

/// Retries with a fixed sleep until max_elapsed has passed since the first attempt.
class retry_until_elapsed : public retry_policy {
public:
    /// Throws zkr::error (invalid_argument) for a negative time.
    retry_until_elapsed(std::chrono::milliseconds max_elapsed, std::chrono::milliseconds sleep_between);
    std::optional<std::chrono::milliseconds> next_sleep(const retry_context& ctx) const override;

private:
    std::chrono::milliseconds max_elapsed_;
    std::chrono::milliseconds sleep_;
};

/// Retries forever with a fixed sleep. Operations then end only by success, a non-retryable
/// error, or close().
class retry_forever : public retry_policy {
public:
    /// Throws zkr::error (invalid_argument) for a negative sleep.
    explicit retry_forever(std::chrono::milliseconds sleep_between);
    std::optional<std::chrono::milliseconds> next_sleep(const retry_context& ctx) const override;

private:
    std::chrono::milliseconds sleep_;
};

/// Wraps another policy and never retries an expired session (Curator's SessionFailedRetryPolicy).
class session_failed_retry_policy : public retry_policy {
public:
    /// inner decides every other failure; throws zkr::error (invalid_argument) when it is null.
    explicit session_failed_retry_policy(std::shared_ptr<const retry_policy> inner);
    std::optional<std::chrono::milliseconds> next_sleep(const retry_context& ctx) const override;

private:
    std::shared_ptr<const retry_policy> inner_;
};

/// The default: exponential backoff, 1 s base, 3 retries.
std::shared_ptr<const retry_policy> default_retry_policy();

}  // namespace zkr
