// Listeners by id, safe to add and remove from any thread: the one registry of the client's
// connection-state listeners and observers, a hold's listeners, a recipe's hold listeners and a
// shared count's listeners (a detail header because a hold, declared in one, keeps one). Calls
// happen outside its lock, on a snapshot, so a listener may add or remove listeners (itself too)
// while it runs.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace zkr::detail {

template <typename Listener>
class listener_registry {
public:
    std::uint64_t add(Listener l) {
        std::lock_guard lock(mutex_);
        const auto id = next_++;
        listeners_.emplace(id, std::move(l));
        return id;
    }
    /// The listener removed, if it was there.
    std::optional<Listener> remove(std::uint64_t id) {
        std::lock_guard lock(mutex_);
        const auto it = listeners_.find(id);
        if (it == listeners_.end()) return std::nullopt;
        auto l = std::move(it->second);
        listeners_.erase(it);
        return l;
    }
    bool empty() const {
        std::lock_guard lock(mutex_);
        return listeners_.empty();
    }
    /// The listeners now, in the order they were added.
    std::vector<Listener> snapshot() const {
        std::lock_guard lock(mutex_);
        std::vector<Listener> out;
        out.reserve(listeners_.size());
        for (const auto& [id, l] : listeners_) out.push_back(l);
        return out;
    }
    /// Removes every listener and returns them (a close tells each one last).
    std::vector<Listener> take_all() {
        std::lock_guard lock(mutex_);
        std::vector<Listener> out;
        out.reserve(listeners_.size());
        for (auto& [id, l] : listeners_) out.push_back(std::move(l));
        listeners_.clear();
        return out;
    }

private:
    mutable std::mutex mutex_;
    std::map<std::uint64_t, Listener> listeners_;
    std::uint64_t next_ = 1;
};

}  // namespace zkr::detail
