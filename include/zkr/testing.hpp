/// @file
/// zkr::testing: real ZooKeeper servers for the tests of code that uses zkr, the counterpart of
/// Curator's curator-test (TestingServer, TestingCluster, KillSession).
///
/// A separate library and package (CMake target zkr::testing, Debian package libzkr-testing-dev),
/// kept apart from zkr itself: it starts Java processes and is meant for tests only. The servers
/// are Debian's `zookeeper` package run with `/usr/bin/java`
/// (`/usr/share/java/zookeeper.jar`), each on free loopback ports with its own temporary data
/// directory.
///
/// zkr::testing links the shared zkr (zkr::zkr): link a test with zkr::zkr, not zkr::zkr_static,
/// or the process holds two copies of zkr.
#pragma once

#include <zkr/client.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace zkr::testing {

/// How a cluster's servers are configured.
struct cluster_options {
    /// 1: a standalone server; 3 (or any odd number): an ensemble.
    int servers = 1;
    /// The server's tickTime: small, so that short session timeouts are allowed.
    int tick_ms = 100;
    /// minSessionTimeout: the shortest session a client may ask for.
    int min_session_ms = 200;
    /// maxSessionTimeout: the longest session a client may ask for.
    int max_session_ms = 60'000;
    /// forceSync: off by default (faster; durability is rarely what a test is about).
    bool force_sync = false;
    /// znode.container.checkIntervalMs: how soon empty container nodes are removed.
    int container_check_ms = 500;
    /// Starts the JVM with its C1 compiler only: quicker to start, slower at peak (not for benchmarks).
    bool fast_jvm_start = true;
    /// Per server: the address it serves on and the ensemble reaches it by (default 127.0.0.1).
    std::vector<std::string> hosts;
    /// Per server: a network namespace file (/run/netns/NAME) the server runs in (default: the
    /// caller's). For partition tests; needs root.
    std::vector<std::string> netns_files;
    /// Extra Java system properties of every server, as "-Dname=value" (after zkr's own, so
    /// "-Dzookeeper.extendedTypesEnabled=false" turns TTL nodes off).
    std::vector<std::string> jvm_properties;
    /// Extra zoo.cfg lines of every server ("localSessionsEnabled=true").
    std::vector<std::string> config_lines;
};

/// A throwaway ZooKeeper: a standalone server or an ensemble, started by the constructor.
///
/// Servers are numbered from 0. Each is a child process that dies with the test process, however
/// that ends (PR_SET_PDEATHSIG); the destructor kills them and removes their directory, and
/// directories left by killed test processes are removed by the next cluster made. Set the
/// environment variable ZKR_FAULT_KEEP to keep the directory (its path is printed) and read the
/// servers' logs (`serverN/server.log`; the servers log only then, at INFO, through slf4j-simple
/// from Debian's libslf4j-java).
///
/// Not thread-safe: drive one cluster from one thread at a time.
class cluster {
public:
    /// Starts every server and waits until each serves (an ensemble: until it has a quorum).
    /// @throws std::runtime_error when a server does not start; the message holds its log's end.
    explicit cluster(cluster_options options = {});
    /// Kills every server and removes the directory.
    ~cluster();
    cluster(const cluster&) = delete;
    cluster& operator=(const cluster&) = delete;

    /// How many servers.
    int size() const { return static_cast<int>(servers_.size()); }
    /// Every server's address, for client_options::connect_string ("127.0.0.1:p1,127.0.0.1:p2,...").
    std::string connect_string() const;
    /// One server's address ("127.0.0.1:port"), for a client that must use that server only.
    std::string connect_string(int server) const;
    /// One server's client port.
    int client_port(int server) const;
    /// The address server `server` serves on.
    std::string host(int server) const;

    /// Starts a stopped server; with `wait`, waits until it serves (an ensemble member: until it
    /// has joined a quorum, if one can form).
    void start(int server, bool wait = true);
    /// Starts every stopped server, then waits until each serves.
    void start_all();
    /// Stops a server cleanly (SIGTERM) and waits for it to end. Its data is kept.
    void stop(int server);
    /// Kills a server (SIGKILL) and waits for it to end. Its data is kept.
    void kill(int server);
    /// stop(), then start() and wait until it serves again.
    void restart(int server) {
        stop(server);
        start(server);
    }
    /// Freezes a server (SIGSTOP): it keeps its sockets open and answers nothing, as a server in a
    /// long garbage-collection pause or on a stalled machine does. Clients time out and move on.
    void pause(int server);
    /// Thaws a paused server (SIGCONT).
    void resume(int server);
    /// Whether the server's process runs (paused counts as running).
    bool running(int server) const;

    /// Whether the server answers "srvr" with a mode (standalone, leader or follower).
    bool serving(int server) const;
    /// Waits until the server serves; false if it did not within `timeout` or its process ended.
    bool wait_serving(int server, std::chrono::milliseconds timeout = std::chrono::seconds(30)) const;
    /// The ensemble's leader, or -1 when no running server says it leads (a standalone server
    /// is no leader: -1).
    int leader() const;
    /// The server holding a connection of this session (see client::session_id()), or -1.
    int server_of_session(std::int64_t session_id) const;
    /// A four-letter-word command's answer ("srvr", "cons", "mntr"...); "" if the server does not
    /// answer within a second.
    std::string four_letter(int server, const std::string& command) const;

    /// Ends the client's session on the servers now, as if its process had been paused past its
    /// session timeout: the client then reports connection_state::lost and starts a new session.
    /// Returns once the client has seen its old session end.
    /// @throws std::runtime_error when the session cannot be ended.
    void expire_session(zkr::client& c) const;

private:
    struct server_process;
    void write_config(server_process& s);
    void await_serving(int server);
    cluster_options options_;
    std::string dir_;
    std::vector<std::unique_ptr<server_process>> servers_;
};

/// Ends the session of `c` through the servers at `connect_string`: opens a second handle with
/// the session's id and password, waits until it is connected, and closes it, which ends the
/// session; repeats until the client has seen its session end. The counterpart of Curator's
/// KillSession. While it runs, the process's own clients are held off the network (for well
/// under a second), so that `c` cannot take its session back first.
/// @throws std::runtime_error when the session cannot be ended.
void expire_session(const std::string& connect_string, zkr::client& c);
/// Ends a session given by id and password (a session of another process, say).
/// @throws std::runtime_error when the session cannot be ended.
void expire_session(const std::string& connect_string, std::int64_t session_id, const std::string& password);

/// A loopback port that is free now, below the kernel's ephemeral range (so that no client's own
/// port can take it meanwhile). Never the same port twice in one process.
/// @throws std::runtime_error when none is free.
int free_loopback_port();
/// A four-letter-word command's answer from the server at host:port ("" if none within `timeout`).
std::string send_four_letter(int port, const std::string& command, std::chrono::milliseconds timeout,
                             const std::string& host = "127.0.0.1");

/// Polls `condition` every 10 ms until it returns true (then true) or `timeout` passes (then false).
template <typename Condition>
bool eventually(Condition condition, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!condition()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
}

}  // namespace zkr::testing
