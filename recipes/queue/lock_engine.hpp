// The lock engine: one lock machine on basic_zk_engine, which feeds it every reply, watch event,
// connection change and timer and sends its requests (zk_lock_machine.hpp: zk::op out, zk::event
// in), as it does any machine's. What it adds is the recipe's side of the outcomes: the caller's
// handlers, the hold, the observer, and this client's own nodes; and its lifetime, which rests on
// the acquire, the hold and what it has out, not on an owner.
#pragma once

#include "../core/basic_zk_engine.hpp"
#include "../core/client_nodes.hpp"
#include "zk_lock_machine.hpp"

#include "lock_driver.hpp"

#include <boost/container/small_vector.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <vector>

namespace zkr::detail {

using release_handler = unique_function<void(const boost::system::error_code&)>;

// (A base of its own, first: the machine points at the driver's rule, so the driver is made before
// the machine and goes after it.)
struct lock_driver_ref {
    std::shared_ptr<lock_driver> driver_;
};

/// One acquisition and, once granted, its hold. Everything but the constructor runs on the
/// network thread. Kept alive by itself while the acquire is in progress, then by its hold while
/// the recipe keeps that or a release is under way, and by the requests, watches and timers it
/// has out (each completion holds it: completions_keep_alive).
class lock_engine : private lock_driver_ref, public basic_zk_engine<zk_lock_machine, lock_engine> {
public:
    static constexpr bool completions_keep_alive = true;

    lock_engine(std::shared_ptr<lock_driver> driver, acquire_request req, acquire_handler done);
    /// Whatever let go of the last reference (a closed client drops its watches, and with them the
    /// engine they kept alive), the callers are answered: nobody waits for ever.
    ~lock_engine();

    void start();
    /// The caller releases the hold; done hears the delete's outcome (or why nothing was sent).
    void release(release_handler done);

private:
    friend class basic_zk_engine<zk_lock_machine, lock_engine>;
    // basic_zk_engine's points.
    void on_outcome(zk_lock_action&& a);
    void after_events();
    void create_sent();
    void create_answered(const zk::reply& r);
    zkr::client& client() const noexcept { return port_.client(); }

    void carry_out(lock_out::queued&& a);
    void carry_out(const lock_out::waiting& a);
    void carry_out(lock_out::granted&& a);
    void carry_out(const lock_out::not_granted& a);
    void carry_out(const lock_out::revocation_requested& a);
    void carry_out(const lock_out::hold_changed& a);
    void carry_out(const lock_out::release_done& a);
    void carry_out(const lock_out::notice& a);
    void complete(const boost::system::error_code& ec, std::shared_ptr<hold> h);
    void wind_down();
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
    // Our nodes, known to the other acquires of the client until wind-down: the create in flight,
    // then the node (room for both inside).
    boost::container::small_vector<client_nodes, 2> nodes_;
    std::weak_ptr<hold> hold_;
    // Set while a release is under way: the recipe may let go of the hold with the delete still
    // pending, and its listeners must still hear `released`. The hold keeps this engine alive.
    std::shared_ptr<hold> releasing_;
    // The callers of releases not yet answered, by the id the machine echoes in release_done, in
    // the order they asked (room for one inside: a hold is released once, but for misuse).
    boost::container::small_vector<std::pair<std::uint64_t, release_handler>, 1> releases_;
    std::uint64_t last_caller_ = 0;
};

}  // namespace zkr::detail
