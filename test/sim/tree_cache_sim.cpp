#include "tree_cache_sim.hpp"

#include "../../recipes/cache/tree_cache_machine.hpp"
#include "sim_clients.hpp"
#include "sim_port.hpp"

#include <zkr/path.hpp>

#include <fnmatch.h>

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

// What each client runs beside its connection (sim_clients.hpp).
struct client {
    int id = 0;
    int max_depth = INT_MAX;
    std::vector<std::string> skip;  // the cache's skip_names
    std::size_t max_data = 0;       // the cache's max_data (0: none)
    std::size_t window = 1000;  // the machine's most reads in flight
    std::size_t in_flight = 0;  // reads it sent whose reply it has not had
    detail::tree_cache_config config;
    std::optional<sim_engine<tree_cache_machine>> engine;
    std::size_t reads = 0;  // reads sent during the event being fed
    bool closing = false;   // its cache was closed from another thread: the engine's stop is on its way
    bool closed = false;    // its cache was closed (its engine stopped), with reads and events on their way
    std::map<std::string, cached_node> replica;        // what its events built
    std::map<std::string, std::int64_t> removed_czxid;  // by path: the czxid last removed
    int initialized = 0;
    std::int64_t started_at = 0;  // the server's last zxid when the cache started
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
    world(const schedule& s, bool traced) : s_(s), rng_(s.seed ^ 0x9e3779b9u), net_(zk_, rng_, out_) {
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
            c.id = net_.open().id;
            const int depths[] = {0, 1, 2, INT_MAX};
            c.max_depth = depths[pick(4)];
            const std::size_t windows[] = {1, 2, 5, 1000};
            c.window = windows[pick(4)];
            // Skipped names (shell patterns) and a data limit, in some caches.
            const std::vector<std::vector<std::string>> skips = {{}, {}, {"b"}, {"[ac]"}, {"*c"}};
            c.skip = skips[pick(skips.size())];
            const std::size_t limits[] = {0, 0, 3};
            c.max_data = limits[pick(3)];
            c.config = detail::tree_cache_config{root, c.max_depth, true, c.window, c.skip, c.max_data};
            clients_.push_back(std::move(c));
        }
        for (std::size_t i = 0; i < clients_.size(); ++i) {
            auto& c = clients_[i];
            c.started_at = zk_.last_zxid();
            c.engine.emplace(net_, c.id, 0, tree_cache_machine(c.config), [this, i](const tree_cache_machine::action& a) { check_event(clients_[i], std::get<cache_event>(a)); });
            c.engine->link().on_send = [this, i](const zk::op& op) { sent(clients_[i], op); };
            // The engine subscribes to the connection before it posts start: a change may come first.
            const auto session = net_[c.id].session;
            auto& link = c.engine->link();
            link.hold_posts();
            c.engine->start(detail::tree_in::start{session});
            if (pick(4) == 0) feed(c, zk::connection_changed{connection_state::connected, session});
            fed(c, false, [&] { link.run_posts(); });
        }
    }

    outcome run() {
        run_until_quiet(out_, 300000, [this] { return step(); });
        if (out_.ok) check_quiescent();
        out_.clients = net_.reach;
        return std::move(out_);
    }

private:
    bool step() {
        if (faults_left_ == 0) heal();
        std::vector<std::pair<int, int>> choices;  // (what, client): 0 apply, 1 deliver, 2 operator, 3 a timer runs out, 4 a posted stop runs
        for (auto& c : clients_) {
            const auto& conn = net_[c.id];
            if (conn.connected && !conn.outbound.empty()) choices.push_back({0, c.id});
            if (!conn.inbound.empty()) choices.push_back({1, c.id});
            if (!c.engine->link().timers().empty()) choices.push_back({3, c.id});
            if (c.closing) choices.push_back({4, c.id});
        }
        if (changes_left_ > 0) choices.push_back({2, 0});
        if (faults_left_ > 0 && (choices.empty() || pick(100) < 5)) return fault(), true;
        if (!closed_one_ && clients_.size() > 1 && pick(100) == 0) return close(clients_[pick(clients_.size())]), true;
        if (choices.empty()) return false;
        const auto [what, id] = choices[pick(choices.size())];
        auto& c = clients_[static_cast<std::size_t>(id)];
        if (what == 0) apply(c);
        else if (what == 1) deliver(c);
        else if (what == 2) change();
        else if (what == 4) stopped(c);
        else {
            auto& link = c.engine->link();
            const auto i = pick(link.timers().size());
            out_.note("c" + std::to_string(c.id) + " timer #" + std::to_string(link.timers()[i].id) + " runs out");
            fed(c, false, [&] { link.fire_timer(i); });
        }
        return true;
    }

    // ---- the server and the client -------------------------------------------------------------
    void apply(client& c) {
        const auto a = net_.apply(net_[c.id]);
        const auto& r = a.reply;
        out_.note("c" + std::to_string(c.id) + " applied #" + std::to_string(r.id) + " " + path_of(a.op) + (r.ec ? " " + r.ec.message() : ""));
        if (!r.ec && !r.children.empty()) {
            std::string names;
            for (const auto& n : r.children) names += " " + n;
            out_.note("  children:" + names + (r.stat ? " (czxid " + std::to_string(r.stat->czxid) + ")" : ""));
        } else if (!r.ec && r.stat) {
            out_.note("  czxid " + std::to_string(r.stat->czxid) + " v" + std::to_string(r.stat->version));
        }
    }

    void deliver(client& c) { feed(c, net_.deliver(net_[c.id]).second); }

    // e, which the client delivers, into c's engine.
    void feed(client& c, const tree_cache_machine::input& e) {
        if (std::holds_alternative<zk::reply>(e)) --c.in_flight;
        fed(c, std::holds_alternative<zk::connection_changed>(e), [&] {
            deliver_asked(c.engine->link(), e, out_, "c" + std::to_string(c.id));
        });
    }

    // One event into c's engine (run feeds it), and the checks around it.
    template <typename Run>
    void fed(client& c, bool reconnection, Run run) {
        const auto known = c.engine->machine().known();
        c.reads = 0;
        run();
        // No storm: a reconnection reads each node known (shown, or listed and not read yet) at
        // most once for its data and once for its children.
        if (reconnection && c.reads > 2 * known)
            out_.violate("c" + std::to_string(c.id) + " sent " + std::to_string(c.reads) + " reads on a reconnection, knowing " + std::to_string(known) + " nodes");
        if (out_.ok && !c.closing && !c.closed && c.engine->machine().view() != c.replica) out_.violate("c" + std::to_string(c.id) + "'s view is not what its events built");
    }

    // One cache of the schedule is closed, at any moment: the recipe stops its engine, which
    // from then on sends nothing, shows nothing, and holds nothing of the connection's.
    // Half the closes come from another thread, as a user's close or destructor does: the cache's
    // state goes at once (what its machine decides meanwhile goes nowhere), and the engine's stop
    // runs on the network thread later, events coming first.
    void close(client& c) {
        closed_one_ = true;
        if (net_[c.id].outbound.size() + net_[c.id].inbound.size() > 0) ++out_.closes;
        if (pick(2) == 0) {
            out_.note("c" + std::to_string(c.id) + " closes its cache from another thread");
            c.closing = true;
            c.engine->end_recipe();
            c.engine->link().hold_posts();
            c.engine->stop();
            return;
        }
        out_.note("c" + std::to_string(c.id) + " closes its cache");
        c.engine->stop();
        stopped(c);
    }

    // c's engine has stopped (its posted stop runs now, if it was on its way).
    void stopped(client& c) {
        c.closing = false;
        c.engine->link().run_posts();
        c.closed = true;
        c.engine->check_let_go(out_, "c" + std::to_string(c.id));
    }

    // A read c's engine sends.
    void sent(client& c, const zk::op& op) {
        if (c.closed) out_.violate("c" + std::to_string(c.id) + " sent a read after its cache was closed");
        out_.note("c" + std::to_string(c.id) + " asks #" + std::to_string(std::visit([](const auto& o) { return o.id; }, op)) + " " + op_name(op) + " " +
                  path_of(op));
        ++c.reads;
        ++out_.reads;
        if (++c.in_flight > c.window)
            out_.violate("c" + std::to_string(c.id) + " has " + std::to_string(c.in_flight) + " reads in flight, over its window of " + std::to_string(c.window));
    }

    // ---- the checker, at each event ------------------------------------------------------------
    void check_event(client& c, const cache_event& e) {
        ++out_.events;
        const auto who = "c" + std::to_string(c.id) + " ";
        if (c.closed) return out_.violate(who + "showed an event after its cache was closed");
        out_.note(who + event_name(e.type) + " " + e.path + (e.node ? " czxid " + std::to_string(e.node->stat.czxid) + " v" + std::to_string(e.node->stat.version) : ""));
        switch (e.type) {
            case cache_event_type::initialized:
                if (++c.initialized > 1) return out_.violate(who + "initialized twice");
                return check_complete(c);
            case cache_event_type::suspended: case cache_event_type::reconnected: case cache_event_type::lost: return;
            case cache_event_type::added: case cache_event_type::updated: {
                if (!e.node) return out_.violate(who + "an event without its node: " + e.path);
                const auto& n = *e.node;
                const auto had = history_.find({e.path, n.stat.czxid, n.stat.version});
                if (had == history_.end() || kept(c, had->second) != n.data)
                    return out_.violate(who + "shows " + e.path + " at czxid " + std::to_string(n.stat.czxid) + " version " + std::to_string(n.stat.version) +
                                        " with data '" + n.data + "', a state the server never had");
                if (depth_of(e.path) > c.max_depth) return out_.violate(who + "shows " + e.path + ", below its depth limit");
                if (skipped(c, e.path)) return out_.violate(who + "shows " + e.path + ", which its options skip");
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
            if (depth_of(path) > c.max_depth || skipped(c, path)) continue;
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

    // What a cache's options let it show: a node below a skipped name, nothing; data over the
    // limit, none.
    static bool skipped(const client& c, const std::string& path) {
        for (auto p = path; p != root; p = std::string(parent_path(p)))
            for (const auto& pattern : c.skip)
                if (::fnmatch(pattern.c_str(), std::string(node_name(p)).c_str(), 0) == 0) return true;
        return false;
    }
    static std::string kept(const client& c, const std::string& data) {
        return c.max_data == 0 || data.size() <= c.max_data ? data : std::string();
    }
    // Data of 2 to 4 bytes, so that a limit of 3 keeps some and drops some.
    std::string some_data() { return "d" + std::string(pick(3), '+') + std::to_string(pick(3)); }

    // ---- the operator ----------------------------------------------------------------------------
    // Every state a node had: (path, czxid, version, data).
    void record(const std::string& path) {
        if (const node* n = zk_.find(path)) history_[{path, n->czxid, n->version}] = n->data;
    }

    void make(const std::string& path) {
        const auto data = some_data();
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
        net_.route_fired();
    }

    void change() {
        --changes_left_;
        ++out_.changes;
        const auto nodes = subtree();
        if (nodes.empty()) {
            out_.note("operator makes the root again");
            make(root);
            return net_.route_fired();
        }
        const auto path = nodes[pick(nodes.size())];
        switch (pick(6)) {
            case 0: case 1: create_somewhere(); break;
            case 2: case 3:
                out_.note("operator writes " + path);
                zk_.set_data(path, some_data());  // (the same data again, sometimes: a new version)
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
        net_.route_fired();
    }

    // ---- faults ----------------------------------------------------------------------------------
    void fault() {
        --faults_left_;
        ++out_.faults;
        auto& conn = net_[static_cast<int>(pick(clients_.size()))];
        switch (pick(3)) {
            case 0: return net_.drop_or_reconnect(conn);
            case 1: return net_.reconnect(conn);
            default: return net_.expire(conn);
        }
    }

    void heal() { net_.heal(); }

    // ---- the checker at quiescence -------------------------------------------------------------
    void check_quiescent() {
        if (changes_left_ > 0) return out_.violate("the operator did not finish");
        for (const auto& c : clients_) {
            if (c.closed || c.closing) continue;  // (what it showed was checked at each event)
            const auto who = "c" + std::to_string(c.id);
            if (c.initialized != 1) return out_.violate(who + " was initialized " + std::to_string(c.initialized) + " times");
            std::map<std::string, cached_node> server;
            for (const auto& path : subtree()) {
                if (depth_of(path) > c.max_depth || skipped(c, path)) continue;
                const node* n = zk_.find(path);
                cached_node shown{kept(c, n->data), stat_of(*n)};
                server.emplace(path, shown);
            }
            const auto view = c.engine->machine().view();
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

    std::size_t pick(std::size_t n) { return sim::pick(rng_, n); }

    const schedule& s_;
    std::mt19937_64 rng_;
    zookeeper zk_;
    outcome out_;
    sim_clients<tree_cache_machine::input> net_;
    std::vector<client> clients_;
    int changes_left_ = 0, faults_left_ = 0;
    bool closed_one_ = false;
    std::map<std::tuple<std::string, std::int64_t, std::int32_t>, std::string> history_;  // (path, czxid, version) -> data
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
