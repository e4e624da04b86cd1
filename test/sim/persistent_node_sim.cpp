#include "persistent_node_sim.hpp"

#include "../../recipes/nodes/persistent_node_machine.hpp"
#include "sim_clients.hpp"
#include "sim_port.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>

namespace zkr::sim::nodes {

namespace {

using detail::persistent_node_machine;
namespace zk = detail::zk;
namespace node_in = detail::node_in;
namespace node_out = detail::node_out;

const std::string parent = "/pn";

constexpr create_mode modes[] = {create_mode::ephemeral, create_mode::persistent, create_mode::ephemeral_sequential,
                                 create_mode::persistent_sequential, create_mode::persistent_with_ttl};

// One node of a client: its machine on the engine and what the world saw of it.
struct node_of {
    std::string name;  // its base name under /pn
    create_mode mode = create_mode::ephemeral;
    bool protect = false;
    detail::persistent_node_config config;
    std::optional<sim_engine<persistent_node_machine>> engine;
    std::string told;  // the path the listener heard last
    bool closing = false, closed = false, gave_up = false;
    int version = 0;   // of the data given
};

struct client {
    int id = 0;
    std::vector<node_of> nodes;
};

class world {
public:
    world(const schedule& s, bool traced) : s_(s), rng_(s.seed ^ 0x2545f491u), net_(zk_, rng_, out_) {
        out_.traced = traced;
        out_.kept_steps = 300;
        if (pick(2)) zk_.create_persistent("/", "pn", "");  // (else made as a container by the first create)
        faults_left_ = s.faults;
        user_left_ = s.user_steps;
        for (int i = 0; i < s.clients; ++i) {
            net_.open();
            client c;
            c.id = i;
            for (int k = 0; k < s.nodes; ++k) {
                const auto mode = modes[pick(5)];
                const bool protect = pick(2) == 0;
                const auto name = "c" + std::to_string(i) + "n" + std::to_string(k) + (is_sequential(mode) ? "-" : "");
                detail::persistent_node_config config{.path = parent + "/" + name, .mode = mode, .protect = protect,
                                                      .ttl = has_ttl(mode) ? std::chrono::milliseconds(1000) : std::chrono::milliseconds(0)};
                c.nodes.push_back(node_of{name, mode, protect, config, {}, {}});
            }
            clients_.push_back(std::move(c));
        }
        for (std::size_t i = 0; i < clients_.size(); ++i)
            for (std::size_t k = 0; k < clients_[i].nodes.size(); ++k) {
                auto& n = clients_[i].nodes[k];
                n.engine.emplace(net_, clients_[i].id, k, persistent_node_machine(n.config, "d0"),
                                 [this, i, k](const persistent_node_machine::action& a) { on_outcome(clients_[i], k, a); });
                n.engine->start(node_in::start{net_[clients_[i].id].session});
                check_told(clients_[i], k);
            }
    }

    outcome run() {
        run_until_quiet(out_, 200000, [this] { return step(); });
        if (out_.ok) check_quiescent();
        out_.clients = net_.reach;
        return std::move(out_);
    }

private:
    bool step() {
        if (faults_left_ == 0) net_.heal();
        // (what, client): 0 apply, 1 deliver, 2 a timer runs out. A TTL node's touch runs for as
        // long as the node lives: it runs out only while faults and users act, or the world
        // would never be quiet.
        const bool acting = faults_left_ > 0 || user_left_ > 0;
        std::vector<std::pair<int, int>> choices;
        for (auto& c : clients_) {
            const auto& conn = net_[c.id];
            if (conn.connected && !conn.outbound.empty()) choices.push_back({0, c.id});
            if (!conn.inbound.empty()) choices.push_back({1, c.id});
            if (!runnable_timers(c, acting).empty()) choices.push_back({2, c.id});
        }
        if (user_left_ > 0 && (choices.empty() || pick(100) < 8)) return user_step(), true;
        if (faults_left_ > 0 && (choices.empty() || pick(100) < 8)) return fault(), true;
        // The server ends a session a client gave up within its timeout: at the latest now.
        if (choices.empty()) return net_.expire_abandoned();  // (else quiescence)
        const auto [what, id] = choices[pick(choices.size())];
        auto& c = clients_[static_cast<std::size_t>(id)];
        if (what == 0) {
            const auto a = net_.apply(net_[c.id]);
            if (std::holds_alternative<zk::create>(a.op) && !a.recovery) ++out_.creates;
            out_.note("c" + std::to_string(c.id) + " applied #" + std::to_string(a.reply.id) + " of n" + std::to_string(a.who) + " (" + describe_op(a.op) + ")" +
                      (a.recovery ? std::string(" (recovery: ") + a.recovery + ")" : "") + (a.reply.ec ? " " + a.reply.ec.message() : "") +
                      (a.reply.path.empty() ? "" : " " + a.reply.path));
        } else if (what == 1) {
            auto [who, e] = net_.deliver(net_[c.id]);
            if (std::holds_alternative<zk::connection_changed>(e)) {
                for (std::size_t k = 0; k < c.nodes.size(); ++k) {
                    c.nodes[k].engine->link().deliver(e);
                    check_told(c, k);
                }
            } else {
                const auto k = static_cast<std::size_t>(who);
                out_.note("c" + std::to_string(c.id) + " n" + std::to_string(k) + " hears " + describe_delivery(e));
                deliver_asked(c.nodes[k].engine->link(), std::move(e), out_, c.nodes[k].name);
                check_told(c, k);
            }
        } else {
            const auto runnable = runnable_timers(c, acting);
            const auto [k, i] = runnable[pick(runnable.size())];
            c.nodes[k].engine->link().fire_timer(i);
            check_told(c, k);
        }
        return true;
    }

    // The timers running, as (node, index in its link's timers).
    static std::vector<std::pair<std::size_t, std::size_t>> runnable_timers(const client& c, bool acting) {
        std::vector<std::pair<std::size_t, std::size_t>> out;
        for (std::size_t k = 0; k < c.nodes.size(); ++k) {
            const auto& e = *c.nodes[k].engine;
            const auto& timers = e.link().timers();
            for (std::size_t i = 0; i < timers.size(); ++i)
                if (acting || timers[i].id != e.machine().touch_timer()) out.push_back({k, i});
        }
        return out;
    }

    // After each event: the listener has heard the path the machine has.
    void check_told(const client& c, std::size_t k) {
        const auto& n = c.nodes[k];
        if (n.told != n.engine->machine().current_path())
            out_.violate(n.name + ": the listener heard " + n.told + ", the machine has " + n.engine->machine().current_path());
    }

    // What node k's machine decided, other than a request or a timer (its engine runs those).
    void on_outcome(client& c, std::size_t k, const persistent_node_machine::action& a) {
        auto& n = c.nodes[k];
        if (const auto* p = std::get_if<node_out::path_changed>(&a)) {
            out_.note("c" + std::to_string(c.id) + " n" + std::to_string(k) + " path: " + (p->path.empty() ? "(none)" : p->path));
            if (!p->path.empty() && !n.told.empty()) out_.violate(n.name + ": a new path " + p->path + " without the old " + n.told + " gone first");
            if (!n.told.empty() || !p->path.empty()) ++out_.recreated;
            n.told = p->path;
        } else if (std::holds_alternative<node_out::gave_up>(a)) {
            n.gave_up = true;
            out_.violate(n.name + " gave up");
        } else if (const auto* d = std::get_if<node_out::closed>(&a)) {
            if (!n.closing) out_.violate(n.name + " closed without close");
            n.closed = true;
            if (!d->ec) check_closed(c, n);
            // Its engine stops, as the recipe stops it.
            n.engine->stop();
            n.engine->check_let_go(out_, n.name);
        }
    }

    // A user gives a node new data, or closes it.
    void user_step() {
        --user_left_;
        auto& c = clients_[pick(clients_.size())];
        const auto k = pick(c.nodes.size());
        auto& n = c.nodes[k];
        if (n.closing) return;
        if (pick(5) == 0) {
            out_.note("c" + std::to_string(c.id) + " closes n" + std::to_string(k));
            n.closing = true;
            n.engine->post(node_in::close{});
            return check_told(c, k);
        }
        out_.note("c" + std::to_string(c.id) + " gives n" + std::to_string(k) + " new data");
        n.engine->post(node_in::set_data{"d" + std::to_string(++n.version)});
        check_told(c, k);
    }

    void fault() {
        --faults_left_;
        ++out_.faults;
        auto& conn = net_[static_cast<int>(pick(clients_.size()))];
        switch (pick(8)) {
            case 0: return net_.drop_or_reconnect(conn);
            case 1: return net_.expire(conn);
            case 6: return net_.abandon(conn);
            case 7: net_.expire_abandoned(); return;
            case 2:
                if (net_.lose_reply(conn)) ++out_.lost_replies;
                return;
            case 3:
                // A reply lost, and half the time the partition outlasts the session (the lost
                // reply's request is in doubt as the session ends); half the time another process,
                // which waited for the node to go, takes its path at once.
                if (!net_.lose_reply(conn)) return;
                ++out_.lost_replies;
                if (pick(2) == 0) net_.expire(conn);
                if (pick(2) == 0) stranger(clients_[static_cast<std::size_t>(conn.id)]);
                return;
            case 4: return stranger();
            default: {  // an operator deletes a node under /pn
                const auto kids = zk_.children(parent);
                if (!kids || kids->empty()) return;
                const auto path = parent + "/" + (*kids)[pick(kids->size())];
                out_.note("operator deletes " + path);
                const node* there = zk_.find(path);
                if (!(stranger_session_ && there->owner == stranger_session_)) operator_deleted_.insert(path);
                zk_.remove(path);
                strangers_.erase(path);
                net_.route_fired();
                return;
            }
        }
    }

    // Another process holds an ephemeral node at a plain ephemeral node's path while ours is
    // missing; or such a stranger goes away. (This client's earlier session's node, kept by the
    // server, is the abandon fault's.)
    void stranger() { stranger(clients_[pick(clients_.size())]); }
    void stranger(const client& c) {
        if (!stranger_session_) stranger_session_ = zk_.open_session();
        const auto& n = c.nodes[pick(c.nodes.size())];
        if (n.mode != create_mode::ephemeral || n.protect) return;
        const auto path = parent + "/" + n.name;
        if (const node* there = zk_.find(path)) {
            if (there->owner != stranger_session_) return;
            out_.note("the stranger's " + path + " goes");
            zk_.remove(path);
            strangers_.erase(path);
        } else {
            out_.note("a stranger makes " + path);
            zk_.create(stranger_session_, parent, n.name, "stranger's", false, true);
            // Made where an operator once deleted a client's node: a delete of that node, on its
            // way, may meet this one (ZooKeeper has no delete conditional on a node's owner; nor
            // has Curator's). Not counted against the clients.
            if (!operator_deleted_.count(path)) strangers_.insert(path);
        }
        net_.route_fired();
    }

    // ---- the checkers ------------------------------------------------------------------------

    // The moment a close says it is done: nothing of the node is left at its path (but a
    // stranger's), an earlier session's that the server keeps included. (A protected or
    // sequential node has other names: the checker at quiescence looks for those.)
    void check_closed(const client& c, const node_of& n) {
        if (n.protect || is_sequential(n.mode)) return;
        const auto path = parent + "/" + n.name;
        if (const node* there = zk_.find(path); there && !(stranger_session_ && there->owner == stranger_session_))
            out_.violate("c" + std::to_string(c.id) + " " + n.name + ": closed, but " + path + " (session " + std::to_string(there->owner) +
                         ") is left");
    }


    void check_quiescent() {
        // Another process's node is never deleted by ours (a delete of an earlier session's node
        // is at the version read, for this).
        for (const auto& path : strangers_)
            if (const node* there = zk_.find(path); !there || there->owner != stranger_session_)
                return out_.violate("the stranger's " + path + " was deleted by one of the clients");
        const auto kids = zk_.children(parent);
        for (const auto& c : clients_) {
            const auto session = net_[c.id].session;
            for (const auto& n : c.nodes) {
                std::vector<std::string> mine;
                if (kids)
                    for (const auto& kid : *kids) {
                        auto name = kid;
                        if (name.rfind("_c_", 0) == 0) name = name.substr(name.find('-') + 1);
                        const node* there = zk_.find(parent + "/" + kid);
                        if (name.rfind(n.name, 0) == 0 && name.size() == n.name.size() + (is_sequential(n.mode) ? 10 : 0) &&
                            !(stranger_session_ && there->owner == stranger_session_))
                            mine.push_back(parent + "/" + kid);
                    }
                // Nodes of it: its name, after a protection prefix, with a sequential mode's 10 digits.
                // An unprotected sequential create whose reply was lost may leave a node nobody
                // knows of (a plain one is read again, at its path).
                const bool unknown_left = !n.protect && is_sequential(n.mode) && net_.lost_a_create(c.id, static_cast<std::uint64_t>(&n - c.nodes.data()));
                const bool extra_allowed = unknown_left && is_sequential(n.mode);
                const auto where = "c" + std::to_string(c.id) + " " + n.name + " (" + (n.protect ? "protected " : "") + to_string(n.mode) + ")";
                if (n.closing) {
                    if (!n.closed) return out_.violate(where + ": closed, but the machine never finished closing");
                    if (!mine.empty() && !unknown_left)
                        return out_.violate(where + ": closed, but " + mine.front() + " is left");
                    continue;
                }
                const auto& path = n.engine->machine().current_path();
                // A stranger's node at its path: not taken over; this one waits for it to go. (Not
                // "never written": a write racing the node's replacement, or retried by the client
                // after its reply was lost, lands in the stranger's node, and ZooKeeper has no write
                // conditional on a node's owner.)
                if (const node* there = zk_.find(parent + "/" + n.name); there && there->owner != 0 && there->owner == stranger_session_) {
                    if (!path.empty()) return out_.violate(where + ": took over a stranger's node " + path);
                    continue;
                }
                if (path.empty()) return out_.violate(where + ": open and connected, but it has no node (" + std::to_string(mine.size()) + " of its name)");
                const node* on_server = zk_.find(path);
                if (!on_server) return out_.violate(where + ": its path " + path + " does not exist");
                if (mine.size() != 1 && !(extra_allowed && !mine.empty()))
                    return out_.violate(where + ": " + std::to_string(mine.size()) + " nodes of it exist");
                const auto& data = n.engine->machine().data();
                if (on_server->data != data || data != "d" + std::to_string(n.version))
                    return out_.violate(where + ": holds " + on_server->data + ", the latest data is d" + std::to_string(n.version));
                if (is_ephemeral(n.mode) && on_server->owner != session)
                    return out_.violate(where + ": owned by session " + std::to_string(on_server->owner) + ", not the client's " + std::to_string(session));
            }
        }
    }

    static std::string to_string(create_mode m) {
        switch (m) {
            case create_mode::ephemeral: return "ephemeral";
            case create_mode::persistent: return "persistent";
            case create_mode::ephemeral_sequential: return "ephemeral sequential";
            case create_mode::persistent_sequential: return "persistent sequential";
            case create_mode::persistent_with_ttl: return "persistent with TTL";
            default: return "other";
        }
    }

    std::size_t pick(std::size_t n) { return sim::pick(rng_, n); }

    const schedule& s_;
    std::mt19937_64 rng_;
    zookeeper zk_;
    outcome out_;
    sim_clients<persistent_node_machine::input> net_;
    std::vector<client> clients_;
    int faults_left_ = 0, user_left_ = 0;
    std::int64_t stranger_session_ = 0;
    std::set<std::string> strangers_;  // the stranger's nodes that exist (but those below)
    std::set<std::string> operator_deleted_;  // paths where an operator deleted a client's node
};

}  // namespace

schedule draw_schedule(std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    schedule s;
    s.seed = seed;
    s.clients = 1 + static_cast<int>(rng() % 3);
    s.nodes = 1 + static_cast<int>(rng() % 3);
    s.faults = static_cast<int>(rng() % 14);
    s.user_steps = static_cast<int>(rng() % 8);
    return s;
}

std::string describe(const schedule& s) {
    std::ostringstream o;
    o << "seed " << s.seed << ": " << s.clients << " clients, " << s.nodes << " nodes each, " << s.faults << " faults, " << s.user_steps
      << " user steps";
    return o.str();
}

outcome run(const schedule& s, bool traced) { return world(s, traced).run(); }

}  // namespace zkr::sim::nodes
