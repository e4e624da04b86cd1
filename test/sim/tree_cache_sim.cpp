#include "tree_cache_sim.hpp"

#include "../../recipes/cache/tree_cache_machine.hpp"
#include "zk_client_sim.hpp"

#include <zkr/path.hpp>

#include <algorithm>
#include <climits>
#include <deque>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <tuple>

namespace zkr::sim::tree {

namespace {

using detail::tree_cache_machine;
namespace zk = detail::zk;

const std::string root = "/t";
constexpr int deepest = 3;  // the operator's nodes go at most this far below the root

struct client {
    int id = 0;
    std::int64_t session = 0;
    bool connected = true;
    int max_depth = INT_MAX;
    std::size_t window = 1000;  // the machine's most reads in flight
    std::size_t in_flight = 0;  // reads it sent whose reply it has not had
    std::deque<zk::op> outbound;                       // not applied yet (retried across drops)
    std::deque<tree_cache_machine::input> inbound;     // replies and events, in order
    std::deque<tree_cache_machine::input> stashed;     // watch events while disconnected
    std::optional<tree_cache_machine> m;
    std::map<std::string, cached_node> replica;        // what its events built
    std::map<std::string, std::int64_t> removed_czxid;  // by path: the czxid last removed
    int initialized = 0;
    std::int64_t started_at = 0;  // the server's last zxid when the cache started
};

struct route {
    int client = 0;
    std::int64_t session = 0;
    zk::ticket ticket = 0;
};

std::string path_of(const zk::op& op) {
    return std::visit([](const auto& o) {
        if constexpr (requires { o.path; }) return o.path;
        else return std::string();
    }, op);
}

const char* op_name(const zk::op& op) {
    static constexpr const char* names[] = {"getData", "exists", "getChildren", "create", "setData", "delete", "timer"};
    return names[op.index()];
}

int depth_of(const std::string& path) {
    return path == root ? 0 : static_cast<int>(std::count(path.begin() + static_cast<std::ptrdiff_t>(root.size()), path.end(), '/'));
}

class world {
public:
    world(const schedule& s, bool traced) : s_(s), rng_(s.seed ^ 0x9e3779b9u) {
        out_.traced = traced;
        out_.kept_steps = 400;
        if (!s.root_missing) {
            make(root);
            for (int i = 0, n = static_cast<int>(pick(6)); i < n; ++i) create_somewhere();
        }
        changes_left_ = s.changes;
        faults_left_ = s.faults;
        for (int i = 0; i < s.clients; ++i) {
            client c;
            c.id = i;
            c.session = zk_.open_session();
            const int depths[] = {0, 1, 2, INT_MAX};
            c.max_depth = depths[pick(4)];
            const std::size_t windows[] = {1, 2, 5, 1000};
            c.window = windows[pick(4)];
            c.m.emplace(detail::tree_cache_config{root, c.max_depth, true, c.window});
            clients_.push_back(std::move(c));
        }
        for (auto& c : clients_) {
            c.started_at = zk_.last_zxid();
            // The engine subscribes to the connection before it feeds start: a change may come first.
            if (pick(4) == 0) feed(c, zk::connection_changed{connection_state::connected, c.session});
            feed(c, detail::tree_in::start{c.session});
        }
    }

    outcome run() {
        while (out_.ok) {
            if (++out_.steps > 300000) {
                out_.violate("no quiescence after 300000 steps");
                break;
            }
            if (!step()) break;
        }
        if (out_.ok) check_quiescent();
        return std::move(out_);
    }

private:
    bool step() {
        if (faults_left_ == 0) heal();
        std::vector<std::pair<int, int>> choices;  // (what, client): 0 apply, 1 deliver, 2 operator
        for (auto& c : clients_) {
            if (c.connected && !c.outbound.empty()) choices.push_back({0, c.id});
            if (!c.inbound.empty()) choices.push_back({1, c.id});
        }
        if (changes_left_ > 0) choices.push_back({2, 0});
        if (faults_left_ > 0 && (choices.empty() || pick(100) < 5)) return fault(), true;
        if (choices.empty()) return false;
        const auto [what, id] = choices[pick(choices.size())];
        auto& c = clients_[static_cast<std::size_t>(id)];
        if (what == 0) apply(c);
        else if (what == 1) deliver(c);
        else change();
        return true;
    }

    // ---- the server and the client -------------------------------------------------------------
    void apply(client& c) {
        auto op = std::move(c.outbound.front());
        c.outbound.pop_front();
        const auto watch_id = ++next_watch_;
        const auto ticket = std::visit([](const auto& o) { return o.id; }, op);
        routes_[watch_id] = {c.id, c.session, ticket};
        auto r = apply_op(zk_, c.session, op, watch_id);
        out_.note("c" + std::to_string(c.id) + " applied #" + std::to_string(ticket) + " " +
                  path_of(op) + (r.ec ? " " + r.ec.message() : ""));
        if (!r.ec && !r.children.empty()) {
            std::string names;
            for (const auto& n : r.children) names += " " + n;
            out_.note("  children:" + names + (r.stat ? " (czxid " + std::to_string(r.stat->czxid) + ")" : ""));
        } else if (!r.ec && r.stat) {
            out_.note("  czxid " + std::to_string(r.stat->czxid) + " v" + std::to_string(r.stat->version));
        }
        c.inbound.push_back(std::move(r));
        route_fired();
    }

    void route_fired() {
        for (const auto& f : zk_.take_fired()) {
            const auto it = routes_.find(f.watch_id);
            if (it == routes_.end()) continue;
            auto& c = clients_[static_cast<std::size_t>(it->second.client)];
            if (c.session != it->second.session) continue;
            zk::watch_fired w{it->second.ticket, f.type};
            if (c.connected) c.inbound.push_back(w);
            else c.stashed.emplace_back(std::in_place_type<zk::watch_fired>, w);
        }
    }

    void deliver(client& c) {
        auto e = std::move(c.inbound.front());
        c.inbound.pop_front();
        feed(c, e);
    }

    void feed(client& c, const tree_cache_machine::input& e) {
        const bool reconnection = std::holds_alternative<zk::connection_changed>(e);
        if (std::holds_alternative<zk::reply>(e)) --c.in_flight;
        const auto known = c.m->known();
        std::size_t reads = 0;
        for (auto& a : c.m->resume(e)) {
            if (auto* op = std::get_if<zk::op>(&a)) {
                out_.note("c" + std::to_string(c.id) + " asks #" + std::to_string(std::visit([](const auto& o) { return o.id; }, *op)) + " " +
                          op_name(*op) + " " + path_of(*op));
                ++reads;
                ++out_.reads;
                if (++c.in_flight > c.window)
                    out_.violate("c" + std::to_string(c.id) + " has " + std::to_string(c.in_flight) + " reads in flight, over its window of " + std::to_string(c.window));
                c.outbound.push_back(std::move(*op));
            } else {
                check_event(c, std::get<cache_event>(a));
            }
        }
        // No storm: a reconnection reads each node known (shown, or listed and not read yet) at
        // most once for its data and once for its children.
        if (reconnection && reads > 2 * known)
            out_.violate("c" + std::to_string(c.id) + " sent " + std::to_string(reads) + " reads on a reconnection, knowing " + std::to_string(known) + " nodes");
        if (out_.ok && c.m->view() != c.replica) out_.violate("c" + std::to_string(c.id) + "'s view is not what its events built");
    }

    // ---- the checker, at each event ------------------------------------------------------------
    void check_event(client& c, const cache_event& e) {
        ++out_.events;
        const auto who = "c" + std::to_string(c.id) + " ";
        out_.note(who + event_name(e.type) + " " + e.path + (e.node ? " czxid " + std::to_string(e.node->stat.czxid) + " v" + std::to_string(e.node->stat.version) : ""));
        switch (e.type) {
            case cache_event_type::initialized:
                if (++c.initialized > 1) return out_.violate(who + "initialized twice");
                return check_complete(c);
            case cache_event_type::suspended: case cache_event_type::reconnected: case cache_event_type::lost: return;
            case cache_event_type::added: case cache_event_type::updated: {
                if (!e.node) return out_.violate(who + "an event without its node: " + e.path);
                const auto& n = *e.node;
                if (!history_.count({e.path, n.stat.czxid, n.stat.version, n.data}))
                    return out_.violate(who + "shows " + e.path + " at czxid " + std::to_string(n.stat.czxid) + " version " + std::to_string(n.stat.version) +
                                        " with data '" + n.data + "', a state the server never had");
                if (depth_of(e.path) > c.max_depth) return out_.violate(who + "shows " + e.path + ", below its depth limit");
                const auto shown = c.replica.find(e.path);
                if (e.type == cache_event_type::added) {
                    if (shown != c.replica.end()) return out_.violate(who + "added " + e.path + ", which it shows already");
                    if (e.path != root && !c.replica.count(std::string(parent_path(e.path))))
                        return out_.violate(who + "added " + e.path + " without its parent");
                    if (const auto r = c.removed_czxid.find(e.path); r != c.removed_czxid.end() && n.stat.czxid <= r->second)
                        return out_.violate(who + "added " + e.path + " at czxid " + std::to_string(n.stat.czxid) + " after removing czxid " + std::to_string(r->second));
                } else {
                    if (shown == c.replica.end()) return out_.violate(who + "updated " + e.path + ", which it does not show");
                    if (shown->second.stat.czxid != n.stat.czxid) return out_.violate(who + "updated " + e.path + " to another node");
                    if (n.stat.version <= shown->second.stat.version)
                        return out_.violate(who + "updated " + e.path + " from version " + std::to_string(shown->second.stat.version) + " to " + std::to_string(n.stat.version));
                }
                c.replica[e.path] = n;
                return;
            }
            case cache_event_type::removed: {
                const auto shown = c.replica.find(e.path);
                if (shown == c.replica.end()) return out_.violate(who + "removed " + e.path + ", which it does not show");
                if (!e.node || *e.node != shown->second) return out_.violate(who + "removed " + e.path + " with another node than it showed");
                const auto below = c.replica.upper_bound(e.path);
                if (below != c.replica.end() && below->first.rfind(e.path + "/", 0) == 0)
                    return out_.violate(who + "removed " + e.path + " before " + below->first);
                c.removed_czxid[e.path] = shown->second.stat.czxid;
                c.replica.erase(shown);
                return;
            }
        }
    }

    // Initialized only after a full read: every node that was there, with all its ancestors,
    // from the cache's start until now (the same czxid all along) was read, so it is shown.
    void check_complete(const client& c) {
        const auto since = [&](const std::string& path) {
            const node* n = zk_.find(path);
            return n && n->czxid <= c.started_at;
        };
        for (const auto& path : subtree()) {
            if (depth_of(path) > c.max_depth) continue;
            bool throughout = true;
            for (auto p = path; throughout; p = std::string(parent_path(p))) {
                throughout = since(p);
                if (p == root) break;
            }
            if (throughout && !c.replica.count(path))
                return out_.violate("c" + std::to_string(c.id) + " initialized without " + path + ", there since before its start");
        }
    }

    static const char* event_name(cache_event_type t) {
        static constexpr const char* names[] = {"added", "updated", "removed", "initialized", "suspended", "reconnected", "lost"};
        return names[static_cast<int>(t)];
    }

    // ---- the operator ----------------------------------------------------------------------------
    // Every state a node had: (path, czxid, version, data).
    void record(const std::string& path) {
        if (const node* n = zk_.find(path)) history_.insert({path, n->czxid, n->version, n->data});
    }

    void make(const std::string& path) {
        const auto data = "d" + std::to_string(pick(3));
        const auto made = zk_.create_persistent(std::string(parent_path(path)), std::string(node_name(path)), data);
        if (made.code == rc::ok) record(path);
    }

    std::vector<std::string> subtree() const {
        std::vector<std::string> paths;
        if (!zk_.find(root)) return paths;
        paths.push_back(root);
        for (auto& p : zk_.descendants(root)) paths.push_back(std::move(p));
        return paths;
    }

    // A child of a node (few names, so that names come back after a deletion).
    void create_somewhere() {
        auto nodes = subtree();
        std::erase_if(nodes, [](const std::string& p) { return depth_of(p) >= deepest; });
        if (nodes.empty()) return;
        const auto parent = nodes[pick(nodes.size())];
        const char* names[] = {"a", "b", "c"};
        const auto path = join_path(parent, names[pick(3)]);
        if (zk_.find(path)) return;
        out_.note("operator creates " + path);
        make(path);
    }

    void remove_subtree(const std::string& path) {
        auto under = zk_.descendants(path);
        std::sort(under.begin(), under.end(), [](const std::string& a, const std::string& b) { return depth_of(a) > depth_of(b); });
        for (const auto& p : under) zk_.remove(p);
        zk_.remove(path);
        route_fired();
    }

    void change() {
        --changes_left_;
        ++out_.changes;
        const auto nodes = subtree();
        if (nodes.empty()) {
            out_.note("operator makes the root again");
            make(root);
            return route_fired();
        }
        const auto path = nodes[pick(nodes.size())];
        switch (pick(6)) {
            case 0: case 1: create_somewhere(); break;
            case 2: case 3:
                out_.note("operator writes " + path);
                zk_.set_data(path, "d" + std::to_string(pick(3)));  // (the same data again, sometimes: a new version)
                record(path);
                break;
            case 4:
                out_.note("operator deletes " + path + " and what is under it");
                remove_subtree(path);
                break;
            default:
                // Deleted and made again at once, as one burst the caches may see only the end of.
                out_.note("operator deletes " + path + " and makes it again");
                remove_subtree(path);
                make(path);
                break;
        }
        route_fired();
    }

    // ---- faults ----------------------------------------------------------------------------------
    void fault() {
        --faults_left_;
        ++out_.faults;
        auto& c = clients_[pick(clients_.size())];
        switch (pick(3)) {
            case 0: {
                if (!c.connected) return reconnect(c);
                out_.note("c" + std::to_string(c.id) + " disconnected");
                c.connected = false;
                for (auto it = c.outbound.begin(); it != c.outbound.end();) {
                    if (pick(2) == 0) {
                        ++it;
                        continue;
                    }
                    zk::reply failed;
                    failed.id = std::visit([](const auto& o) { return o.id; }, *it);
                    failed.ec = make_error_code(errc::connection_loss);
                    c.inbound.push_back(failed);
                    it = c.outbound.erase(it);
                }
                c.inbound.push_back(zk::connection_changed{connection_state::suspended, c.session});
                return;
            }
            case 1: return c.connected ? void() : reconnect(c);
            default: {
                out_.note("c" + std::to_string(c.id) + " session expired");
                std::vector<zk::watch_fired> ended;
                for (const auto id : zk_.watches_of(c.session))
                    if (const auto it = routes_.find(id); it != routes_.end()) ended.push_back({it->second.ticket, watch_event_type::not_watching});
                for (const auto& e : c.stashed)
                    if (const auto* w = std::get_if<zk::watch_fired>(&e)) ended.push_back({w->id, watch_event_type::not_watching});
                zk_.expire(c.session);
                c.session = zk_.open_session();
                // Requests not yet applied fail with the session (the connection fails them).
                for (const auto& op : c.outbound) {
                    zk::reply failed;
                    failed.id = std::visit([](const auto& o) { return o.id; }, op);
                    failed.ec = make_error_code(errc::session_expired);
                    c.inbound.push_back(failed);
                }
                c.outbound.clear();
                c.connected = true;
                c.stashed.clear();
                c.inbound.push_back(zk::connection_changed{connection_state::lost, 0});
                for (const auto& w : ended) c.inbound.push_back(w);
                c.inbound.push_back(zk::connection_changed{connection_state::connected, c.session});
                return;
            }
        }
    }

    void reconnect(client& c) {
        out_.note("c" + std::to_string(c.id) + " reconnected");
        c.connected = true;
        c.inbound.push_back(zk::connection_changed{connection_state::reconnected, c.session});
        for (auto& w : c.stashed) c.inbound.push_back(std::move(w));
        c.stashed.clear();
    }

    void heal() {
        for (auto& c : clients_)
            if (!c.connected) reconnect(c);
    }

    // ---- the checker at quiescence -------------------------------------------------------------
    void check_quiescent() {
        if (changes_left_ > 0) return out_.violate("the operator did not finish");
        for (const auto& c : clients_) {
            const auto who = "c" + std::to_string(c.id);
            if (c.initialized != 1) return out_.violate(who + " was initialized " + std::to_string(c.initialized) + " times");
            std::map<std::string, cached_node> server;
            for (const auto& path : subtree()) {
                if (depth_of(path) > c.max_depth) continue;
                const node* n = zk_.find(path);
                cached_node shown{n->data, stat_of(*n)};
                server.emplace(path, shown);
            }
            const auto view = c.m->view();
            for (const auto& [path, n] : server) {
                const auto it = view.find(path);
                if (it == view.end()) return out_.violate(who + " does not show " + path);
                if (it->second.data != n.data || it->second.stat.version != n.stat.version || it->second.stat.czxid != n.stat.czxid)
                    return out_.violate(who + " shows " + path + " at czxid " + std::to_string(it->second.stat.czxid) + " version " +
                                        std::to_string(it->second.stat.version) + ", the server at czxid " + std::to_string(n.stat.czxid) + " version " +
                                        std::to_string(n.stat.version));
            }
            for (const auto& [path, n] : view)
                if (!server.count(path)) return out_.violate(who + " shows " + path + ", which the server does not have");
        }
    }

    std::size_t pick(std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(rng_() % n); }

    const schedule& s_;
    std::mt19937_64 rng_;
    zookeeper zk_;
    std::vector<client> clients_;
    std::map<std::uint64_t, route> routes_;
    std::uint64_t next_watch_ = 0;
    int changes_left_ = 0, faults_left_ = 0;
    std::set<std::tuple<std::string, std::int64_t, std::int32_t, std::string>> history_;
    outcome out_;
};

}  // namespace

schedule draw_schedule(std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    schedule s;
    s.seed = seed;
    s.clients = 1 + static_cast<int>(rng() % 3);
    s.changes = static_cast<int>(rng() % 25);
    s.faults = static_cast<int>(rng() % 10);
    s.root_missing = rng() % 5 == 0;
    return s;
}

std::string describe(const schedule& s) {
    std::ostringstream o;
    o << "seed " << s.seed << ": " << s.clients << " caches, " << s.changes << " changes, " << s.faults << " faults"
      << (s.root_missing ? ", the root missing at the start" : "");
    return o.str();
}

outcome run(const schedule& s, bool traced) { return world(s, traced).run(); }

}  // namespace zkr::sim::tree
