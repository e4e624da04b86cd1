// zkr status: who holds a lock, semaphore, read-write lock or leader latch, and who waits, in order.
#include "commands.hpp"

#include "../recipes/lock_rule.hpp"  // zkr status names holders with the recipes' own rules
#include "../recipes/read_write_rule.hpp"

#include <zkr/path.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>

namespace zkr::cli {

namespace {

std::string age(std::int64_t since_ms) {
    const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    const double s = static_cast<double>(std::max<std::int64_t>(0, now - since_ms)) / 1000;
    char buf[32];
    if (s < 120) std::snprintf(buf, sizeof buf, "%.1fs", s);
    else if (s < 7200) std::snprintf(buf, sizeof buf, "%.0fm", s / 60);
    else std::snprintf(buf, sizeof buf, "%.1fh", s / 3600);
    return buf;
}

enum class queue_kind { mutex, semaphore, read_write, latch };

// One kind's queue: who holds (the rule the recipes use, from the names alone), then who waits.
void print_queue(zkr::client& client, const std::string& path, const std::vector<std::string>& nodes, queue_kind which) {
    const bool is_semaphore = which == queue_kind::semaphore;
    std::size_t holders = zkr::lowest_n_rule(1).holders(nodes);
    std::string kind = "lock";
    if (which == queue_kind::read_write) {
        holders = zkr::read_write_rule(zkr::read_write_rule::side::read).holders(nodes);
        kind = "read-write lock";
    } else if (which == queue_kind::latch) {
        kind = "leader latch";
    } else if (is_semaphore) {
        const auto tag = zkr::parse_lease_node(nodes[0]).value_or(zkr::lease_node_info{}).max_tag;
        if (const auto max = zkr::max_of_tag(tag); max && *max > 0) {
            holders = zkr::lease_rule([max = *max] { return max; }, tag).holders(nodes);
            kind = "semaphore of " + std::to_string(*max) + " leases";
        } else {
            holders = nodes.size();  // the maximum lives in a shared count we cannot name: list all as holding or waiting
            kind = "semaphore (maximum from a shared count)";
        }
    }
    const std::size_t holding = std::min(holders, nodes.size());
    std::cout << path << ": " << kind << ", " << holding << (which == queue_kind::latch ? " leading, " : " holding, ")
              << nodes.size() - holding << " waiting\n";
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        const auto full = zkr::join_path(path, nodes[i]);
        boost::system::error_code e;
        const auto d = client.get_data(full, e);
        if (e) continue;  // gone meanwhile
        std::string role = i < holding ? (which == queue_kind::latch ? "leading" : "holding") : "waiting " + std::to_string(i - holding + 1);
        if (is_semaphore) {
            const auto w = zkr::parse_lease_node(nodes[i]).value_or(zkr::lease_node_info{}).weight;
            if (w > 1) role += " (" + std::to_string(w) + " leases)";
        }
        if (which == queue_kind::read_write) role += zkr::is_read_write_writer(nodes[i]) ? " (writer)" : " (reader)";
        std::printf("  %-22s %-50s %-24s %s  token %lld\n", role.c_str(), nodes[i].c_str(), d.data.empty() ? "-" : d.data.c_str(),
                    age(d.stat.ctime).c_str(), static_cast<long long>(d.stat.czxid));
    }
}

struct status_command final : command {
    connection_options connection;
    std::vector<std::string> paths;

    int run(const std::vector<std::string>& rest) override {
        if (!rest.empty()) throw usage_error("takes no COMMAND (unexpected \"" + rest.front() + "\")");
        const auto path = checked_path(paths, "status");
        auto client = connection.connect();
        boost::system::error_code ec;
        const auto children = client->get_children(path, ec).children;
        if (ec == zkr::errc::no_node) {
            std::cout << path << ": free (no such node: nothing holds or waits)\n";
            return 0;
        }
        if (ec) throw exit_error(exit_zookeeper, "listing " + path + ": " + ec.message());
        // A lock's nodes end in "lock-<seq>", a semaphore's in "lease-<seq>", a read-write lock's in
        // "__READ__<seq>" or "__WRIT__<seq>". Two kinds on one path would not exclude each other (zkr
        // refuses to acquire there): show each, and say so.
        const auto locks = zkr::queue_of(children, {zkr::mutex_lock_name}).sorted;
        const auto leases = zkr::queue_of(children, {zkr::semaphore_lock_name}).sorted;
        const auto read_write = zkr::read_write_rule(zkr::read_write_rule::side::read).queue(children).sorted;
        const auto latch = zkr::queue_of(children, {zkr::latch_lock_name}).sorted;
        const int kinds = !locks.empty() + !leases.empty() + !read_write.empty() + !latch.empty();
        if (kinds == 0) {
            if (children.empty()) std::cout << path << ": free (nothing holds or waits)\n";
            else std::cout << path << ": free (nothing holds or waits; " << children.size() << " other node" << (children.size() == 1 ? "" : "s")
                           << ", not zkr's lock or lease nodes)\n";
            return 0;
        }
        if (kinds > 1)
            std::cout << path << ": nodes of " << kinds << " kinds of lock (mutex, semaphore, read-write lock, leader latch): they do not "
                                 "exclude each other, so each may hold at once (zkr refuses new acquires here)\n";
        if (!locks.empty()) print_queue(*client, path, locks, queue_kind::mutex);
        if (!leases.empty()) print_queue(*client, path, leases, queue_kind::semaphore);
        if (!read_write.empty()) print_queue(*client, path, read_write, queue_kind::read_write);
        if (!latch.empty()) print_queue(*client, path, latch, queue_kind::latch);
        return 0;
    }
};

}  // namespace

std::unique_ptr<command> add_status_command(CLI::App& app) {
    auto cmd = std::make_unique<status_command>();
    auto* sub = app.add_subcommand("status", "show the holders and the queue of a lock, semaphore, read-write lock or leader latch");
    sub->add_option("PATH", cmd->paths, "the lock's path")->type_name("");
    cmd->connection.add_to(*sub, false);
    sub->footer("Shows who holds the lock, semaphore, read-write lock or leader latch PATH, then the queue in\n"
        "order: each node's data (host:pid for zkr's locks, the id for a latch), age and fencing token.");
    return cmd;
}

}  // namespace zkr::cli
