#include "connection.hpp"

#include "zk_convert.hpp"

#include <zkr/error.hpp>
#include <zkr/path.hpp>
#include <zkr/detail/sync_result.hpp>

#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <random>

namespace zkr::detail {

std::recursive_mutex& c_client_mutex() {
    static std::recursive_mutex m;
    return m;
}

namespace {

using clock = std::chrono::steady_clock;

using c_client_lock = std::lock_guard<std::recursive_mutex>;

// The C client logs through a plain function pointer with no context. Every call into the C client
// happens on a client's network thread, so a thread-local pointer finds that client's logger.
thread_local spdlog::logger* network_thread_logger = nullptr;

void zk_log(const char* message) {
    spdlog::logger* log = network_thread_logger;
    if (!log || !message) return;
    std::string_view m(message);
    while (!m.empty() && (m.back() == '\n' || m.back() == '\r')) m.remove_suffix(1);
    spdlog::level::level_enum level = spdlog::level::info;
    if (m.find("ZOO_ERROR@") != std::string_view::npos) level = spdlog::level::err;
    else if (m.find("ZOO_WARN@") != std::string_view::npos) level = spdlog::level::warn;
    else if (m.find("ZOO_DEBUG@") != std::string_view::npos) level = spdlog::level::debug;
    log->log(level, "zookeeper: {}", m);
}

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

std::string new_protect_prefix() {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    const std::uint64_t a = rng(), b = rng();
    char buf[64];
    std::snprintf(buf, sizeof buf, "_c_%08x-%04x-%04x-%04x-%012llx-", static_cast<unsigned>(a >> 32),
                  static_cast<unsigned>((a >> 16) & 0xffff), static_cast<unsigned>(a & 0xffff),
                  static_cast<unsigned>(b >> 48), static_cast<unsigned long long>(b & 0xffffffffffffULL));
    return buf;
}

bool socket_readable(int fd) {
    if (fd < 0) return false;
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN) != 0;
}

}  // namespace

// An operation and its retry state; lives until its completion ran.
struct connection::operation {
    request req;
    completion done;
    int retries = 0;
    clock::time_point started = clock::now();
    std::string path;            // full path (namespace applied)
    std::string protect_prefix;  // "_c_<uuid>-" for protected creates
    bool recover_protected = false;
    int parent_attempts = 0;
    int parent_error = 0;  // the first definite failure creating a parent (e.g. its parent is ephemeral)
    std::shared_ptr<watch_holder> watch;
    std::unique_ptr<boost::asio::steady_timer> timer;
};

// One request sent through the C client; owned by inflight_ until its C callback runs or the
// handle is closed. "abandoned": its outcome was already decided (connection lost).
struct connection::inflight {
    connection* conn = nullptr;
    op_ptr op;  // null for fire-and-forget requests (parent creates, guaranteed deletes)
    enum class step { main, protected_list, protected_exists, orphan_list } what = step::main;
    bool abandoned = false;
    watch_ctx* watch = nullptr;
    acl_storage acl;
    multi_storage multi;
    std::string child;  // protected_exists: the found child's full path; orphan_list: the prefix
    std::string path;   // guaranteed delete: the path; orphan_list: the parent
    std::weak_ptr<operation> parent_of;  // parent create: the create it makes way for
};

struct connection::watch_holder {
    watch_function fn;
    std::string user_path;
    bool fired = false;
};

struct connection::watch_ctx {
    connection* conn = nullptr;
    std::shared_ptr<watch_holder> holder;
    bool registered = false;  // the C client holds the watcher; freed only by event or handle close
};

// ---------------------------------------------------------------------------------------------
// Life cycle

connection::connection(client_options options)
    : options_(std::move(options)), work_(boost::asio::make_work_guard(io_)) {
    if (!options_.name_space.empty()) ns_ = "/" + options_.name_space;
    raise_c_client_log_level(*options_.logger);
}

connection::~connection() { close(); callbacks_.join(); }

void connection::start() {
    std::lock_guard lock(mutex_);
    if (!accepting_) throw zkr::error(make_error_code(errc::closed), {}, "start() after close()");
    if (started_) return;
    started_ = true;
    network_thread_ = std::thread([this] {
        network_thread_logger = options_.logger.get();
        run_network_loop();
        network_thread_logger = nullptr;
    });
    network_thread_id_ = network_thread_.get_id();
    boost::asio::post(io_, [this] { open_handle(); });
}

// io_.run(), except that after handing a result to a caller that was spinning for it the thread
// polls for that caller's next request (a lock's release, the next acquire) for a short while
// before it sleeps in epoll: the request then goes out without waking this thread. The caller
// spun only while few callers of the process were blocked, so this spin is as rare.
void connection::run_network_loop() {
    const auto window = std::min<clock::duration>(options_.blocking_call_spin, follow_up_window);
    while (io_.run_one() > 0) {
        // A handler run while polling may hand another result to a spinning caller: poll anew.
        while (std::exchange(follow_up_expected, false) && window > clock::duration::zero()) {
            const auto until = clock::now() + window;
            while (!follow_up_expected && clock::now() < until && !io_.stopped())
                if (io_.poll_one() == 0) std::this_thread::yield();
        }
    }
}

void connection::close() {
    {
        std::lock_guard lock(mutex_);
        if (!accepting_) return;
        accepting_ = false;
    }
    if (network_thread_.joinable()) {
        if (on_network_thread()) {
            // Only zkr's own code runs here; never expected. Do what can be done without joining.
            do_close();
            network_thread_.detach();
        } else {
            boost::asio::post(io_, [this] { do_close(); });
            network_thread_.join();
        }
    }
    state_ = connection_state::closed;
    std::lock_guard lock(mutex_);
    state_changed_.notify_all();
}

void connection::do_close() {
    closing_ = true;
    machine_.on_close();
    zk_timer_.cancel();
    suspend_timer_.cancel();
    reopen_timer_.cancel();
    // Observers first (recipes' waiters and holds): they must learn of the close while what they
    // wait on still exists; closing the handle drops the watches that keep waiters alive.
    for (auto& [id, fn] : std::exchange(observers_, {})) fn(connection_state::closed);
    const auto closed = make_error_code(errc::closed);
    for (auto waiting = std::exchange(waiting_, {}); const auto& op : waiting) finish(op, closed, {});
    for (auto sleeping = std::exchange(sleeping_, {}); const auto& op : sleeping) finish(op, closed, {});
    reset_handle(/*closing=*/true);
    if (!guaranteed_.empty())
        options_.logger->warn("closing with {} guaranteed delete(s) not done", guaranteed_.size());
    guaranteed_.clear();
    work_.reset();
}

bool connection::block_until_connected(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return state_changed_.wait_for(lock, timeout, [this] {
        const auto s = state_.load();
        return is_connected(s) || s == connection_state::closed;
    }) && is_connected(state_.load());
}

std::uint64_t connection::add_listener(std::function<void(connection_state)> fn) {
    auto l = std::make_shared<listener>();
    l->fn = std::move(fn);
    std::lock_guard lock(mutex_);
    const auto id = next_id_++;
    listeners_.emplace(id, std::move(l));
    return id;
}

void connection::remove_listener(std::uint64_t id) noexcept {
    std::lock_guard lock(mutex_);
    if (auto it = listeners_.find(id); it != listeners_.end()) {
        it->second->active = false;
        listeners_.erase(it);
    }
}

std::uint64_t connection::add_observer(std::function<void(connection_state)> fn) {
    std::lock_guard lock(mutex_);
    const auto id = next_id_++;
    boost::asio::dispatch(io_, [this, id, fn = std::move(fn)]() mutable { observers_.emplace(id, std::move(fn)); });
    return id;
}

void connection::remove_observer(std::uint64_t id) {
    boost::asio::dispatch(io_, [this, id] { observers_.erase(id); });
}

// ---------------------------------------------------------------------------------------------
// The handle and its socket

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
    zk_timer_.cancel();
    zhandle_t* old = std::exchange(zh_, nullptr);
    in_handle_close_ = true;
    zookeeper_close(old);  // st library: flushes the close request (loopback: at once), frees the handle
    in_handle_close_ = false;
    last_zk_state_ = 0;
    // The C client will call nothing more: settle what it still held.
    const auto ec = make_error_code(closing ? errc::closed : errc::session_expired);
    auto pending = std::exchange(inflight_, {});
    for (auto& [key, f] : pending)
        if (!f->abandoned && f->op) {
            if (f->watch) settle_watch(f->watch, false);
            closing ? finish(f->op, ec, {}) : retry_or_finish(f->op, ec);
        }
    auto watches = std::exchange(watches_, {});
    for (auto& [key, w] : watches) {
        if (w->holder && !w->holder->fired) {
            w->holder->fired = true;
            w->holder->fn(watch_event{watch_event_type::not_watching, w->holder->user_path});
        }
    }
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
    zk_timer_.expires_after(std::max<clock::duration>(wait, std::chrono::milliseconds(1)));
    zk_timer_.async_wait([this](boost::system::error_code ec) {
        if (!ec) on_socket_ready(0);
    });
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

void connection::check_handle_state() {
    const c_client_lock c_lock(c_client_mutex());
    if (!zh_) return;
    const int s = zoo_state(zh_);
    if (s == last_zk_state_) return;
    last_zk_state_ = s;
    handle_event e = handle_event::connecting;
    if (s == ZOO_CONNECTED_STATE) e = handle_event::connected;
    else if (s == ZOO_READONLY_STATE) e = handle_event::connected_read_only;
    else if (s == ZOO_EXPIRED_SESSION_STATE) e = handle_event::expired;
    else if (s == ZOO_AUTH_FAILED_STATE) e = handle_event::auth_failed;
    if (e == handle_event::connected || e == handle_event::connected_read_only) {
        const clientid_t* id = zoo_client_id(zh_);
        session_id_ = id->client_id;
        negotiated_ms_ = zoo_recv_timeout(zh_);
        heard_now();
        std::lock_guard lock(mutex_);
        password_.assign(id->passwd, sizeof id->passwd);
    }
    apply(machine_.on_handle(e));
}

void connection::apply(const session_machine::actions& a) {
    if (a.cancel_suspend_timer) suspend_timer_.cancel();
    if (a.abandon_requests) abandon_inflight();
    if (a.start_suspend_timer) {
        const auto timeout = negotiated_ms_ > 0 ? std::chrono::milliseconds(negotiated_ms_.load())
                                                : options_.session_timeout;
        suspend_timer_.expires_after(timeout);
        suspend_timer_.async_wait([this](boost::system::error_code ec) {
            if (ec) return;
            options_.logger->warn("suspended for longer than the session timeout: session 0x{:x} presumed lost",
                                  session_id_.load());
            apply(machine_.on_suspend_timeout());
        });
    }
    if (a.notify) notify(*a.notify);
    if (a.new_session && !new_session_pending_) {
        // Once per lost session: a request answered "session expired" and the handle's own expired
        // state may both report the same loss.
        new_session_pending_ = true;
        boost::asio::post(io_, [this] {
            new_session_pending_ = false;
            if (closing_) return;
            reset_handle(/*closing=*/false);
            open_handle();
        });
    }
    if (is_connected(machine_.state()) && zh_ && (a.notify || a.cancel_suspend_timer)) {
        for (auto waiting = std::exchange(waiting_, {}); const auto& op : waiting) {
            op->timer.reset();
            start_op(op);
        }
        run_guaranteed_deletes();
        look_for_orphans();
        schedule_pump();
    }
}

void connection::notify(connection_state s) {
    options_.logger->info("connection state: {} (session 0x{:x})", to_string(s), session_id_.load());
    {
        std::lock_guard lock(mutex_);
        state_ = s;
        state_changed_.notify_all();
    }
    // A copy: observers may add or remove observers while they run.
    for (auto observers = observers_; auto& [id, fn] : observers) fn(s);
    std::vector<std::shared_ptr<listener>> targets;
    {
        std::lock_guard lock(mutex_);
        for (auto& [id, l] : listeners_) targets.push_back(l);
    }
    if (targets.empty()) return;
    boost::asio::post(callbacks_, [targets = std::move(targets), s] {
        for (const auto& l : targets)
            if (l->active) l->fn(s);
    });
}

void connection::abandon_inflight() {
    // The C client failed every request of the lost connection but delivers those failures only
    // after it reconnects: decide now, and let the late callbacks just free their records.
    std::vector<op_ptr> failed;
    for (auto& [key, f] : inflight_) {
        if (f->abandoned) continue;
        f->abandoned = true;
        if (f->op) failed.push_back(f->op);
    }
    const auto ec = make_error_code(errc::connection_loss);
    for (const auto& op : failed) retry_or_finish(op, ec);
}

// ---------------------------------------------------------------------------------------------
// Operations

void connection::submit(request req, completion done) {
    auto op = std::make_shared<operation>();
    op->req = std::move(req);
    op->done = std::move(done);
    {
        std::lock_guard lock(mutex_);
        if (!accepting_ || !started_) {
            const auto ec = make_error_code(accepting_ ? errc::not_connected : errc::closed);
            if (accepting_) options_.logger->warn("operation before start(): call client::start() first");
            boost::asio::post(callbacks_, [op, ec] { op->done(ec, {}); });
            return;
        }
        // One queue in submission order, rather than a post per request: a post made on the
        // network thread waits in that thread's private queue until the running handler returns,
        // so a request another thread submits after it (woken by that handler) would be sent
        // first. A recipe's "remove, then answer the caller" must reach the wire in that order.
        submitted_.push_back(std::move(op));
        if (start_submitted_scheduled_) return;
        start_submitted_scheduled_ = true;
    }
    boost::asio::post(io_, [this] { start_submitted(); });
}

void connection::start_submitted() {
    std::deque<op_ptr> ops;
    {
        std::lock_guard lock(mutex_);
        ops.swap(submitted_);
        start_submitted_scheduled_ = false;
    }
    for (const auto& op : ops) {
        if (auto f = check_request(op->req)) {
            options_.logger->warn("rejected: {}", f.message);
            finish(op, f.ec, {});
            continue;
        }
        op->path = full_path(op->req.path);
        if (op->req.kind == op_kind::create && op->req.create.protect) op->protect_prefix = new_protect_prefix();
        if (op->req.watch) {
            op->watch = std::make_shared<watch_holder>();
            op->watch->fn = std::move(op->req.watch);
            op->watch->user_path = op->req.path;
        }
        start_op(op);
    }
}

void connection::start_op(const op_ptr& op) {
    if (closing_) return finish(op, make_error_code(errc::closed), {});
    if (op->req.required_session != 0 && op->req.required_session != session_id_.load())
        return finish(op, make_error_code(errc::session_expired), {});
    if (!zh_ || !is_connected(machine_.state())) {
        if (op->req.fail_fast) return finish(op, make_error_code(errc::connection_loss), {});
        return wait_for_connection(op);
    }
    issue(op);
    schedule_pump();
}

void connection::wait_for_connection(const op_ptr& op) {
    waiting_.push_back(op);
    op->timer = std::make_unique<boost::asio::steady_timer>(io_, options_.connection_timeout);
    op->timer->async_wait([this, op](boost::system::error_code ec) {
        if (ec) return;
        auto it = std::find(waiting_.begin(), waiting_.end(), op);
        if (it == waiting_.end()) return;
        waiting_.erase(it);
        retry_or_finish(op, make_error_code(errc::not_connected));
    });
}

connection::inflight* connection::track(std::unique_ptr<inflight> f) {
    requests_sent_.fetch_add(1, std::memory_order_relaxed);
    f->conn = this;
    auto* raw = f.get();
    inflight_.emplace(raw, std::move(f));
    return raw;
}

std::unique_ptr<connection::inflight> connection::take(const void* data) {
    auto it = inflight_.find(data);
    if (it == inflight_.end()) return nullptr;
    auto f = std::move(it->second);
    inflight_.erase(it);
    return f;
}

connection::watch_ctx* connection::register_watch(const op_ptr& op) {
    if (!op->watch) return nullptr;
    auto w = std::make_unique<watch_ctx>();
    w->conn = this;
    w->holder = op->watch;
    auto* raw = w.get();
    watches_.emplace(raw, std::move(w));
    return raw;
}

// After the request that set the watch completed: the C client keeps the watcher only on success
// (exists: also on no_node). Otherwise it will never call it: free it now.
void connection::settle_watch(watch_ctx* w, bool registered) {
    if (!w) return;
    if (registered) {
        w->registered = true;
        return;
    }
    watches_.erase(w);
}

void connection::issue(const op_ptr& op) {
    const c_client_lock c_lock(c_client_mutex());
    options_.logger->trace("sending {} {}", static_cast<int>(op->req.kind), op->path);
    if (op->req.kind == op_kind::create) {
        if (op->recover_protected) return issue_protected_lookup(op);
        return issue_create(op);
    }
    if (op->req.kind == op_kind::multi) return issue_multi(op);

    auto f = std::make_unique<inflight>();
    f->op = op;
    const char* path = op->path.c_str();
    int rc = ZOK;
    switch (op->req.kind) {
        case op_kind::remove: {
            auto* t = track(std::move(f));
            rc = zoo_adelete(zh_, path, op->req.version, &on_void, t);
            if (rc != ZOK) take(t);
            break;
        }
        case op_kind::set_data: {
            auto* t = track(std::move(f));
            rc = zoo_aset(zh_, path, op->req.data.data(), static_cast<int>(op->req.data.size()), op->req.version,
                          &on_stat, t);
            if (rc != ZOK) take(t);
            break;
        }
        case op_kind::exists:
        case op_kind::get_data:
        case op_kind::get_children: {
            auto* t = track(std::move(f));
            t->watch = register_watch(op);
            watcher_fn wfn = t->watch ? &on_watch : nullptr;
            if (op->req.kind == op_kind::exists) rc = zoo_awexists(zh_, path, wfn, t->watch, &on_stat, t);
            else if (op->req.kind == op_kind::get_data) rc = zoo_awget(zh_, path, wfn, t->watch, &on_data, t);
            else rc = zoo_awget_children2(zh_, path, wfn, t->watch, &on_children, t);
            if (rc != ZOK) {
                settle_watch(t->watch, false);
                take(t);
            }
            break;
        }
        default: break;
    }
    if (rc != ZOK) on_result(op, rc, {});
}

void connection::issue_create(const op_ptr& op) {
    const c_client_lock c_lock(c_client_mutex());
    const auto& c = op->req.create;
    std::string path = op->path;
    if (c.protect) path = join_path(parent_path(op->path), op->protect_prefix + std::string(node_name(op->path)));
    auto f = std::make_unique<inflight>();
    f->op = op;
    f->acl.assign(c.acl && !c.acl->empty() ? *c.acl : options_.default_acl);
    auto* t = track(std::move(f));
    const int mode = to_zk_mode(c.mode);
    int rc;
    if (has_ttl(c.mode))
        rc = zoo_acreate2_ttl(zh_, path.c_str(), op->req.data.data(), static_cast<int>(op->req.data.size()),
                              t->acl.get(), mode, c.ttl.count(), &on_string_stat, t);
    else
        rc = zoo_acreate2(zh_, path.c_str(), op->req.data.data(), static_cast<int>(op->req.data.size()),
                          t->acl.get(), mode, &on_string_stat, t);
    if (rc != ZOK) {
        take(t);
        on_result(op, rc, {});
    }
}

// Creates every missing ancestor as a container, pipelined ahead of the create itself: requests of
// one session are applied in order, so the create sees them. One round trip in all.
void connection::issue_parents(const op_ptr& op) {
    const c_client_lock c_lock(c_client_mutex());
    std::vector<std::string> ancestors;
    const bool all = op->req.create.create_parents;
    for (std::string_view p = parent_path(op->path); p != "/"; p = parent_path(p)) ancestors.emplace_back(p);
    std::reverse(ancestors.begin(), ancestors.end());
    if (!all) ancestors.resize(std::min<std::size_t>(ancestors.size(), 1));  // only the namespace root
    for (const auto& a : ancestors) {
        auto f = std::make_unique<inflight>();
        f->acl.assign(options_.default_acl);
        f->parent_of = op;
        auto* t = track(std::move(f));
        if (zoo_acreate2(zh_, a.c_str(), nullptr, -1, t->acl.get(), ZOO_CONTAINER, &on_parent_created, t) != ZOK)
            take(t);
    }
    issue(op);
}

void connection::issue_protected_lookup(const op_ptr& op) {
    const c_client_lock c_lock(c_client_mutex());
    auto f = std::make_unique<inflight>();
    f->op = op;
    f->what = inflight::step::protected_list;
    auto* t = track(std::move(f));
    const std::string parent(parent_path(op->path));
    if (const int rc = zoo_aget_children2(zh_, parent.c_str(), 0, &on_children, t); rc != ZOK) {
        take(t);
        on_result(op, rc, {});
    }
}

void connection::issue_multi(const op_ptr& op) {
    const c_client_lock c_lock(c_client_mutex());
    auto f = std::make_unique<inflight>();
    f->op = op;
    std::vector<multi_op> ops = op->req.ops;
    for (auto& o : ops) o.path = full_path(o.path);
    f->multi.build(ops, options_.default_acl);
    auto* t = track(std::move(f));
    const int rc = zoo_amulti(zh_, static_cast<int>(t->multi.ops.size()), t->multi.ops.data(),
                              t->multi.results.data(), &on_multi, t);
    if (rc != ZOK) {
        take(t);
        on_result(op, rc, {});
    }
}

void connection::on_result(const op_ptr& op, int rc, response&& r) {
    if (in_handle_close_) rc = closing_ ? static_cast<int>(errc::closed) : ZSESSIONEXPIRED;
    if (rc == ZOK && replies_to_lose_.load(std::memory_order_relaxed) > 0) {
        --replies_to_lose_;
        rc = reply_fault_.load(std::memory_order_relaxed);
        options_.logger->warn("fault injection: the reply to a request on {} becomes {}", op->path, zerror(rc));
        r = {};
    }
    if (rc == ZSESSIONEXPIRED && !in_handle_close_) end_expired_session();
    const auto ec = to_error_code(rc);
    if (!ec) return finish(op, ec, std::move(r));
    if (ec == errc::closed) return finish(op, ec, {});
    // The parents (sent ahead of the create, so their replies came first) could not be made (an
    // ephemeral parent, no permission): that is the reason, not the create's own "no node".
    if (op->req.kind == op_kind::create && rc == ZNONODE && op->parent_error)
        return finish(op, to_error_code(op->parent_error), {});
    // A create under a missing parent: create the parents (or, without create_parents, just the
    // lazily created namespace root) and try again.
    if (op->req.kind == op_kind::create && rc == ZNONODE && (op->req.create.create_parents || !ns_.empty()) &&
        op->parent_attempts < (op->req.create.create_parents ? 3 : 1)) {
        ++op->parent_attempts;
        return issue_parents(op);
    }
    if (is_retryable(ec)) return retry_or_finish(op, ec);
    finish(op, ec, std::move(r));
}

// The server answered a request "session expired" on a connection it has not closed: in an
// ensemble a follower may keep serving a connection (reads, pings) after the leader ended its
// session. The C client stays connected and would never learn it; every write would fail the same
// way while the hold-states still read held (a fault-suite worker retried for a minute). The session
// is gone: end it as an expired handle is ended (holds lost, requests retried on a new session).
void connection::end_expired_session() {
    const auto s = machine_.state();
    if (s == connection_state::lost || s == connection_state::closed || closing_) return;
    options_.logger->warn("the server answered \"session expired\" for session 0x{:x} on a live connection: starting a new session",
                          session_id_.load());
    apply(machine_.on_handle(handle_event::expired));
}

void connection::retry_or_finish(const op_ptr& op, const boost::system::error_code& ec) {
    if (closing_) return finish(op, make_error_code(errc::closed), {});
    if (op->req.kind == op_kind::create && op->req.create.protect) {
        if (ec != errc::session_expired) {
            // The create may have been applied even though its reply was lost: look for our node first.
            op->recover_protected = true;
        } else {
            // A new session: a node the old one made lives on until the server expires it, under
            // this prefix. Our next node gets a prefix of its own, or a later recovery on this
            // session could find the old node first, take it for foreign, and create a third
            // while ours stayed behind (found by the lock simulation).
            op->protect_prefix = new_protect_prefix();
            op->recover_protected = false;
        }
    }
    const retry_context ctx{op->retries, std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - op->started), ec};
    const auto sleep = op->req.fail_fast ? std::optional<std::chrono::milliseconds>{} : options_.retry_policy->next_sleep(ctx);
    if (!sleep) {
        if (op->req.kind == op_kind::create && op->req.create.protect && op->recover_protected) forget_protected(op);
        if (op->req.kind == op_kind::remove && op->req.guaranteed) {
            options_.logger->warn("delete of {} failed ({}); retrying in the background", op->path, ec.message());
            guaranteed_.emplace_back(op->path, op->req.version);
        }
        return finish(op, ec, {});
    }
    ++op->retries;
    options_.logger->debug("retry {} of {} in {} ms after {}", op->retries, op->path, sleep->count(), ec.message());
    sleeping_.insert(op);
    op->timer = std::make_unique<boost::asio::steady_timer>(io_, *sleep);
    op->timer->async_wait([this, op](boost::system::error_code e) {
        if (e || !sleeping_.erase(op)) return;
        start_op(op);
    });
}

void connection::finish(const op_ptr& op, const boost::system::error_code& ec, response&& r) {
    if (!op->done) return;
    op->timer.reset();
    if (!r.path.empty()) r.path = user_path(r.path);
    for (auto& m : r.results)
        if (!m.path.empty()) m.path = user_path(m.path);
    auto done = std::move(op->done);
    op->done = nullptr;
    done(ec, std::move(r));
}

void connection::run_guaranteed_deletes() {
    for (const auto& [path, version] : guaranteed_) delete_guaranteed(path, version);
}

void connection::delete_guaranteed(const std::string& path, std::int32_t version) {
    const c_client_lock c_lock(c_client_mutex());
    auto f = std::make_unique<inflight>();
    f->path = path;
    auto* t = track(std::move(f));
    if (zoo_adelete(zh_, path.c_str(), version, &on_guaranteed_delete, t) != ZOK) take(t);
}

// A protected create gave up (its retries spent) with its reply lost: the server may have made the
// node. Nobody would ever delete it (an ephemeral one would stay until the session ends: a lock's
// phantom holder, ahead of every waiter), so look for it by the prefix and delete it, as Curator's
// protection mode does in the background.
void connection::forget_protected(const op_ptr& op) {
    orphans_.push_back({std::string(parent_path(op->path)), op->protect_prefix, session_id_.load(), is_ephemeral(op->req.create.mode)});
    if (is_connected(machine_.state()) && zh_) look_for_orphans();
}

void connection::look_for_orphans() {
    // An ephemeral node of an ended session is gone, or the server removes it.
    const auto session = session_id_.load();
    std::erase_if(orphans_, [&](const orphan& o) { return o.ephemeral && o.session != session; });
    const c_client_lock c_lock(c_client_mutex());
    for (const auto& o : orphans_) {
        auto f = std::make_unique<inflight>();
        f->what = inflight::step::orphan_list;
        f->path = o.parent;
        f->child = o.prefix;
        auto* t = track(std::move(f));
        if (zoo_aget_children2(zh_, o.parent.c_str(), 0, &on_children, t) != ZOK) take(t);
    }
}

void connection::on_orphans_listed(const inflight& f, int rc, const struct String_vector* strings) {
    if (is_retryable(to_error_code(rc))) return;  // the next reconnection looks again
    std::erase_if(orphans_, [&](const orphan& o) { return o.parent == f.path && o.prefix == f.child; });
    if (rc != ZOK || !strings) return;  // the parent is gone, and the node with it
    for (int i = 0; i < strings->count; ++i) {
        const std::string_view child(strings->data[i]);
        if (child.substr(0, f.child.size()) != f.child) continue;
        const auto path = join_path(f.path, child);
        options_.logger->warn("a create that gave up had made {}: deleting it", path);
        guaranteed_.emplace_back(path, -1);
        delete_guaranteed(path, -1);
    }
}

std::string connection::full_path(std::string_view user) const {
    if (ns_.empty()) return std::string(user);
    if (user == "/") return ns_;
    return ns_ + std::string(user);
}

std::string connection::user_path(std::string_view full) const {
    if (ns_.empty()) return std::string(full);
    if (full == ns_) return "/";
    if (full.size() > ns_.size() && full.compare(0, ns_.size(), ns_) == 0 && full[ns_.size()] == '/')
        return std::string(full.substr(ns_.size()));
    return std::string(full);
}

// ---------------------------------------------------------------------------------------------
// C callbacks

void connection::on_string_stat(int rc, const char* value, const struct Stat* stat, const void* data) {
    auto* self = static_cast<const inflight*>(data)->conn;
    auto f = self->take(data);
    if (!f || f->abandoned) return;
    response r;
    if (rc == ZOK) {
        if (value) r.path = value;
        if (stat) r.stat = from_zk(*stat);
    }
    self->on_result(f->op, rc, std::move(r));
}

void connection::on_void(int rc, const void* data) {
    auto* self = static_cast<const inflight*>(data)->conn;
    auto f = self->take(data);
    if (!f || f->abandoned) return;
    self->on_result(f->op, rc, {});
}

void connection::on_stat(int rc, const struct Stat* stat, const void* data) {
    auto* self = static_cast<const inflight*>(data)->conn;
    auto f = self->take(data);
    if (!f) return;
    if (f->watch) self->settle_watch(f->watch, rc == ZOK || (rc == ZNONODE && f->op->req.kind == op_kind::exists));
    if (f->abandoned) return;
    response r;
    if (f->what == inflight::step::protected_exists) {
        // Recovery of a protected create: adopt the node only if this session owns it.
        const bool ephemeral = is_ephemeral(f->op->req.create.mode);
        if (rc == ZOK && stat && (!ephemeral || stat->ephemeralOwner == self->session_id_.load())) {
            r.path = f->child;
            r.stat = from_zk(*stat);
            return self->on_result(f->op, ZOK, std::move(r));
        }
        if (rc == ZOK || rc == ZNONODE) {
            if (rc == ZOK) f->op->protect_prefix = new_protect_prefix();  // a stale node of an old session
            f->op->recover_protected = false;
            self->issue(f->op);
            return;
        }
        return self->on_result(f->op, rc, {});
    }
    if (f->op->req.kind == op_kind::exists && rc == ZNONODE) return self->on_result(f->op, ZOK, std::move(r));
    if (rc == ZOK && stat) {
        r.stat = from_zk(*stat);
        r.exists = true;
    }
    self->on_result(f->op, rc, std::move(r));
}

void connection::on_data(int rc, const char* value, int len, const struct Stat* stat, const void* data) {
    auto* self = static_cast<const inflight*>(data)->conn;
    auto f = self->take(data);
    if (!f) return;
    if (f->watch) self->settle_watch(f->watch, rc == ZOK);
    if (f->abandoned) return;
    response r;
    if (rc == ZOK) {
        if (value && len > 0) r.data.assign(value, static_cast<std::size_t>(len));
        if (stat) r.stat = from_zk(*stat);
    }
    self->on_result(f->op, rc, std::move(r));
}

void connection::on_children(int rc, const struct String_vector* strings, const struct Stat* stat, const void* data) {
    auto* self = static_cast<const inflight*>(data)->conn;
    auto f = self->take(data);
    if (!f) return;
    if (f->watch) self->settle_watch(f->watch, rc == ZOK);
    if (f->abandoned) return;
    if (f->what == inflight::step::orphan_list) return self->on_orphans_listed(*f, rc, strings);
    if (f->what == inflight::step::protected_list) {
        const auto& op = f->op;
        if (rc == ZOK && strings) {
            for (int i = 0; i < strings->count; ++i) {
                std::string_view child(strings->data[i]);
                if (child.substr(0, op->protect_prefix.size()) != op->protect_prefix) continue;
                auto g = std::make_unique<inflight>();
                g->op = op;
                g->what = inflight::step::protected_exists;
                g->child = join_path(parent_path(op->path), child);
                auto* t = self->track(std::move(g));
                if (const int rc2 = zoo_aexists(self->zh_, t->child.c_str(), 0, &on_stat, t); rc2 != ZOK) {
                    self->take(t);
                    self->on_result(op, rc2, {});
                }
                return;
            }
        }
        if (rc == ZOK || rc == ZNONODE) {
            op->recover_protected = false;
            self->issue(op);
            return;
        }
        return self->on_result(op, rc, {});
    }
    response r;
    if (rc == ZOK) {
        if (strings) {
            r.children.reserve(static_cast<std::size_t>(strings->count));
            for (int i = 0; i < strings->count; ++i) r.children.emplace_back(strings->data[i]);
        }
        if (stat) r.stat = from_zk(*stat);
    }
    self->on_result(f->op, rc, std::move(r));
}

void connection::on_multi(int rc, const void* data) {
    auto* self = static_cast<const inflight*>(data)->conn;
    auto f = self->take(data);
    if (!f || f->abandoned) return;
    response r;
    r.results = f->multi.collect(rc);
    if (rc != ZOK && !is_retryable(to_error_code(rc)) && rc != ZCLOSING) {
        // The error of a failed multi is its failing operation's.
        self->finish(f->op, to_error_code(rc), std::move(r));
        return;
    }
    self->on_result(f->op, rc, std::move(r));
}

void connection::on_watch(zhandle_t*, int type, int, const char*, void* ctx) {
    if (type == ZOO_SESSION_EVENT) return;  // session changes are tracked with zoo_state
    auto* w = static_cast<watch_ctx*>(ctx);
    auto* self = w->conn;
    watch_event_type t = watch_event_type::not_watching;
    if (type == ZOO_CREATED_EVENT) t = watch_event_type::node_created;
    else if (type == ZOO_DELETED_EVENT) t = watch_event_type::node_deleted;
    else if (type == ZOO_CHANGED_EVENT) t = watch_event_type::node_data_changed;
    else if (type == ZOO_CHILD_EVENT) t = watch_event_type::node_children_changed;
    self->fire_watch(w, t);
}

void connection::fire_watch(watch_ctx* w, watch_event_type type) {
    auto it = watches_.find(w);
    if (it == watches_.end()) return;
    auto owned = std::move(it->second);
    watches_.erase(it);
    if (owned->holder->fired) return;
    owned->holder->fired = true;
    owned->holder->fn(watch_event{type, owned->holder->user_path});
}

void connection::on_parent_created(int rc, const char*, const struct Stat*, const void* data) {
    auto* self = static_cast<const inflight*>(data)->conn;
    auto f = self->take(data);
    if (rc == ZOK || rc == ZNODEEXISTS) return;
    self->options_.logger->debug("creating a parent failed: {}", zerror(rc));
    // Not a retryable failure: the create's own "no node" would hide the reason, so keep this one.
    if (auto op = f ? f->parent_of.lock() : nullptr; op && !op->parent_error && !is_retryable(to_error_code(rc)))
        op->parent_error = rc;
}

void connection::on_guaranteed_delete(int rc, const void* data) {
    auto* self = static_cast<const inflight*>(data)->conn;
    auto f = self->take(data);
    if (!f || f->abandoned) return;
    if (is_retryable(to_error_code(rc))) return;  // next reconnection tries again
    auto& g = self->guaranteed_;
    g.erase(std::remove_if(g.begin(), g.end(), [&](const auto& e) { return e.first == f->path; }), g.end());
    if (rc == ZOK || rc == ZNONODE) self->options_.logger->info("guaranteed delete of {} done", f->path);
    else self->options_.logger->error("guaranteed delete of {} gave up: {}", f->path, zerror(rc));
}

}  // namespace zkr::detail
