// Real ZooKeeper servers for tests: a standalone server or an ensemble on loopback, each on free
// ports with its own temporary data directory, started from the Debian package's jar.
// Servers die with the test process (PR_SET_PDEATHSIG) and directories are removed by the
// destructor; directories of killed test runs are swept at the next start.
#pragma once

#include <zkr/client.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace zkr::test {

struct cluster_options {
    int servers = 1;                  ///< 1: standalone; 3: ensemble
    int tick_ms = 100;                ///< small, so session timeouts can be short
    int min_session_ms = 200;
    int max_session_ms = 60'000;
    bool force_sync = false;          ///< durability is not under test unless asked
    int container_check_ms = 500;     ///< znode.container.checkIntervalMs: containers go quickly
    bool fast_jvm_start = true;       ///< C1-only JIT: quicker start, slower peak (not for benchmarks)
    /// Per server: the address it serves on and the ensemble reaches it by (default 127.0.0.1).
    std::vector<std::string> hosts;
    /// Per server: a network namespace file (net_lab::netns_file) to run it in (default: ours).
    std::vector<std::string> netns_files;
    /// Extra Java system properties of every server ("-Dreadonlymode.enabled=true").
    std::vector<std::string> jvm_properties;
    /// Extra zoo.cfg lines of every server ("localSessionsEnabled=true").
    std::vector<std::string> config_lines;
};

class zk_cluster {
public:
    explicit zk_cluster(cluster_options options = {});
    ~zk_cluster();
    zk_cluster(const zk_cluster&) = delete;
    zk_cluster& operator=(const zk_cluster&) = delete;

    int size() const { return static_cast<int>(servers_.size()); }
    /// Every server ("127.0.0.1:p1,127.0.0.1:p2,...").
    std::string connect_string() const;
    /// One server.
    std::string connect_string(int server) const;
    int client_port(int server) const;

    /// Starts a stopped server and waits until it serves (an ensemble member: until it has
    /// joined a quorum, if one can form).
    void start(int server, bool wait = true);
    void start_all();
    /// SIGTERM and wait for the process to end.
    void stop(int server);
    /// SIGKILL and wait.
    void kill(int server);
    void restart(int server) {
        stop(server);
        start(server);
    }
    /// SIGSTOP / SIGCONT: a frozen server keeps its sockets open but answers nothing.
    void pause(int server);
    void resume(int server);
    bool running(int server) const;

    /// "srvr" answers with a Mode: line.
    bool serving(int server) const;
    bool wait_serving(int server, std::chrono::milliseconds timeout = std::chrono::seconds(30)) const;
    /// The index of the leader, or -1.
    int leader() const;
    /// The server holding a connection of this session, or -1 ("cons").
    int server_of_session(std::int64_t session_id) const;
    /// A four-letter-word command's answer ("" if the server does not answer).
    std::string four_letter(int server, const std::string& cmd) const;
    /// The address server i serves on.
    std::string host(int server) const;

private:
    struct server_process;
    void write_config(server_process& s);
    void await_serving(int server);
    cluster_options options_;
    std::string dir_;
    std::vector<std::unique_ptr<server_process>> servers_;
};

/// Expires a session on purpose: opens a second handle with the same id and password, waits
/// until it is connected, and closes it (the server then ends the session); repeats until a new
/// handle is told that the session expired. Throws when it cannot end it.
void expire_session(const std::string& connect_string, std::int64_t session_id, const std::string& password);
/// A loopback port below the kernel's ephemeral range that is free now (zk_cluster.cpp says why
/// not from the ephemeral range).
int free_loopback_port();
/// A four-letter command's reply ("srvr", "cons", ...) from the server on 127.0.0.1:port.
std::string send_four_letter(int port, const std::string& cmd, std::chrono::milliseconds timeout,
                             const std::string& host = "127.0.0.1");
void expire_session(const std::string& connect_string, zkr::client& c);

/// Client options for tests: short timeouts, a logger writing warnings to stderr (ZKR_TEST_LOG=debug
/// for more), and a fast retry policy.
client_options test_options(const std::string& connect_string, std::chrono::milliseconds session_timeout = std::chrono::seconds(4));

/// Polls pred every 10 ms until it holds or the timeout passes.
template <typename Pred>
bool eventually(Pred pred, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!pred()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
}

/// Records the states a client reports, for assertions on their order.
class state_recorder {
public:
    explicit state_recorder(zkr::client& c);
    std::vector<connection_state> states() const;
    bool wait_for(connection_state s, std::chrono::milliseconds timeout = std::chrono::seconds(20)) const;
    /// Waits for s to be reported at least n times in all.
    bool wait_count(connection_state s, int n, std::chrono::milliseconds timeout = std::chrono::seconds(20)) const;
    void clear();

private:
    struct shared;
    std::shared_ptr<shared> shared_;
    state_subscription subscription_;
};

}  // namespace zkr::test
