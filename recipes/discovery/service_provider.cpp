// zkr::service_provider: a service_cache and the provider's decisions (provider_choice.hpp).
#include "provider_choice.hpp"

#include <zkr/service_provider.hpp>

#include <mutex>
#include <random>

namespace zkr {

struct service_provider::state {
    std::mutex mutex;
    detail::down_instances down;
    detail::choice_state choice;
    std::mt19937_64 random{std::random_device{}()};

    explicit state(const down_instance_policy& p) : down(p.error_threshold, p.timeout) {}

    // The enabled instances not down now (under mutex).
    std::vector<service_instance> usable(std::vector<service_instance> all) {
        const auto now = std::chrono::steady_clock::now();
        std::erase_if(
            all, [&](const service_instance& i) { return !i.enabled || down.is_down(i.id, now); });
        return all;
    }
};

namespace {

detail::choice_strategy choice_of(provider_strategy s) {
    switch (s) {
        case provider_strategy::random:
            return detail::choice_strategy::random;
        case provider_strategy::sticky:
            return detail::choice_strategy::sticky;
        case provider_strategy::round_robin:
            break;
    }
    return detail::choice_strategy::round_robin;
}

}  // namespace

service_provider::service_provider(client& c, const std::string& base_path, const std::string& name,
                                   provider_strategy strategy, down_instance_policy policy)
    : cache_(c, base_path, name), strategy_(strategy), state_(std::make_unique<state>(policy)) {
    if (policy.error_threshold < 1 || policy.timeout.count() < 0)
        throw zkr::error(
            make_error_code(errc::invalid_argument), {},
            "down_instance_policy: error_threshold must be at least 1 and timeout not negative");
}

service_provider::~service_provider() = default;

std::optional<service_instance> service_provider::get_instance() {
    auto all = cache_.instances();
    std::lock_guard lock(state_->mutex);
    auto usable = state_->usable(std::move(all));
    const auto index =
        detail::choose(choice_of(strategy_), state_->choice, usable, state_->random());
    if (!index) return std::nullopt;
    return std::move(usable[*index]);
}

std::vector<service_instance> service_provider::get_all_instances() {
    auto all = cache_.instances();
    std::lock_guard lock(state_->mutex);
    return state_->usable(std::move(all));
}

void service_provider::note_error(const service_instance& instance) {
    std::lock_guard lock(state_->mutex);
    state_->down.note_error(instance.id, std::chrono::steady_clock::now());
}

}  // namespace zkr
