// The requests (and timers) a sans-io machine has asked for and still waits on, by ticket. A
// reply or watch event names its ticket; one that the book no longer holds is stale, and the
// machine drops it in one place (its resume) before any handler sees it.
#pragma once

#include <cstdint>
#include <map>
#include <utility>

namespace zkr::detail {

using lock_ticket = std::uint64_t;

/// Record: what the machine keeps per request; it has a `what` (its purpose).
template <typename Record>
class ticket_book {
public:
    using purpose = decltype(Record::what);

    lock_ticket ask(Record r) {
        const auto t = ++last_;
        live_.emplace(t, std::move(r));
        return t;
    }
    /// The live request of ticket t, or null when t is stale.
    const Record* find(lock_ticket t) const {
        const auto it = live_.find(t);
        return it == live_.end() ? nullptr : &it->second;
    }
    bool has(lock_ticket t) const { return live_.count(t) > 0; }
    /// The live ticket asked for `what` (the machine keeps at most one of some purposes), or 0.
    lock_ticket of(purpose what) const {
        for (const auto& [t, r] : live_)
            if (r.what == what) return t;
        return 0;
    }
    void drop(lock_ticket t) { live_.erase(t); }
    void drop_all(purpose what) { std::erase_if(live_, [&](const auto& e) { return e.second.what == what; }); }
    /// Forgets every request for which keep(record) is false; keep may change the records it keeps.
    template <typename Keep>
    void forget_unless(Keep keep) {
        for (auto it = live_.begin(); it != live_.end();) {
            if (keep(it->second)) ++it;
            else it = live_.erase(it);
        }
    }
    template <typename Pred>
    bool any(Pred pred) const {
        for (const auto& [t, r] : live_)
            if (pred(r)) return true;
        return false;
    }

private:
    std::map<lock_ticket, Record> live_;
    lock_ticket last_ = 0;
};

}  // namespace zkr::detail
