// Deterministic simulation of the distributed barrier's waits: K clients each run a few real
// barrier_machines (recipes/barriers/barrier_machine.hpp) through the simulated clients of zk_ops
// (sim_clients.hpp), while an operator sets and removes the barrier node (and writes to it), and
// connections drop, sessions expire and replies are lost with their connection. Waits begin at
// random moments. The checkers:
// - a wait passes only if the barrier was absent at some moment since it began (a wake-up, a
//   stale reply or a lost watch must never let it through);
// - a wait never fails (the client is never closed here);
// - at quiescence, if the barrier is absent, every wait has passed (none waits for ever).
#pragma once

#include "client_reach.hpp"
#include "verdict.hpp"

#include <cstdint>
#include <string>

namespace zkr::sim::barriers {

struct schedule {
    std::uint64_t seed = 0;
    int clients = 1;
    int waits = 1;   ///< per client, begun at random moments
    int faults = 0;
    int operator_steps = 0;  ///< sets, removes and writes of the barrier node
};

struct outcome : verdict {
    long faults = 0, passed = 0, checks = 0, lost_replies = 0;
    client_reach clients;  ///< the simulated clients' faults reached
};

schedule draw_schedule(std::uint64_t seed);
std::string describe(const schedule& s);
outcome run(const schedule& s, bool traced = false);

}  // namespace zkr::sim::barriers
