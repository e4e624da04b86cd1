// The pluggable decision of the predecessor-watch driver: does our node hold, and if not, which
// single node do we watch? A read-write lock supplies its own rule without touching the driver.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zkr {

struct lock_decision {
    bool holds = false;
    std::string watch;  ///< When !holds: the name of the one node to watch.
};

class lock_rule {
public:
    virtual ~lock_rule() = default;
    /// sorted: the participants' node names in sequence order; ours: our index in it.
    virtual lock_decision decide(const std::vector<std::string>& sorted, std::size_t ours) const = 0;
};

/// The n lowest nodes hold; a waiter watches the node n places ahead of it (so no herd).
class lowest_n_rule final : public lock_rule {
public:
    explicit lowest_n_rule(std::size_t n) : n_(n) {}
    lock_decision decide(const std::vector<std::string>& sorted, std::size_t ours) const override {
        if (ours < n_) return {true, {}};
        return {false, sorted[ours - n_]};
    }
    std::size_t leases() const noexcept { return n_; }

private:
    std::size_t n_;
};

/// The sequence number of a lock node: the 10 digits that end its name, if the name contains
/// lock_name right before them ("_c_<uuid>-lock-0000000042" with lock_name "lock-").
std::optional<std::uint32_t> lock_sequence(std::string_view node_name, std::string_view lock_name);

/// Children that are lock nodes of this lock_name, sorted by sequence; foreign nodes are ignored.
std::vector<std::string> sorted_participants(const std::vector<std::string>& children, std::string_view lock_name);

namespace detail {

/// A waiter's view of the queue: the nodes ahead of ours as last listed. Nodes below ours can
/// only disappear (new nodes get higher sequence numbers), so the view is a superset of the truth:
/// when it says we hold, we do, and a woken waiter needs no new listing. When it says we do not,
/// it may be stale, and the driver lists again.
class queue_view {
public:
    /// From a fresh listing (sorted participants). False when our node is not in it.
    bool reset(std::vector<std::string> sorted, const std::string& ours);
    /// A node ahead of ours is gone (its watch fired, or it was not found).
    void remove(const std::string& name);
    lock_decision decide(const lock_rule& rule) const;
    std::size_t ahead() const noexcept { return nodes_.empty() ? 0 : nodes_.size() - 1; }
    const std::vector<std::string>& nodes() const noexcept { return nodes_; }

private:
    std::vector<std::string> nodes_;  // ahead of ours, then ours last
};

}  // namespace detail
}  // namespace zkr
