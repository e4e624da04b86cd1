// A TCP proxy on loopback for network faults (this machine has no netem and no toxiproxy): clients
// connect to port(), the proxy connects to the target port and copies bytes both ways on a thread
// of its own. Faults:
//   blackhole(true)      nothing moves in either direction (bytes wait, as packets would be
//                        retransmitted); new connections are accepted and then starve too
//   drop_replies(true)   requests go to the server, its replies are thrown away: a reply lost after
//                        the server applied the request (the protected-create path)
//   reset_all()          every open connection is reset (RST), as a dropped connection
//   pass_requests(n)     from now on only n more whole requests (ZooKeeper's length-prefixed
//                        frames) go to the server; the rest wait in the proxy, in order, until
//                        pass_all_requests(): so a test can act between two pipelined requests
// A server that is down is seen as a refused connection: the proxy resets the client's.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <memory>
#include <thread>

namespace zkr::test {

class tcp_proxy {
public:
    explicit tcp_proxy(int target_port);
    /// To a server on another address (a net_lab namespace's), e.g. "10.0.0.2".
    tcp_proxy(const std::string& target_address, int target_port);
    ~tcp_proxy();
    tcp_proxy(const tcp_proxy&) = delete;
    tcp_proxy& operator=(const tcp_proxy&) = delete;

    int port() const { return port_; }
    void blackhole(bool on);
    void drop_replies(bool on);
    void reset_all();
    void pass_requests(std::size_t n);
    void pass_all_requests();
    /// Whole requests waiting in the proxy after pass_requests' n went through.
    std::size_t requests_held() const { return held_.load(); }
    /// Connections open now.
    std::size_t connections() const { return open_.load(); }

private:
    tcp_proxy(std::uint32_t target_address, int target_port);
    struct impl;
    void loop();
    void wake();

    int port_ = 0;
    int target_port_ = 0;
    std::uint32_t target_address_ = 0;  // IPv4, network byte order
    int listen_fd_ = -1;
    int wake_pipe_[2] = {-1, -1};
    std::atomic<bool> blackhole_{false};
    std::atomic<bool> drop_replies_{false};
    std::atomic<int> resets_requested_{0};
    std::atomic<bool> stop_{false};
    std::atomic<std::size_t> open_{0};
    std::atomic<long> request_budget_{-1};  // whole requests still to pass; -1: all
    std::atomic<std::size_t> held_{0};
    std::thread thread_;
};

}  // namespace zkr::test
