// One hold as its recipe sees it (private to the recipes: users see lock_hold and hold_view).
#pragma once

#include "../../src/listener_registry.hpp"

#include <zkr/client.hpp>
#include <zkr/hold_state.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <vector>

namespace zkr::detail {

class lock_engine;  // carries out the lock machine's actions; recipes/lock_engine.hpp

/// A recipe's hold listeners (its add_listener's), attached to every hold it is granted: asked on
/// the network thread whether anyone listens, called on the callback thread. One weak pointer per
/// hold, where a pair of functions cost five allocations per lock cycle for nobody listening.
class hold_listener_hub {
public:
    virtual bool any() const = 0;
    virtual void call(hold_state s) const = 0;

protected:
    ~hold_listener_hub() = default;
};

/// One hold as its recipe sees it: our node, its fencing token, our session, and the hold's
/// state. The lock engine behind it decides on the network thread (recipes/lock_machine.hpp) and
/// publishes each state here; listeners run on the client's callback thread.
class hold : public std::enable_shared_from_this<hold> {
public:
    hold(zkr::client& c, std::string node_path, std::int64_t fencing_token, std::int64_t session_id,
         std::shared_ptr<lock_engine> engine);
    ~hold();

    const std::string& node_path() const noexcept { return node_path_; }
    zkr::client& get_client() const noexcept { return client_; }
    std::int64_t fencing_token() const noexcept { return token_; }
    std::int64_t session_id() const noexcept { return session_; }
    /// The state the engine acts on (it changes on the network thread).
    hold_state state() const noexcept { return state_.load(); }
    /// The state a caller may act on: as state(), except that held reads doubtful while the
    /// connection has been silent past the C client's receive timeout. A process that was paused
    /// (SIGSTOP, a VM or GC pause) may run again before its network thread has seen the silence,
    /// and its session may have expired meanwhile: it must not act as the holder then.
    hold_state caller_state() const noexcept;
    /// Why the hold was lost (none while it was not).
    lost_cause cause() const noexcept { return cause_.load(); }
    /// Stop is requested once the hold ends: lost (session ended, node deleted or written by
    /// someone else, client closed) or released. Requested on the client's callback thread, so
    /// std::stop_callback functions run there, never on the network thread. Doubt (connection
    /// suspended) does not request it: the hold may come back.
    std::stop_token stop_token() const noexcept;

    /// fn runs once, on the client's callback thread, when a revocation request reaches this hold
    /// (at once, posted, when one reached it before). The hold's stop is requested just before.
    /// A revocable recipe sets it on every hold it is granted.
    void on_revocation(std::function<void()> fn);

    /// fn runs on the callback thread after each state change. listening, if given, is asked on the
    /// network thread first: while it says no, nothing is posted (a recipe attaches its listener
    /// hub to every hold; most have no user listener, and a post wakes the callback thread twice
    /// per lock cycle).
    std::uint64_t add_listener(std::function<void(hold_state)> fn, std::function<bool()> listening = {});
    void remove_listener(std::uint64_t id);
    /// The recipe's hub: called after each state change while it lives and has listeners, before
    /// the listeners above. One per hold (a later one replaces it).
    void attach_hub(std::weak_ptr<const hold_listener_hub> hub);

    /// A multi that commits only while this hold's node exists on this hold's session.
    std::vector<multi_result> guarded_multi(std::vector<multi_op> ops, boost::system::error_code& ec);
    /// The same over several holds (a multi-lock's members): commits only while every one's node
    /// exists on its session. They must share one client and one session (invalid_argument).
    static std::vector<multi_result> guarded_multi(const std::vector<const hold*>& holds, std::vector<multi_op> ops,
                                                   boost::system::error_code& ec);

private:
    friend class lock_engine;
    friend class lock_driver;  // hands a release to the engine
    // Network thread only: the engine publishes the machine's decision.
    void set_state(hold_state s, lost_cause cause = lost_cause::none);
    void request_stop();
    // Network thread: the machine read a revocation request on our node (once per hold). On the
    // callback thread, the stop is requested, though the hold stays held until its holder releases,
    // and the revocation listener runs.
    void revocation_requested();
    void tell_revocation();  // callback thread

    zkr::client& client_;
    std::string node_path_;
    std::int64_t token_;
    std::int64_t session_;
    // Keeps the engine (and with it the machine) alive while the recipe keeps this hold; the
    // engine holds only a weak pointer back.
    std::shared_ptr<lock_engine> engine_;
    std::atomic<hold_state> state_{hold_state::held};
    std::atomic<lost_cause> cause_{lost_cause::none};  // set before state_ becomes lost
    // Only a hold whose token was taken requests its stop (a post to the callback thread per
    // release would wake it once per lock cycle, which W2 showed costs 8%). stop_wanted_ and
    // state_ are seq_cst: of a token taken while the hold ends, at least one side sees the other.
    // The source is made when first wanted (want_stop: a stop source allocates its state, and most
    // holds never give out a token), once, under stop_mutex_, before stop_wanted_ is set: whoever
    // reads stop_wanted_ true may use it.
    void want_stop() const;
    mutable std::mutex stop_mutex_;
    mutable std::stop_source stop_{std::nostopstate};
    mutable std::atomic<bool> stop_wanted_{false};
    struct listener {
        std::function<void(hold_state)> fn;
        std::function<bool()> listening;
    };
    // Shared, so that a state change's snapshot copies pointers, not the two functions (a lock
    // cycle's two state changes made six allocations for a listener that was not listening).
    listener_registry<std::shared_ptr<const listener>> listeners_;
    std::mutex hub_mutex_;
    std::weak_ptr<const hold_listener_hub> hub_;  // under hub_mutex_
    std::mutex revocation_mutex_;
    std::function<void()> on_revocation_;  // under revocation_mutex_, with the two below
    bool revocation_asked_ = false;
    bool revocation_told_ = false;
};

/// Tells the client's observer that a term of leadership on `election_path` began (gained) or
/// ended, with h's token as its epoch; an ended term's cause comes from h's state (a loss, doubt,
/// or none when given up).
/// failure: what take_leadership threw, for a term that ended so (empty otherwise).
void observe_leadership(const hold& h, const std::string& election_path, bool gained, std::string failure = {});

}  // namespace zkr::detail
