// Listeners by id, safe to add and remove from any thread: the one registry of the client's
// connection-state listeners and observers, a hold's listeners, a recipe's hold listeners and a
// shared count's listeners (a detail header because a hold, declared in one, keeps one). Calls
// happen outside its lock, on a snapshot, so a listener may add or remove listeners (itself too)
// while it runs. A snapshot's calls (of callable listeners) check that the listener is still
// registered when each call starts: a snapshot is often called later, on the callback thread, and
// a listener removed meanwhile (its subscription ended, its captured state gone) must not be
// called then (a leader latch's listener was, in an ASan run: after the test had destroyed it).
#pragma once

#include "pooled.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace zkr::detail {

template <typename Listener>
class listener_registry {
public:
    std::uint64_t add(Listener l) {
        std::lock_guard lock(mutex_);
        const auto id = next_++;
        listeners_.emplace_back(id, make_pooled<entry>(std::move(l)));  // (ids rise: the vector stays sorted)
        return id;
    }
    /// Removes the listener, if it is there: no call of it starts from now on. Nothing is copied
    /// (no allocation): subscriptions end here from destructors.
    void remove(std::uint64_t id) noexcept {
        std::lock_guard lock(mutex_);
        const auto it = std::lower_bound(listeners_.begin(), listeners_.end(), id,
                                         [](const auto& l, std::uint64_t wanted) { return l.first < wanted; });
        if (it == listeners_.end() || it->first != id) return;
        it->second->active = false;
        listeners_.erase(it);
    }
    bool empty() const {
        std::lock_guard lock(mutex_);
        return listeners_.empty();
    }
    /// The listeners now, in the order they were added; a callable one is called only while it
    /// is still registered.
    std::vector<Listener> snapshot() const {
        std::lock_guard lock(mutex_);
        std::vector<Listener> out;
        out.reserve(listeners_.size());
        for (const auto& [id, e] : listeners_) out.push_back(guarded(e));
        return out;
    }
    /// Removes every listener and returns them (a close tells each one last); an earlier
    /// snapshot calls none of them from now on.
    std::vector<Listener> take_all() {
        const auto taken = take_entries();
        std::vector<Listener> out;
        out.reserve(taken.size());
        for (const auto& e : taken) out.push_back(e->fn);  // (a copy: an earlier snapshot's call may be running it)
        return out;
    }

    /// Calls each listener registered now, in the order added, with args, outside the lock (a
    /// listener may add or remove listeners); one removed meanwhile is not called. For listeners
    /// that are not copied (a unique_function): the calls go through the entries, which the copy
    /// of the list keeps alive. The thread that calls is the only one that calls them.
    template <typename... Args>
    void call_each(const Args&... args) const {
        for (const auto& e : entries_now())
            if (e->active) e->fn(args...);
    }
    /// Removes every listener and calls each one with args, in order (a close tells each one last).
    template <typename... Args>
    void take_each(const Args&... args) {
        for (const auto& e : take_entries()) e->fn(args...);
    }

private:
    struct entry {
        explicit entry(Listener l) : fn(std::move(l)) {}
        Listener fn;
        std::atomic<bool> active{true};
    };

    // Every entry, each marked no longer registered, and the list emptied.
    std::vector<std::shared_ptr<entry>> take_entries() {
        std::lock_guard lock(mutex_);
        std::vector<std::shared_ptr<entry>> taken;
        taken.reserve(listeners_.size());
        for (auto& [id, e] : listeners_) {
            e->active = false;
            taken.push_back(e);
        }
        listeners_.clear();
        return taken;
    }
    std::vector<std::shared_ptr<entry>> entries_now() const {
        std::lock_guard lock(mutex_);
        std::vector<std::shared_ptr<entry>> now;
        now.reserve(listeners_.size());
        for (const auto& [id, e] : listeners_) now.push_back(e);
        return now;
    }

    static Listener guarded(const std::shared_ptr<entry>& e) {
        if constexpr (requires { typename Listener::result_type; }) {  // a std::function
            return Listener([e](auto&&... args) {
                if (e->active) return e->fn(std::forward<decltype(args)>(args)...);
            });
        } else {
            return e->fn;  // (the connection's own listeners carry their own flag)
        }
    }

    mutable std::mutex mutex_;
    // By id, in the order added. A vector keeps its room when a listener goes, where a map's node
    // was an allocation per listener (a lock's acquire adds one observer and removes it).
    std::vector<std::pair<std::uint64_t, std::shared_ptr<entry>>> listeners_;
    std::uint64_t next_ = 1;
};

}  // namespace zkr::detail
