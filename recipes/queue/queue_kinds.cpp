#include "queue_kinds.hpp"

#include "lock_rule.hpp"
#include "read_write_rule.hpp"

#include <array>

namespace zkr {

namespace {

std::unique_ptr<lock_rule> one_holder(const std::vector<std::string>&) { return std::make_unique<lowest_n_rule>(1); }

std::unique_ptr<lock_rule> read_write_observer(const std::vector<std::string>&) {
    return std::make_unique<read_write_rule>(read_write_rule::side::read);  // (either side counts the same holders)
}

// The maximum the first lease names; a shared count's cannot be read from names.
std::unique_ptr<lock_rule> semaphore_observer(const std::vector<std::string>& sorted) {
    if (sorted.empty()) return nullptr;
    const auto tag = parse_lease_node(sorted.front()).value_or(lease_node_info{}).max_tag;
    const auto max = max_of_tag(tag);
    if (!max || *max == 0) return nullptr;
    return std::make_unique<lease_rule>([max = *max] { return static_cast<std::int64_t>(max); }, tag);
}

const std::array<queue_kind_info, 5>& table() {
    static const std::array<queue_kind_info, 5> rows = {{
        {queue_kind::mutex, "mutex", "lock node", {mutex_lock_name}, {}, /*revocable=*/true, /*elects=*/true, one_holder},
        {queue_kind::semaphore, "semaphore", "lease", {semaphore_lock_name}, {}, false, false, semaphore_observer},
        {queue_kind::read_write, "read-write lock", "lock node", {write_lock_name, read_lock_name}, {}, true, false,
         read_write_observer},
        {queue_kind::latch, "leader latch", "latch node", {latch_lock_name}, {}, false, true, one_holder},
        {queue_kind::curator_semaphore, "semaphore in Curator's layout", "folder of leases", {}, curator_leases_folder, false, false, nullptr},
    }};
    return rows;
}

}  // namespace

std::span<const queue_kind_info> queue_kinds() { return table(); }

const queue_kind_info& kind_info(queue_kind id) {
    for (const auto& k : table())
        if (k.id == id) return k;
    return table().front();  // (every enumerator has a row: the unit tests check it)
}

const queue_kind_info* kind_of_folder(std::string_view child) {
    for (const auto& k : table())
        if (!k.folder.empty() && child == k.folder) return &k;
    return nullptr;
}

const queue_kind_info* kind_of_node(std::string_view name) {
    if (const auto* folder = kind_of_folder(name)) return folder;
    for (const auto& k : table())
        for (const auto node_name : k.node_names)
            if (lock_sequence(name, node_name)) return &k;
    return nullptr;
}

std::vector<std::string> queue_of_kind(const queue_kind_info& kind, const std::vector<std::string>& children) {
    if (kind.node_names.empty()) return {};
    return queue_of(children, kind.node_names).sorted;
}

std::optional<std::uint32_t> lock_sequence(std::string_view name, std::string_view lock_name) {
    constexpr std::size_t digits = 10;
    if (name.size() < digits + lock_name.size()) return std::nullopt;
    const std::string_view seq = name.substr(name.size() - digits);
    if (name.substr(name.size() - digits - lock_name.size(), lock_name.size()) != lock_name) return std::nullopt;
    std::uint64_t value = 0;
    for (const char c : seq) {
        if (c < '0' || c > '9') return std::nullopt;
        value = value * 10 + static_cast<std::uint64_t>(c - '0');
    }
    // ZooKeeper's counter is a signed 32-bit int printed with %010d; past 2^31 it wraps negative.
    if (value > 0xffffffffULL) return std::nullopt;
    return static_cast<std::uint32_t>(value);
}

}  // namespace zkr
