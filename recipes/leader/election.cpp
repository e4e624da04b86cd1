#include "election.hpp"

#include <zkr/error.hpp>

namespace zkr::detail {

using boost::system::error_code;

election::election(zkr::client& c, std::string path, queue_kind kind, std::string participant, std::string_view recipe)
    : core(c, std::move(path), std::make_shared<lowest_n_rule>(1, kind)),
      id(participant.empty() ? default_node_data() : std::move(participant)),
      recipe_(recipe) {}

void election::misuse(std::string_view what) const {
    throw zkr::error(make_error_code(errc::invalid_argument), core.path(), std::string(recipe_) + ": " + std::string(what));
}

void election::begin_start() {
    if (now == phase::started) misuse("start() called twice");
    if (now == phase::closed) misuse("start() after close(): a closed " + std::string(recipe_) + " cannot start again");
    now = phase::started;
}

void election::begin_close() {
    if (now == phase::idle) misuse("close() of a " + std::string(recipe_) + " that was never started");
    if (now == phase::closed) misuse("close() called twice");
    now = phase::closed;
    core.driver().cancel();  // a queued acquire leaves (its node removed)
}

bool election::started() const {
    std::lock_guard lock(m);
    return now == phase::started;
}

bool election::wanted(std::unique_lock<std::mutex>& lock, const error_code& ec, const std::shared_ptr<hold>& h) {
    if (now != phase::started) {
        lock.unlock();
        if (h) core.release_quietly(h);  // closed meanwhile
        return false;
    }
    return ec != errc::cancelled;  // (cancelled: close() is on its way)
}

std::int64_t election::fencing_token() const {
    std::lock_guard lock(m);
    if (!term) throw zkr::error(make_error_code(errc::lock_not_held), core.path(), std::string(recipe_) + ": this participant does not lead");
    return term->fencing_token();
}

hold_state election::state() const {
    std::lock_guard lock(m);
    return term ? term->caller_state() : hold_state::released;
}

std::shared_ptr<hold> election::current_term() const {
    std::lock_guard lock(m);
    return term;
}

}  // namespace zkr::detail
