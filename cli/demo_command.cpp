// zkr demo: starts a local ZooKeeper (unless one is given) and shows processes taking a fair lock
// in turn; its worker processes are `zkr demo-worker`.
#include "commands.hpp"
#include "supervise.hpp"

#include <zkr/fair_lock.hpp>
#include <zkr/testing.hpp>  // the throwaway server

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

namespace zkr::cli {

namespace {

using namespace std::chrono_literals;

struct demo_worker_command final : command {
    std::vector<std::string> args;

    int run(const std::vector<std::string>&) override {
        if (args.size() != 4) throw usage_error("demo-worker CONNECT PATH ID ROUNDS");
        zkr::client_options o;
        o.connect_string = args[0];
        zkr::client client(o);
        client.start();
        if (!client.block_until_connected(20s)) throw exit_error(exit_zookeeper, "worker cannot connect");
        zkr::fair_lock lock(client, args[1]);
        const std::string me = "worker " + args[2] + " (pid " + std::to_string(::getpid()) + ")";
        const int rounds = std::atoi(args[3].c_str());
        for (int i = 0; i < rounds; ++i) {
            lock.lock();
            say("  " + me + " holds the lock, fencing token " + std::to_string(lock.fencing_token()) + ", " +
                std::to_string(lock.queue_length() - 1) + " waiting");
            std::this_thread::sleep_for(400ms);
            lock.unlock();
            std::this_thread::sleep_for(50ms);  // let the next in the queue take its turn
        }
        return 0;
    }
};

struct demo_command final : command {
    connection_options connection;
    std::vector<std::string> extra;
    double worker_count = 3, round_count = 2;

    int run(const std::vector<std::string>&) override {
        if (!extra.empty()) throw usage_error("zkr demo takes no PATH (unexpected \"" + extra[0] + "\")");
        const int workers = static_cast<int>(worker_count);
        const int rounds = static_cast<int>(round_count);
        std::unique_ptr<zkr::testing::cluster> server;
        std::string connect_to;
        if (connection.servers || std::getenv("ZKR_CONNECT")) {
            connect_to = connection.connect_string();
            connection.connect();  // fail early and clearly when it is not reachable
        } else {
            say("zkr demo: starting a local ZooKeeper (the Debian zookeeper package's server)...");
            try {
                server = std::make_unique<zkr::testing::cluster>();
            } catch (const std::runtime_error& e) {
                throw std::runtime_error(std::string(e.what()) + "; or give --connect HOST:PORT");
            }
            connect_to = server->connect_string();
            say("zkr demo: ZooKeeper serves at " + connect_to + "; it stops when the demo ends");
        }
        const std::string path = "/zkr-demo/lock-" + std::to_string(::getpid());
        say("zkr demo: " + std::to_string(workers) + " processes take the fair lock " + path + " in turn, " +
            std::to_string(rounds) + " time(s) each");
        std::vector<pid_t> children;
        for (int i = 1; i <= workers; ++i) {
            // Made before the fork (see start_command).
            const std::vector<std::string> args = {"zkr", "demo-worker", connect_to, path, std::to_string(i), std::to_string(rounds)};
            std::vector<char*> cargv;
            for (const auto& x : args) cargv.push_back(const_cast<char*>(x.c_str()));
            cargv.push_back(nullptr);
            const pid_t pid = ::fork();
            if (pid == 0) {
                ::execv("/proc/self/exe", cargv.data());
                ::_exit(exit_cannot_run);
            }
            children.push_back(pid);
        }
        int failed = 0;
        for (const pid_t pid : children) {
            int status = 0;
            ::waitpid(pid, &status, 0);
            if (exit_status(status) != 0) ++failed;
        }
        if (failed) throw exit_error(exit_zookeeper, std::to_string(failed) + " worker(s) failed");
        say("zkr demo: done: " + std::to_string(workers * rounds) + " turns, one holder at a time, in queue order");
        if (server) say("zkr demo: next, against your own ZooKeeper: zkr lock --connect HOST:PORT /my/lock -- COMMAND");
        else say("zkr demo: try it yourself: zkr lock --connect " + connect_to + " /my/lock -- sleep 5");
        return 0;
    }
};

}  // namespace

std::unique_ptr<command> add_demo_command(CLI::App& app) {
    auto cmd = std::make_unique<demo_command>();
    auto* sub = app.add_subcommand("demo", "start a local ZooKeeper and watch processes take a fair lock in turn");
    sub->add_option("extra", cmd->extra)->group("");  // only to say that no PATH is taken
    add_number(*sub, "--workers", cmd->worker_count, 1, 50, "processes (default 3)", true)->type_name("N");
    add_number(*sub, "--rounds", cmd->round_count, 1, 100, "turns per process (default 2)", true)->type_name("N");
    sub->add_option("--connect", cmd->connection.servers, "use these ZooKeeper servers instead of a local one")->type_name("HOSTS");
    sub->footer("Starts a local ZooKeeper (unless --connect is given) and runs several processes that take one\n"
        "fair lock in turn, printing each turn as it happens.");
    return cmd;
}

std::unique_ptr<command> add_demo_worker_command(CLI::App& app) {
    auto cmd = std::make_unique<demo_worker_command>();
    auto* sub = app.add_subcommand("demo-worker", "")->group("");  // hidden: zkr demo's processes
    sub->add_option("args", cmd->args);
    return cmd;
}

}  // namespace zkr::cli
