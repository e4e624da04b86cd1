#include <zkr/hold_view.hpp>

#include "lock_driver.hpp"  // stopped_token

namespace zkr {

hold_state hold_view::state() const noexcept { return hold_ ? hold_->caller_state() : hold_state::released; }

std::int64_t hold_view::fencing_token() const {
    if (!hold_) detail::throw_if(make_error_code(errc::lock_not_held), {}, "this hold_view views no hold");
    return hold_->fencing_token();
}

std::string hold_view::node_path() const { return hold_ ? hold_->node_path() : std::string(); }

std::stop_token hold_view::stop_token() const noexcept { return hold_ ? hold_->stop_token() : detail::stopped_token(); }

}  // namespace zkr
