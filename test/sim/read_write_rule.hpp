// A read-write lock as two lock_rules on one queue: the proof that a recipe which is a rule needs
// one rule file and a thin class. The public recipe comes with the issue on the lock family; the
// simulation runs this rule now, with a checker for "a writer holds alone".
//
// Node names and order are Curator's InterProcessReadWriteLock (shared/notes/curator-protocols.md):
// "_c_<uuid>-__READ__<seq>" and "_c_<uuid>-__WRIT__<seq>" under one path, one queue by sequence.
// - A writer holds at the head of the queue, and waits on the node just ahead of it (a reader or
//   a writer: it needs every node ahead gone).
// - A reader holds while no writer is ahead of it, and waits on the last writer ahead of it (when
//   that one goes, every writer ahead of it has gone or holds: it held, so nothing was ahead of
//   it). Readers that come after a waiting writer wait behind it, so writers never starve.
// - A writer's release passes the lock on (it held alone at the head): the waiters behind it
//   learn from its release signal alone that everything up to it is gone. A reader's does not.
// - Nobody awaits a grant: every waiter needs a node gone, never a node granted.
// - A writer that the reader's owner holds already does not count (decision_context): the downgrade
//   (take the read lock while holding the write lock, then release the write lock). The recipe
//   must also place that read node where no waiting writer can pass it: Curator 5.5 gives it the
//   write node's sequence (a plain ephemeral create), which is the recipe's part, not the rule's.
#pragma once

#include "../../recipes/lock_rule.hpp"

#include <algorithm>

namespace zkr::sim {

inline bool is_writer(std::string_view node) { return lock_sequence(node, write_lock_name).has_value(); }

class read_write_rule final : public lock_rule {
public:
    enum class side { read, write };
    explicit read_write_rule(side s) : side_(s) {}

    std::string_view kind() const override { return "read-write lock"; }
    std::string node_name() const override { return std::string(side_ == side::read ? read_lock_name : write_lock_name); }
    lock_queue queue(const std::vector<std::string>& children) const override {
        return queue_of(children, {read_lock_name, write_lock_name});
    }

    bool release_passes_on(std::string_view node) const override { return is_writer(node); }
    bool grants_awaited() const override { return false; }

    /// A writer at the head holds alone; otherwise the readers before the first writer hold.
    std::size_t holders(const std::vector<std::string>& sorted) const override {
        if (!sorted.empty() && is_writer(sorted.front())) return 1;
        return static_cast<std::size_t>(std::find_if(sorted.begin(), sorted.end(), [](const std::string& n) { return is_writer(n); }) -
                                        sorted.begin());
    }

private:
    lock_decision do_decide(const std::vector<std::string>& sorted, std::size_t ours, const decision_context& context) const override {
        lock_decision d;
        if (side_ == side::write) {
            if (ours == 0) d.holds = true;
            else d.watch.push_back(sorted[ours - 1]);
            return d;
        }
        const auto ahead = sorted.begin() + static_cast<std::ptrdiff_t>(ours);
        const auto last_writer = std::find_if(std::make_reverse_iterator(ahead), sorted.rend(),
                                              [&](const std::string& n) { return is_writer(n) && !context.holds(n); });
        if (last_writer == sorted.rend()) d.holds = true;
        else d.watch.push_back(*last_writer);
        return d;
    }

    side side_;
};

}  // namespace zkr::sim
