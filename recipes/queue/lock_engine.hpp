// The lock engine: carries out one lock machine's actions and feeds every reply, watch event,
// connection change and timer back in. The machine speaks ZooKeeper's vocabulary
// (zk_lock_machine.hpp: zk::op out, zk::event in), so the engine sends each request the same
// way (send_op) and knows no lock protocol; what it does for the lock is the recipe's side of the
// outcomes: the caller's handlers, the hold, the observer, and this client's own nodes.
#pragma once

#include "../core/client_nodes.hpp"
#include "../core/event_inbox.hpp"
#include "../core/timer_slots.hpp"
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

/// One acquisition and, once granted, its hold. Everything but the constructor runs on the
/// network thread. Kept alive by itself while the acquire is in progress, then by its hold while
/// the recipe keeps that or a release is under way, and by the requests, watches and timers it
/// has out (each completion holds it).
class lock_engine : public std::enable_shared_from_this<lock_engine> {
public:
    lock_engine(std::shared_ptr<lock_driver> driver, acquire_request req, acquire_handler done);
    /// Whatever let go of the last reference (a closed client drops its watches, and with them the
    /// engine they kept alive), the callers are answered: nobody waits for ever.
    ~lock_engine();

    void start();
    /// One event into the machine; its actions are carried out before the next event goes in.
    void feed(zk_lock_input e);
    /// The caller releases the hold; done hears the delete's outcome (or why nothing was sent).
    void release(release_handler done);

private:
    void carry_out(zk_lock_action&& a);
    void carry_out(zk::op&& op);
    void carry_out(const lock_out::queued& a);
    void carry_out(const lock_out::waiting& a);
    void carry_out(const lock_out::granted& a);
    void carry_out(const lock_out::not_granted& a);
    void carry_out(const lock_out::revocation_requested& a);
    void carry_out(const lock_out::hold_changed& a);
    void carry_out(const lock_out::release_done& a);
    void carry_out(const lock_out::notice& a);
    void start_timer(const zk::after& t);
    void timer_due(zk::ticket id);
    void complete(const boost::system::error_code& ec, std::shared_ptr<hold> h);
    void forget_create_in_flight();
    void wind_down();
    // Tells the client's observer, if there is one (client_options::observer).
    void observe(hold_event_kind kind, std::chrono::steady_clock::duration duration = {}, lost_cause cause = lost_cause::none);

    std::shared_ptr<lock_driver> driver_;  // before machine_: the machine points at its rule
    zkr::client& client_;
    zk_lock_machine machine_;
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
    event_inbox<zk_lock_input> inbox_;
    timer_slots timers_;  // the acquire's deadline, the own-node watch's delay
    std::uint64_t observer_ = 0;
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
