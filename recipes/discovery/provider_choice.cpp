// A service provider's decisions (provider_choice.hpp).
#include "provider_choice.hpp"

#include <algorithm>

namespace zkr::detail {

void down_instances::purge(clock_time now) {
    std::erase_if(records_, [&](const auto& r) { return now - r.second.first >= timeout_; });
}

void down_instances::note_error(const std::string& id, clock_time now) {
    purge(now);
    auto [it, made] = records_.try_emplace(id, record{now, 0});
    ++it->second.errors;
}

bool down_instances::is_down(const std::string& id, clock_time now) {
    purge(now);
    const auto it = records_.find(id);
    return it != records_.end() && it->second.errors >= threshold_;
}

std::optional<std::size_t> choose(choice_strategy strategy, choice_state& state,
                                  const std::vector<const service_instance*>& usable, std::uint64_t draw) {
    if (usable.empty()) {
        state.stuck.reset();
        return std::nullopt;
    }
    switch (strategy) {
        case choice_strategy::random:
            return static_cast<std::size_t>(draw % usable.size());
        case choice_strategy::sticky:
            if (state.stuck) {
                const auto it = std::find_if(usable.begin(), usable.end(),
                                             [&](const service_instance* i) { return i->id == *state.stuck; });
                if (it != usable.end()) return static_cast<std::size_t>(it - usable.begin());
            }
            // The one held is gone (or down, or disabled): the next by round robin, held from now
            // on.
            {
                const auto index = static_cast<std::size_t>(state.next++ % usable.size());
                state.stuck = usable[index]->id;
                return index;
            }
        case choice_strategy::round_robin:
            break;
    }
    return static_cast<std::size_t>(state.next++ % usable.size());
}

}  // namespace zkr::detail
