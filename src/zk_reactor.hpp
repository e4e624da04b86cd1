// The reactor: the C client's handle and the waits it asks for. After every call into the C client
// the pump asks it what it waits for (its socket's readiness, through socket_watch; a deadline for
// pings and timeouts) and arms those waits; a wait that ends runs the C client again
// (zookeeper_process), which calls the requests' completions. The handle's state is read after each
// call and handed to the host when it changed: the C client's own session events are not used (they
// reach a client only after a successful read, which never comes while the server is down).
// Network thread only, except silence().
#pragma once

#include "socket_watch.hpp"

#include <zkr/client_options.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <spdlog/logger.h>

#include <zookeeper/zookeeper.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>

namespace zkr::detail {

// The C client's process-wide state, which every handle shares: its lock (c_client_mutex,
// client_hooks.hpp) and its log.
using c_client_lock = std::lock_guard<std::recursive_mutex>;
/// The logger of the client whose network thread this is (the C client's log goes there).
extern thread_local spdlog::logger* network_thread_logger;
/// zoo_set_debug_level is process-wide: keeps the most verbose level any client's logger wants.
void raise_c_client_log_level(const spdlog::logger& log);

class zk_reactor {
public:
    /// What the reactor needs of the connection it serves; called on the network thread.
    class host {
    public:
        /// The handle's state (zoo_state) is now `state`, another than at the last call.
        virtual void handle_state_changed(int state) = 0;
        /// A session is connected: requests the C client queued are written at once.
        virtual bool may_send() const noexcept = 0;
        /// The session timeout the server granted (zero before the first connection).
        virtual std::chrono::milliseconds negotiated_timeout() const noexcept = 0;

    protected:
        ~host() = default;
    };

    /// options: validated, and kept by the caller for the reactor's life.
    zk_reactor(boost::asio::io_context& io, const client_options& options, host& h);
    zk_reactor(const zk_reactor&) = delete;
    zk_reactor& operator=(const zk_reactor&) = delete;

    /// Makes a handle for the options' servers, session timeout, read-only mode and auth, and
    /// pumps. False when the C client could make none (errno says why).
    bool open();
    /// Closes the handle (zookeeper_close): the C client fails the requests it holds, inside this
    /// call (closing() is true meanwhile), and calls nothing more. Nothing without a handle.
    void close();
    bool closing() const noexcept { return in_close_; }
    /// The handle, or null (none opened yet, or closed): for the calls that send requests.
    zhandle_t* handle() const noexcept { return zh_; }

    /// Asks the C client what it waits for and arms the waits; writes what it queued, when a session
    /// is connected. After every call into the C client.
    void pump();
    /// pump() once the handler running now returns, however often asked before: the network loop
    /// runs it (run_scheduled_pump), after the handler and before the next. Network thread only
    /// (every caller is a handler of that loop). A post would cost the loop one more handler.
    void schedule_pump() noexcept { pump_scheduled_ = true; }
    /// The network loop, after each handler it runs: the pump that handler asked for, if any.
    void run_scheduled_pump() {
        if (pump_scheduled_) {
            pump_scheduled_ = false;
            pump();
        }
    }
    /// Stops waiting for the C client's next deadline (the connection closes).
    void cancel_deadline();

    /// The C client has a socket (connected, or connecting).
    bool has_socket() const noexcept { return zh_ && socket_.is_open(); }
    /// Ends the current connection (a shutdown on zkr's dup of the socket): the C client reads the
    /// end and moves on to the next server, with the same session.
    void drop_connection();

    /// Holds back the socket's writes until the batch ends, so that they leave as one segment.
    std::uint64_t begin_batch() { return socket_.begin_batch(); }
    void end_batch(std::uint64_t batch) { socket_.end_batch(batch); }

    /// Something was read from the server now (a reply, or the handshake's answer).
    void heard_now() noexcept;
    /// How long since the server was last heard. Any thread.
    std::chrono::steady_clock::duration silence() const noexcept;

private:
    void on_socket_ready(int events);
    /// zookeeper_interest, and the C client's socket when it has one (see the definition).
    int ask_interest(int& interest, struct timeval& tv);
    /// Hands the handle's state to the host when it changed.
    void check_state();
    void arm_deadline(std::chrono::steady_clock::time_point due);

    const client_options& options_;
    host& host_;
    zhandle_t* zh_ = nullptr;
    int last_state_ = 0;
    bool in_close_ = false;
    socket_watch socket_;
    bool pump_scheduled_ = false;
    bool flushing_ = false;  // inside pump()'s direct write
    boost::asio::steady_timer deadline_;  // the C client's next deadline (arm_deadline)
    bool deadline_pending_ = false;
    std::uint64_t deadline_gen_ = 0;
    std::atomic<std::chrono::steady_clock::rep> last_heard_{0};  // the last read from the server
};

}  // namespace zkr::detail
