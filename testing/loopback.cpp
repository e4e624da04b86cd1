// Loopback ports and four-letter-word commands: how a test finds room for servers and asks them
// what they are.
#include <zkr/testing.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>

namespace zkr::testing {

// A port outside the kernel's ephemeral range, free when we look. Not a bind(0) port: a client
// reconnecting to a stopped server's ephemeral-range port can be given that very port as its own
// local port and connect to itself (TCP simultaneous open), and the restarted server then cannot
// bind. A CI run failed that way.

int free_loopback_port() {
    static std::mutex m;
    static std::set<int> handed_out;  // a cluster asks for several ports before any server binds
    static std::mt19937 rng(static_cast<unsigned>(::getpid()) ^
                            static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count()));
    int ephemeral_low = 32768;
    if (std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range"); range) range >> ephemeral_low;
    const int low = 10000;
    const int high = std::max(low + 1000, ephemeral_low) - 1;
    std::uniform_int_distribution<int> pick(low, high);
    std::lock_guard lock(m);
    for (int attempt = 0; attempt < 1000; ++attempt) {
        const int port = pick(rng);
        if (handed_out.count(port)) continue;
        const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(static_cast<std::uint16_t>(port));
        const bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
        ::close(fd);
        if (free) {
            handed_out.insert(port);
            return port;
        }
    }
    throw std::runtime_error("no free loopback port below the ephemeral range");
}


std::string send_four_letter(int port, const std::string& cmd, std::chrono::milliseconds timeout, const std::string& host) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    ::inet_pton(AF_INET, host.c_str(), &a.sin_addr);
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    std::string out;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    auto remaining = [&] {
        return static_cast<int>(std::max<std::int64_t>(
            0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count()));
    };
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 && errno != EINPROGRESS) {
        ::close(fd);
        return out;
    }
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, remaining()) <= 0 || (p.revents & (POLLERR | POLLHUP))) {
        ::close(fd);
        return out;
    }
    if (::send(fd, cmd.data(), cmd.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(cmd.size())) {
        ::close(fd);
        return out;
    }
    char buf[4096];
    for (;;) {
        p = {fd, POLLIN, 0};
        if (::poll(&p, 1, remaining()) <= 0) break;
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        out.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return out;
}

}  // namespace zkr::testing
