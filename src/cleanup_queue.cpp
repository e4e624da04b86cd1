#include "cleanup_queue.hpp"

#include <zkr/error.hpp>
#include <zkr/path.hpp>

#include <algorithm>

namespace zkr::detail {

void cleanup_queue::keep_delete(std::string path, std::int32_t version) {
    deletes_.push_back({std::move(path), version});
}

cleanup_queue::delete_outcome cleanup_queue::delete_answered(const std::string& path, const boost::system::error_code& ec) {
    // The next reconnection tries again; a read-only server's refusal, the next read-write one.
    if (is_retryable(ec) || ec == errc::not_read_only) return delete_outcome::retry_later;
    std::erase_if(deletes_, [&](const pending_delete& d) { return d.path == path; });
    return !ec || ec == errc::no_node ? delete_outcome::done : delete_outcome::gave_up;
}

void cleanup_queue::add_orphan(orphan o) { orphans_.push_back(std::move(o)); }

const std::vector<cleanup_queue::orphan>& cleanup_queue::orphans_to_look_for(std::int64_t session) {
    std::erase_if(orphans_, [&](const orphan& o) { return o.ephemeral && o.session != session; });
    return orphans_;
}

std::vector<std::string> cleanup_queue::orphan_listed(const std::string& parent, std::string_view prefix,
                                                      const boost::system::error_code& ec,
                                                      const std::vector<std::string_view>& children) {
    if (is_retryable(ec)) return {};  // the next reconnection looks again
    std::erase_if(orphans_, [&](const orphan& o) { return o.parent == parent && o.prefix == prefix; });
    std::vector<std::string> found;
    if (ec) return found;  // the parent is gone, and the node with it
    for (const auto child : children) {
        if (!child.starts_with(prefix)) continue;
        found.push_back(join_path(parent, child));
        keep_delete(found.back(), -1);
    }
    return found;
}

std::size_t cleanup_queue::drop_all() noexcept {
    const auto left = deletes_.size();
    deletes_.clear();
    orphans_.clear();
    return left;
}

}  // namespace zkr::detail
