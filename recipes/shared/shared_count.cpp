// zkr::shared_count: a value_view (value_view.hpp) of a count; this file holds only what the count
// adds: its format and its messages.
#include <zkr/shared_count.hpp>

#include "value_view.hpp"

namespace zkr {

namespace {

std::string expected_count(count_format f) {
    return std::string("a count in ") + (f == count_format::decimal_text ? "decimal text" : "4 big-endian bytes (Curator's SharedCount)") +
           " (shared_count_options::format)";
}

}  // namespace

struct shared_count::state : detail::value_view<detail::count_codec> {
    using value_view::value_view;
};

shared_count::shared_count(client& c, std::string path, std::int32_t seed, shared_count_options options)
    : client_(c), path_(std::move(path)), format_(options.format),
      state_(std::make_shared<state>(c, path_, detail::count_codec(format_), "shared count", expected_count(format_))) {
    state_->open(count_to_data(seed, format_));
}

shared_count::~shared_count() { state_->close(); }

std::int32_t shared_count::count() const { return state_->current().first; }

void shared_count::set_count(std::int32_t value) { state_->set(count_to_data(value, format_)); }

bool shared_count::try_set_count(std::int32_t expected, std::int32_t value) {
    const auto [now, version] = state_->current();
    if (now != expected) return false;
    return state_->try_set(version, count_to_data(value, format_));
}

state_subscription shared_count::add_listener(std::function<void(std::int32_t)> listener) {
    if (!listener) throw zkr::error(make_error_code(errc::invalid_argument), path_, "shared count listener is empty");
    return state_->subscribe([l = std::move(listener)](std::int32_t v, std::int32_t) { l(v); });
}

}  // namespace zkr
