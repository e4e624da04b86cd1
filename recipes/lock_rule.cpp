#include <zkr/lock_rule.hpp>

#include <algorithm>

namespace zkr {

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

std::vector<std::string> sorted_participants(const std::vector<std::string>& children, std::string_view lock_name) {
    std::vector<std::pair<std::uint32_t, std::string>> keyed;
    keyed.reserve(children.size());
    for (const auto& c : children)
        if (auto seq = lock_sequence(c, lock_name)) keyed.emplace_back(*seq, c);
    std::sort(keyed.begin(), keyed.end());
    std::vector<std::string> out;
    out.reserve(keyed.size());
    for (auto& k : keyed) out.push_back(std::move(k.second));
    return out;
}

namespace detail {

bool queue_view::reset(std::vector<std::string> sorted, const std::string& ours) {
    const auto it = std::find(sorted.begin(), sorted.end(), ours);
    if (it == sorted.end()) {
        nodes_.clear();
        return false;
    }
    sorted.erase(it + 1, sorted.end());
    nodes_ = std::move(sorted);
    return true;
}

void queue_view::remove(const std::string& name) {
    if (nodes_.empty()) return;
    const auto it = std::find(nodes_.begin(), nodes_.end() - 1, name);
    if (it != nodes_.end() - 1) nodes_.erase(it);
}

lock_decision queue_view::decide(const lock_rule& rule) const {
    if (nodes_.empty()) return {};
    return rule.decide(nodes_, nodes_.size() - 1);
}

}  // namespace detail
}  // namespace zkr
