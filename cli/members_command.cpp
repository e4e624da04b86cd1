// zkr members: a group's members and their data (Curator GroupMember's and zkr::group_member's
// layout: one node per member under the group), once or as they change (a zkr::children_cache).
#include "commands.hpp"
#include "supervise.hpp"

#include <zkr/children_cache.hpp>

#include <map>
#include <mutex>

namespace zkr::cli {

namespace {

using namespace std::chrono_literals;
using member_map = std::map<std::string, std::string>;

struct members_command final : command {
    connection_options connection;
    std::vector<std::string> paths;
    bool json = false, watch = false;

    int run(const std::vector<std::string>& rest) override {
        if (!rest.empty()) throw usage_error("takes no COMMAND (unexpected \"" + rest.front() + "\")");
        const auto path = checked_path(paths, "members");
        const sigset_t handled = handled_signals();
        ::pthread_sigmask(SIG_BLOCK, &handled, nullptr);  // before the client's threads start
        auto client = connection.connect();
        // The listener only marks a change (it runs on the callback thread); this thread reads the
        // cache and prints, so that a signal is taken between two lines.
        struct inbox {
            std::mutex mutex;
            bool changed = false;
        };
        const auto box = std::make_shared<inbox>();
        try {
            zkr::children_cache cache(*client, path);
            auto sub = cache.add_listener([box](const cache_event& e) {
                if (e.type != cache_event_type::added && e.type != cache_event_type::updated && e.type != cache_event_type::removed) return;
                std::lock_guard lock(box->mutex);
                box->changed = true;
            });
            cache.start();
            if (!cache.wait_initialized(std::chrono::milliseconds(static_cast<long>(connection.connect_timeout * 1000))))
                throw exit_error(exit_zookeeper, "the members of " + path + " were not read within the connection timeout");
            member_map shown = members_of(cache);
            print_all(shown);
            if (!watch) return 0;
            siginfo_t info{};
            for (;;) {
                const int sig = next_signal(50ms, info);
                if (sig && sig != SIGCHLD) return 0;
                {
                    std::lock_guard lock(box->mutex);
                    if (!std::exchange(box->changed, false)) continue;
                }
                auto now = members_of(cache);
                if (now == shown) continue;
                if (json) print_all(now);
                else print_changes(shown, now);
                shown = std::move(now);
            }
        } catch (const zkr::error& e) {
            if (e.code() == zkr::errc::invalid_argument || e.code() == zkr::errc::invalid_path) throw usage_error(e.what());
            throw exit_error(exit_zookeeper, e.what());
        }
    }

    static member_map members_of(const zkr::children_cache& cache) {
        member_map out;
        for (const auto& name : cache.children())
            if (auto n = cache.get(name)) out.emplace(name, std::move(n->data));
        return out;
    }

    void print_all(const member_map& m) const {
        if (json) {
            cli::json all = cli::json::object();
            for (const auto& [id, data] : m) all[id] = data;
            return say_json(all);
        }
        for (const auto& [id, data] : m) say(id + "\t" + data);
    }

    static void print_changes(const member_map& before, const member_map& after) {
        for (const auto& [id, data] : before)
            if (!after.count(id)) say("left\t" + id);
        for (const auto& [id, data] : after) {
            const auto it = before.find(id);
            if (it == before.end()) say("joined\t" + id + "\t" + data);
            else if (it->second != data) say("updated\t" + id + "\t" + data);
        }
    }
};

}  // namespace

std::unique_ptr<command> add_members_command(CLI::App& app) {
    auto cmd = std::make_unique<members_command>();
    auto* sub = app.add_subcommand("members", "print a group's members and their data");
    sub->add_option("PATH", cmd->paths, "the group's path (Curator GroupMember's membershipPath)")->type_name("");
    sub->add_flag("--json", cmd->json, "one JSON object mapping each member id to its data");
    sub->add_flag("--watch", cmd->watch, "then follow the changes until a signal");
    cmd->connection.add_to(*sub);
    sub->footer(
        "Prints each member of the group at PATH (a child node of PATH, its name the member's id) as\n"
        "\"ID<TAB>DATA\", sorted; a group that does not exist has no members. With --watch, then each\n"
        "change as it comes: \"joined<TAB>ID<TAB>DATA\", \"updated<TAB>ID<TAB>DATA\", \"left<TAB>ID\", until a\n"
        "signal. With --json: one object {\"ID\": \"DATA\", ...}, and with --watch one more line for each\n"
        "change. Members of zkr::group_member and of Curator's GroupMember alike.\n\n"
        "exit codes: 0 done, or ended by a signal; 2 bad usage; 3 ZooKeeper unreachable or failing.");
    return cmd;
}

}  // namespace zkr::cli
