// A re-entrant lock's holds by thread (interprocess_mutex, interprocess_multi_lock): each thread's
// hold and how many levels it entered. Not thread-safe: its owner calls it under its own mutex.
#pragma once

#include <zkr/error.hpp>

#include <boost/system/error_code.hpp>

#include <algorithm>
#include <thread>
#include <utility>
#include <vector>

namespace zkr::detail {

/// A value per thread, in a vector: a lock has a few holding threads, and a vector keeps its room
/// when a thread's entry goes, where a map's node was an allocation per lock and per unlock.
template <typename T>
class by_thread {
public:
    T* find(std::thread::id owner) noexcept {
        const auto it = position(owner);
        return it == entries_.end() ? nullptr : &it->second;
    }
    const T* find(std::thread::id owner) const noexcept { return const_cast<by_thread*>(this)->find(owner); }
    /// owner's value, made when there was none.
    T& operator[](std::thread::id owner) {
        if (T* v = find(owner)) return *v;
        return entries_.emplace_back(owner, T{}).second;
    }
    void erase(std::thread::id owner) noexcept {
        const auto it = position(owner);
        if (it == entries_.end()) return;
        if (it != entries_.end() - 1) *it = std::move(entries_.back());
        entries_.pop_back();
    }
    bool empty() const noexcept { return entries_.empty(); }
    /// Every value, forgotten.
    std::vector<T> take_all() {
        std::vector<T> all;
        all.reserve(entries_.size());
        for (auto& [owner, v] : entries_) all.push_back(std::move(v));
        entries_.clear();
        return all;
    }

private:
    auto position(std::thread::id owner) noexcept {
        return std::find_if(entries_.begin(), entries_.end(), [owner](const auto& e) { return e.first == owner; });
    }
    std::vector<std::pair<std::thread::id, T>> entries_;
};

template <typename Hold>  // a shared_ptr to what one thread holds
class thread_holds {
public:
    /// True (and one level more) when owner holds already.
    bool reenter(std::thread::id owner) {
        entry* e = holds_.find(owner);
        if (!e) return false;
        ++e->levels;
        return true;
    }
    /// owner's first level of h.
    void adopt(std::thread::id owner, Hold h) { holds_[owner] = entry{std::move(h), 1}; }
    /// One level of owner's hold: the hold itself once that was its last level (owner then holds
    /// nothing), else null. ec: lock_not_held when owner holds nothing.
    Hold take_level(std::thread::id owner, boost::system::error_code& ec) {
        ec = {};
        entry* e = holds_.find(owner);
        if (!e) {
            ec = make_error_code(errc::lock_not_held);
            return nullptr;
        }
        if (--e->levels > 0) return nullptr;
        auto h = std::move(e->hold);
        holds_.erase(owner);
        return h;
    }
    /// owner's hold, or null.
    Hold of(std::thread::id owner) const {
        const entry* e = holds_.find(owner);
        return e ? e->hold : nullptr;
    }
    bool empty() const noexcept { return holds_.empty(); }
    /// Every thread's hold, forgotten (for a destructor to release).
    std::vector<Hold> take_all() {
        std::vector<Hold> all;
        for (auto& e : holds_.take_all()) all.push_back(std::move(e.hold));
        return all;
    }

private:
    struct entry {
        Hold hold;
        int levels = 0;
    };
    by_thread<entry> holds_;
};

}  // namespace zkr::detail
