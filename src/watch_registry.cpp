#include "watch_registry.hpp"

#include <utility>

namespace zkr::detail {

watch_registry::entry* watch_registry::add(std::shared_ptr<watch> w) {
    if (!w) return nullptr;
    auto e = std::make_unique<entry>();
    e->registry = this;
    e->of = std::move(w);
    auto* raw = e.get();
    entries_.emplace(raw, std::move(e));
    return raw;
}

void watch_registry::settle(entry* e, bool registered) {
    if (e && !registered) entries_.erase(e);
}

void watch_registry::fire(entry* e, watch_event_type type) {
    auto it = entries_.find(e);
    if (it == entries_.end()) return;
    const auto w = std::move(it->second->of);
    entries_.erase(it);
    if (w->fired) return;
    w->fired = true;
    w->fn(watch_event{type, w->user_path});
}

void watch_registry::end_all() {
    // (Taken first: a function called may set a new watch, on a handle to come.)
    auto ended = std::exchange(entries_, {});
    for (auto& [key, e] : ended) {
        if (e->of->fired) continue;
        e->of->fired = true;
        e->of->fn(watch_event{watch_event_type::not_watching, e->of->user_path});
    }
}

}  // namespace zkr::detail
