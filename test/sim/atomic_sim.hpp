// Deterministic simulation of the atomic long: K clients, each running the real
// atomic_long_machine (recipes/atomic/atomic_long_machine.hpp) on a simulated client of its own
// (sim_clients.hpp), each doing a few operations one after another: adds of +1, +2 or -1, gets,
// and compare-and-sets and sets from the value it last saw; with few optimistic tries, so that operations
// run out of them and, in some schedules, are promoted to a lock (the world's own: one holder at a
// time, as an ephemeral node of the holder's session, granted or refused at random). Connections
// drop, sessions expire, replies are lost with their connection and resent by the client, as the
// connection does them, and a write whose connection failed may still be applied later, while its
// session lives (sim_clients::late_applies: production's ensemble does that, the other worlds do
// not need it); receipts are ephemeral, or durable (outlive a session) in some schedules.
// The checkers, against what the server applied:
// - exactly once: an operation answered "succeeded" had exactly one of its writes applied, one
//   answered "not succeeded" none, ever (also later: a write in doubt is fenced first); none
//   had two;
// - an operation may fail as unknown (session_expired) only with an ephemeral receipt;
// - the answer's values are the applied write's (pre and post);
// - a write sent under the promotion lock is applied only while that lock's node exists;
// - at quiescence every operation has its answer, no promotion lock is held, and the value is the
//   start plus every applied change.
#pragma once

#include "client_reach.hpp"
#include "verdict.hpp"

#include <cstdint>
#include <string>

namespace zkr::sim::atomic {

struct schedule {
    std::uint64_t seed = 0;
    int clients = 2;
    int operations = 3;  ///< each client's
    int faults = 0;
    unsigned optimistic_tries = 2;
    bool promote = false;
    bool durable = false;  ///< receipts outlive a session
    bool storm = false;    ///< faults every few steps; late writes come during faults, and the session expires
};

struct outcome : verdict {
    long faults = 0, succeeded = 0, not_succeeded = 0, unknown = 0, promoted = 0, lost_replies = 0, late_writes = 0;
    client_reach clients;  ///< the simulated clients' faults reached
};

schedule draw_schedule(std::uint64_t seed);
std::string describe(const schedule& s);
outcome run(const schedule& s, bool traced = false);

}  // namespace zkr::sim::atomic
