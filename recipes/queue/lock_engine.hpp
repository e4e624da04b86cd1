// The lock engine: one lock machine on basic_lock_engine (the acquire's start, the releases, the
// client's registry of its nodes, the wind-down), itself on basic_zk_engine, which feeds it every
// reply, watch event, connection change and timer and sends its requests (zk_lock_machine.hpp:
// zk::op out, zk::event in), as it does any machine's. What it adds is the recipe's side of the
// outcomes on the real connection: the caller's handlers, the hold, the observer and the log; and
// its lifetime, which rests on the acquire, the hold and what it has out, not on an owner.
#pragma once

#include "basic_lock_engine.hpp"
#include "lock_driver.hpp"

#include <chrono>
#include <memory>
#include <optional>
#include <string_view>

namespace zkr::detail {

// (A base of its own, first: the machine points at the driver's rule, so the driver is made before
// the machine and goes after it.)
struct lock_driver_ref {
    std::shared_ptr<lock_driver> driver_;
};

/// One acquisition and, once granted, its hold. Everything but the constructor runs on the
/// network thread. Kept alive by itself while the acquire is in progress, then by its hold while
/// the recipe keeps that or a release is under way, and by the requests, watches and timers it
/// has out (each completion holds it: completions_keep_alive).
class lock_engine : private lock_driver_ref, public basic_lock_engine<lock_engine> {
public:
    static constexpr bool completions_keep_alive = true;

    lock_engine(std::shared_ptr<lock_driver> driver, acquire_request req, acquire_handler done);
    /// Whatever let go of the last reference (a closed client drops its watches, and with them the
    /// engine they kept alive), the callers are answered: nobody waits for ever.
    ~lock_engine();

    void start();

private:
    friend class basic_lock_engine<lock_engine>;
    // basic_lock_engine's points.
    const void* nodes_owner() const noexcept { return &client(); }
    std::string_view lock_path() const noexcept { return driver_->path(); }
    void wound_down() { releasing_.reset(); }
    zkr::client& client() const noexcept { return port_.client(); }

    void carry_out(lock_out::queued&& a);
    void carry_out(const lock_out::waiting& a);
    void carry_out(lock_out::granted&& a);
    void carry_out(const lock_out::not_granted& a);
    void carry_out(const lock_out::revocation_requested& a);
    void carry_out(const lock_out::hold_changed& a);
    void carry_out(const lock_out::notice& a);
    void complete(const boost::system::error_code& ec, std::shared_ptr<hold> h);
    // Tells the client's observer, if there is one (client_options::observer).
    void observe(hold_event_kind kind, std::chrono::steady_clock::duration duration = {}, lost_cause cause = lost_cause::none);

    acquire_handler done_;
    std::function<void(const std::string&)> on_queued_;
    unique_function<void()> on_waiting_;
    std::chrono::steady_clock::time_point asked_at_;  // what a timeout counts from
    // For the observer: our node, how many were ahead when it last heard, when the hold began.
    std::string node_path_;
    std::optional<std::size_t> observed_ahead_;
    std::chrono::steady_clock::time_point granted_at_;
    std::chrono::steady_clock::time_point doubtful_since_;  // the hold's last turn to doubtful
    std::int64_t token_ = 0;

    // From start() until the acquire's outcome is known: see start().
    std::shared_ptr<lock_engine> acquiring_self_;
    std::weak_ptr<hold> hold_;
    // Set while a release is under way: the recipe may let go of the hold with the delete still
    // pending, and its listeners must still hear `released`. The hold keeps this engine alive.
    std::shared_ptr<hold> releasing_;
};

}  // namespace zkr::detail
