// Deterministic simulation of the shared count: K clients each run the real count_machine
// (recipes/shared/value_machine.hpp) through the simulated clients of zk_ops (sim_clients.hpp), and
// a worker per client increments the count by compare-and-set from the machine's value and
// version, as shared_count::try_set_count does: it shows its own write once it took, and after a
// conflict reads the node and shows what it read. Connections drop and sessions expire as the
// connection makes them (sim_clients.hpp); an operator rewrites the node or writes a word into it
// that it later puts right (and in some schedules deletes it and makes it again). The checkers:
// compare-and-set never loses an increment: the value counts every write the server applied, the
// ones whose reply was lost with a connection too (schedules without deletions: a deleted and re-made
// node can come back to a version a stale view holds, the ABA that a version cannot tell,
// docs/recipes.md); a view never applies an older version of the same node; at quiescence every
// view shows the server's value and version.
#pragma once

#include "client_reach.hpp"
#include "verdict.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace zkr::sim::count {

struct schedule {
    std::uint64_t seed = 0;
    int clients = 2;
    int increments = 5;  ///< each client's worker
    int faults = 0;
    bool deletions = false;
};

struct outcome : verdict {
    long successes = 0, conflicts = 0, faults = 0, reads = 0;
    long took = 0;  ///< increments the server applied: the successes and those whose reply was lost
    client_reach clients;  ///< the simulated clients' faults reached
};

schedule draw_schedule(std::uint64_t seed);
std::string describe(const schedule& s);
outcome run(const schedule& s, bool traced = false);

}  // namespace zkr::sim::count
