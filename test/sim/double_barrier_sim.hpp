// Deterministic simulation of the double barrier: K members, each a real double_barrier_machine
// (recipes/barriers/double_barrier_machine.hpp) on a simulated client of its own (sim_clients.hpp),
// all K needed (N = K). Each begins to enter at a random moment and, once entered, to leave at a
// later one; in some schedules members give up (a timeout) while entering, entered or leaving:
// the give-up comes from another thread, so the machine may enter meanwhile, and then, as the
// recipe does, the member gives up again from inside that outcome (its engine queues it).
// Connections drop, sessions expire, replies are lost with their connection, and the server reaps
// the barrier's container parent when it is empty. The checkers:
// - `ready` is made only after at least N members were in at once (began to enter, and had not
//   given up or failed): nobody passes enter before N are in;
// - a member leaves only when every member that entered has begun to leave or to give up, or
//   lost its session since it entered (its node was gone meanwhile: the one known gap);
// - an entered member, connected and settled, has its node (made again after a lost session);
// - a member that gave up has no node left, nor one whose enter failed: only an enter may fail,
//   with session_expired (its session was lost while entering);
// - with no give-ups and no failed enter, at quiescence every member has entered and left, and nothing is left under
//   the barrier (no member that arrived waits for ever; no node leaks).
#pragma once

#include "client_reach.hpp"
#include "verdict.hpp"

#include <cstdint>
#include <string>

namespace zkr::sim::double_barriers {

struct schedule {
    std::uint64_t seed = 0;
    int members = 2;
    int faults = 0;
    bool give_ups = false;  ///< members may give up
};

struct outcome : verdict {
    long faults = 0, entered = 0, left = 0, gave_up = 0, failed = 0, lost_replies = 0;
    long entered_after_giving_up = 0;  ///< entered after its call gave up: withdrew from inside the outcome
    client_reach clients;  ///< the simulated clients' faults reached
};

schedule draw_schedule(std::uint64_t seed);
std::string describe(const schedule& s);
outcome run(const schedule& s, bool traced = false);

}  // namespace zkr::sim::double_barriers
