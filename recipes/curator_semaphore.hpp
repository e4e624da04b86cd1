// Curator's semaphore layout (semaphore_layout::curator): InterProcessSemaphoreV2's nodes, so that
// zkr and Curator processes share one semaphore. An inner mutex at <path>/locks admits one
// acquirer at a time; it makes its lease nodes at <path>/leases, waits until they hold, and lets
// the inner mutex go. A composition of two drivers (each running the one lock machine), not a new
// driver: the mutex is zkr's mutex, the leases a rule.
#pragma once

#include "lock_driver.hpp"
#include "lock_rule.hpp"

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

/// The leases of Curator's layout: one node per lease, "_c_<uuid>-lease-<seq>". A node holds when
/// fewer than max nodes are ahead of it. Curator's own waiter holds when the folder has at most
/// max children. The two agree while leases are made only under the inner mutex (ours is then the
/// newest node), and the positional rule stays safe when that fails (a session lost while waiting
/// queues again without the mutex): no node holds with max nodes ahead of it, nodes are never
/// made ahead of existing ones, so at most max hold at any time, zkr's and Curator's together.
/// A waiter that does not hold watches every node ahead of it, since any release may be its turn.
/// That is no herd: the inner mutex's holder is the one waiter.
class curator_lease_rule final : public lock_rule {
public:
    explicit curator_lease_rule(std::function<std::int64_t()> max_leases) : max_(std::move(max_leases)) {}
    std::string_view kind() const override { return "semaphore"; }
    std::string node_name() const override { return std::string(semaphore_lock_name); }
    lock_queue queue(const std::vector<std::string>& children) const override;
    /// Nobody awaits a grant: every waiter watches the nodes ahead of it (and Curator's watch the
    /// folder), so a granted node never touches itself.
    bool grants_awaited() const override { return false; }
    std::size_t holders(const std::vector<std::string>& sorted) const override;

private:
    lock_decision do_decide(const std::vector<std::string>& sorted, std::size_t ours, const decision_context&) const override;
    std::size_t max() const;
    std::function<std::int64_t()> max_;
};

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
