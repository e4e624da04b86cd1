// zkr services: the services registered under a base path and their instances (curator-x-discovery's
// layout and JSON, zkr::service_discovery's and Curator's alike), read once.
#include "commands.hpp"

#include <zkr/path.hpp>
#include <zkr/service_discovery.hpp>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace zkr::cli {

namespace {

struct services_command final : command {
    connection_options connection;
    std::vector<std::string> names;
    std::string base = "/services";
    bool json_output = false;

    int run(const std::vector<std::string>& rest) override {
        if (!rest.empty()) throw usage_error("takes no COMMAND (unexpected \"" + rest.front() + "\")");
        if (names.size() > 1) throw usage_error("one NAME at most, got " + std::to_string(names.size()));
        // A node that is not an instance is reported on stderr (the library's warning) and left out.
        auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
        connection.logger = std::make_shared<spdlog::logger>("zkr services", sink);
        connection.logger->set_pattern("zkr services: %v");
        connection.logger->set_level(spdlog::level::warn);
        // Checked before connecting: a bad command line is told without waiting for a server.
        if (auto e = zkr::path_error(base)) throw usage_error("invalid --base \"" + zkr::printable_path(base) + "\": " + *e);
        if (!names.empty())
            if (auto e = zkr::node_name_error(names.front()))
                throw usage_error("invalid service NAME \"" + zkr::printable_path(names.front()) + "\": " + *e);
        auto client = connection.connect();
        try {
            zkr::service_discovery discovery(*client, base);
            const auto services = names.empty() ? discovery.query_for_names() : names;
            json all = json::object();
            for (const auto& name : services) {
                const auto instances = discovery.query_for_instances(name);
                if (json_output) {
                    json list = json::array();
                    for (const auto& i : instances) list.push_back(json::parse(zkr::service_instance_to_json(i)));
                    all[name] = std::move(list);
                    continue;
                }
                for (const auto& i : instances) say(line(i));
            }
            if (json_output) say_json(all);
            return 0;
        } catch (const zkr::error& e) {
            if (e.code() == zkr::errc::invalid_argument || e.code() == zkr::errc::invalid_path) throw usage_error(e.what());
            throw exit_error(exit_zookeeper, e.what());
        }
    }

    // NAME, ID, ADDRESS, PORT, SSL_PORT, TYPE, enabled or disabled, URI; "-" for what is unset.
    static std::string line(const zkr::service_instance& i) {
        const auto number = [](const std::optional<std::int32_t>& n) { return n ? std::to_string(*n) : std::string("-"); };
        const auto uri = zkr::build_uri(i);
        return i.name + "\t" + i.id + "\t" + i.address.value_or("-") + "\t" + number(i.port) + "\t" + number(i.ssl_port) + "\t" +
               std::string(zkr::to_string(i.type)) + "\t" + (i.enabled ? "enabled" : "disabled") + "\t" + (uri.empty() ? "-" : uri);
    }
};

}  // namespace

std::unique_ptr<command> add_services_command(CLI::App& app) {
    auto cmd = std::make_unique<services_command>();
    auto* sub = app.add_subcommand("services", "print the services registered for discovery and their instances");
    sub->add_option("NAME", cmd->names, "one service (default: every service under the base path)")->type_name("");
    sub->add_option("--base", cmd->base, "the discovery base path (Curator's basePath; default /services)")->type_name("PATH");
    sub->add_flag("--json", cmd->json_output, "one JSON object mapping each service to its instances, in Curator's JSON");
    cmd->connection.add_to(*sub);
    sub->footer(
        "Prints each instance of each service under the base path (curator-x-discovery's layout: BASE/NAME/ID,\n"
        "registered by zkr::service_discovery, zkr register or Curator's ServiceDiscovery) as one line:\n"
        "\"NAME<TAB>ID<TAB>ADDRESS<TAB>PORT<TAB>SSL_PORT<TAB>TYPE<TAB>enabled|disabled<TAB>URI\", \"-\" for what is\n"
        "unset, the URI built from the instance's uriSpec. With NAME, that service's only. With --json: one object\n"
        "{\"NAME\": [INSTANCE, ...], ...}, each instance as Curator writes it. A node that is not an instance is\n"
        "reported on stderr and left out.\n\n"
        "exit codes: 0 done; 2 bad usage; 3 ZooKeeper unreachable or failing.");
    return cmd;
}

}  // namespace zkr::cli
