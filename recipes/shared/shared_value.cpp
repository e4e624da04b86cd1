// zkr::shared_value: a value_view (value_view.hpp) of the node's bytes.
#include <zkr/shared_value.hpp>

#include "value_view.hpp"

namespace zkr {

struct shared_value::state : detail::value_view<detail::bytes_codec> {
    using value_view::value_view;
};

shared_value::shared_value(client& c, std::string path, std::string seed)
    : path_(std::move(path)), state_(std::make_shared<state>(c, path_, detail::bytes_codec{}, "shared value", "a value")) {
    state_->open(seed);
}

shared_value::~shared_value() { state_->close(); }

std::string shared_value::value() const { return state_->current().first; }

versioned_value shared_value::versioned() const {
    auto [value, version] = state_->current();
    return {version, std::move(value)};
}

void shared_value::set_value(std::string value) { state_->set(std::move(value)); }

bool shared_value::try_set_value(const versioned_value& previous, std::string value) {
    if (versioned() != previous) return false;
    return state_->try_set(previous.version, std::move(value));
}

state_subscription shared_value::add_listener(std::function<void(const versioned_value&)> listener) {
    if (!listener) throw zkr::error(make_error_code(errc::invalid_argument), path_, "shared value listener is empty");
    return state_->subscribe([l = std::move(listener)](const std::string& v, std::int32_t version) { l(versioned_value{version, v}); });
}

}  // namespace zkr
