#include "sim_zookeeper.hpp"

#include <cstdio>
#include <utility>

namespace zkr::sim {

namespace {
std::string parent_of(const std::string& path) {
    const auto slash = path.rfind('/');
    return slash == 0 ? "/" : path.substr(0, slash);
}
std::string child_path(const std::string& parent, const std::string& name) {
    return parent == "/" ? "/" + name : parent + "/" + name;
}
bool is_child(const std::string& parent, const std::string& path) {
    return path != parent && parent_of(path) == parent;
}
}  // namespace

std::int64_t zookeeper::open_session() {
    const auto s = ++next_session_;
    sessions_.insert(s);
    return s;
}

void zookeeper::expire(std::int64_t session) {
    if (!sessions_.erase(session)) return;
    std::vector<std::string> gone;
    for (const auto& [path, n] : nodes_)
        if (n.owner == session) gone.push_back(path);
    for (const auto& path : gone) erase_node(path);
    for (auto* table : {&watches_, &child_watches_})
        for (auto& [path, list] : *table) std::erase_if(list, [&](const watch& w) { return w.session == session; });
    std::erase_if(fired_, [&](const fired_watch& f) { return f.session == session; });
}

std::vector<std::uint64_t> zookeeper::watches_of(std::int64_t session) const {
    std::vector<std::uint64_t> ids;
    for (const auto* table : {&watches_, &child_watches_})
        for (const auto& [path, list] : *table)
            for (const auto& w : list)
                if (w.session == session) ids.push_back(w.id);
    return ids;
}

zookeeper::create_result zookeeper::create_sequential(std::int64_t session, const std::string& parent,
                                                      const std::string& name, const std::string& data) {
    return create(session, parent, name, data, true);
}

zookeeper::create_result zookeeper::create_ephemeral(std::int64_t session, const std::string& parent,
                                                     const std::string& name, const std::string& data) {
    return create(session, parent, name, data, false);
}

zookeeper::create_result zookeeper::create_persistent(const std::string& parent, const std::string& name, const std::string& data) {
    return create(0, parent, name, data, false, false);
}

zookeeper::create_result zookeeper::create(std::int64_t session, const std::string& parent, const std::string& name,
                                           const std::string& data, bool sequential, bool ephemeral) {
    if (ephemeral && !alive(session)) return {rc::session_expired};
    // Missing parents, as containers (zkr's create_parents).
    std::vector<std::string> missing;
    for (auto p = parent; !nodes_.count(p); p = parent_of(p)) missing.push_back(p);
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
        node c;
        c.container = true;
        c.czxid = ++zxid_;
        add_node(*it, c);
    }
    auto& dir = nodes_.at(parent);
    char seq[16] = {};
    if (sequential) std::snprintf(seq, sizeof seq, "%010d", dir.next_sequence++);
    const auto path = child_path(parent, name + seq);
    if (nodes_.count(path)) return {rc::node_exists};
    node n;
    n.data = data;
    n.czxid = ++zxid_;
    n.owner = ephemeral ? session : 0;
    add_node(path, n);
    return {rc::ok, path, n};
}

std::optional<zookeeper::create_result> zookeeper::find_protected(const std::string& parent, const std::string& prefix) const {
    const auto from = child_path(parent, prefix);
    for (auto it = nodes_.lower_bound(from); it != nodes_.end() && it->first.compare(0, from.size(), from) == 0; ++it)
        if (is_child(parent, it->first)) return create_result{rc::ok, it->first, it->second};
    return std::nullopt;
}

std::optional<std::vector<std::string>> zookeeper::children(const std::string& path) const {
    if (!nodes_.count(path)) return std::nullopt;
    std::vector<std::string> out;
    const auto from = path == "/" ? std::string("/") : path + "/";
    for (auto it = nodes_.lower_bound(from); it != nodes_.end() && it->first.compare(0, from.size(), from) == 0; ++it)
        if (is_child(path, it->first)) out.push_back(it->first.substr(from.size()));
    return out;
}

std::optional<std::vector<std::string>> zookeeper::watch_children(const std::string& path, std::int64_t session,
                                                                  std::uint64_t watch_id) {
    auto out = children(path);
    if (out) child_watches_[path].push_back({session, watch_id});
    return out;
}

const node* zookeeper::read(const std::string& path, std::int64_t session, std::uint64_t watch_id, bool exists_watch) {
    const node* n = find(path);
    // getData sets no watch on a missing node; exists does (it fires on creation).
    if (watch_id && (n || exists_watch)) watches_[path].push_back({session, watch_id});
    return n;
}

rc zookeeper::set_data(const std::string& path, const std::string& data, std::int32_t version) {
    const auto it = nodes_.find(path);
    if (it == nodes_.end()) return rc::no_node;
    if (version >= 0 && it->second.version != version) return rc::bad_version;
    it->second.data = data;
    ++it->second.version;
    ++zxid_;
    fire(path, watch_event_type::node_data_changed);
    return rc::ok;
}

rc zookeeper::remove(const std::string& path, std::int32_t version) {
    const auto it = nodes_.find(path);
    if (it == nodes_.end() || path == "/") return rc::no_node;
    if (version >= 0 && it->second.version != version) return rc::bad_version;
    if (!descendants(path).empty()) return rc::not_empty;
    ++zxid_;
    erase_node(path);
    return rc::ok;
}

rc zookeeper::restore(const std::string& path, const node& n) {
    if (nodes_.count(path)) return rc::node_exists;
    if (!nodes_.count(parent_of(path)) || (n.owner != 0 && !alive(n.owner))) return rc::no_node;
    ++zxid_;
    add_node(path, n);
    return rc::ok;
}

rc zookeeper::multi(std::int64_t session, const std::vector<multi_step>& steps) {
    // Applied in turn on the real tree; a failing step puts back what the steps before it changed.
    const auto nodes = nodes_;
    const auto watches = watches_;
    const auto child_watches = child_watches_;
    const auto fired = fired_.size();
    const auto zxid = zxid_;
    const auto step_rc = [&](const multi_step& s) {
        switch (s.what) {
            case multi_step::check: {
                const node* n = find(s.path);
                return !n ? rc::no_node : s.version >= 0 && n->version != s.version ? rc::bad_version : rc::ok;
            }
            case multi_step::set_data: return set_data(s.path, s.data, s.version);
            case multi_step::remove: return remove(s.path, s.version);
            case multi_step::create: {
                const auto parent = parent_of(s.path);
                if (!find(parent)) return rc::no_node;
                return create(session, parent, s.path.substr(s.path.rfind('/') + 1), s.data, false, s.ephemeral).code;
            }
        }
        return rc::ok;
    };
    for (const auto& s : steps) {
        if (const auto code = step_rc(s); code != rc::ok) {
            nodes_ = nodes;
            watches_ = watches;
            child_watches_ = child_watches;
            fired_.resize(fired);
            zxid_ = zxid;
            return code;
        }
    }
    return rc::ok;
}

void zookeeper::reap_containers() {
    std::vector<std::string> empty;
    for (const auto& [path, n] : nodes_)
        if (n.container && descendants(path).empty()) empty.push_back(path);
    for (const auto& path : empty) erase_node(path);
}

const node* zookeeper::find(const std::string& path) const {
    const auto it = nodes_.find(path);
    return it == nodes_.end() ? nullptr : &it->second;
}

std::vector<std::string> zookeeper::descendants(const std::string& path) const {
    std::vector<std::string> out;
    const auto from = path == "/" ? std::string("/") : path + "/";
    for (auto it = nodes_.lower_bound(from); it != nodes_.end() && it->first.compare(0, from.size(), from) == 0; ++it)
        if (it->first != path) out.push_back(it->first);
    return out;
}

void zookeeper::fire(const std::string& path, watch_event_type type) {
    const auto it = watches_.find(path);
    if (it == watches_.end()) return;
    for (const auto& w : it->second) fired_.push_back({w.session, w.id, type});
    watches_.erase(it);  // one-shot
}

void zookeeper::fire_children(const std::string& path, watch_event_type type) {
    const auto it = child_watches_.find(path);
    if (it == child_watches_.end()) return;
    for (const auto& w : it->second) fired_.push_back({w.session, w.id, type});
    child_watches_.erase(it);  // one-shot
}

void zookeeper::add_node(const std::string& path, node n) {
    n.pzxid = n.czxid;
    nodes_.emplace(path, std::move(n));
    if (const auto parent = nodes_.find(parent_of(path)); parent != nodes_.end()) parent->second.pzxid = zxid_;
    fire(path, watch_event_type::node_created);
    fire_children(parent_of(path), watch_event_type::node_children_changed);
}

void zookeeper::erase_node(const std::string& path) {
    nodes_.erase(path);
    if (const auto parent = nodes_.find(parent_of(path)); parent != nodes_.end()) parent->second.pzxid = zxid_;
    fire(path, watch_event_type::node_deleted);
    fire_children(path, watch_event_type::node_deleted);
    fire_children(parent_of(path), watch_event_type::node_children_changed);
}

}  // namespace zkr::sim
