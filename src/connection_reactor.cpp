// The C handle and its socket: opening and closing the handle, the pump that asks the C client
// what it waits for, the Asio descriptor on its socket, and the C client's process-wide lock and log.
#include "connection_internal.hpp"
#include "log_throttle.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>

namespace zkr::detail {

std::recursive_mutex& c_client_mutex() {
    static std::recursive_mutex m;
    return m;
}

// The C client logs through a plain function pointer with no context. Every call into the C client
// happens on a client's network thread, so a thread-local pointer finds that client's logger.
thread_local spdlog::logger* network_thread_logger = nullptr;

namespace {

// Per network thread, as the logger: an outage's reconnect attempts repeat the same two lines.
thread_local log_throttle c_client_lines;

void zk_log(const char* message) {
    spdlog::logger* log = network_thread_logger;
    if (!log || !message) return;
    std::string_view m(message);
    while (!m.empty() && (m.back() == '\n' || m.back() == '\r')) m.remove_suffix(1);
    spdlog::level::level_enum level = spdlog::level::info;
    if (m.find("ZOO_ERROR@") != std::string_view::npos) level = spdlog::level::err;
    else if (m.find("ZOO_WARN@") != std::string_view::npos) level = spdlog::level::warn;
    else if (m.find("ZOO_DEBUG@") != std::string_view::npos) level = spdlog::level::debug;
    if (!log->should_log(level)) return;
    const auto v = c_client_lines.offer(m, std::chrono::steady_clock::now());
    if (v.summary) log->log(level, "zookeeper: ({})", *v.summary);
    if (v.log) log->log(level, "zookeeper: {}", m);
}

void ignore_session_events(zhandle_t*, int, int, const char*, void*) {
    // Session changes are read with zoo_state after every call into the C client: its queued
    // session events reach us only after a successful read, which never happens while the
    // server is down (see docs/design.md).
}

void on_auth_added(int rc, const void* data) {
    if (rc != ZOK && network_thread_logger)
        network_thread_logger->error("adding auth failed: {}", zerror(rc));
    (void)data;
}

bool socket_readable(int fd) {
    if (fd < 0) return false;
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN) != 0;
}

}  // namespace

// zoo_set_debug_level is process-wide: keep the most verbose level any client's logger wants.
void raise_c_client_log_level(const spdlog::logger& log) {
    static std::mutex m;
    static int current = 0;
    int wanted = ZOO_LOG_LEVEL_ERROR;
    if (log.should_log(spdlog::level::debug)) wanted = ZOO_LOG_LEVEL_DEBUG;
    else if (log.should_log(spdlog::level::info)) wanted = ZOO_LOG_LEVEL_INFO;
    else if (log.should_log(spdlog::level::warn)) wanted = ZOO_LOG_LEVEL_WARN;
    std::lock_guard lock(m);
    if (wanted > current) {
        current = wanted;
        const c_client_lock c_lock(c_client_mutex());
        zoo_set_debug_level(static_cast<ZooLogLevel>(wanted));
    }
}

void connection::open_handle() {
    const c_client_lock c_lock(c_client_mutex());
    if (closing_) return;
    const int flags = ZOO_NO_LOG_CLIENTENV | (options_.can_be_read_only ? ZOO_READONLY : 0);
    zh_ = zookeeper_init2(options_.connect_string.c_str(), &ignore_session_events,
                          static_cast<int>(options_.session_timeout.count()), nullptr, this, flags, &zk_log);
    if (!zh_) {
        options_.logger->error("cannot create a ZooKeeper handle for \"{}\": {}; trying again in 1 s",
                               options_.connect_string, std::strerror(errno));
        reopen_timer_.expires_after(std::chrono::seconds(1));
        reopen_timer_.async_wait([this](boost::system::error_code ec) {
            if (!ec) open_handle();
        });
        return;
    }
    // By default the C client resolves the host names every time it checks the socket: a
    // getaddrinfo (netlink socket, /etc/hosts) per request. Resolve on connection loss only.
    zoo_set_servers_resolution_delay(zh_, -1);
    last_zk_state_ = zoo_state(zh_);
    for (const auto& a : options_.auth)
        zoo_add_auth(zh_, a.scheme.c_str(), a.credentials.data(), static_cast<int>(a.credentials.size()),
                     &on_auth_added, this);
    pump();
}

void connection::reset_handle(bool closing) {
    const c_client_lock c_lock(c_client_mutex());
    if (!zh_) return;
    release_socket();
    cancel_zk_timer();
    handshake_timer_.cancel();
    zhandle_t* old = std::exchange(zh_, nullptr);
    in_handle_close_ = true;
    zookeeper_close(old);  // st library: flushes the close request (loopback: at once), frees the handle
    in_handle_close_ = false;
    last_zk_state_ = 0;
    // The C client will call nothing more: settle what it still held.
    const auto ec = make_error_code(closing ? errc::closed : errc::session_expired);
    auto pending = depot_.take_inflight();
    for (auto& [key, f] : pending)
        if (!f->abandoned && f->op) {
            watches_.settle(f->watch, false);
            closing ? finish(f->op, ec, {}) : retry_or_finish(f->op, ec);
        }
    watches_.end_all();
}

void connection::schedule_pump() {
    if (pump_scheduled_) return;
    pump_scheduled_ = true;
    boost::asio::post(io_, [this] {
        pump_scheduled_ = false;
        pump();
    });
}

// Asks the C client what it waits for (socket readiness, a deadline for pings and timeouts) and
// arms the matching waits. Runs after every call into the C client.
void connection::pump() {
    const c_client_lock c_lock(c_client_mutex());
    if (!zh_) return;
    int interest = 0;
    struct timeval tv {};
    int fd = ask_interest(interest, tv);
    check_handle_state();
    if (!zh_) return;
    track_socket(fd);
    if (fd >= 0 && (interest & ZOOKEEPER_WRITE) && is_connected(machine_.state()) && !flushing_) {
        // Requests are queued: send them now rather than after another trip through epoll (the
        // socket is almost always writable; if not, the C client keeps them for the next try).
        flushing_ = true;
        const int flushed = zookeeper_process(zh_, ZOOKEEPER_WRITE);
        flushing_ = false;
        if (flushed != ZOK && flushed != ZNOTHING) options_.logger->debug("zookeeper_process: {}", zerror(flushed));
        check_handle_state();
        if (!zh_) return;
        fd = ask_interest(interest, tv);
        track_socket(fd);
    }
    if (fd >= 0) {
        if ((interest & ZOOKEEPER_READ) && !read_waiting_) wait_socket(false);
        if ((interest & ZOOKEEPER_WRITE) && !write_waiting_) wait_socket(true);
    }
    const auto wait = std::chrono::seconds(tv.tv_sec) + std::chrono::microseconds(tv.tv_usec);
    arm_zk_timer(clock::now() + std::max<clock::duration>(wait, std::chrono::milliseconds(1)));
}

// The C client's next deadline (a ping due, a timeout to check). The timer is moved only when the
// deadline comes sooner than the timer's: pump() runs after every reply, and moving the timer each
// time cancelled its wait (one handler run for nothing) and reset the reactor's timerfd (a
// syscall). A timer that fires before the C client's deadline costs one on_socket_ready, which
// asks the C client again and arms the timer anew.
void connection::arm_zk_timer(clock::time_point due) {
    if (zk_timer_pending_ && zk_timer_.expiry() <= due) return;
    zk_timer_pending_ = true;
    zk_timer_.expires_at(due);
    zk_timer_.async_wait([this, gen = ++zk_timer_gen_](boost::system::error_code ec) {
        if (gen == zk_timer_gen_) zk_timer_pending_ = false;  // (a wait replaced since: not this one)
        if (!ec) on_socket_ready(0);
    });
}

void connection::cancel_zk_timer() {
    zk_timer_.cancel();
    zk_timer_pending_ = false;
}

// zookeeper_interest, and the C client's socket when it has one. The fd it reports is read before
// its receive-timeout check and before a read-only server's probe, either of which may close that
// socket within the call: after such a drop (an error, or a state with no socket) the number is
// stale and may already name another thread's file, so it is never used.
int connection::ask_interest(int& interest, struct timeval& tv) {
    int fd = -1;
    interest = 0;
    const int rc = zookeeper_interest(zh_, &fd, &interest, &tv);
    if (rc != ZOK) {
        options_.logger->debug("zookeeper_interest: {}", zerror(rc));
        return -1;
    }
    const int s = zoo_state(zh_);
    const bool has_socket = s == ZOO_CONNECTING_STATE || s == ZOO_ASSOCIATING_STATE || s == ZOO_CONNECTED_STATE ||
                            s == ZOO_READONLY_STATE;
    return has_socket ? fd : -1;
}

// Keeps the Asio descriptor on the C client's current socket. Asio watches a dup() that zkr owns:
// the C client closes its own fd when it drops a connection, and the number may be reused at once
// by another thread, so zkr must never make a syscall on a number it does not own. The C client
// may also open a new socket under the same number: the inode tells sockets apart.
void connection::track_socket(int fd) {
    if (fd < 0) {
        release_socket();
        return;
    }
    struct ::stat st {};
    if (::fstat(fd, &st) != 0) {  // ask_interest vouched for fd: it is the C client's open socket
        release_socket();
        return;
    }
    if (socket_.is_open() && st.st_ino == socket_ino_) return;
    release_socket();
    if (!S_ISSOCK(st.st_mode)) {  // never: that number is not the C client's socket any more
        options_.logger->error("zookeeper_interest reported fd {}, which is not a socket: not watched", fd);
        return;
    }
    const int own = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (own < 0) {
        options_.logger->error("cannot duplicate the ZooKeeper socket: {}", std::strerror(errno));
        return;
    }
    boost::system::error_code ec;
    socket_.assign(own, ec);
    if (ec) {
        ::close(own);
        options_.logger->error("cannot watch the ZooKeeper socket: {}", ec.message());
        return;
    }
    socket_ino_ = st.st_ino;
}

void connection::release_socket() {
    if (socket_.is_open()) {
        boost::system::error_code ec;
        socket_.close(ec);  // our dup: the C client's socket is the C client's to close
    }
    ++socket_gen_;
    read_waiting_ = write_waiting_ = false;
}

void connection::drop_connection() {
    const c_client_lock c_lock(c_client_mutex());
    if (!zh_ || !socket_.is_open()) return;
    options_.logger->warn("server {} accepted the connection but did not answer its handshake within {} ms: "
                          "trying the next server",
                          zoo_get_current_server(zh_), handshake_timeout().count());
    // On zkr's dup, never on the C client's number; the shutdown reaches the shared socket, whose
    // read then ends: the C client handles that as any dropped connection.
    ::shutdown(socket_.native_handle(), SHUT_RDWR);
}

std::chrono::milliseconds connection::session_timeout_now() const noexcept {
    return negotiated_ms_ > 0 ? std::chrono::milliseconds(negotiated_ms_.load()) : options_.session_timeout;
}

// The C client writes a request as two send() calls, its length and then its body, on a socket with
// TCP_NODELAY: each left as a segment of its own, and a pipelined pair (a lock's create and
// listing) as four, each for the server to read apart; in the W8 benchmark the server's CPU is
// what runs out first (docs/performance.md). TCP_CORK on zkr's dup (the socket is shared
// with the C client's descriptor) holds the writes of one batch of requests back, and ending the
// batch sends them as one segment, at once: no delay is added, as the batch ends in the same
// handler. The socket's generation is checked at the end: if the socket was let go meanwhile, its
// connection was dropped or the handle is closing, and nothing is written on it any more.
// Returns 0 when nothing was corked; else the generation plus one.
std::uint64_t connection::begin_send_batch() {
    if (!socket_.is_open()) return 0;
    const int on = 1;
    if (::setsockopt(socket_.native_handle(), IPPROTO_TCP, TCP_CORK, &on, sizeof on) != 0) return 0;
    return socket_gen_ + 1;
}

void connection::end_send_batch(std::uint64_t batch) {
    if (batch == 0 || batch != socket_gen_ + 1 || !socket_.is_open()) return;
    const int off = 0;
    ::setsockopt(socket_.native_handle(), IPPROTO_TCP, TCP_CORK, &off, sizeof off);
}

void connection::wait_socket(bool for_write) {
    (for_write ? write_waiting_ : read_waiting_) = true;
    socket_.async_wait(for_write ? boost::asio::posix::descriptor_base::wait_write
                                 : boost::asio::posix::descriptor_base::wait_read,
                       [this, for_write, gen = socket_gen_](boost::system::error_code ec) {
                           if (gen != socket_gen_) return;
                           (for_write ? write_waiting_ : read_waiting_) = false;
                           if (ec) return;
                           on_socket_ready(for_write ? ZOOKEEPER_WRITE : ZOOKEEPER_READ);
                       });
}

void connection::heard_now() noexcept {
    last_heard_.store(std::chrono::steady_clock::now().time_since_epoch().count(), std::memory_order_relaxed);
}

std::chrono::steady_clock::duration connection::silence() const noexcept {
    return std::chrono::steady_clock::now().time_since_epoch() -
           std::chrono::steady_clock::duration(last_heard_.load(std::memory_order_relaxed));
}

bool connection::silent_past_receive_timeout() const noexcept {
    return is_connected(state()) && silence() > negotiated_timeout() * 2 / 3;
}

void connection::on_socket_ready(int events) {
    const c_client_lock c_lock(c_client_mutex());
    if (!zh_) return;
    // The C client's receive timeout first, then the bytes. A process that could not run for a
    // while (SIGSTOP, a VM pause, a stalled network thread) may find replies that waited in the
    // socket; reading them first would refresh the C client's "last heard" and hide the silence, so
    // a reply could say "ok" and leave a hold looking held although the session expired meanwhile.
    // zookeeper_interest drops a connection silent for 2/3 of the session timeout: it is then
    // suspended, and those replies count as lost with it (their outcome unknown), as they would had
    // the timer fired first. A silence shorter than the ping interval cannot have reached that
    // timeout: the call is skipped then, as it would otherwise run once per reply.
    if (silence() > negotiated_timeout() / 3) {
        int interest = 0;
        struct timeval tv {};
        const int fd = ask_interest(interest, tv);
        check_handle_state();
        if (!zh_) return;
        if (fd < 0) {  // dropped: nothing of that connection is read any more
            pump();
            return;
        }
    }
    // zookeeper_process reads one buffer per call and Asio's epoll is edge-triggered:
    // keep reading while the socket stays readable.
    for (int i = 0; zh_ && i < 256; ++i) {
        // Never a read while a connect is under way: the C client would allocate its input buffer,
        // find nothing, and then lose that buffer when the connect completes (prime_connection
        // replaces it): a leak per reconnect. The write readiness completes the connect, errors
        // included (a refused connect is writable too).
        if ((events & ZOOKEEPER_READ) && zoo_state(zh_) == ZOO_CONNECTING_STATE) break;
        const int rc = zookeeper_process(zh_, events);
        if (rc == ZOK && (events & ZOOKEEPER_READ)) heard_now();
        check_handle_state();
        if (rc != ZOK || !zh_ || !(events & ZOOKEEPER_READ) || !socket_.is_open() ||
            !socket_readable(socket_.native_handle()))
            break;
    }
    pump();
}

}  // namespace zkr::detail
