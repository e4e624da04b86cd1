// The tests' servers are zkr::testing's (include/zkr/testing.hpp), under the names the tests use;
// what the tests add: client options for tests and a recorder of connection states.
#pragma once

#include <zkr/client.hpp>
#include <zkr/testing.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace zkr::test {

using zk_cluster = zkr::testing::cluster;
using zkr::testing::cluster_options;
using zkr::testing::eventually;
using zkr::testing::expire_session;
using zkr::testing::free_loopback_port;
using zkr::testing::send_four_letter;

/// How late a thread may run on this machine, for bounds on how long a call takes: "at once" is a
/// scheduling delay, never a timeout. Under a sanitizer, on two cores shared with the fault runs, a
/// thread waits for its turn up to a few hundred ms (CI saw 375 ms for an answer hopping threads).
#ifdef ZKR_SANITIZED_BUILD
inline constexpr std::chrono::milliseconds scheduling_slack{1500};
#else
inline constexpr std::chrono::milliseconds scheduling_slack{100};
#endif

/// Client options for tests: short timeouts, a logger writing warnings to stderr (ZKR_TEST_LOG=debug
/// for more), and a fast retry policy.
client_options test_options(const std::string& connect_string, std::chrono::milliseconds session_timeout = std::chrono::seconds(4));

/// Records the states a client reports, for assertions on their order.
class state_recorder {
public:
    explicit state_recorder(zkr::client& c);
    std::vector<connection_state> states() const;
    bool wait_for(connection_state s, std::chrono::milliseconds timeout = std::chrono::seconds(20)) const;
    /// Waits for s to be reported at least n times in all.
    bool wait_count(connection_state s, int n, std::chrono::milliseconds timeout = std::chrono::seconds(20)) const;
    void clear();

private:
    struct shared;
    std::shared_ptr<shared> shared_;
    state_subscription subscription_;
};

}  // namespace zkr::test
