// What the simulated clients' faults reached in a world's runs (test/sim/sim_clients.hpp): each
// world's outcome carries one, and its test requires its share of each.
#pragma once

#include <string>

namespace zkr::sim {

/// How far a world's runs took the simulated clients' faults (each world's test requires its
/// share of each, so that a change to the world cannot quietly lose one).
struct client_reach {
    long read_only = 0;    ///< connections made to a read-only server
    long refused = 0;      ///< writes a read-only server refused
    long reordered = 0;    ///< reconnections that sent retried requests out of order
    long lookups = 0;      ///< protected creates' recovery lookups applied
    long adopted = 0;      ///< nodes a recovery adopted
    long lookups_behind = 0;  ///< lookups a read-only server, behind the quorum, answered without the node
    long replies_lost = 0;          ///< replies of applied requests lost with their connection
    long drops_losing_replies = 0;  ///< drops that lost more than one reply
    long events_again = 0;          ///< watch events lost with their connection, fired again after it
    long ended_in_doubt = 0;        ///< sessions that ended while a reply lost with their connection was unanswered

    client_reach& operator+=(const client_reach& o) {
        read_only += o.read_only;
        refused += o.refused;
        reordered += o.reordered;
        lookups += o.lookups;
        adopted += o.adopted;
        lookups_behind += o.lookups_behind;
        replies_lost += o.replies_lost;
        drops_losing_replies += o.drops_losing_replies;
        events_again += o.events_again;
        ended_in_doubt += o.ended_in_doubt;
        return *this;
    }
    std::string describe() const {
        return std::to_string(read_only) + " read-only connections (" + std::to_string(refused) + " writes refused), " +
               std::to_string(reordered) + " reconnections with retries out of order, " + std::to_string(lookups) +
               " protected creates' lookups (" + std::to_string(adopted) + " nodes adopted, " + std::to_string(lookups_behind) + " missed on a read-only server behind), " + std::to_string(replies_lost) +
               " replies lost with their connection (" + std::to_string(drops_losing_replies) + " drops lost more than one), " +
               std::to_string(events_again) + " watch events fired again after a drop, " + std::to_string(ended_in_doubt) +
               " sessions ended with a lost reply's request in doubt";
    }
};

}  // namespace zkr::sim
