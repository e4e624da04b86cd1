#include "read_write_rule.hpp"

#include <zkr/error.hpp>

#include <algorithm>

namespace zkr {

bool is_read_write_writer(std::string_view node) { return lock_sequence(node, write_lock_name).has_value(); }
bool is_read_write_reader(std::string_view node) { return lock_sequence(node, read_lock_name).has_value(); }

std::uint32_t read_write_sequence(std::string_view node) {
    if (auto s = lock_sequence(node, write_lock_name)) return *s;
    return lock_sequence(node, read_lock_name).value_or(0);
}

lock_queue read_write_rule::queue(std::vector<std::string> children) const {
    return queue_of(std::move(children), {write_lock_name, read_lock_name});
}

lock_decision read_write_rule::do_decide(const std::vector<std::string>& sorted, std::size_t ours,
                                         const decision_context& context) const {
    lock_decision d;
    if (side_ == side::write) {
        if (ours == 0) d.holds = true;
        // Only readers ahead: they all hold, and each one's going is our news (one watch each,
        // and no listing as they go). Else the node just ahead: a writer's going needs a listing.
        else if (std::none_of(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(ours), is_read_write_writer))
            d.watch.assign(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(ours));
        else d.watch.push_back(sorted[ours - 1]);
        return d;
    }
    // A downgrade's read node (the sequence of a writer we hold) holds only while that writer is
    // listed: else a writer behind it may hold already.
    for (const auto& held : context.held_by_us)
        if (is_read_write_writer(held) && read_write_sequence(held) == read_write_sequence(sorted[ours]) &&
            std::find(sorted.begin(), sorted.end(), held) == sorted.end()) {
            d.error = make_error_code(errc::lock_lost);
            return d;
        }
    const auto ahead = sorted.begin() + static_cast<std::ptrdiff_t>(ours);
    const auto last_writer = std::find_if(std::make_reverse_iterator(ahead), sorted.rend(),
                                          [&](const std::string& n) { return is_read_write_writer(n) && !context.holds(n); });
    if (last_writer == sorted.rend()) d.holds = true;
    else d.watch.push_back(*last_writer);
    return d;
}

std::size_t read_write_rule::holders(const std::vector<std::string>& sorted) const {
    if (sorted.empty()) return 0;
    if (is_read_write_writer(sorted.front())) {
        const auto seq = read_write_sequence(sorted.front());
        std::size_t n = 1;
        while (n < sorted.size() && is_read_write_reader(sorted[n]) && read_write_sequence(sorted[n]) == seq) ++n;
        return n;
    }
    return static_cast<std::size_t>(std::find_if(sorted.begin(), sorted.end(), [](const std::string& n) { return is_read_write_writer(n); }) -
                                    sorted.begin());
}

}  // namespace zkr
