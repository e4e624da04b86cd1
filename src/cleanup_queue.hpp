// The connection's clean-up queue: the nodes it must delete in the background, whatever became of
// the request that made the delete necessary.
//   - A guaranteed delete that failed is retried on every read-write connection until it is done
//     or the server refuses it for good (a wrong version, no permission).
//   - A protected create that gave up may have made its node (its reply lost). Such an orphan is
//     looked for by its prefix, listing the parent on each read-write connection, and a node found
//     becomes a guaranteed delete. An ephemeral orphan of a session that ended needs no search:
//     the server removes it with the session.
// State and decisions only, on the network thread: the connection sends the requests this queue
// names and hands it their answers. Unit-tested without a server (cleanup_queue_test.cpp).
#pragma once

#include <boost/system/error_code.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace zkr::detail {

class cleanup_queue {
public:
    struct pending_delete {
        std::string path;  // full path
        std::int32_t version = -1;
    };
    struct orphan {
        std::string parent;  // full path
        std::string prefix;  // the protected name's prefix, "_c_<uuid>-"
        std::int64_t session = 0;  // the session the create ran on
        bool ephemeral = false;
    };
    /// What a delete's answer settled.
    enum class delete_outcome { retry_later, done, gave_up };

    /// A guaranteed delete that failed: kept until an answer settles it.
    void keep_delete(std::string path, std::int32_t version);
    /// The deletes to send on each read-write connection.
    const std::vector<pending_delete>& deletes() const noexcept { return deletes_; }
    /// A delete's answer (ec: as to_error_code gives it). A retryable error or a read-only server's
    /// refusal keeps it for the next read-write connection; anything else settles it.
    delete_outcome delete_answered(const std::string& path, const boost::system::error_code& ec);

    /// A protected create that gave up, whose node may exist.
    void add_orphan(orphan o);
    /// The orphans to look for, connected on `session`: the ephemeral ones of ended sessions are
    /// dropped first (their nodes went with their sessions).
    const std::vector<orphan>& orphans_to_look_for(std::int64_t session);
    /// The listing of an orphan's parent (children: its names; ec: the listing's error). A retryable
    /// error keeps the orphan for the next read-write connection. Otherwise the orphan is settled,
    /// and the children that carry its prefix (ours: nobody else draws that prefix) become
    /// guaranteed deletes; their full paths are returned, for the connection to send.
    std::vector<std::string> orphan_listed(const std::string& parent, std::string_view prefix,
                                           const boost::system::error_code& ec,
                                           const std::vector<std::string_view>& children);

    /// The connection closes: everything is dropped. Returns how many deletes were not done.
    std::size_t drop_all() noexcept;

private:
    std::vector<pending_delete> deletes_;
    std::vector<orphan> orphans_;
};

}  // namespace zkr::detail
