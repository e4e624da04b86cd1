// zkr watch: a subtree's current state, then every change, until a signal (a zkr::tree_cache).
#include "commands.hpp"
#include "supervise.hpp"

#include <zkr/tree_cache.hpp>

#include <climits>
#include <deque>
#include <mutex>

namespace zkr::cli {

namespace {

using namespace std::chrono_literals;

const char* event_name(cache_event_type t) {
    switch (t) {
        case cache_event_type::added: return "added";
        case cache_event_type::updated: return "updated";
        case cache_event_type::removed: return "removed";
        case cache_event_type::initialized: return "initialized";
        case cache_event_type::suspended: return "suspended";
        case cache_event_type::reconnected: return "reconnected";
        case cache_event_type::lost: return "lost";
    }
    return "?";
}

struct watch_command final : command {
    connection_options connection;
    std::vector<std::string> paths;
    std::optional<double> depth;
    std::vector<std::string> skip;
    bool json = false;

    int run(const std::vector<std::string>& rest) override {
        if (!rest.empty()) throw usage_error("takes no COMMAND (unexpected \"" + rest.front() + "\")");
        const auto path = checked_path(paths, "watch");
        const sigset_t handled = handled_signals();
        ::pthread_sigmask(SIG_BLOCK, &handled, nullptr);  // before the client's threads start
        auto client = connection.connect();
        // The listener only queues (it runs on the callback thread); this thread prints, so that a
        // signal is taken between two lines.
        struct inbox {
            std::mutex mutex;
            std::deque<cache_event> events;
        };
        const auto box = std::make_shared<inbox>();
        try {
            zkr::tree_cache cache(*client, path, {.max_depth = depth ? static_cast<int>(*depth) : INT_MAX, .skip_names = skip});
            auto sub = cache.add_listener([box](const cache_event& e) {
                std::lock_guard lock(box->mutex);
                box->events.push_back(e);
            });
            cache.start();
            siginfo_t info{};
            for (;;) {
                std::deque<cache_event> now;
                {
                    std::lock_guard lock(box->mutex);
                    now.swap(box->events);
                }
                for (const auto& e : now) print(e);
                const int sig = next_signal(20ms, info);
                if (sig && sig != SIGCHLD) return 0;
            }
        } catch (const zkr::error& e) {
            if (e.code() == zkr::errc::invalid_argument || e.code() == zkr::errc::invalid_path) throw usage_error(e.what());
            throw exit_error(exit_zookeeper, e.what());
        }
    }

    void print(const cache_event& e) const {
        const bool has_node = e.node.has_value();
        if (json) {
            cli::json line{{"event", event_name(e.type)}};
            if (!e.path.empty()) line["path"] = e.path;
            if (has_node) {
                line["data"] = e.node->data;
                line["version"] = e.node->stat.version;
            }
            return say_json(line);
        }
        std::string line = event_name(e.type);
        if (!e.path.empty()) line += " " + e.path;
        if (has_node && e.type != cache_event_type::removed)
            line += " (version " + std::to_string(e.node->stat.version) + "): " + e.node->data;
        say(line);
    }
};

}  // namespace

std::unique_ptr<command> add_watch_command(CLI::App& app) {
    auto cmd = std::make_unique<watch_command>();
    auto* sub = app.add_subcommand("watch", "print a subtree, then every change to it");
    sub->add_option("PATH", cmd->paths, "the subtree's path (it need not exist yet)")->type_name("");
    add_number(*sub, "--depth", cmd->depth, 0, INT_MAX, "how deep below PATH: 0 the node alone, 1 with its children (default: all)", true);
    sub->add_option("--skip", cmd->skip, "leave out children so named, and what is under them (a shell pattern: \"_c_*\"; repeatable)")
        ->type_name("PATTERN");
    sub->add_flag("--json", cmd->json, "one JSON object per line");
    cmd->connection.add_to(*sub);
    sub->footer(
        "Prints every node under PATH as \"added\", then \"initialized\", then every change as it comes:\n"
        "added, updated (a new version), removed (a node deleted and made again: removed, then added), and\n"
        "the connection's suspended, reconnected and lost, until a signal (what etcdctl's prefix watch is\n"
        "for etcd). A change overwritten before zkr reads the node again shows as its last value. With\n"
        "--json: {\"event\": ..., \"path\": ..., \"data\": ..., \"version\": N}, no path for the connection's\n"
        "events and no data or version for initialized.\n\n"
        "exit codes: 0 ended by a signal; 2 bad usage; 3 ZooKeeper unreachable or failing.");
    return cmd;
}

}  // namespace zkr::cli
