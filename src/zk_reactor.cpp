// The reactor (zk_reactor.hpp), and the C client's process-wide lock and log, which every handle
// shares.
#include "zk_reactor.hpp"

#include "client_hooks.hpp"
#include "log_throttle.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace zkr::detail {

using clock = std::chrono::steady_clock;

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

zk_reactor::zk_reactor(boost::asio::io_context& io, const client_options& options, host& h)
    : options_(options),
      host_(h),
      socket_(io, *options.logger, [this](int events) { on_socket_ready(events); }),
      deadline_(io) {}

bool zk_reactor::open() {
    const c_client_lock c_lock(c_client_mutex());
    const int flags = ZOO_NO_LOG_CLIENTENV | (options_.can_be_read_only ? ZOO_READONLY : 0);
    zh_ = zookeeper_init2(options_.connect_string.c_str(), &ignore_session_events,
                          static_cast<int>(options_.session_timeout.count()), nullptr, nullptr, flags, &zk_log);
    if (!zh_) return false;
    // By default the C client resolves the host names every time it checks the socket: a
    // getaddrinfo (netlink socket, /etc/hosts) per request. Resolve on connection loss only.
    zoo_set_servers_resolution_delay(zh_, -1);
    last_state_ = zoo_state(zh_);
    for (const auto& a : options_.auth)
        zoo_add_auth(zh_, a.scheme.c_str(), a.credentials.data(), static_cast<int>(a.credentials.size()),
                     &on_auth_added, nullptr);
    pump();
    return true;
}

void zk_reactor::close() {
    const c_client_lock c_lock(c_client_mutex());
    if (!zh_) return;
    socket_.release();
    cancel_deadline();
    zhandle_t* old = std::exchange(zh_, nullptr);
    in_close_ = true;
    zookeeper_close(old);  // st library: flushes the close request (loopback: at once), frees the handle
    in_close_ = false;
    last_state_ = 0;
}

void zk_reactor::pump() {
    const c_client_lock c_lock(c_client_mutex());
    if (!zh_) return;
    int interest = 0;
    struct timeval tv {};
    int fd = ask_interest(interest, tv);
    check_state();
    if (!zh_) return;
    socket_.follow(fd);
    if (fd >= 0 && (interest & ZOOKEEPER_WRITE) && host_.may_send() && !flushing_) {
        // Requests are queued: send them now rather than after another trip through epoll (the
        // socket is almost always writable; if not, the C client keeps them for the next try).
        flushing_ = true;
        const int flushed = zookeeper_process(zh_, ZOOKEEPER_WRITE);
        flushing_ = false;
        if (flushed != ZOK && flushed != ZNOTHING) options_.logger->debug("zookeeper_process: {}", zerror(flushed));
        check_state();
        if (!zh_) return;
        fd = ask_interest(interest, tv);
        socket_.follow(fd);
    }
    if (fd >= 0) socket_.wait_for(interest);
    const auto wait = std::chrono::seconds(tv.tv_sec) + std::chrono::microseconds(tv.tv_usec);
    arm_deadline(clock::now() + std::max<clock::duration>(wait, std::chrono::milliseconds(1)));
}

// The C client's next deadline (a ping due, a timeout to check). The timer is moved only when the
// deadline comes sooner than the timer's: pump() runs after every reply, and moving the timer each
// time cancelled its wait (one handler run for nothing) and reset the reactor's timerfd (a
// syscall). A timer that fires before the C client's deadline costs one on_socket_ready, which
// asks the C client again and arms the timer anew.
void zk_reactor::arm_deadline(clock::time_point due) {
    if (deadline_pending_ && deadline_.expiry() <= due) return;
    deadline_pending_ = true;
    deadline_.expires_at(due);
    deadline_.async_wait([this, gen = ++deadline_gen_](boost::system::error_code ec) {
        if (gen == deadline_gen_) deadline_pending_ = false;  // (a wait replaced since: not this one)
        if (!ec) on_socket_ready(0);
    });
}

void zk_reactor::cancel_deadline() {
    deadline_.cancel();
    deadline_pending_ = false;
}

// zookeeper_interest, and the C client's socket when it has one. The fd it reports is read before
// its receive-timeout check and before a read-only server's probe, either of which may close that
// socket within the call: after such a drop (an error, or a state with no socket) the number is
// stale and may already name another thread's file, so it is never used.
int zk_reactor::ask_interest(int& interest, struct timeval& tv) {
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

void zk_reactor::check_state() {
    if (!zh_) return;
    const int s = zoo_state(zh_);
    if (s == last_state_) return;
    last_state_ = s;
    host_.handle_state_changed(s);
}

void zk_reactor::drop_connection() {
    const c_client_lock c_lock(c_client_mutex());
    if (has_socket()) socket_.shut_down();
}

void zk_reactor::heard_now() noexcept {
    last_heard_.store(std::chrono::steady_clock::now().time_since_epoch().count(), std::memory_order_relaxed);
}

std::chrono::steady_clock::duration zk_reactor::silence() const noexcept {
    return std::chrono::steady_clock::now().time_since_epoch() -
           std::chrono::steady_clock::duration(last_heard_.load(std::memory_order_relaxed));
}

void zk_reactor::on_socket_ready(int events) {
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
    if (silence() > host_.negotiated_timeout() / 3) {
        int interest = 0;
        struct timeval tv {};
        const int fd = ask_interest(interest, tv);
        check_state();
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
        check_state();
        if (rc != ZOK || !zh_ || !(events & ZOOKEEPER_READ) || !socket_.readable()) break;
    }
    pump();
}

}  // namespace zkr::detail
