#include "election_view.hpp"

#include "../recipes/queue/queue_kinds.hpp"  // the leader by the recipes' own queue

#include <zkr/error.hpp>
#include <zkr/path.hpp>

#include <boost/system/system_error.hpp>

namespace zkr::cli {

election_seen look_at_election(election_reads& reads, const std::string& path) {
    std::vector<std::string> children;
    for (;;) {
        boost::system::error_code ec;
        children = reads.list(path, ec);
        if (!ec) break;
        if (ec != zkr::errc::no_node) throw boost::system::system_error(ec, "listing " + path);
        ec.clear();
        if (!reads.exists(path, ec)) {
            if (ec) throw boost::system::system_error(ec, "watching " + path);
            return {};  // the watch on its creation brings us back
        }
        // Made since the listing: list it, for a watch on its children.
    }
    // The first kind that elects (a leader latch's, a leader selector's) with nodes here.
    std::vector<std::string> queue;
    for (const auto& kind : zkr::queue_kinds())
        if (kind.elects && (queue = zkr::queue_of_kind(kind, children)).size() > 0) break;
    election_seen seen;
    seen.participants = queue.size();
    for (const auto& name : queue) {
        const auto d = reads.read(zkr::join_path(path, name));
        if (!d) continue;  // left meanwhile: the next one leads
        seen.leader = d->data;
        seen.node = name;
        seen.epoch = d->czxid;
        break;
    }
    return seen;
}

}  // namespace zkr::cli
