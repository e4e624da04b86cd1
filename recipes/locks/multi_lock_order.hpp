// The order in which a multi-lock takes its members. Pure; the simulation composes its multi-locks
// with this same function (test/sim/lock_sim.cpp).
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace zkr::detail {

/// Sorts `members` by path (`path_of(member)`), whatever order they were listed in, and returns a
/// path listed twice, if any. One global order is what rules out a deadlock between processes
/// that lock overlapping sets: each waits only for paths after every path it holds, so no two
/// wait for each other. (Curator's InterProcessMultiLock takes list order, and can deadlock.)
template <typename T, typename PathOf>
std::optional<std::string> order_by_path(std::vector<T>& members, PathOf path_of) {
    std::stable_sort(members.begin(), members.end(), [&](const T& a, const T& b) { return path_of(a) < path_of(b); });
    const auto same = std::adjacent_find(members.begin(), members.end(), [&](const T& a, const T& b) { return path_of(a) == path_of(b); });
    if (same == members.end()) return std::nullopt;
    return std::string(path_of(*same));
}

}  // namespace zkr::detail
