// The decisions of one wait on a distributed barrier, as a value: events in, actions out, on
// zk_ops. The barrier is a node (Curator's DistributedBarrier): the wait passes once the node is
// seen absent, and only then: an exists that answers "no node" is the one proof it accepts.
//
// One exists watch on the node is its whole attention. Any event of that watch sends a new exists
// (Curator re-checks on every event too); a watch that ended with its session (not_watching) or a
// check that failed with the connection is sent again once connected. A wake-up alone never passes
// (Curator's double barrier passed on one, GH-1290). The node is persistent: a lost session only
// costs the watch. The wait ends when the client closes (failed, with closed).
#pragma once

#include "../core/zk_ops.hpp"

#include <string>
#include <variant>
#include <vector>

namespace zkr::detail {

namespace barrier_in {
/// The wait begins.
struct start {};
}  // namespace barrier_in

namespace barrier_out {
/// The node was seen absent: the wait is over.
struct passed {};
/// A check found the node: the barrier is set (a wait of one check ends here, not passed).
struct seen_set {};
/// The wait cannot go on (the client closed): ec says why.
struct failed {
    boost::system::error_code ec;
};
}  // namespace barrier_out

class barrier_machine {
public:
    using input = std::variant<barrier_in::start, zk::reply, zk::watch_fired, zk::timer_due, zk::connection_changed>;
    using action = std::variant<zk::op, barrier_out::passed, barrier_out::seen_set, barrier_out::failed>;

    explicit barrier_machine(std::string path) : path_(std::move(path)) {}

    std::vector<action> resume(const input& e);

    bool done() const noexcept { return phase_ == phase::done; }

private:
    enum class phase { idle, waiting, done };

    void on(const barrier_in::start&);
    void on(const zk::reply& r);
    void on(const zk::watch_fired& w);
    void on(const zk::timer_due&) {}  // (it sets no timer)
    void on(const zk::connection_changed& c);

    void check();
    void finish(std::vector<action>::value_type outcome);

    std::string path_;
    std::vector<action>* out_ = nullptr;
    phase phase_ = phase::idle;
    bool connected_ = true;      // (as far as the machine has heard; requests queue meanwhile)
    bool check_later_ = false;   // a check is owed once connected
    zk::ticket last_ticket_ = 0;
    zk::ticket check_ = 0;       // the exists in flight
    zk::ticket watch_ = 0;       // the exists whose watch is set
};

}  // namespace zkr::detail
