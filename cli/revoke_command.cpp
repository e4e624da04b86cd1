// zkr revoke: asks the holders of a lock to let go (Curator's revocation signal).
#include "commands.hpp"

#include <zkr/revocation.hpp>

#include <iostream>

namespace zkr::cli {

namespace {

struct revoke_command final : command {
    connection_options connection;
    std::vector<std::string> paths;
    std::optional<std::string> node;

    int run(const std::vector<std::string>& rest) override {
        if (!rest.empty()) throw usage_error("takes no COMMAND (unexpected \"" + rest.front() + "\")");
        const auto path = checked_path(paths, "revoke");
        auto client = connection.connect();
        try {
            if (node) {
                zkr::revoke(*client, path, *node);
                std::cout << "asked " << *node << " to let go\n";
                return 0;
            }
            for (const auto& n : zkr::revoke(*client, path)) std::cout << "asked " << n << " to let go\n";
            return 0;
        } catch (const zkr::error& e) {
            if (e.code() == zkr::errc::lock_not_held) {
                std::cerr << "zkr revoke: " << e.what() << '\n';
                return exit_conflict;
            }
            if (e.code() == zkr::errc::invalid_argument || e.code() == zkr::errc::invalid_path) throw usage_error(e.what());
            throw exit_error(exit_zookeeper, e.what());
        }
    }
};

}  // namespace

std::unique_ptr<command> add_revoke_command(CLI::App& app) {
    auto cmd = std::make_unique<revoke_command>();
    auto* sub = app.add_subcommand("revoke", "ask the holders of a lock to let go");
    sub->add_option("PATH", cmd->paths, "the lock's path")->type_name("");
    sub->add_option("--node", cmd->node, "ask only this node's holder (its name, or its full path)")->type_name("NODE");
    cmd->connection.add_to(*sub, false);
    sub->footer("Asks the holders of the mutex or read-write lock PATH to let go: writes Curator's revocation\n"
        "signal (\"__REVOKE__\") to each holder's node. A request: a holder that opted in (a revocable\n"
        "zkr::interprocess_mutex or read-write lock, zkr lock --revocable, Curator's makeRevocable) decides\n"
        "when to release; a holder that did not opt in ignores it and holds on." "\n\n"
                "exit codes: 0 asked; 1 nothing holds the lock; 2 bad usage (or not a mutex or read-write lock); 3 ZooKeeper\n"
                "unreachable or failing.");
    return cmd;
}

}  // namespace zkr::cli
