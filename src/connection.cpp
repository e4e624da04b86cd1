// The connection's life cycle and its session supervision: start, close, listeners, the handle
// opened and closed, and the session machine's decisions carried out. The C handle's waits are the
// reactor's (zk_reactor.cpp), operations in connection_ops.cpp, a protected create's lookup and
// clean-up in connection_protected.cpp, the namespace in namespace_path.cpp. The state each part
// keeps is a class of its own: zk_reactor, submission_queue, request_depot, watch_registry,
// cleanup_queue, protected_create.
#include "connection_internal.hpp"

#include <zkr/error.hpp>
#include "sync_result.hpp"

#include <cerrno>
#include <cstring>

namespace zkr::detail {

// ---------------------------------------------------------------------------------------------
// Life cycle

connection::connection(client_options options)
    : options_(std::move(options)), work_(boost::asio::make_work_guard(io_)) {
    if (!options_.name_space.empty()) ns_ = "/" + options_.name_space;
    default_acl_.assign(options_.default_acl);
    raise_c_client_log_level(*options_.logger);
}

connection::~connection() { close(); callbacks_.join(); }

void connection::start() {
    const bool open = submissions_.start([this] {
        network_thread_ = std::thread([this] {
            network_thread_logger = options_.logger.get();
            run_network_loop();
            network_thread_logger = nullptr;
        });
        network_thread_id_ = network_thread_.get_id();
        boost::asio::post(io_, [this] { open_handle(); });
    });
    if (!open) throw zkr::error(make_error_code(errc::closed), {}, "start() after close()");
}

// io_.run(), except that after handing a result to a caller that was spinning for it the thread
// polls for that caller's next request (a lock's release, the next acquire) for a short while
// before it sleeps in epoll: the request then goes out without waking this thread. The caller
// spun only while few callers of the process were blocked, so this spin is as rare. After each
// handler, the loop runs the pump that handler asked for (zk_reactor::schedule_pump).
void connection::run_network_loop() {
    const auto window = std::min<clock::duration>(options_.blocking_call_spin, follow_up_window);
    while (io_.run_one() > 0) {
        reactor_.run_scheduled_pump();
        // A handler run while polling may hand another result to a spinning caller: poll anew.
        while (std::exchange(follow_up_expected, false) && window > clock::duration::zero()) {
            const auto until = clock::now() + window;
            while (!follow_up_expected && clock::now() < until && !io_.stopped()) {
                if (io_.poll_one() == 0) std::this_thread::yield();
                else reactor_.run_scheduled_pump();
            }
        }
    }
}

void connection::close() {
    // The thread was made under the gate's lock, before it shut (else start() throws): seen here.
    if (!submissions_.close()) return;
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

// A step posted from another thread, built in one of the connection's step rooms: a post from a
// thread that is not Asio's allocates with operator new, which Asio's recycling on the network
// thread does not spare (two allocations per W1 cycle).
struct connection::step_handler {
    unique_function<void()> fn;
    handler_slot* slot;
    using allocator_type = slot_allocator<void>;
    allocator_type get_allocator() const noexcept { return allocator_type(*slot); }
    void operator()() { fn(); }
};

bool connection::run_on_network(unique_function<void()> fn) {
    if (on_network_thread()) {
        fn();
        return true;
    }
    return submissions_.if_open([&] { boost::asio::post(io_, step_handler{std::move(fn), &free_step_slot()}); });
}

// A room that looks free (if another thread takes it first, the post allocates as before).
handler_slot& connection::free_step_slot() noexcept {
    for (auto& s : step_slots_)
        if (s.idle()) return s;
    return step_slots_.front();
}

void connection::do_close() {
    closing_ = true;
    machine_.on_close();
    reactor_.cancel_deadline();
    suspend_timer_.cancel();
    handshake_timer_.cancel();
    reopen_timer_.cancel();
    // Observers first (recipes' waiters and holds): they must learn of the close while what they
    // wait on still exists; closing the handle drops the watches that keep waiters alive.
    observers_.take_each(connection_state::closed);
    const auto closed = make_error_code(errc::closed);
    for (const auto& op : depot_.take_waiting()) finish(op, closed, {});
    for (const auto& op : depot_.take_sleeping()) finish(op, closed, {});
    reset_handle(/*closing=*/true);
    if (const auto left = cleanup_.drop_all())
        options_.logger->warn("closing with {} guaranteed delete(s) not done", left);
    work_.reset();
}

reply_faults& connection::install_reply_faults() {
    std::lock_guard lock(mutex_);
    if (!reply_faults_owned_) {
        reply_faults_owned_ = std::make_unique<reply_faults>();
        reply_faults_.store(reply_faults_owned_.get(), std::memory_order_release);
    }
    return *reply_faults_owned_;
}

bool connection::block_until_connected(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return state_changed_.wait_for(lock, timeout, [this] {
        const auto s = state_.load();
        return is_connected(s) || s == connection_state::closed;
    }) && is_connected(state_.load());
}

std::uint64_t connection::add_listener(std::function<void(connection_state)> fn) { return listeners_.add(std::move(fn)); }

// A call already posted is skipped: the registry's snapshot checks, when each call starts, that the
// listener is still registered.
void connection::remove_listener(std::uint64_t id) noexcept { listeners_.remove(id); }

std::uint64_t connection::add_observer(unique_function<void(connection_state)> fn) { return observers_.add(std::move(fn)); }

void connection::remove_observer(std::uint64_t id) { observers_.remove(id); }

// ---------------------------------------------------------------------------------------------
// The handle

void connection::open_handle() {
    if (closing_) return;
    if (reactor_.open()) return;
    options_.logger->error("cannot create a ZooKeeper handle for \"{}\": {}; trying again in 1 s",
                           options_.connect_string, std::strerror(errno));
    reopen_timer_.expires_after(std::chrono::seconds(1));
    reopen_timer_.async_wait([this](boost::system::error_code ec) {
        if (!ec) open_handle();
    });
}

void connection::reset_handle(bool closing) {
    const c_client_lock c_lock(c_client_mutex());
    if (!zh()) return;
    handshake_timer_.cancel();
    reactor_.close();  // the replies it fails meanwhile read closed, or session expired (on_result)
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

void connection::drop_connection() {
    const c_client_lock c_lock(c_client_mutex());
    if (!reactor_.has_socket()) return;
    options_.logger->warn("server {} accepted the connection but did not answer its handshake within {} ms: "
                          "trying the next server",
                          zoo_get_current_server(zh()), handshake_timeout().count());
    reactor_.drop_connection();
}

std::chrono::milliseconds connection::session_timeout_now() const noexcept {
    return negotiated_ms_ > 0 ? std::chrono::milliseconds(negotiated_ms_.load()) : options_.session_timeout;
}

bool connection::silent_past_receive_timeout() const noexcept {
    return is_connected(state()) && reactor_.silence() > negotiated_timeout() * 2 / 3;
}

// ---------------------------------------------------------------------------------------------
// Session supervision

void connection::handle_state_changed(int s) {
    handle_event e = handle_event::connecting;
    if (s == ZOO_ASSOCIATING_STATE) e = handle_event::associating;
    else if (s == ZOO_CONNECTED_STATE) e = handle_event::connected;
    else if (s == ZOO_READONLY_STATE) e = handle_event::connected_read_only;
    else if (s == ZOO_EXPIRED_SESSION_STATE) e = handle_event::expired;
    else if (s == ZOO_AUTH_FAILED_STATE) e = handle_event::auth_failed;
    if (e == handle_event::connected || e == handle_event::connected_read_only) {
        const clientid_t* id = zoo_client_id(zh());
        session_id_ = id->client_id;
        negotiated_ms_ = zoo_recv_timeout(zh());
        reactor_.heard_now();
        std::lock_guard lock(mutex_);
        password_.assign(id->passwd, sizeof id->passwd);
    }
    apply(machine_.on_handle(e));
}

void connection::apply(const session_machine::actions& a) {
    if (a.cancel_suspend_timer) suspend_timer_.cancel();
    if (a.abandon_requests) abandon_inflight();
    if (a.cancel_handshake_timer) handshake_timer_.cancel();
    if (a.start_handshake_timer) {
        // A third of the session timeout: the Java client's connect timeout with three servers,
        // for any number, and time left to reach another server before the session is presumed
        // lost. A server answers a handshake in a round trip or two.
        handshake_timer_.expires_after(handshake_timeout());
        handshake_timer_.async_wait([this](boost::system::error_code ec) {
            if (ec) return;
            apply(machine_.on_handshake_timeout());
        });
    }
    if (a.drop_connection) drop_connection();
    if (a.start_suspend_timer) {
        suspend_timer_.expires_after(session_timeout_now());
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
    if (is_connected(machine_.state()) && zh() && (a.notify || a.cancel_suspend_timer)) {
        for (const auto& op : depot_.take_waiting()) {
            op->timer.reset();
            start_op(op);
        }
        run_guaranteed_deletes();
        look_for_orphans();
        reactor_.schedule_pump();
    }
}

void connection::notify(connection_state s) {
    options_.logger->info("connection state: {} (session 0x{:x})", to_string(s), session_id_.load());
    {
        std::lock_guard lock(mutex_);
        state_ = s;
        state_changed_.notify_all();
    }
    // Before the recipes' observers: a hold's doubt or loss comes after the state that caused it.
    if (options_.observer) post_to_observer(options_, callback_executor(), session_event{s, session_id_.load()});
    // Over a copy of the list: observers may add or remove observers while they run.
    observers_.call_each(s);
    auto targets = listeners_.snapshot();
    if (targets.empty()) return;
    boost::asio::post(callback_executor(), [targets = std::move(targets), s] {
        for (const auto& fn : targets) fn(s);
    });
}

void connection::abandon_inflight() {
    // The C client failed every request of the lost connection but delivers those failures only
    // after it reconnects: decide now, and let the late callbacks just free their records.
    const auto ec = make_error_code(errc::connection_loss);
    for (const auto& op : depot_.abandon_inflight()) retry_or_finish(op, ec);
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

}  // namespace zkr::detail
