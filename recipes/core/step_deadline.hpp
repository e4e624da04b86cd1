// One deadline for the steps of a larger acquire (a multi-lock's members, a Curator-layout
// semaphore's inner mutex and leases): each step gets what is left of it, where Curator gives
// every step the whole timeout.
#pragma once

#include <algorithm>
#include <chrono>
#include <optional>

namespace zkr::detail {

class step_deadline {
public:
    using clock = std::chrono::steady_clock;
    /// nullopt: no deadline (every step waits for ever).
    explicit step_deadline(std::optional<std::chrono::milliseconds> timeout)
        : at_(timeout ? std::optional(clock::now() + *timeout) : std::nullopt) {}
    /// The next step's timeout: what is left, rounded up; zero once past (the step tries once).
    std::optional<std::chrono::milliseconds> left() const {
        if (!at_) return std::nullopt;
        return std::max(std::chrono::milliseconds(0), std::chrono::ceil<std::chrono::milliseconds>(*at_ - clock::now()));
    }

private:
    std::optional<clock::time_point> at_;
};

}  // namespace zkr::detail
