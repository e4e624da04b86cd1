// Revocation's revoker side: Curator's signal written to the holders' nodes. A revocable hold reads
// it through its own-node watch (the lock machine's revocation_asked news, recipes/lock_machine.hpp).
#include "../queue/lock_driver.hpp"
#include "../queue/queue_kinds.hpp"

#include <zkr/client.hpp>
#include <zkr/path.hpp>
#include <zkr/revocation.hpp>

namespace zkr {

using boost::system::error_code;

namespace {

[[noreturn]] void refuse(errc code, const std::string& path, const std::string& what) {
    throw zkr::error(make_error_code(code), path, "revoke " + printable_path(path) + ": " + what);
}

// Writes the signal; false when the node is gone (its holder left meanwhile).
bool ask(client& c, const std::string& node) {
    error_code ec;
    c.set_data(node, revocation_signal, -1, ec);
    if (ec == errc::no_node) return false;
    detail::throw_if(ec, node, "writing the revocation signal to " + printable_path(node));
    return true;
}

}  // namespace

std::vector<std::string> revoke(client& c, const std::string& lock_path) {
    detail::check_lock_path(lock_path, c.options().name_space);
    error_code ec;
    const auto children = c.get_children(lock_path, ec).children;
    if (ec == errc::no_node) refuse(errc::lock_not_held, lock_path, "nothing holds it (no such node)");
    detail::throw_if(ec, lock_path, "listing the lock " + printable_path(lock_path));
    // The holders of the first revocable kind found, counted by the kind's own rule.
    std::vector<std::string> holders;
    for (const auto& kind : queue_kinds()) {
        if (!kind.revocable) continue;
        const auto queue = queue_of_kind(kind, children);
        if (queue.empty()) continue;
        const auto n = kind.observer(queue)->holders(queue);
        holders.assign(queue.begin(), queue.begin() + static_cast<std::ptrdiff_t>(n));
        break;
    }
    if (holders.empty()) {
        for (const auto& child : children)
            if (const auto* kind = kind_of_node(child); kind && !kind->revocable)
                refuse(errc::invalid_argument, lock_path, "it is a " + std::string(kind->name) + ": only mutexes and read-write locks are revocable");
        refuse(errc::lock_not_held, lock_path, "nothing holds it");
    }
    std::vector<std::string> asked;
    for (const auto& name : holders)
        if (auto node = join_path(lock_path, name); ask(c, node)) asked.push_back(std::move(node));
    if (asked.empty()) refuse(errc::lock_not_held, lock_path, "its holder left before the request reached it");
    return asked;
}

void revoke(client& c, const std::string& lock_path, const std::string& node) {
    detail::check_lock_path(lock_path, c.options().name_space);
    const auto full = node.empty() || node.front() != '/' ? join_path(lock_path, node) : node;
    if (parent_path(full) != lock_path) refuse(errc::invalid_argument, lock_path, "the node " + node + " is not one of its nodes");
    if (!ask(c, full)) refuse(errc::lock_not_held, lock_path, "the node " + printable_path(full) + " is gone");
}

}  // namespace zkr
