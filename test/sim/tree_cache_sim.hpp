// Deterministic simulation of the tree cache: K clients each run the real tree_cache_machine
// (recipes/cache/tree_cache_machine.hpp) on the real engine through the simulated clients of
// zk_ops (sim_port.hpp, sim_clients.hpp), each with its own depth limit, while an operator creates, writes and deletes anywhere in the
// subtree (whole subtrees too, the root among them, and makes nodes again under the same names),
// connections drop and sessions expire as the connection makes them (requests retried or failed,
// the old session's watches ended with not_watching: sim_clients.hpp). The checkers:
// - every added or updated node is a state the server had (its czxid, version and data);
// - events are exact differences: added for a path not shown (its parent shown), updated for a
//   higher version of the node shown, removed for a node shown (its descendants removed first);
//   a path's node comes back only with a newer czxid;
// - the machine's view is what its events built, after every step;
// - initialized once, and the reads sent on a reconnection are bounded by the nodes known;
// - at quiescence every cache shows the server's subtree to its depth: paths, data, versions,
//   czxids;
// - one cache may be closed at any moment (its engine stopped, as the recipe stops it; half the
//   time from another thread, its state gone at once and the stop run later, events first): once
//   the stop ran it sends no read and shows no event, and its engine neither observes the
//   connection nor runs a timer.
#pragma once

#include "client_reach.hpp"
#include "verdict.hpp"

#include <cstdint>
#include <string>

namespace zkr::sim::tree {

struct schedule {
    std::uint64_t seed = 0;
    int clients = 1;
    int changes = 10;  ///< the operator's
    int faults = 0;
    bool root_missing = false;  ///< at the start
};

struct outcome : verdict {
    long events = 0, changes = 0, faults = 0, reads = 0;
    long closes = 0;  ///< caches closed with reads or events on their way
    client_reach clients;  ///< the simulated clients' faults reached
};

schedule draw_schedule(std::uint64_t seed);
std::string describe(const schedule& s);
outcome run(const schedule& s, bool traced = false);

}  // namespace zkr::sim::tree
