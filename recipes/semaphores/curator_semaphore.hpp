// Curator's semaphore layout (semaphore_layout::curator): InterProcessSemaphoreV2's nodes, so that
// zkr and Curator processes share one semaphore. An inner mutex at <path>/locks admits one
// acquirer at a time; it makes its lease nodes at <path>/leases, waits until they hold, and lets
// the inner mutex go. A composition of two drivers (each running the one lock machine), not a new
// driver: the mutex is zkr's mutex, the leases a rule (curator_lease_rule, lock_rule.hpp).
#pragma once

#include "../queue/lock_driver.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace zkr::detail {

/// The folders of the layout under a semaphore's path.
inline constexpr std::string_view curator_locks_folder = "locks";
using zkr::curator_leases_folder;

using gated_acquire_handler = unique_function<void(const boost::system::error_code&, std::vector<std::shared_ptr<hold>>)>;

/// Acquires qty leases in Curator's layout: the inner mutex (gate) first, then the lease nodes one
/// at a time while it is held, then the mutex is released (its delete is not waited for). One
/// deadline covers every step. All or nothing: on a failure or the timeout, the leases taken are
/// returned. Holding the mutex through all qty leases (Curator lets it go between them) means two
/// zkr acquires of several leases never deadlock. done runs once, on the network thread (or
/// inside this call for a closed or unstarted client), with the holds, attach(h) done on each; no
/// holds and no error: the timeout passed.
void acquire_gated(std::shared_ptr<lock_driver> gate, std::shared_ptr<lock_driver> leases, std::int32_t qty,
                   std::optional<std::chrono::milliseconds> timeout, std::string data,
                   std::function<void(const std::shared_ptr<hold>&)> attach, gated_acquire_handler done);

}  // namespace zkr::detail
