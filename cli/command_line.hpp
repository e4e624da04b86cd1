// What every zkr subcommand shares: exit codes, errors, the connection options and the connect,
// the PATH check, and number options checked with zkr's own messages (on CLI11).
#pragma once

#include <zkr/client.hpp>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace zkr::cli {

// Exit codes of our own (a command's status is passed through otherwise).
constexpr int exit_conflict = 1;  // lock held (-n) or wait timed out (-w); -E changes it
constexpr int exit_usage = 2;
constexpr int exit_zookeeper = 3;  // unreachable, or an error from ZooKeeper
constexpr int exit_lost = 4;       // the lock or leadership was lost while the command ran
constexpr int exit_revoked = 5;    // zkr lock --revocable: let go on a revocation request
constexpr int exit_cannot_run = 126;
constexpr int exit_not_found = 127;

/// A bad command line: the message says what was wrong; exit code 2.
struct usage_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// A failure with its exit code and a message for stderr.
struct exit_error : std::runtime_error {
    exit_error(int c, const std::string& m) : std::runtime_error(m), code(c) {}
    int code;
};

/// One subcommand: its options are bound to the object's members when it is added to the app;
/// run() does the work once the command line was parsed. rest: what followed "--".
struct command {
    virtual ~command() = default;
    virtual int run(const std::vector<std::string>& rest) = 0;
};

/// --connect, --connect-timeout, --session-timeout.
struct connection_options {
    std::optional<std::string> servers;  // --connect
    double connect_timeout = 10;
    double session_timeout = 10;
    /// Where the client logs (default: nowhere).
    std::shared_ptr<spdlog::logger> logger;

    void add_to(CLI::App& app, bool with_session = true);
    /// The servers: --connect, else $ZKR_CONNECT, else 127.0.0.1:2181.
    std::string connect_string() const;
    /// Connects; cap: the most the connect may take. Throws usage_error for a bad connect string,
    /// exit_error (exit 3) when no server answers in time.
    std::unique_ptr<zkr::client> connect(std::optional<std::chrono::milliseconds> cap = std::nullopt) const;
};

/// A number option in [min, max] (whole numbers only when `whole`), refused with "must be a number
/// from MIN to MAX, got ...".
CLI::Option* add_number(CLI::App& app, const std::string& names, double& value, double min, double max, const std::string& help,
                        bool whole = false);
CLI::Option* add_number(CLI::App& app, const std::string& names, std::optional<double>& value, double min, double max,
                        const std::string& help, bool whole = false);

/// --grace and --lost-exit-code, for a command run while `what` ("the lock") is held.
void add_supervision_options(CLI::App& app, double& grace, double& lost_code, const std::string& what);

/// The one lock PATH of `paths` (every positional before "--"), checked. command: for the hint.
std::string checked_path(const std::vector<std::string>& paths, const std::string& command);

std::chrono::milliseconds seconds_to_ms(double s);

/// One write per line: lines of several processes never mix.
void say(const std::string& line);

/// The --json output's values, fields in the order given.
using json = nlohmann::ordered_json;
/// One JSON value on one line (say). Bytes that are not UTF-8 (node data may be any bytes) are
/// written as U+FFFD: the line is always JSON.
void say_json(const json& value);

}  // namespace zkr::cli
