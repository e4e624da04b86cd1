// zkr::group_member: this process as a member of a group, and the group's members (Curator's GroupMember).
#pragma once

#include <zkr/children_cache.hpp>
#include <zkr/client.hpp>
#include <zkr/persistent_node.hpp>

#include <chrono>
#include <map>
#include <string>

namespace zkr {

/**
 * This process's membership of a group, and the members the group has. The member is an ephemeral
 * node `<group_path>/<id>` holding its data, kept by a persistent_node (made again after a deletion
 * or a session loss); the members are the group node's children, kept by a children_cache. The
 * layout of Curator's GroupMember: zkr and Curator processes are members of one group and see each
 * other.
 *
 * Ids must be distinct. A second member with an id already taken (by another process, or by this
 * client's earlier session that the server still keeps: see persistent_node) is not made until the
 * first one goes; it logs a warning meanwhile. (Curator's adopts the other's node and overwrites
 * its data.)
 *
 * Connection loss: current_members() shows what was last read; the cache reads again on
 * reconnection. Session expiry: the member's node is made again on the new session (missing for
 * the time to notice the expiry and one round trip); other members' nodes of ended sessions
 * disappear as the server removes them.
 */
class group_member {
public:
    /// Checks the arguments (zkr::error, nothing sent): a valid group path, an id that is one node
    /// name (not empty, no '/', not "." or ".."), data within the server's limit.
    group_member(client& c, std::string group_path, std::string id, std::string data = {});
    /// Closes (see close()); never throws.
    ~group_member();
    group_member(const group_member&) = delete;
    group_member& operator=(const group_member&) = delete;

    /// Joins: makes the member node and starts reading the members (once).
    void start();
    /// Leaves: deletes the member node (waiting at most `timeout`) and stops reading. Returns true
    /// when the node is known gone (as persistent_node::close says). Later calls do nothing.
    bool close(std::chrono::milliseconds timeout = std::chrono::seconds(10));
    /// New data for this member.
    void set_data(std::string data);
    /// Waits until this member's node exists and the members have been read once; false on
    /// timeout. Throws zkr::error if the member node cannot be made, saying why.
    bool wait_joined(std::chrono::milliseconds timeout);
    /// The members, id -> data, as last read; this member always included, with its own data.
    std::map<std::string, std::string> current_members() const;
    /// listener(event) runs on the callback thread for each member added, updated or removed
    /// (the path of a children_cache event is the member's node), and for the connection's events.
    state_subscription add_listener(std::function<void(const cache_event&)> listener) { return members_.add_listener(std::move(listener)); }
    /// This member's id (its node's name under the group).
    const std::string& id() const noexcept { return id_; }
    /// The group's path.
    const std::string& group_path() const noexcept { return members_.path(); }

private:
    std::string id_;
    persistent_node node_;
    children_cache members_;
};

}  // namespace zkr
