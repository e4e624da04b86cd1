// What every engine of a lock acquisition does around its machine, whoever answers the caller and
// makes the hold: the acquire's start, the caller's releases and their answers, this client's
// registry of the acquire's nodes (client_nodes), and the wind-down once the machine is finished.
// lock_engine is the one on the real connection (the hold, the observer, the log); the lock
// simulation runs another on its world's port (test/sim/lock_sim.cpp), so that this part is the
// code it checks, not a copy of it.
#pragma once

#include "../core/basic_zk_engine.hpp"
#include "../core/client_nodes.hpp"
#include "zk_lock_machine.hpp"

#include <zkr/detail/unique_function.hpp>

#include <boost/container/small_vector.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

namespace zkr::detail {

using release_handler = unique_function<void(const boost::system::error_code&)>;

/// Derived (CRTP, owned by a shared_ptr; completions_keep_alive as basic_zk_engine asks) provides,
/// for this class alone (a friend):
///   - `void carry_out(Outcome&&)` for each of the machine's outcomes but release_done (queued,
///     waiting, granted, not_granted, revocation_requested, hold_changed, notice);
///   - `const void* nodes_owner() const` (the client its nodes are registered for: client_nodes)
///     and `std::string_view lock_path() const`;
///   - `void wound_down()`: after the machine finished and its engine let go of what it had out.
/// Machine: zk_lock_machine's members (input, action, resume, finished).
template <typename Derived, typename Port = client_port, typename Machine = zk_lock_machine>
class basic_lock_engine : public basic_zk_engine<Machine, Derived, Port> {
    using base = basic_zk_engine<Machine, Derived, Port>;

public:
    /// The caller releases the hold; done hears the delete's outcome (or why nothing was sent). The
    /// machine may answer at once (nothing held, or no connection), or later. A release from a
    /// completion of ours, while the machine's actions are carried out, waits in the inbox for them.
    void release(release_handler done) {
        const auto caller = ++last_caller_;
        releases_.emplace_back(caller, std::move(done));
        this->feed(lock_in::release{caller});
    }

protected:
    basic_lock_engine(Port port, Machine m) : base(std::move(port), std::move(m)) {}
    /// Whatever let go of the last reference, the callers of releases are answered: nobody waits
    /// for ever. (Derived answers its acquire first: its destructor runs before this one.)
    ~basic_lock_engine() {
        for (auto& [caller, done] : std::exchange(releases_, {})) done(make_error_code(errc::closed));  // sim-one-way: releases-at-death
    }

    /// The acquire begins: the machine hears every connection change from now on, then starts
    /// (connected and session: the connection as it is now; elapsed: since the caller asked).
    void start_machine(bool connected, std::int64_t session, std::chrono::milliseconds elapsed) {
        this->observe_connection();
        this->feed(lock_in::start_after{connected, session, elapsed});
    }

private:
    friend base;
    Derived& derived() noexcept { return static_cast<Derived&>(*this); }

    // ---- basic_zk_engine's points ----------------------------------------------------------
    // The machine's own outcomes (its requests and timers are basic_zk_engine's).
    void on_outcome(typename Machine::action&& a) {
        std::visit(
            [this](auto& outcome) {
                using outcome_type = std::decay_t<decltype(outcome)>;
                if constexpr (std::is_same_v<outcome_type, lock_out::release_done>) answer_release(outcome);
                else if constexpr (!std::is_same_v<outcome_type, zk::op>) derived().carry_out(std::move(outcome));
            },
            a);
    }

    void after_events() {
        if (this->machine().finished()) wind_down();
    }

    // Until the create's reply: another acquire of this client may list our node first (a lost
    // reply's recovery takes a while), and must not take it for a stray. (One round trip for the
    // create and the listing: the machine asks for both, and the server applies them in order, so
    // the listing already holds our node.)
    void create_sent() { nodes_.emplace_back(derived().nodes_owner(), client_nodes::create_in_flight(derived().lock_path())); }

    // The create in flight's registration becomes the node's (or goes, when nothing was made).
    // (The machine is not finished while a create is in flight, so the wind-down never clears the
    // registration before the reply: the guard only keeps a broken promise from a bad iterator.)
    void create_answered(const zk::reply& r) {
        const auto lock_path = derived().lock_path();
        const auto in_flight = std::find_if(nodes_.begin(), nodes_.end(),
                                            [&](const client_nodes& n) { return client_nodes::is_create_in_flight(n.path(), lock_path); });
        if (in_flight == nodes_.end())  // sim-one-way: registered-until-answered
            return;                     // sim-unreachable: registered-until-answered
        if (r.ec) nodes_.erase(in_flight);
        else in_flight->rename(r.path);
    }

    // ---- its own ---------------------------------------------------------------------------
    void answer_release(const lock_out::release_done& a) {
        const auto it = std::find_if(releases_.begin(), releases_.end(), [&](const auto& r) { return r.first == a.caller; });
        if (it == releases_.end()) return;
        auto done = std::move(it->second);
        releases_.erase(it);
        done(a.ec);
    }

    // Nothing the machine asked for can matter any more: its nodes are no longer this client's
    // to know, its timers stop, and it hears no more connection changes.
    void wind_down() {
        nodes_.clear();
        this->cancel_timers();
        this->stop_observing();
        derived().wound_down();
    }

    // Our nodes, known to the other acquires of the client until wind-down: the create in flight,
    // then the node (room for both inside).
    boost::container::small_vector<client_nodes, 2> nodes_;
    // The callers of releases not yet answered, by the id the machine echoes in release_done, in
    // the order they asked (room for one inside: a hold is released once, but for misuse).
    boost::container::small_vector<std::pair<std::uint64_t, release_handler>, 1> releases_;
    std::uint64_t last_caller_ = 0;
};

}  // namespace zkr::detail
