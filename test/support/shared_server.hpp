// One standalone server shared by the tests of a binary that do not inject faults, and a unique
// namespace per test so they cannot see each other's nodes.
#pragma once

#include "zk_cluster.hpp"

#include <atomic>
#include <string>

namespace zkr::test {

inline zk_cluster& shared_server() {
    static zk_cluster cluster;
    return cluster;
}

inline std::string unique_namespace(const std::string& base) {
    static std::atomic<int> counter{0};
    return "t-" + base + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

/// Threads of this process (from /proc/self/task).
int thread_count();

}  // namespace zkr::test
