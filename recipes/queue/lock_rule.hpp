// The pluggable protocol of the predecessor-watch driver: which nodes take part and in what order,
// does our node hold, and if not, which nodes do we watch? A new recipe supplies its own rule
// without touching the driver.
#pragma once

#include "queue_kinds.hpp"

#include <boost/system/error_code.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <span>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zkr {

struct lock_decision {
    bool holds = false;
    /// When !holds: the nodes to watch. Empty: no deletion can help; only a change of the rule's
    /// limit (lock_driver::reevaluate) or of our own node wakes the waiter.
    std::vector<std::string> watch;
    /// watch[0] is a waiter ahead of us. Its grant is also our event: the driver of a granted node
    /// that still has holders ahead touches its node (a data change) so that the waiter behind it
    /// starts watching those holders.
    bool await_grant = false;
    /// The rule refuses this queue (a participant disagrees on the limit): the acquire fails with it.
    boost::system::error_code error;
    /// When !holds: our node fits the limit and holds once watch[0], the node just ahead, has
    /// marked its grant (lock_rule::grants_marked). A try reads that node before it gives up.
    bool awaits_mark = false;
};

/// What a decision may know beyond the queue: the nodes on this path that the acquiring owner
/// (a thread, an object) holds already. A read-write lock's downgrade needs it: the reader of the
/// owner that holds the write lock must not wait behind its own writer.
struct decision_context {
    std::vector<std::string> held_by_us;  ///< node names (no path), in any order
    /// Nodes ahead of ours that this acquire has seen mark their grant (lock_rule::grants_marked).
    std::vector<std::string> marked_ahead;
    bool holds(std::string_view node) const;
    bool marked(std::string_view node) const;
};

/// A lock path's children as one rule sees them.
struct lock_queue {
    /// The participants' node names in queue order (ours among them, once created).
    std::vector<std::string> sorted;
    /// A node of another kind of lock (a mutex's among a semaphore's, a Curator-layout semaphore's
    /// lease folder, ...): the two kinds would not exclude each other, so the rule refuses the
    /// path (errc::lock_kind_mismatch).
    std::optional<std::string> other_kind;
};

/// Everything a recipe's protocol decides, for the one driver (lock_machine) to run: which
/// children take part and in what order, whether ours holds and whom it watches. Stateless apart
/// from its limit; the machine, the driver, `zkr status` and the simulation ask it instead of
/// parsing names themselves. A read-write lock is two rules on one queue (read_write_rule.hpp).
/// No rule lets a data change stand for a release: anyone may write a lock node (a revoker, an
/// operator, another client), so a waiter holds only on what it read of the queue.
class lock_rule {
public:
    virtual ~lock_rule() = default;
    /// What the nodes of this kind are called in messages: "mutex", "semaphore".
    virtual std::string_view kind() const = 0;
    /// The name of a node this rule's acquire creates, before the protect prefix and sequence
    /// (a recipe may name one acquire's node itself: a semaphore's carries its weight).
    virtual std::string node_name() const = 0;
    /// The participants among a lock path's children, in queue order, and a node of another kind.
    /// The listing is taken by value: a caller done with it moves it in, and its names move into
    /// the queue instead of being copied (a lock cycle's listing then allocates nothing more).
    virtual lock_queue queue(std::vector<std::string> children) const = 0;
    /// sorted: queue(...).sorted; ours: our index in it; context: what the owner holds already.
    lock_decision decide(const std::vector<std::string>& sorted, std::size_t ours, const decision_context& context = {}) const {
        return do_decide(sorted, ours, context);
    }
    /// True when a node may join the queue ahead of waiters while `node` holds (a read-write lock's
    /// downgrade gives its read node the writer's sequence). A waiter then never decides from that
    /// node's departure alone, as it does for other nodes (its view of the queue would miss the
    /// newcomer): it lists the queue again.
    virtual bool joins_ahead_of(std::string_view node) const {
        (void)node;
        return false;
    }
    /// Whether a waiter of this rule ever awaits a grant (lock_decision::await_grant). When not, a
    /// node granted never touches itself to tell the one behind it: nobody listens for that.
    virtual bool grants_awaited() const { return true; }
    /// Whether every grant is marked (a node touches itself once granted) and a node holds only
    /// behind a node known to hold (decision_context::marked_ahead). For a limit that can shrink
    /// (a shared count): a node granted under the larger limit may have waiters ahead of it that
    /// have not decided yet; deciding later, under the smaller limit, they would hold beside it,
    /// over that limit (found by the simulation, seed 6006018025). Marked grants go in queue
    /// order, so the nodes behind a waiter never hold, and those ahead fit the limit with it.
    virtual bool grants_marked() const { return false; }
    /// How many of the sorted participants hold now (the first ones): for tools such as
    /// `zkr status`, and the simulation's checker.
    virtual std::size_t holders(const std::vector<std::string>& sorted) const = 0;

private:
    virtual lock_decision do_decide(const std::vector<std::string>& sorted, std::size_t ours,
                                    const decision_context& context) const = 0;
};

/// The children that are protected lock nodes ("_c_<uuid>-...<name><seq>") of one of `names`,
/// sorted by sequence, and at one sequence in the order of `names` (foreign nodes, a plain
/// "lock-0000000001" too, are ignored), and the first node of another kind (kind_of_node).
/// unprotected: a name whose nodes take part without the protect prefix too (kazoo_lock_name);
/// empty: none.
/// children: taken by value, as lock_rule::queue's.
lock_queue queue_of(std::vector<std::string> children, std::span<const std::string_view> names,
                    std::string_view unprotected = {});
inline lock_queue queue_of(std::vector<std::string> children, std::initializer_list<std::string_view> names,
                           std::string_view unprotected = {}) {
    return queue_of(std::move(children), std::span<const std::string_view>(names.begin(), names.size()), unprotected);
}

/// The n lowest nodes hold. The first waiter watches the holders (any one's release may be its
/// turn); every later waiter watches only the waiter just ahead of it, so a release wakes one
/// waiter, never a herd. For n = 1 this is the classic lock: each waiter watches its predecessor.
/// Its nodes are the mutex's ("lock-", as Curator's InterProcessMutex), or a leader latch's
/// ("latch-", as Curator's LeaderLatch: the one holder leads): a kind of one node name.
class lowest_n_rule final : public lock_rule {
public:
    /// Which foreign nodes take part: none, or Kazoo's Lock nodes too (kazoo_lock_name).
    enum class foreign { none, kazoo };
    explicit lowest_n_rule(std::size_t n, queue_kind kind = queue_kind::mutex, foreign also = foreign::none)
        : n_(n), kind_(&kind_info(kind)), also_(also) {}
    std::string_view kind() const override { return kind_->name; }
    std::string node_name() const override { return std::string(kind_->node_names.front()); }
    lock_queue queue(std::vector<std::string> children) const override;
    std::size_t leases() const noexcept { return n_; }
    /// With one holder nobody waits for a grant: every waiter waits for the node ahead to go. (So
    /// a granted node never touches itself: a Curator LeaderLatch behind it would spend its watch.)
    bool grants_awaited() const override { return n_ > 1; }
    std::size_t holders(const std::vector<std::string>& sorted) const override;

private:
    lock_decision do_decide(const std::vector<std::string>& sorted, std::size_t ours, const decision_context&) const override;
    std::size_t n_;
    const queue_kind_info* kind_;
    foreign also_;
};

/// What a semaphore's lease node says in its name: "_c_<uuid>-m<max>-w<weight>-lease-<seq>", or
/// "mc<hash of the count's path>" instead of "m<max>" when the maximum comes from a shared count. Names without these parts
/// (another library's leases) read as weight 1 with an empty max tag.
struct lease_node_info {
    std::uint32_t weight = 1;
    std::string max_tag;
};
std::optional<lease_node_info> parse_lease_node(std::string_view node_name);
/// The node name (before the protect prefix and sequence) of a lease node with this weight.
std::string lease_node_name(std::string_view max_tag, std::uint32_t weight);
/// The max tag of a semaphore whose maximum is fixed ("m3"), or read from the shared count at
/// count_path ("mc" and a hash of the path, so semaphores reading different counts differ).
std::string fixed_max_tag(std::uint32_t max);
std::string shared_count_max_tag(std::string_view count_path);
bool is_shared_count_tag(std::string_view max_tag);
/// The maximum a fixed max tag names; nullopt for a shared count's tag, an empty or a foreign one.
std::optional<std::uint32_t> max_of_tag(std::string_view max_tag);

/// A semaphore's rule: each node weighs as many leases as it asked for; the nodes hold in order
/// while their weights sum to at most the maximum. An acquire of several leases is one node, so it
/// is all or nothing and, served in order, never deadlocks. A node whose max tag differs from ours
/// fails the decision with errc::max_mismatch: two participants that disagree never hold at once.
class lease_rule final : public lock_rule {
public:
    lease_rule(std::function<std::int64_t()> max_leases, std::string max_tag);
    std::string_view kind() const override { return "semaphore"; }
    /// A node of one lease (an acquire of several names its own: lease_node_name).
    std::string node_name() const override;
    lock_queue queue(std::vector<std::string> children) const override;
    /// A shared count's maximum can shrink: its grants are marked, in queue order.
    bool grants_marked() const override;
    /// A fixed maximum of one lease is a one-holder lock (interprocess_semaphore_mutex, or
    /// semaphore_v2 with max 1): nobody can hold beside a granted node, so a waiter behind it
    /// waits for it to go, and a grant is never marked for it.
    bool grants_awaited() const override;
    /// By the weights in the names and the maximum in force now.
    std::size_t holders(const std::vector<std::string>& sorted) const override;

private:
    lock_decision do_decide(const std::vector<std::string>& sorted, std::size_t ours, const decision_context&) const override;
    std::function<std::int64_t()> max_;
    std::string tag_;
};

/// The leases of Curator's layout: one node per lease, "_c_<uuid>-lease-<seq>". A node holds when
/// fewer than max nodes are ahead of it. Curator's own waiter holds when the folder has at most
/// max children. The two agree while leases are made only under the inner mutex (ours is then the
/// newest node), and the positional rule stays safe when that fails (a session lost while waiting
/// queues again without the mutex): no node holds with max nodes ahead of it, nodes are never
/// made ahead of existing ones, so at most max hold at any time, zkr's and Curator's together.
/// A waiter that does not hold watches every node ahead of it, since any release may be its turn.
/// That is no herd: the inner mutex's holder is the one waiter. The simulation runs this rule with
/// no inner mutex at all (test/sim, curator_semaphore).
class curator_lease_rule final : public lock_rule {
public:
    explicit curator_lease_rule(std::function<std::int64_t()> max_leases) : max_(std::move(max_leases)) {}
    std::string_view kind() const override { return "semaphore"; }
    std::string node_name() const override { return std::string(semaphore_lock_name); }
    lock_queue queue(std::vector<std::string> children) const override;
    /// Nobody awaits a grant: every waiter watches the nodes ahead of it (and Curator's watch the
    /// folder), so a granted node never touches itself.
    bool grants_awaited() const override { return false; }
    std::size_t holders(const std::vector<std::string>& sorted) const override;

private:
    lock_decision do_decide(const std::vector<std::string>& sorted, std::size_t ours, const decision_context&) const override;
    std::size_t max() const;
    std::function<std::int64_t()> max_;
};

namespace detail {

/// How many of the first `count` nodes hold: the longest prefix whose weights sum to at most max.
std::size_t holder_count(std::span<const std::uint64_t> weights, std::size_t count, std::uint64_t max);

/// The holders are the longest prefix of the queue whose weights sum to at most max. Our node
/// holds when it is in that prefix; the first waiter watches every holder; a later waiter watches
/// the node just ahead of it (await_grant).
lock_decision prefix_decision(const std::vector<std::string>& sorted, std::size_t ours,
                              std::span<const std::uint64_t> weights, std::uint64_t max);

/// A waiter's view of the queue: the nodes ahead of ours as last listed. Nodes below ours can
/// only disappear (new nodes get higher sequence numbers), so the view is a superset of the truth:
/// when it says we hold, we do, and a woken waiter needs no new listing. When it says we do not,
/// it may be stale, and the driver lists again.
class queue_view {
public:
    /// From a fresh listing (sorted participants). False when our node is not in it.
    bool reset(std::vector<std::string> sorted, std::string_view ours);
    /// A node ahead of ours is gone (its watch fired, or it was not found).
    void remove(const std::string& name);
    lock_decision decide(const lock_rule& rule, const decision_context& context = {}) const;
    std::size_t ahead() const noexcept { return nodes_.empty() ? 0 : nodes_.size() - 1; }
    const std::vector<std::string>& nodes() const noexcept { return nodes_; }

private:
    std::vector<std::string> nodes_;  // ahead of ours, then ours last
};

}  // namespace detail
}  // namespace zkr
