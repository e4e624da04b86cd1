// The requests (and timers) a sans-io machine has asked for and still waits on, by ticket. A
// reply or watch event names its ticket; one that the book no longer holds is stale, and the
// machine drops it in one place (its resume) before any handler sees it.
#pragma once

#include <boost/container/small_vector.hpp>

#include <algorithm>
#include <cstdint>
#include <utility>

namespace zkr::detail {

using lock_ticket = std::uint64_t;

/// Record: what the machine keeps per request; it has a `what` (its purpose).
template <typename Record>
class ticket_book {  // sim-unreachable: implicit-members
public:
    using purpose = decltype(Record::what);

    lock_ticket ask(Record r) {
        const auto t = ++last_;
        live_.emplace_back(t, std::move(r));  // (tickets rise: the book stays in ticket order)
        return t;
    }
    /// The live request of ticket t, or null when t is stale. Valid until the book next changes.
    const Record* find(lock_ticket t) const {
        const auto it = position(t);
        return it == live_.end() || it->first != t ? nullptr : &it->second;
    }
    bool has(lock_ticket t) const { return find(t) != nullptr; }
    /// The live ticket asked for `what` (the machine keeps at most one of some purposes), or 0.
    lock_ticket of(purpose what) const {
        for (const auto& [t, r] : live_)
            if (r.what == what) return t;
        return 0;
    }
    void drop(lock_ticket t) {
        if (const auto it = position(t); it != live_.end() && it->first == t) live_.erase(it);
    }
    void drop_all(purpose what) {
        live_.erase(std::remove_if(live_.begin(), live_.end(), [&](const auto& e) { return e.second.what == what; }), live_.end());
    }
    /// Forgets every request for which keep(record) is false; keep may change the records it keeps.
    template <typename Keep>
    void forget_unless(Keep keep) {
        auto kept = live_.begin();  // (by hand: std::remove_if's predicate may not change what it reads)
        for (auto it = live_.begin(); it != live_.end(); ++it) {
            if (!keep(it->second)) continue;
            if (kept != it) *kept = std::move(*it);
            ++kept;
        }
        live_.erase(kept, live_.end());
    }
    template <typename Pred>
    bool any(Pred pred) const {
        for (const auto& [t, r] : live_)
            if (pred(r)) return true;
        return false;
    }

private:
    // A handful at a time, in ticket order, with room for four inside: a machine lives for one
    // acquire, and a vector's first two requests were two allocations per acquire (a map
    // allocated a node per request).
    boost::container::small_vector<std::pair<lock_ticket, Record>, 4> live_;
    lock_ticket last_ = 0;

    auto position(lock_ticket t) const {
        return std::lower_bound(live_.begin(), live_.end(), t, [](const auto& e, lock_ticket x) { return e.first < x; });
    }
};

}  // namespace zkr::detail
