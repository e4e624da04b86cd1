// Deterministic simulation of the persistent node: K clients each run a few real
// persistent_node_machines (recipes/nodes/persistent_node_machine.hpp) through the simulated clients
// of zk_ops (sim_clients.hpp), in every mode (ephemeral, persistent, their sequential kinds, with
// and without protection, and a TTL node, which the machine touches every half TTL; the in-memory
// server keeps it as a persistent one). Connections drop, sessions expire, replies are lost with their
// connection (the request applied, the reply never heard; retried or failed as the client does),
// a client gives its session up as lost while the server keeps it, with its nodes, for a while (a
// server restarted or cut off past the session timeout; the server ends it later, at the latest
// before quiescence), an operator deletes the nodes, a stranger's ephemeral node takes a node's
// path while it is missing (another process's), and the users give new data and close nodes. The
// checkers:
// - the path listener is told each name the node takes, and what it was told last is the
//   machine's current path, after every step;
// - at quiescence, an open node exists exactly once (a protected one too, whatever replies were
//   lost; an unprotected sequential one whose create lost its reply may leave an extra node, as
//   Curator's does), at the machine's current path, with the data last given, owned by the
//   client's session if ephemeral;
// - at quiescence, a node whose path a stranger holds has not taken it over (it has no path);
// - the moment a close says it is done, nothing of a plain node is left at its path (but a
//   stranger's), a node of a session the client gave up included;
// - at quiescence, a closed node is closed and nothing of it is left (but that same extra node);
// - at quiescence, every stranger's node still exists: no client deleted another process's node
//   (but one made where an operator had deleted a client's node, which a delete of that node on
//   its way may meet: ZooKeeper has no delete conditional on a node's owner);
// - every machine that was started is either open with a node or closed: none gave up.
#pragma once

#include "client_reach.hpp"
#include "verdict.hpp"

#include <cstdint>
#include <string>

namespace zkr::sim::nodes {

struct schedule {
    std::uint64_t seed = 0;
    int clients = 1;
    int nodes = 1;   ///< per client
    int faults = 0;
    int user_steps = 0;  ///< set_data and close calls, among every node
};

struct outcome : verdict {
    long faults = 0, creates = 0, lost_replies = 0, recreated = 0;
    client_reach clients;  ///< the simulated clients' faults reached
};

schedule draw_schedule(std::uint64_t seed);
std::string describe(const schedule& s);
outcome run(const schedule& s, bool traced = false);

}  // namespace zkr::sim::nodes
