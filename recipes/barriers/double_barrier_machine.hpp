// The decisions of one member of a double barrier, as a value: events in, actions out, on zk_ops.
// Curator's DistributedDoubleBarrier layout: each member is an ephemeral node PATH/<its id>, and
// PATH/ready (persistent) says that enough have entered.
//
// Enter: make our node, then check: `ready` there (exists, with a watch) lets us through; else the
// members are counted (getChildren, `ready` left out), and a count of at least N makes `ready`
// and lets us through. Otherwise the ready watch wakes us and we check again from the start:
// a wake-up alone never lets us through (Curator's passed on one, GH-1290).
//
// Leave: list the members. None left: delete `ready`, and we have left. Only ours: delete it and
// list again. We are the lowest: watch the highest; otherwise delete ours (once) and watch the
// lowest; each watch's event, or its node already gone, lists again. So nobody leaves while a
// member that entered has not begun to leave (its node is still there).
//
// Between enter and leave the member is kept: a new session after a lost one makes our node
// again (it died with the old session), so a slow member is not left behind while it is away
// for longer than a session. A session lost while entering fails the enter (session_expired):
// the others may have counted us and gone through meanwhile, and nothing would tell us. Giving up (a timeout) deletes our node, so a member that stopped
// waiting is never counted later (CURATOR-80, CURATOR-318), and ends with gave_up. A failed
// request is sent again once connected; the client's close ends the member with closed.
#pragma once

#include "../core/zk_ops.hpp"

#include <cstddef>
#include <string>
#include <variant>
#include <vector>

namespace zkr::detail {

namespace double_barrier_in {
/// Enter (from idle).
struct enter {};
/// Leave (once entered).
struct leave {};
/// Stop the enter or leave under way (its timeout): our node is deleted, then gave_up.
struct give_up {};
}  // namespace double_barrier_in

namespace double_barrier_out {
/// Enough members entered: enter is done.
struct entered {};
/// Every member's node is gone: leave is done.
struct left {};
/// give_up is done: our node is deleted (or died with its session).
struct gave_up {};
/// The member cannot go on: closed (the client closed; our node, if any, is left to its
/// session), session_expired (the session was lost while entering; our node is gone), or the
/// server refused a request for good (no permission).
struct failed {
    boost::system::error_code ec;
};
}  // namespace double_barrier_out

class double_barrier_machine {
public:
    using input = std::variant<double_barrier_in::enter, double_barrier_in::leave, double_barrier_in::give_up, zk::reply, zk::watch_fired,
                               zk::timer_due, zk::connection_changed>;
    using action = std::variant<zk::op, double_barrier_out::entered, double_barrier_out::left, double_barrier_out::gave_up,
                                double_barrier_out::failed>;

    /// path: the barrier's; id: our node's name under it (not "ready"); members: N.
    double_barrier_machine(std::string path, std::string id, std::size_t members);

    std::vector<action> resume(const input& e);

    enum class phase { idle, entering, entered, leaving, giving_up, done };
    phase current() const noexcept { return phase_; }

private:
    // The one request of ours in flight (with a watch, for exists of ready or a member).
    enum class step { none, make_node, check_ready, count, make_ready, list, remove_own, watch_member, remove_ready };

    void on(const double_barrier_in::enter&);
    void on(const double_barrier_in::leave&);
    void on(const double_barrier_in::give_up&);
    void on(const zk::reply& r);
    void on(const zk::watch_fired& w);
    void on(const zk::timer_due&) {}  // (it sets no timer)
    void on(const zk::connection_changed& c);

    void go_on();  // the phase's next request, from what we know now
    void send(step s, zk::op op);
    void pass_enter();
    void give_up(const boost::system::error_code& why);
    void on_members(std::vector<std::string> children);
    void finish(action outcome);

    const std::string path_, ready_, own_;
    const std::string id_;
    const std::size_t members_;
    std::vector<action>* out_ = nullptr;
    phase phase_ = phase::idle;
    phase giving_up_from_ = phase::idle;  // the phase give_up came in (a pass still counts while entering)
    boost::system::error_code giving_up_why_;  // set: giving up ends with failed{why}, not gave_up
    step step_ = step::none;
    zk::ticket last_ticket_ = 0;
    zk::ticket pending_ = 0;  // the request in flight
    zk::ticket watch_ = 0;    // the exists whose watch we wait on (ready, or another member)
    bool node_ = false;       // our node exists (made, and its session not lost since)
    bool maybe_node_ = false; // a create of our node was sent on this session, and no delete since
    bool connected_ = true;   // (as far as the machine has heard; requests queue meanwhile)
    bool owed_ = false;       // a request failed with the connection: go on once connected
};

}  // namespace zkr::detail
