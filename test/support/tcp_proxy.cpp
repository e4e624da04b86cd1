#include "tcp_proxy.hpp"
#include "zk_cluster.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <list>
#include <stdexcept>
#include <string>
#include <vector>

namespace zkr::test {

namespace {

constexpr std::size_t max_buffered = 1 << 20;

sockaddr_in ipv4(std::uint32_t address, int port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = address;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    return a;
}

sockaddr_in loopback(int port) { return ipv4(htonl(INADDR_LOOPBACK), port); }

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

// Close with RST rather than FIN: the peer sees a dropped connection.
void reset_close(int fd) {
    linger l{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    ::close(fd);
}

struct pipe_pair {
    int client = -1;
    int server = -1;
    std::string to_server;  // read from the client, not yet written
    std::string to_client;
    std::size_t passable = 0;  // the bytes at the front of to_server that may go now
    bool dead = false;
};

// The length of the whole frame at `at` (a 4-byte big-endian length, then that many bytes), or 0
// while it has not all arrived.
std::size_t whole_frame(const std::string& buffer, std::size_t at) {
    if (buffer.size() < at + 4) return 0;
    const auto* b = reinterpret_cast<const unsigned char*>(buffer.data() + at);
    const std::size_t length = (std::size_t{b[0]} << 24) | (std::size_t{b[1]} << 16) | (std::size_t{b[2]} << 8) | b[3];
    return buffer.size() < at + 4 + length ? 0 : 4 + length;
}

// Moves what can move from src into buffer (or drops it); false when src is closed or failed.
bool pull(int src, std::string& buffer, bool discard) {
    char chunk[16384];
    const ssize_t n = ::recv(src, chunk, sizeof chunk, 0);
    if (n == 0) return false;
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    if (!discard) buffer.append(chunk, static_cast<std::size_t>(n));
    return true;
}

bool push(int dst, std::string& buffer, std::size_t limit = std::string::npos) {
    const ssize_t n = ::send(dst, buffer.data(), std::min(limit, buffer.size()), MSG_NOSIGNAL);
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    buffer.erase(0, static_cast<std::size_t>(n));
    return true;
}

}  // namespace

namespace {
std::uint32_t parse_ipv4(const std::string& address) {
    in_addr a{};
    if (::inet_pton(AF_INET, address.c_str(), &a) != 1) throw std::runtime_error("tcp_proxy: not an IPv4 address: " + address);
    return a.s_addr;
}
}  // namespace

tcp_proxy::tcp_proxy(int target_port) : tcp_proxy(htonl(INADDR_LOOPBACK), target_port) {}

tcp_proxy::tcp_proxy(const std::string& target_address, int target_port) : tcp_proxy(parse_ipv4(target_address), target_port) {}

tcp_proxy::tcp_proxy(std::uint32_t target_address, int target_port) : target_port_(target_port), target_address_(target_address) {
    if (::pipe2(wake_pipe_, O_CLOEXEC | O_NONBLOCK) != 0) throw std::runtime_error("tcp_proxy: pipe failed");
    for (int attempt = 0; attempt < 20 && listen_fd_ < 0; ++attempt) {
        port_ = free_loopback_port();
        const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        const int one = 1;
        ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        auto a = loopback(port_);
        if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::listen(fd, 128) == 0) {
            set_nonblocking(fd);
            listen_fd_ = fd;
        } else {
            ::close(fd);
        }
    }
    if (listen_fd_ < 0) throw std::runtime_error("tcp_proxy: cannot listen");
    thread_ = std::thread([this] { loop(); });
}

tcp_proxy::~tcp_proxy() {
    stop_ = true;
    wake();
    thread_.join();
    ::close(listen_fd_);
    ::close(wake_pipe_[0]);
    ::close(wake_pipe_[1]);
}

void tcp_proxy::wake() {
    const char b = 1;
    [[maybe_unused]] const auto n = ::write(wake_pipe_[1], &b, 1);
}

void tcp_proxy::blackhole(bool on) {
    blackhole_ = on;
    wake();
}

void tcp_proxy::drop_replies(bool on) {
    drop_replies_ = on;
    wake();
}

void tcp_proxy::pass_requests(std::size_t n) {
    request_budget_ = static_cast<long>(n);
    wake();
}

void tcp_proxy::pass_all_requests() {
    request_budget_ = -1;
    wake();
}

void tcp_proxy::reset_all() {
    ++resets_requested_;
    wake();
}

void tcp_proxy::loop() {
    std::list<pipe_pair> pairs;
    int resets_done = 0;
    while (!stop_) {
        if (const int wanted = resets_requested_.load(); wanted != resets_done) {
            resets_done = wanted;
            for (auto& p : pairs) p.dead = true;
        }
        for (auto it = pairs.begin(); it != pairs.end();) {
            if (!it->dead) {
                ++it;
                continue;
            }
            reset_close(it->client);
            reset_close(it->server);
            it = pairs.erase(it);
        }
        open_ = pairs.size();

        // Which of the requests read so far may go to the server (all, or up to the budget).
        std::size_t held = 0;
        for (auto& p : pairs) {
            for (std::size_t frame; p.passable < p.to_server.size();) {
                if (request_budget_.load() < 0) {
                    p.passable = p.to_server.size();
                    break;
                }
                if ((frame = whole_frame(p.to_server, p.passable)) == 0) break;
                if (request_budget_.load() == 0) {
                    for (std::size_t at = p.passable; (frame = whole_frame(p.to_server, at)) != 0; at += frame) ++held;
                    break;
                }
                --request_budget_;
                p.passable += frame;
            }
        }
        held_ = held;

        const bool frozen = blackhole_;
        std::vector<pollfd> fds{{wake_pipe_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
        std::vector<pipe_pair*> owners{nullptr, nullptr};
        for (auto& p : pairs) {
            short client_events = 0, server_events = 0;
            if (!frozen) {
                if (p.to_server.size() < max_buffered) client_events |= POLLIN;
                if (p.to_client.size() < max_buffered) server_events |= POLLIN;
                if (p.passable > 0) server_events |= POLLOUT;
                if (!p.to_client.empty()) client_events |= POLLOUT;
            }
            fds.push_back({p.client, client_events, 0});
            fds.push_back({p.server, server_events, 0});
            owners.push_back(&p);
            owners.push_back(&p);
        }
        if (::poll(fds.data(), fds.size(), 200) < 0 && errno != EINTR) break;
        if (fds[0].revents & POLLIN) {
            char drain[64];
            while (::read(wake_pipe_[0], drain, sizeof drain) > 0) {
            }
        }
        if (fds[1].revents & POLLIN) {
            for (;;) {
                const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (client < 0) break;
                const int server = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
                auto a = ipv4(target_address_, target_port_);
                // Loopback connects (and a link's, while it is up) complete at once or are refused:
                // a blocking connect is fine here.
                if (::connect(server, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
                    ::close(server);
                    reset_close(client);
                    continue;
                }
                set_nonblocking(server);
                const int one = 1;
                ::setsockopt(server, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                pairs.push_back({client, server, {}, {}, false});
            }
        }
        const bool discard_replies = drop_replies_;
        for (std::size_t i = 2; i < fds.size(); ++i) {
            auto& p = *owners[i];
            const short ev = fds[i].revents;
            if (!ev || p.dead) continue;
            const bool is_client = fds[i].fd == p.client;
            if (ev & (POLLERR | POLLNVAL)) {
                p.dead = true;
                continue;
            }
            if (ev & (POLLIN | POLLHUP)) {
                if (is_client ? !pull(p.client, p.to_server, false) : !pull(p.server, p.to_client, discard_replies)) {
                    p.dead = true;
                    continue;
                }
            }
            if (ev & POLLOUT) {
                const std::size_t before = p.to_server.size();
                if (is_client ? !push(p.client, p.to_client) : !push(p.server, p.to_server, p.passable)) p.dead = true;
                p.passable -= before - p.to_server.size();
            }
        }
    }
    for (auto& p : pairs) {
        reset_close(p.client);
        reset_close(p.server);
    }
}

}  // namespace zkr::test
