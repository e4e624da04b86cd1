// A re-entrant lock's holds by thread (interprocess_mutex, interprocess_multi_lock): each thread's
// hold and how many levels it entered. Not thread-safe: its owner calls it under its own mutex.
#pragma once

#include <zkr/error.hpp>

#include <boost/system/error_code.hpp>

#include <map>
#include <thread>
#include <vector>

namespace zkr::detail {

template <typename Hold>  // a shared_ptr to what one thread holds
class thread_holds {
public:
    /// True (and one level more) when owner holds already.
    bool reenter(std::thread::id owner) {
        const auto it = holds_.find(owner);
        if (it == holds_.end()) return false;
        ++it->second.levels;
        return true;
    }
    /// owner's first level of h.
    void adopt(std::thread::id owner, Hold h) { holds_[owner] = entry{std::move(h), 1}; }
    /// One level of owner's hold: the hold itself once that was its last level (owner then holds
    /// nothing), else null. ec: lock_not_held when owner holds nothing.
    Hold take_level(std::thread::id owner, boost::system::error_code& ec) {
        ec = {};
        const auto it = holds_.find(owner);
        if (it == holds_.end()) {
            ec = make_error_code(errc::lock_not_held);
            return nullptr;
        }
        if (--it->second.levels > 0) return nullptr;
        auto h = std::move(it->second.hold);
        holds_.erase(it);
        return h;
    }
    /// owner's hold, or null.
    Hold of(std::thread::id owner) const {
        const auto it = holds_.find(owner);
        return it == holds_.end() ? nullptr : it->second.hold;
    }
    bool empty() const noexcept { return holds_.empty(); }
    /// Every thread's hold, forgotten (for a destructor to release).
    std::vector<Hold> take_all() {
        std::vector<Hold> all;
        for (auto& [owner, e] : holds_) all.push_back(std::move(e.hold));
        holds_.clear();
        return all;
    }

private:
    struct entry {
        Hold hold;
        int levels = 0;
    };
    std::map<std::thread::id, entry> holds_;
};

}  // namespace zkr::detail
