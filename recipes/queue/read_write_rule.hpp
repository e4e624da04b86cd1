// The read-write lock's rule: two lock_rules (a reader's, a writer's) on one queue.
//
// Node names and order are Curator's InterProcessReadWriteLock:
// "_c_<uuid>-__READ__<seq>" and "_c_<uuid>-__WRIT__<seq>" under one path, one queue by sequence.
// - A writer holds at the head of the queue, and waits on the node just ahead of it (a reader or
//   a writer: it needs every node ahead gone).
// - A reader holds while no writer is ahead of it, and waits on the last writer ahead of it (when
//   that one goes, every writer ahead of it has gone or holds: it held, so nothing was ahead of
//   it). Readers that come after a waiting writer wait behind it, so writers never starve.
// - The downgrade: a writer that the reader's owner holds does not count (decision_context). Its
//   read node takes the writer's sequence (a plain ephemeral create, as Curator 5.5 does), so that
//   when the writer goes the reader heads the queue and no waiting writer passes it. Such a node
//   may hold only while its writer is still listed: had the writer gone first (its session lost),
//   a writer behind it may hold already, and the read node sorts ahead of it (lock_lost).
// - A node can thus join the queue ahead of waiters while a writer holds: a waiting writer decides
//   a writer's departure only on a fresh listing (joins_ahead_of), and no release passes the lock
//   on by a data change (so a foreign write, such as Curator's revocation request, fools no waiter
//   either). A waiting reader decides without one: only read nodes ever join ahead, and a reader
//   shares with them (a listing per reader behind every writer was a quarter of W8's requests).
// - Nobody awaits a grant: every waiter needs a node gone, never a node granted.
#pragma once

#include "lock_rule.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace zkr {

bool is_read_write_writer(std::string_view node);
bool is_read_write_reader(std::string_view node);
/// A read or write node's sequence (0 for any other name).
std::uint32_t read_write_sequence(std::string_view node);

class read_write_rule final : public lock_rule {
public:
    enum class side { read, write };
    explicit read_write_rule(side s) : side_(s) {}

    std::string_view kind() const override { return "read-write lock"; }
    std::string node_name() const override { return std::string(side_ == side::read ? read_lock_name : write_lock_name); }
    /// Both names, one queue by sequence; at one sequence (a downgrade) the writer first.
    lock_queue queue(std::vector<std::string> children) const override;
    bool joins_ahead_of(std::string_view node) const override { return side_ == side::write && is_read_write_writer(node); }
    bool grants_awaited() const override { return false; }
    /// A writer at the head holds, and with it the readers of its sequence (a downgrade);
    /// otherwise the readers before the first writer hold.
    std::size_t holders(const std::vector<std::string>& sorted) const override;

private:
    lock_decision do_decide(const std::vector<std::string>& sorted, std::size_t ours, const decision_context& context) const override;
    side side_;
};

}  // namespace zkr
