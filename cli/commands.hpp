// The zkr subcommands: each adds itself to the app (its options bound to the returned object).
#pragma once

#include "command_line.hpp"

#include <memory>

namespace zkr::cli {

std::unique_ptr<command> add_lock_command(CLI::App& app);
std::unique_ptr<command> add_elect_command(CLI::App& app);
std::unique_ptr<command> add_status_command(CLI::App& app);
std::unique_ptr<command> add_revoke_command(CLI::App& app);
std::unique_ptr<command> add_watch_command(CLI::App& app);
std::unique_ptr<command> add_members_command(CLI::App& app);
std::unique_ptr<command> add_counter_command(CLI::App& app);
std::unique_ptr<command> add_services_command(CLI::App& app);
std::unique_ptr<command> add_register_command(CLI::App& app);
std::unique_ptr<command> add_demo_command(CLI::App& app);
/// The demo's worker processes (hidden).
std::unique_ptr<command> add_demo_worker_command(CLI::App& app);

}  // namespace zkr::cli
