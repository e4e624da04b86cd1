#include "command_line.hpp"

#include <zkr/path.hpp>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace zkr::cli {

namespace {

std::string format_number(double x) {
    std::string s = std::to_string(x);
    s.erase(s.find_last_not_of('0') + 1);
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
}

CLI::Validator number_in(double min, double max, bool whole) {
    return CLI::Validator(
        [min, max, whole](std::string& v) -> std::string {
            char* end = nullptr;
            const double d = std::strtod(v.c_str(), &end);
            if (v.empty() || *end != '\0' || !std::isfinite(d) || d < min || d > max)
                return "must be a number from " + format_number(min) + " to " + format_number(max) + ", got \"" + v + "\"";
            if (whole && d != std::floor(d)) return "must be a whole number, got \"" + v + "\"";
            return {};
        },
        "", "");
}

}  // namespace

CLI::Option* add_number(CLI::App& app, const std::string& names, double& value, double min, double max, const std::string& help,
                        bool whole) {
    return app.add_option(names, value, help)->check(number_in(min, max, whole));
}

CLI::Option* add_number(CLI::App& app, const std::string& names, std::optional<double>& value, double min, double max,
                        const std::string& help, bool whole) {
    return app.add_option(names, value, help)->check(number_in(min, max, whole));
}

void connection_options::add_to(CLI::App& app, bool with_session) {
    app.add_option("--connect", servers, "ZooKeeper servers (default $ZKR_CONNECT, else 127.0.0.1:2181)")->type_name("HOSTS");
    add_number(app, "--connect-timeout", connect_timeout, 0.1, 3600, "give up connecting after SECONDS (default 10; exit 3)")
        ->type_name("SECONDS");
    if (with_session)
        add_number(app, "--session-timeout", session_timeout, 1, 600, "the ZooKeeper session timeout (default 10)")->type_name("SECONDS");
}

std::string connection_options::connect_string() const {
    if (servers) {
        if (servers->empty()) throw usage_error("--connect needs HOST:PORT[,HOST:PORT...]");
        return *servers;
    }
    if (const char* env = std::getenv("ZKR_CONNECT"); env && *env) return env;
    return "127.0.0.1:2181";
}

std::unique_ptr<zkr::client> connection_options::connect(std::optional<std::chrono::milliseconds> cap) const {
    zkr::client_options o;
    o.connect_string = connect_string();
    o.session_timeout = seconds_to_ms(session_timeout);
    if (logger) o.logger = logger;
    auto limit = seconds_to_ms(connect_timeout);
    if (cap) limit = std::min(limit, *cap);
    std::unique_ptr<zkr::client> c;
    try {
        c = std::make_unique<zkr::client>(o);
    } catch (const zkr::error& e) {
        // The library's reason names the connect string already.
        throw usage_error(std::string("bad --connect: ") + e.what());
    }
    c->start();
    if (!c->block_until_connected(limit)) {
        std::ostringstream s;
        s << "cannot reach ZooKeeper at " << o.connect_string << " within " << static_cast<double>(limit.count()) / 1000
          << " s (give the servers with --connect or ZKR_CONNECT)";
        throw exit_error(exit_zookeeper, s.str());
    }
    return c;
}

void add_supervision_options(CLI::App& app, double& grace, double& lost_code, const std::string& what) {
    add_number(app, "--grace", grace, 0, 3600, "when " + what + " is lost: SIGTERM, then SIGKILL after SECONDS (default 5)")
        ->type_name("SECONDS");
    add_number(app, "--lost-exit-code", lost_code, 0, 255, "exit code when " + what + " was lost while COMMAND ran (default 4)", true)
        ->type_name("CODE");
}

std::string checked_path(const std::vector<std::string>& paths, const std::string& command) {
    if (paths.empty()) throw usage_error("needs a PATH");
    if (paths.size() > 1) {
        std::string got;
        for (const auto& p : paths) got += " " + p;
        std::string hint;
        if (command == "lock" || command == "elect")
            hint = " (the command goes after \"--\", as in: zkr " + command + " " + paths[0] + " -- COMMAND)";
        throw usage_error("needs exactly one PATH, got " + std::to_string(paths.size()) + ":" + got + hint);
    }
    const auto& path = paths[0];
    if (auto e = zkr::path_error(path)) throw usage_error("bad PATH \"" + path + "\": " + *e);
    if (path == "/") throw usage_error("the root \"/\" cannot be a lock");
    return path;
}

std::chrono::milliseconds seconds_to_ms(double s) { return std::chrono::milliseconds(static_cast<long long>(s * 1000)); }

void say(const std::string& line) {
    const std::string l = line + "\n";
    (void)!::write(1, l.data(), l.size());
}

void say_json(const json& value) { say(value.dump(-1, ' ', false, json::error_handler_t::replace)); }

}  // namespace zkr::cli
