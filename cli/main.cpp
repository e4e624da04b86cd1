// zkr: flock(1) for a cluster, leader election for a command, and a look at who holds what.
//   zkr lock [options] PATH -- COMMAND [ARGS...]
//   zkr elect [options] PATH -- COMMAND [ARGS...]    zkr elect --observe PATH
//   zkr status [options] PATH
//   zkr revoke [options] PATH
//   zkr watch [options] PATH
//   zkr members [options] PATH    zkr counter [options] PATH [get | set N | add N]
//   zkr services [options] [NAME]    zkr register [options] NAME -- COMMAND [ARGS...]
//   zkr demo [options]
// Every subcommand is parsed by CLI11 (its own file adds it); what follows "--" is the command.
#include "commands.hpp"
#include "process_group.hpp"

#include <algorithm>
#include <iostream>

namespace {

using namespace zkr::cli;

// "usage: zkr lock [OPTIONS] PATH -- COMMAND [ARGS...]" for a subcommand (CLI11 names only the
// subcommand, shows the one PATH as "[PATH...]" since it collects strays to name them in its
// error, and knows nothing of what follows "--").
class formatter final : public CLI::Formatter {
public:
    std::string make_usage(const CLI::App* app, std::string name) const override {
        std::string usage = CLI::Formatter::make_usage(app, std::move(name));
        if (const auto at = usage.find("Usage: "); at != std::string::npos)
            usage.replace(at, 7, app->get_parent() ? "usage: zkr " : "usage: ");
        if (const auto at = usage.find(" [PATH...]"); at != std::string::npos) usage.replace(at, 10, " PATH");
        if (const auto at = usage.find(" [NAME...]"); at != std::string::npos)
            usage.replace(at, 10, app->get_name() == "services" ? " [NAME]" : " NAME");
        const std::string command = app->get_name() == "lock" || app->get_name() == "register" ? " -- COMMAND [ARGS...]"
                                    : app->get_name() == "elect" ? " -- COMMAND [ARGS...] (none with --observe)"
                                                                 : "";
        if (const auto end = usage.find('\n'); !command.empty() && end != std::string::npos) usage.insert(end, command);
        return usage;
    }
};

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> all(argv + 1, argv + argc);
    // The guardian of zkr lock and zkr elect: not a user's command.
    if (all.size() == 2 && all[0] == "__guard") return guard_main(std::stol(all[1]));
    // What follows "--" is the command to run, never zkr's options.
    std::vector<std::string> rest;
    if (const auto dashes = std::find(all.begin(), all.end(), "--"); dashes != all.end()) {
        rest.assign(dashes + 1, all.end());
        all.erase(dashes, all.end());
    }
    CLI::App app("zkr: locks, leader election and semaphores on ZooKeeper, for shell commands", "zkr");
    app.formatter(std::make_shared<formatter>());
    app.require_subcommand(1);
    app.footer("zkr COMMAND --help shows a command's options.");
    std::vector<std::pair<CLI::App*, std::unique_ptr<command>>> commands;
    for (auto add : {add_lock_command, add_elect_command, add_status_command, add_revoke_command, add_watch_command, add_members_command, add_counter_command, add_services_command, add_register_command, add_demo_command, add_demo_worker_command}) {
        auto cmd = add(app);
        commands.emplace_back(app.get_subcommands({}).back(), std::move(cmd));
    }
    const std::string name = all.empty() ? "" : all[0];
    if (all.empty() || name == "-h" || name == "--help" || name == "help") {
        std::cout << app.help() << '\n';
        return all.empty() ? exit_usage : 0;
    }
    const auto known = app.get_subcommands([&name](const CLI::App* sub) { return sub->get_name() == name; });
    if (known.empty() && name.rfind('-', 0) != 0) {
        std::cerr << "zkr: unknown command \"" << name << "\" (try zkr --help)\n";
        return exit_usage;
    }
    std::reverse(all.begin(), all.end());  // CLI11 takes the arguments in reverse order
    try {
        app.parse(all);
    } catch (const CLI::CallForHelp&) {
        const auto chosen = app.get_subcommands();
        std::cout << (chosen.empty() ? app.help() : chosen.front()->help()) << '\n';
        return 0;
    } catch (const CLI::ParseError& e) {
        std::cerr << "zkr " << name << ": " << e.what() << " (try zkr " << name << " --help)\n";
        return exit_usage;
    }
    for (auto& [sub, cmd] : commands) {
        if (!sub->parsed()) continue;
        try {
            return cmd->run(rest);
        } catch (const usage_error& e) {
            std::cerr << "zkr " << name << ": " << e.what() << '\n';
            return exit_usage;
        } catch (const exit_error& e) {
            std::cerr << "zkr " << name << ": " << e.what() << '\n';
            return e.code;
        } catch (const std::exception& e) {
            std::cerr << "zkr " << name << ": " << e.what() << '\n';
            return exit_zookeeper;
        }
    }
    return exit_usage;
}
