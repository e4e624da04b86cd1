// The fault suite's history: what each worker process did and saw, and the checker that proves the
// five properties of issue 5 from it. The checker is pure (unit-tested with made-up histories).
//
// Each worker appends lines to its own file (times: CLOCK_MONOTONIC nanoseconds, the same clock in
// every process of the machine, as std::chrono::steady_clock):
//   session  <t> <id> <password hex>                 on every new session
//   grant    <t_request> <t_granted> <token> <qty>   acquire returned a hold
//   nogrant  <t_request> <t_end> fail|unknown <why>  acquire returned without one
//   read     <t> <token> ok|refused <value>          fenced store read (mutex-like recipes)
//   write    <t> <token> accepted|refused            fenced store write of the value read + 1
//   confirm  <t_send> <t_recv> <token> ok|lost|unknown
//   release  <t> <token> ok|error <hold state before the release>
//   state    <t> <token> <hold state>                  a hold listener heard a change (any time)
//
// A confirm is a guarded multi (a check of our own node, bound to our session, committed through
// the leader). "ok" proves the node existed when the multi committed, so it existed from its
// creation until at least t_send. A hold is therefore proven valid over [t_granted, t_send of its
// last ok confirm]. Two proven intervals that overlap (more than max_holders at once) are a real
// violation: the second grant was decided from a view without the first node, which existed both
// before and after that view.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace zkr::test {

using mono_ns = std::int64_t;

inline mono_ns mono_now() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

struct hold_record {
    int worker = 0;
    std::int64_t token = 0;
    int qty = 1;
    mono_ns requested = 0;
    mono_ns granted = 0;
    std::optional<mono_ns> proven_until;  ///< t_send of the last ok confirm
    std::optional<bool> read_ok;          ///< the fenced read (absent: none made)
    std::optional<bool> write_accepted;
    std::optional<mono_ns> written;  ///< when the write's answer came
    bool released_ok = false;
    std::string state_at_release;  ///< "held", "lost", ... ("" if not released)
    std::optional<mono_ns> released;  ///< when the release returned
    std::vector<std::pair<mono_ns, std::string>> states;  ///< what its hold listener heard, in order
};

struct worker_history {
    int worker = 0;
    std::vector<hold_record> holds;
    int failed_acquires = 0;   ///< returned without a hold, for sure (timeout, cancelled)
    int unknown_acquires = 0;  ///< returned with an error that leaves the outcome open
    int unknown_confirms = 0;
    struct session {
        mono_ns at = 0;
        std::int64_t id = 0;
        std::string password;
    };
    std::vector<session> sessions;
};

/// Parses one worker's file. Lines it cannot read are an error (a torn line would hide a hold).
worker_history parse_history(int worker, const std::vector<std::string>& lines);

struct check_options {
    int max_holders = 1;
    bool mutex_like = true;             ///< one holder: tokens must rise in grant order; a store is used
    std::optional<long> store_value;    ///< the store's final value (mutex_like)
    std::optional<long> store_count;    ///< the store's accepted writes (mutex_like)
    /// Lock caching (mutex_options::cache_hold): a hold taken back from the cache is the same
    /// node, so one worker's successive holds may carry one token; another worker's never may, and
    /// tokens still never fall in grant order (so a repeated token has no other worker's between).
    bool cached_holds = false;
};

struct check_result {
    int holds = 0;         ///< grants seen
    int proven_holds = 0;  ///< grants with an ok confirm: the handoffs checked
    int writes_accepted = 0;
    int writes_refused = 0;
    int holds_lost = 0;  ///< ended in state lost
    int unknown_outcomes = 0;
    int max_concurrent = 0;  ///< the most proven holders at one time (weighted by qty)
    int repeated_tokens = 0;  ///< grants of a token its worker held before (cached_holds: from the cache)
    std::vector<std::string> violations;
};

/// Checks: at most max_holders proven holders at once; tokens unique (cached_holds: to one worker),
/// and (mutex_like) rising in grant order among proven holds (cached_holds: never falling, and equal
/// only for one worker); a proven hold's store access never refused; the store's value
/// equals its accepted writes and the workers' count of them (no lost update).
check_result check_histories(const std::vector<worker_history>& workers, const check_options& options);

/// For liveness: each worker's first grant requested at or after t, or nothing.
std::map<int, std::optional<mono_ns>> first_grant_after(const std::vector<worker_history>& workers, mono_ns t);

}  // namespace zkr::test
