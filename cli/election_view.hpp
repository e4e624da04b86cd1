// What `zkr elect --observe` reads of an election at each change: its leader, from whatever state
// the election's path is in (missing, appearing, empty, busy), always leaving a watch that fires
// at the next change of the queue.
#pragma once

#include <boost/system/error_code.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace zkr::cli {

/// The reads the view needs, each with a watch (the real one is the client; the unit test's fakes
/// change the tree between two reads).
struct election_reads {
    virtual ~election_reads() = default;
    /// getChildren of path with a children watch; ec no_node when path does not exist.
    virtual std::vector<std::string> list(const std::string& path, boost::system::error_code& ec) = 0;
    /// exists of path with a watch (on its creation when missing); true when it exists.
    virtual bool exists(const std::string& path, boost::system::error_code& ec) = 0;
    /// getData of a participant's node (no watch); nullopt when it is gone.
    struct node_data {
        std::string data;
        std::int64_t czxid = 0;
    };
    virtual std::optional<node_data> read(const std::string& node_path) = 0;
};

/// The leader seen: empty node when nobody leads (or the path does not exist).
struct election_seen {
    std::string leader, node;
    std::int64_t epoch = 0;
    std::size_t participants = 0;
};

/// Reads the election at `path` (a leader latch's queue, else a leader selector's mutex queue).
/// Leaves a children watch on path, or, while path does not exist, a watch on its creation. A
/// path made between the listing and the exists is listed again: the exists' data watch alone
/// would never fire for the participants that join (issue 43: an observer started just before the
/// election went silent for ever). Throws boost::system::system_error on any other error.
election_seen look_at_election(election_reads& reads, const std::string& path);

}  // namespace zkr::cli
