// What the simulations' tests read from the environment (ZKR_SIM_SCHEDULES, ZKR_SIM_SEED, ...).
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace zkr::test {

/// The variable as a number; nullopt when unset or empty.
inline std::optional<long> env_number(const char* name) {
    if (const char* v = std::getenv(name); v && *v) return std::stol(v);
    return std::nullopt;
}

}  // namespace zkr::test
