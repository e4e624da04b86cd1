// zkr register: runs a command while a service instance is registered for discovery (a dynamic
// instance of curator-x-discovery's layout and JSON), as zkr lock runs one while a lock is held.
#include "commands.hpp"
#include "supervise.hpp"

#include <zkr/path.hpp>
#include <zkr/service_discovery.hpp>

#include <pthread.h>

namespace zkr::cli {

namespace {

struct register_command final : command {
    connection_options connection;
    std::vector<std::string> names;
    std::string base = "/services", id, address, payload = "null", uri_spec;
    std::optional<double> port, ssl_port;
    double grace = 5;

    int run(const std::vector<std::string>& rest) override {
        if (names.size() != 1)
            throw usage_error(names.empty() ? "no NAME: give the service's name, as in: zkr register api --address 10.0.0.7 --port 8080 -- ./serve"
                                            : "one NAME, got " + std::to_string(names.size()));
        if (rest.empty()) throw usage_error("no COMMAND: give it after \"--\", as in: zkr register " + names.front() + " --address A --port P -- ./serve");
        zkr::service_instance instance;
        instance.name = names.front();
        instance.id = id;
        instance.address = address;
        if (port) instance.port = static_cast<std::int32_t>(*port);
        if (ssl_port) instance.ssl_port = static_cast<std::int32_t>(*ssl_port);
        instance.payload = payload;
        instance.uri_spec = uri_spec;
        // Checked before connecting: a bad command line is told without waiting for a server.
        if (auto e = zkr::path_error(base)) throw usage_error("invalid --base \"" + zkr::printable_path(base) + "\": " + *e);
        if (auto e = zkr::node_name_error(instance.name)) throw usage_error("invalid service NAME \"" + zkr::printable_path(instance.name) + "\": " + *e);
        if (!id.empty())
            if (auto e = zkr::node_name_error(id)) throw usage_error("invalid --id \"" + zkr::printable_path(id) + "\": " + *e);
        try {
            (void)zkr::service_instance_to_json(instance);
        } catch (const zkr::error& e) {
            throw usage_error(e.what());
        }

        // Before any thread starts: the client's threads inherit the mask, so signals come to us here.
        const sigset_t handled = handled_signals();
        ::pthread_sigmask(SIG_BLOCK, &handled, nullptr);
        auto client = connection.connect();
        zkr::service_discovery discovery(*client, base, {seconds_to_ms(connection.connect_timeout)});
        try {
            instance = discovery.register_service(instance);
        } catch (const zkr::error& e) {
            const bool usage = e.code() == zkr::errc::invalid_argument || e.code() == zkr::errc::data_too_large;
            throw exit_error(usage ? exit_usage : exit_zookeeper, "registering " + instance.name + ": " + e.what());
        }
        const auto node = zkr::join_path(zkr::join_path(base, instance.name), instance.id);
        held h{node, 0,
               [&] {
                   return discovery.unregister_service(instance) ? boost::system::error_code() : make_error_code(zkr::errc::operation_timeout);
               },
               {"ZKR_SERVICE_NAME=" + instance.name, "ZKR_SERVICE_ID=" + instance.id, "ZKR_SERVICE_PATH=" + node}};
        // The registration is kept (made again after a session loss or a deletion): never lost.
        const std::atomic<bool> lost{false};
        return run_while_held(h, lost, rest, {"zkr register", "the registration of " + instance.name + " " + instance.id, seconds_to_ms(grace)});
    }
};

}  // namespace

std::unique_ptr<command> add_register_command(CLI::App& app) {
    auto cmd = std::make_unique<register_command>();
    auto* sub = app.add_subcommand("register", "run a command while a service instance is registered for discovery");
    sub->add_option("NAME", cmd->names, "the service's name")->type_name("");
    sub->add_option("--address", cmd->address, "the instance's address (host name or IP)")->type_name("A")->required();
    add_number(*sub, "--port", cmd->port, 0, 65535, "the instance's port", true)->type_name("P");
    add_number(*sub, "--ssl-port", cmd->ssl_port, 0, 65535, "the instance's TLS port", true)->type_name("P");
    sub->add_option("--id", cmd->id, "the instance's id (default: a random UUID)")->type_name("ID");
    sub->add_option("--payload", cmd->payload, "the payload as one JSON value (a string is written '\"text\"')")->type_name("JSON");
    sub->add_option("--uri-spec", cmd->uri_spec, "Curator's UriSpec, as '{scheme}://{address}:{port}'")->type_name("SPEC");
    sub->add_option("--base", cmd->base, "the discovery base path (Curator's basePath; default /services)")->type_name("PATH");
    add_number(*sub, "--grace", cmd->grace, 0, 3600, "when stopping COMMAND: SIGTERM, then SIGKILL after SECONDS (default 5)")->type_name("SECONDS");
    cmd->connection.add_to(*sub);
    sub->footer(
        "Registers an instance of the service NAME (curator-x-discovery's layout and JSON: an ephemeral node\n"
        "BASE/NAME/ID, seen by zkr services, zkr::service_discovery and Curator's ServiceDiscovery), runs COMMAND,\n"
        "and unregisters once COMMAND has exited. The instance exists while COMMAND runs: it is made again after a\n"
        "session loss or a deletion, and goes with the session if zkr is killed (-9 included; a guardian then\n"
        "stops COMMAND's process group). COMMAND gets ZKR_SERVICE_NAME, ZKR_SERVICE_ID and ZKR_SERVICE_PATH (the\n"
        "node). Signals sent to zkr are forwarded to COMMAND's process group.\n\n"
        "exit codes: COMMAND's status (128+N if a signal N ended it); 2 bad usage; 3 ZooKeeper unreachable or\n"
        "failing (or the instance not registered within --connect-timeout: its id another session's); 126 COMMAND\n"
        "cannot run; 127 not found.");
    return cmd;
}

}  // namespace zkr::cli
