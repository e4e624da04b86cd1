// The C handle: opening and closing it, the pump that asks the C client what it waits for and
// arms the waits (its socket's: socket_watch; its deadline's), and the C client's process-wide
// lock and log.
#include "connection_internal.hpp"
#include "log_throttle.hpp"

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
    socket_.release();
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
    socket_.follow(fd);
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
        socket_.follow(fd);
    }
    if (fd >= 0) socket_.wait_for(interest);
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

void connection::drop_connection() {
    const c_client_lock c_lock(c_client_mutex());
    if (!zh_ || !socket_.is_open()) return;
    options_.logger->warn("server {} accepted the connection but did not answer its handshake within {} ms: "
                          "trying the next server",
                          zoo_get_current_server(zh_), handshake_timeout().count());
    socket_.shut_down();
}

std::chrono::milliseconds connection::session_timeout_now() const noexcept {
    return negotiated_ms_ > 0 ? std::chrono::milliseconds(negotiated_ms_.load()) : options_.session_timeout;
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
        if (rc != ZOK || !zh_ || !(events & ZOOKEEPER_READ) || !socket_.readable()) break;
    }
    pump();
}

}  // namespace zkr::detail
