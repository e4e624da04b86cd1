// The decisions of a service provider, as values: which instance to give out (round robin,
// random, sticky) and which instances are down after errors (Curator's DownInstancePolicy). No
// clock, no randomness of its own: the caller passes the time and the random draw.
#pragma once

#include <zkr/service_instance.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace zkr::detail {

/// Instances hidden after errors: one with `threshold` errors noted within `timeout` of its first
/// is down until then; its record goes `timeout` after the first error (Curator's defaults: 2 in
/// 30 s).
class down_instances {
  public:
    using clock_time = std::chrono::steady_clock::time_point;
    down_instances(int threshold = 2, std::chrono::milliseconds timeout = std::chrono::seconds(30))
        : threshold_(threshold), timeout_(timeout) {}
    void note_error(const std::string& id, clock_time now);
    bool is_down(const std::string& id, clock_time now);

  private:
    struct record {
        clock_time first;
        int errors = 0;
    };
    void purge(clock_time now);
    int threshold_;
    std::chrono::milliseconds timeout_;
    std::map<std::string, record> records_;
};

enum class choice_strategy { round_robin, random, sticky };

/// The strategy's memory between two choices.
struct choice_state {
    std::uint64_t next = 0;            ///< round robin's (and sticky's) turn
    std::optional<std::string> stuck;  ///< sticky's instance id, while it is offered
};

/// The index into `usable` to give out, or nullopt when it is empty. draw: a random number, used by
/// the random strategy only.
std::optional<std::size_t> choose(choice_strategy strategy, choice_state& state,
                                  const std::vector<const service_instance*>& usable, std::uint64_t draw);

}  // namespace zkr::detail
