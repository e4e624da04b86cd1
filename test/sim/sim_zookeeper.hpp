// An in-memory ZooKeeper for the lock simulation: one server's data tree and sessions, applied
// one request at a time. What the lock protocol relies on, and nothing more: sequential and
// ephemeral nodes owned by sessions, containers, setData, multi with check, one-shot data, exists
// and child watches, and session expiry. Connections, ordering and faults belong to sim_world.
#pragma once

#include <zkr/watch_event.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace zkr::sim {

struct node {
    std::string data;
    std::int32_t version = 0;
    std::int64_t czxid = 0;
    std::int64_t pzxid = 0;  // the zxid of its last child change (its creation's at first)
    std::int64_t owner = 0;  // ephemeral owner; 0: persistent
    bool container = false;
    std::int32_t next_sequence = 0;
};

/// A watch that fired: the world routes it to the watcher's client.
struct fired_watch {
    std::int64_t session = 0;
    std::uint64_t watch_id = 0;
    watch_event_type type = watch_event_type::not_watching;
};

/// One operation of a multi.
struct multi_step {
    enum kind { check, set_data, remove, create } what = check;
    std::string path;
    std::string data;          // set_data, create
    std::int32_t version = -1; // check, set_data, remove: -1, whatever the node's version
    bool ephemeral = false;    // create (its parent must exist, as in a real multi)
};

/// ZooKeeper's return codes, as the C client names them.
enum class rc { ok, no_node, node_exists, not_empty, session_expired, bad_version };

class zookeeper {
public:
    std::int64_t open_session();
    bool alive(std::int64_t session) const { return sessions_.count(session) > 0; }
    /// Ends the session: its ephemeral nodes go, their watchers hear it; its own watches are dropped.
    void expire(std::int64_t session);
    /// The ids of the watches the session has set and that have not fired (data, exists, children).
    std::vector<std::uint64_t> watches_of(std::int64_t session) const;

    struct create_result {
        rc code = rc::ok;
        std::string path;
        node stat;
    };
    /// An ephemeral sequential node `<parent>/<name><%010d>`; missing parents are made as containers.
    create_result create_sequential(std::int64_t session, const std::string& parent, const std::string& name,
                                    const std::string& data);
    /// A plain ephemeral node `<parent>/<name>` (node_exists if it is there); parents as above.
    create_result create_ephemeral(std::int64_t session, const std::string& parent, const std::string& name,
                                   const std::string& data);
    /// A persistent node `<parent>/<name>` (node_exists if it is there); parents as above.
    create_result create_persistent(const std::string& parent, const std::string& name, const std::string& data);
    /// Any kind of node: `<parent>/<name>`, with a sequence suffix when sequential, owned by session
    /// when ephemeral; parents as above.
    create_result create(std::int64_t session, const std::string& parent, const std::string& name, const std::string& data,
                         bool sequential, bool ephemeral = true);
    /// A protected create's recovery: a child of parent whose name starts with prefix.
    std::optional<create_result> find_protected(const std::string& parent, const std::string& prefix) const;
    std::optional<std::vector<std::string>> children(const std::string& path) const;
    /// getChildren with a watch: set only when the node exists; it fires node_children_changed when
    /// a child is created or deleted, node_deleted when the node itself goes.
    std::optional<std::vector<std::string>> watch_children(const std::string& path, std::int64_t session, std::uint64_t watch_id);
    /// getData or exists; with a watch_id, the watch is set (exists sets it on a missing node too).
    const node* read(const std::string& path, std::int64_t session, std::uint64_t watch_id, bool exists_watch);
    /// version -1: whatever the node's version; else bad_version unless it is that one.
    rc set_data(const std::string& path, const std::string& data, std::int32_t version = -1);
    /// version -1: whatever the node's version; else bad_version unless it is that one (checked
    /// before the children, as the server does).
    rc remove(const std::string& path, std::int32_t version = -1);
    /// All or nothing: the first failing step's code, and nothing changed (no watch fired).
    rc multi(std::int64_t session, const std::vector<multi_step>& steps);
    /// Puts back a deleted node as it was, as servers that lost its delete do (a re-election that
    /// drops committed transactions: docs/reliability.md). no_node unless its parent is there and
    /// its owner's session lives; node_exists if the path is taken. Its watchers hear it created.
    rc restore(const std::string& path, const node& n);
    /// Removes every empty container (the server's periodic check).
    void reap_containers();

    const node* find(const std::string& path) const;
    /// The zxid of the last write applied.
    std::int64_t last_zxid() const { return zxid_; }
    /// Every node's path under (not including) `path`.
    std::vector<std::string> descendants(const std::string& path) const;
    /// The watches that fired since the last call.
    std::vector<fired_watch> take_fired() { return std::exchange(fired_, {}); }

private:
    void fire(const std::string& path, watch_event_type type);
    void fire_children(const std::string& path, watch_event_type type);
    void add_node(const std::string& path, node n);
    void erase_node(const std::string& path);

    std::map<std::string, node> nodes_{{"/", node{}}};
    std::set<std::int64_t> sessions_;
    std::int64_t next_session_ = 0x1000;
    std::int64_t zxid_ = 0;
    struct watch {
        std::int64_t session;
        std::uint64_t id;
    };
    std::map<std::string, std::vector<watch>> watches_;        // data and exists watches, by path
    std::map<std::string, std::vector<watch>> child_watches_;  // by the watched parent's path
    std::vector<fired_watch> fired_;
};

}  // namespace zkr::sim
