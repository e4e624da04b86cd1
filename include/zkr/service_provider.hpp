/// @file
/// zkr::service_provider: one instance of a service at a time, chosen by a strategy
/// (curator-x-discovery's ServiceProvider).
#pragma once

#include <zkr/service_cache.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace zkr {

/// How a provider chooses among the usable instances.
enum class provider_strategy {
    round_robin,  ///< each in turn (Curator's default)
    random,       ///< one at random each time
    sticky,       ///< the same one while it stays usable, then the next in turn
};

/// Curator's DownInstancePolicy: an instance with `error_threshold` errors noted (note_error)
/// within `timeout` of its first is left out until that time has passed.
struct down_instance_policy {
    int error_threshold = 2;  ///< errors that leave an instance out (at least 1)
    std::chrono::milliseconds timeout = std::chrono::seconds(30);  ///< how long after its first error
};

/**
 * Gives out one instance of a service at a time from a service_cache (no request per call):
 * among the enabled instances not marked down by note_error, chosen by the strategy.
 * Connection loss and session expiry: as service_cache (it gives out what was last read).
 * Thread safety: every member may be called from any thread.
 */
class service_provider {
  public:
    /// Checks the arguments (zkr::error, nothing sent), as service_cache.
    service_provider(client& c, const std::string& base_path, const std::string& name,
                     provider_strategy strategy = provider_strategy::round_robin,
                     down_instance_policy policy = {});
    ~service_provider();
    service_provider(const service_provider&) = delete;
    service_provider& operator=(const service_provider&) = delete;

    /// Begins reading the instances (service_cache::start).
    void start() { cache_.start(); }
    /// Stops reading (never throws).
    void close() noexcept { cache_.close(); }
    /// service_cache::wait_initialized.
    bool wait_initialized(std::chrono::milliseconds timeout) const {
        return cache_.wait_initialized(timeout);
    }
    /// An instance to use, or nullopt when none is usable.
    std::optional<service_instance> get_instance();
    /// Every usable instance.
    std::vector<service_instance> get_all_instances();
    /// The instance failed for the caller: counts toward leaving it out (down_instance_policy).
    void note_error(const service_instance& instance);
    /// The instances it reads from.
    const service_cache& cache() const noexcept { return cache_; }

  private:
    struct state;
    service_cache cache_;
    provider_strategy strategy_;
    std::unique_ptr<state> state_;
};

}  // namespace zkr
