// The kinds of node queue kept under a path by zkr's recipes (and by Curator's, whose layouts
// they share), in one table. Everything that recognizes a kind from node names reads it: the rules
// (a node of another kind refuses the path), the drivers' messages, `zkr status`, `zkr revoke`
// and `zkr elect --observe`. A new queue recipe is one more row here, and nothing else learns its
// names.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace zkr {

class lock_rule;

/// The node names of Curator's lock protocols, which zkr shares for interop: InterProcessMutex's
/// "lock-" (zkr's mutex and fair lock), InterProcessSemaphoreV2's "lease-".
inline constexpr std::string_view mutex_lock_name = "lock-";
inline constexpr std::string_view semaphore_lock_name = "lease-";
/// Kazoo's Lock: "<uuid hex>__lock__<seq>", without Curator's protect prefix.
inline constexpr std::string_view kazoo_lock_name = "__lock__";
/// LeaderLatch's: the lowest node leads.
inline constexpr std::string_view latch_lock_name = "latch-";
/// InterProcessReadWriteLock's names: both kinds of node form one queue, ordered by sequence.
inline constexpr std::string_view read_lock_name = "__READ__";
inline constexpr std::string_view write_lock_name = "__WRIT__";
/// The folder of a semaphore in Curator's layout that holds its leases (path/leases).
inline constexpr std::string_view curator_leases_folder = "leases";

enum class queue_kind {
    mutex,       ///< "lock-": interprocess_mutex, fair_lock, leader_selector (Curator's InterProcessMutex)
    semaphore,   ///< "lease-": interprocess_semaphore_v2, interprocess_semaphore_mutex
    read_write,  ///< "__WRIT__" and "__READ__": interprocess_read_write_lock
    latch,       ///< "latch-": leader_latch
    /// A semaphore in Curator's layout (semaphore_layout::curator) keeps its leases in the folder
    /// "leases" under its path: their holders would not count against another kind's, nor the
    /// other kind's against theirs.
    curator_semaphore,
};

/// One kind's row.
struct queue_kind_info {
    queue_kind id;
    /// In messages: "mutex", "semaphore", "read-write lock", "leader latch".
    std::string_view name;
    /// What one of its nodes is, in messages: "lock node", "lease".
    std::string_view node_role;
    /// The names its nodes end in before the 10-digit sequence, in queue order at one sequence
    /// (a downgrade's read node has its writer's sequence): "lock-"; "__WRIT__", "__READ__".
    /// Empty for a folder kind.
    std::vector<std::string_view> node_names;
    /// A folder kind is marked by one child of exactly this name, not by sequential nodes.
    std::string_view folder;
    /// zkr revoke asks its holders to let go (Curator's Revocable: InterProcessMutex and the
    /// read-write lock).
    bool revocable = false;
    /// Its lowest node leads an election (zkr elect --observe follows it).
    bool elects = false;
    /// A rule that counts its holders from the sorted queue alone (`zkr status`, `zkr revoke`);
    /// null when the names cannot tell (a semaphore whose maximum is a shared count's).
    std::unique_ptr<lock_rule> (*observer)(const std::vector<std::string>& sorted) = nullptr;
};

/// Every kind, in the order `zkr status` shows them.
std::span<const queue_kind_info> queue_kinds();
const queue_kind_info& kind_info(queue_kind id);
/// The kind whose nodes are named like this one ("_c_<uuid>-lock-0000000005": mutex; "leases":
/// curator_semaphore); nullptr for anything else.
const queue_kind_info* kind_of_node(std::string_view node_name);
/// The folder kind this child is ("leases": curator_semaphore); nullptr for any other name.
const queue_kind_info* kind_of_folder(std::string_view child);

/// The children that are this kind's nodes (protected: "_c_<uuid>-...<name><seq>"), in queue order.
std::vector<std::string> queue_of_kind(const queue_kind_info& kind, const std::vector<std::string>& children);

/// The sequence number of a lock node: the 10 digits that end its name, if the name contains
/// lock_name right before them ("_c_<uuid>-lock-0000000042" with lock_name "lock-").
std::optional<std::uint32_t> lock_sequence(std::string_view node_name, std::string_view lock_name);

}  // namespace zkr
