// zkr status: who holds a lock, semaphore, read-write lock or leader latch, and who waits, in order.
#include "commands.hpp"

#include <zkr/revocation.hpp>

#include "../recipes/queue/lock_rule.hpp"  // zkr status names holders with the recipes' own kinds and rules
#include "../recipes/queue/read_write_rule.hpp"
#include "../recipes/queue/grant_mark.hpp"  // a holder's data, without its grant mark

#include <zkr/path.hpp>

#include <algorithm>
#include <optional>
#include <cstdio>
#include <iostream>

namespace zkr::cli {

namespace {

std::int64_t age_ms(std::int64_t since_ms) {
    const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    return std::max<std::int64_t>(0, now - since_ms);
}

std::string age(std::int64_t ms) {
    const double s = static_cast<double>(ms) / 1000;
    char buf[32];
    if (s < 120) std::snprintf(buf, sizeof buf, "%.1fs", s);
    else if (s < 7200) std::snprintf(buf, sizeof buf, "%.0fm", s / 60);
    else std::snprintf(buf, sizeof buf, "%.1fh", s / 3600);
    return buf;
}

// What `zkr status` found, before it is printed as text or as JSON.
struct node_report {
    std::string name, data;
    bool holds = false;
    std::size_t position = 0;  // in the queue of waiters, from 1 (0 for a holder)
    int leases = 1;            // a semaphore's weighted node
    std::string side;          // a read-write lock's: "reader" or "writer"
    std::int64_t age_ms = 0, token = 0;
};

struct queue_report {
    std::string kind;  // "lock", "semaphore", "read-write lock", "leader latch"
    std::optional<std::int64_t> max_leases;
    bool leads = false;  // its holder leads an election (a latch's)
    std::size_t holding = 0, waiting = 0;
    std::vector<node_report> nodes;
};

// One kind's queue: who holds (the kind's own rule, from the names alone), then who waits.
queue_report report_queue(zkr::client& client, const std::string& path, const std::vector<std::string>& nodes, const zkr::queue_kind_info& kind) {
    using zkr::queue_kind;
    const auto which = kind.id;
    queue_report q;
    // A mutex's queue is shown as a "lock": the fair lock and the leader selector share its nodes.
    q.kind = which == queue_kind::mutex ? "lock" : std::string(kind.name);
    q.leads = which == queue_kind::latch;
    const auto rule = kind.observer(nodes);
    // Without a rule the maximum lives in a shared count we cannot name: list all as holding or waiting.
    const std::size_t holders = rule ? rule->holders(nodes) : nodes.size();
    if (which == queue_kind::semaphore && rule)
        q.max_leases = zkr::max_of_tag(zkr::parse_lease_node(nodes[0]).value_or(zkr::lease_node_info{}).max_tag);
    q.holding = std::min(holders, nodes.size());
    q.waiting = nodes.size() - q.holding;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        boost::system::error_code e;
        const auto d = client.get_data(zkr::join_path(path, nodes[i]), e);
        if (e) continue;  // gone meanwhile
        node_report n{nodes[i], std::string(zkr::detail::without_grant_mark(d.data)), i < q.holding, i < q.holding ? 0 : i - q.holding + 1};
        if (which == queue_kind::semaphore) n.leases = static_cast<int>(zkr::parse_lease_node(nodes[i]).value_or(zkr::lease_node_info{}).weight);
        if (which == queue_kind::read_write) n.side = zkr::is_read_write_writer(nodes[i]) ? "writer" : "reader";
        n.age_ms = age_ms(d.stat.ctime);
        n.token = d.stat.czxid;
        q.nodes.push_back(std::move(n));
    }
    return q;
}

// What a holder of this queue is called: a latch's leads.
const char* holder_role(const queue_report& q) { return q.leads ? "leading" : "holding"; }

void print_text(const std::string& path, const queue_report& q) {
    std::string kind = q.kind;
    if (q.max_leases) kind += " of " + std::to_string(*q.max_leases) + " leases";
    else if (q.kind == "semaphore") kind += " (maximum from a shared count)";
    std::cout << path << ": " << kind << ", " << q.holding << ' ' << holder_role(q) << ", " << q.waiting << " waiting\n";
    for (const auto& n : q.nodes) {
        std::string role = n.holds ? holder_role(q) : "waiting " + std::to_string(n.position);
        if (n.leases > 1) role += " (" + std::to_string(n.leases) + " leases)";
        if (!n.side.empty()) role += " (" + n.side + ")";
        // A revocation request overwrote the data (a zkr holder writes its own back once it has
        // read the request; Curator's does not): say so rather than show the signal as a name.
        const std::string data = n.data.empty() ? "-" : n.data == zkr::revocation_signal ? "(asked to let go)" : n.data;
        std::printf("  %-22s %-50s %-24s %s  token %lld\n", role.c_str(), n.name.c_str(), data.c_str(), age(n.age_ms).c_str(),
                    static_cast<long long>(n.token));
    }
}

// One JSON object on one line, for scripts and dashboards.
json json_report(const std::string& path, const std::vector<queue_report>& queues, std::size_t other_nodes) {
    json out_queues = json::array();
    for (const auto& q : queues) {
        json nodes = json::array();
        for (const auto& n : q.nodes)
            nodes.push_back({{"node", n.name},
                             {"role", n.holds ? holder_role(q) : "waiting"},
                             {"position", n.position},
                             {"data", n.data},
                             {"leases", n.leases},
                             {"side", n.side.empty() ? json(nullptr) : json(n.side)},
                             {"age_ms", n.age_ms},
                             {"token", n.token}});
        out_queues.push_back({{"kind", q.kind},
                              {"max_leases", q.max_leases ? json(*q.max_leases) : json(nullptr)},
                              {"holding", q.holding},
                              {"waiting", q.waiting},
                              {"nodes", std::move(nodes)}});
    }
    return {{"path", path}, {"free", queues.empty()}, {"other_nodes", other_nodes}, {"queues", std::move(out_queues)}};
}

struct status_command final : command {
    connection_options connection;
    std::vector<std::string> paths;
    bool as_json = false;

    int run(const std::vector<std::string>& rest) override {
        if (!rest.empty()) throw usage_error("takes no COMMAND (unexpected \"" + rest.front() + "\")");
        const auto path = checked_path(paths, "status");
        auto client = connection.connect();
        boost::system::error_code ec;
        const auto children = client->get_children(path, ec).children;
        if (ec && ec != zkr::errc::no_node) throw exit_error(exit_zookeeper, "listing " + path + ": " + ec.message());
        // Each kind's queue (the kinds' table names their nodes). Two kinds on one path would not
        // exclude each other (zkr refuses to acquire there): show each, and say so.
        std::vector<queue_report> queues;
        std::size_t participants = 0;
        std::string kind_names;
        for (const auto& kind : zkr::queue_kinds()) {
            if (kind.node_names.empty()) continue;  // (a folder of another layout: counted among the other nodes)
            kind_names += (kind_names.empty() ? "" : ", ") + std::string(kind.name);
            const auto nodes = zkr::queue_of_kind(kind, children);
            if (nodes.empty()) continue;
            participants += nodes.size();
            queues.push_back(report_queue(*client, path, nodes, kind));
        }
        const auto other_nodes = children.size() - participants;
        if (as_json) {
            say_json(json_report(path, queues, other_nodes));
            return 0;
        }
        if (ec == zkr::errc::no_node) {
            std::cout << path << ": free (no such node: nothing holds or waits)\n";
            return 0;
        }
        if (queues.empty()) {
            if (children.empty()) std::cout << path << ": free (nothing holds or waits)\n";
            else std::cout << path << ": free (nothing holds or waits; " << children.size() << " other node" << (children.size() == 1 ? "" : "s")
                           << ", not zkr's lock or lease nodes)\n";
            return 0;
        }
        if (queues.size() > 1)
            std::cout << path << ": nodes of " << queues.size() << " kinds of lock (" << kind_names << "): they do "
                                 "not exclude each other, so each may hold at once (zkr refuses new acquires here)\n";
        for (const auto& q : queues) print_text(path, q);
        return 0;
    }
};

}  // namespace

std::unique_ptr<command> add_status_command(CLI::App& app) {
    auto cmd = std::make_unique<status_command>();
    auto* sub = app.add_subcommand("status", "show the holders and the queue of a lock, semaphore, read-write lock or leader latch");
    sub->add_option("PATH", cmd->paths, "the lock's path")->type_name("");
    sub->add_flag("--json", cmd->as_json, "one JSON object: each kind's queue, its holders and waiters in order");
    cmd->connection.add_to(*sub, false);
    sub->footer("Shows who holds the lock, semaphore, read-write lock or leader latch PATH, then the queue in\n"
        "order: each node's data (host:pid for zkr's locks, the id for a latch), age and fencing token.\n"
        "--json prints the same as one object: {\"path\", \"free\", \"other_nodes\", \"queues\": [{\"kind\",\n"
        "\"max_leases\", \"holding\", \"waiting\", \"nodes\": [{\"node\", \"role\", \"position\", \"data\",\n"
        "\"leases\", \"side\", \"age_ms\", \"token\"}]}]}.");
    return cmd;
}

}  // namespace zkr::cli
