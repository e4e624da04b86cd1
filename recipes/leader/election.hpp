// What a leader latch and a leader selector share: a lock core on one kind of node, joined
// untimed in the background; the phases that start() and close() move through; the current
// term's hold; and the reads every participant answers the same way. Each recipe adds only what a
// term means to it (a latch's listeners, a selector's take_leadership thread).
#pragma once

#include "../queue/lock_core.hpp"

#include <zkr/hold_state.hpp>

#include <boost/system/error_code.hpp>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace zkr::detail {

class election {
public:
    enum class phase { idle, started, closed };

    /// recipe: "leader_latch" or "leader_selector", the start of every misuse message.
    /// participant: this participant's id (its node's data); empty: host:pid.
    election(zkr::client& c, std::string path, queue_kind kind, std::string participant, std::string_view recipe);

    lock_core core;
    const std::string id;
    mutable std::mutex m;
    phase now = phase::idle;      ///< under m
    std::shared_ptr<hold> term;   ///< under m: the current term's hold

    /// Throws invalid_argument: "<recipe>: <what>".
    [[noreturn]] void misuse(std::string_view what) const;
    /// start() (under m): refuses a second start, and a start after close(); then started.
    void begin_start();
    /// close() (under m): refuses a close before start() or a second one; then closed, and a
    /// queued acquire leaves (its node removed).
    void begin_close();
    /// Whether start() ran and close() did not: a destructor closes then.
    bool started() const;
    /// The outcome of the background acquire, taken under `lock` (of m): false when the election
    /// no longer wants it (closed meanwhile: a granted hold is released, unlocked), or when it was
    /// cancelled by close(); true when the recipe goes on with it.
    bool wanted(std::unique_lock<std::mutex>& lock, const boost::system::error_code& ec, const std::shared_ptr<hold>& h);

    /// The current term's token; lock_not_held without a term.
    std::int64_t fencing_token() const;
    /// The current term's state as its caller sees it; released without a term.
    hold_state state() const;
    std::vector<std::string> participants() const { return core.participant_data(); }
    std::string leader() const { return core.leader_data(); }
    std::shared_ptr<hold> current_term() const;

private:
    std::string_view recipe_;
};

}  // namespace zkr::detail
