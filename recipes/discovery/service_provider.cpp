// zkr::service_provider: a service_cache's shared snapshot and the provider's decisions
// (provider_choice.hpp). A call copies only the instance it gives out.
#include "provider_choice.hpp"

#include <zkr/error.hpp>
#include <zkr/service_provider.hpp>

#include <mutex>
#include <random>

namespace zkr {

struct service_provider::state {
    std::mutex mutex;
    detail::down_instances down;
    detail::choice_state choice;
    std::mt19937_64 random{std::random_device{}()};
    std::vector<const service_instance*> usable;  // reused: no allocation per call

    explicit state(const down_instance_policy& p) : down(p.error_threshold, p.timeout) {}

    // The enabled instances of `all` not down now (under mutex), into usable.
    void select(const std::vector<service_instance>& all) {
        const auto now = std::chrono::steady_clock::now();
        usable.clear();
        for (const auto& i : all)
            if (i.enabled && !down.is_down(i.id, now)) usable.push_back(&i);
    }
};

namespace {

detail::choice_strategy choice_of(provider_strategy s) {
    switch (s) {
    case provider_strategy::random: return detail::choice_strategy::random;
    case provider_strategy::sticky: return detail::choice_strategy::sticky;
    case provider_strategy::round_robin: break;
    }
    return detail::choice_strategy::round_robin;
}

}  // namespace

service_provider::service_provider(client& c, const std::string& base_path, const std::string& name, provider_strategy strategy,
                                   down_instance_policy policy)
    : cache_(c, base_path, name), strategy_(strategy), state_(std::make_unique<state>(policy)) {
    if (policy.error_threshold < 1 || policy.timeout.count() < 0)
        throw zkr::error(make_error_code(errc::invalid_argument), {},
                         "down_instance_policy: error_threshold must be at least 1 and timeout not negative");
}

service_provider::~service_provider() = default;

std::optional<service_instance> service_provider::get_instance() {
    const auto all = cache_.snapshot();  // kept alive while its instances are pointed at
    std::lock_guard lock(state_->mutex);
    state_->select(*all);
    const auto index = detail::choose(choice_of(strategy_), state_->choice, state_->usable, state_->random());
    if (!index) return std::nullopt;
    return *state_->usable[*index];
}

std::vector<service_instance> service_provider::get_all_instances() {
    const auto all = cache_.snapshot();
    std::lock_guard lock(state_->mutex);
    state_->select(*all);
    std::vector<service_instance> out;
    out.reserve(state_->usable.size());
    for (const auto* i : state_->usable) out.push_back(*i);
    return out;
}

void service_provider::note_error(const service_instance& instance) {
    std::lock_guard lock(state_->mutex);
    state_->down.note_error(instance.id, std::chrono::steady_clock::now());
}

}  // namespace zkr
