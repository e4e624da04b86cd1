// The connection layer: one ZooKeeper handle (the C client's single-threaded library) driven by an
// Asio io_context on the client's own network thread, plus retries, namespace, protected create,
// watches and session tracking. Internal; the public face is zkr::client.
#pragma once

#include "cleanup_queue.hpp"
#include "handler_slot.hpp"
#include "reply_faults.hpp"
#include "request_depot.hpp"
#include "session_machine.hpp"
#include "submission_queue.hpp"
#include "watch_registry.hpp"
#include "zk_convert.hpp"
#include "zk_reactor.hpp"

#include <zkr/client_options.hpp>
#include "listener_registry.hpp"
#include <zkr/connection_state.hpp>
#include <zkr/detail/request.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>

#include <zookeeper/zookeeper.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace zkr::detail {

/// A failure's response: it carries req's path (moved out) when req asked for it back
/// (request::path_back_on_error). Every way a request fails goes through here.
inline void hand_back_path(request& req, response& r) {
    if (req.path_back_on_error) r.path = std::move(req.path);
}

class connection final : private zk_reactor::host {
public:
    explicit connection(client_options options);  // options already validated
    ~connection();
    connection(const connection&) = delete;
    connection& operator=(const connection&) = delete;

    void start();
    void close();
    bool block_until_connected(std::chrono::milliseconds timeout);

    std::uint64_t add_listener(std::function<void(connection_state)> fn);
    void remove_listener(std::uint64_t id) noexcept;
    /// For recipes: called on the network thread, right after each state change, before
    /// any listener. Must not block. Returns an id for remove_observer.
    std::uint64_t add_observer(unique_function<void(connection_state)> fn);
    void remove_observer(std::uint64_t id);

    connection_state state() const noexcept { return state_.load(); }
    std::int64_t session_id() const noexcept { return session_id_.load(); }
    std::chrono::milliseconds negotiated_timeout() const noexcept override {
        return std::chrono::milliseconds(negotiated_ms_.load());
    }
    const client_options& options() const noexcept { return options_; }
    boost::asio::any_io_executor callback_executor() const { return callback_executor_; }
    boost::asio::io_context::executor_type network_executor() { return io_.get_executor(); }
    bool on_network_thread() const noexcept { return std::this_thread::get_id() == network_thread_id_; }
    /// Runs fn on the network thread: at once when called there, else queued. Once close() has
    /// begun, fn is dropped and false returned: the caller completes its own waiter (closed).
    /// The check and the queuing are one step, at the submission queue's gate
    /// (submission_queue.hpp): a step queued is queued before the close's own.
    bool run_on_network(unique_function<void()> fn);

    /// True while connected but nothing was read from the server for longer than the C client's
    /// receive timeout (2/3 of the session timeout): this process could not run (SIGSTOP, a VM
    /// pause) or the network thread has not caught up, and the C client will drop the connection
    /// as soon as it looks. Any thread; what the hold states a caller sees rest on.
    bool silent_past_receive_timeout() const noexcept;

    /// checked: check_request passed already (it runs once per request).
    void submit(request req, completion done, bool checked = false);
    std::uint64_t requests_sent() const noexcept { return depot_.sent(); }
    /// Tests' fault injection on the replies (reply_faults.hpp), installed by the first call.
    reply_faults& install_reply_faults();
    bool started() const { return submissions_.started(); }
    std::string session_password() const {
        std::lock_guard lock(mutex_);
        return password_;
    }

private:
    using op_ptr = request_depot::op_ptr;

    // Network thread only, below.
    /// How long the network thread polls for the next request of a caller it just answered
    /// (bounded by client_options::blocking_call_spin).
    static constexpr std::chrono::microseconds follow_up_window{50};
    void run_network_loop();
    void open_handle();
    void reset_handle(bool closing);
    zhandle_t* zh() const noexcept { return reactor_.handle(); }
    /// Ends the current connection: the C client moves on to the next server, same session.
    void drop_connection();
    /// The negotiated session timeout once known, else the one asked for.
    std::chrono::milliseconds session_timeout_now() const noexcept;
    /// How long a server may take to answer the handshake: a third of the session timeout.
    std::chrono::milliseconds handshake_timeout() const noexcept { return session_timeout_now() / 3; }
    // zk_reactor::host
    void handle_state_changed(int state) override;
    bool may_send() const noexcept override { return is_connected(machine_.state()); }
    void end_expired_session();
    void apply(const session_machine::actions& a);
    void notify(connection_state s);
    void abandon_inflight();
    void do_close();

    void start_op(const op_ptr& op);
    void wait_for_connection(const op_ptr& op);
    void issue(const op_ptr& op);
    void issue_create(const op_ptr& op);
    /// Connected to a read-only server now (as of the C client's last call).
    bool on_read_only_server() const noexcept { return machine_.state() == connection_state::read_only; }
    /// A write on a read-only connection: refused without sending (see the definition for why).
    bool refused_as_read_only(const op_ptr& op);
    void create_after_lookup(const op_ptr& op);
    void issue_parents(const op_ptr& op);
    void issue_protected_lookup(const op_ptr& op);
    void issue_multi(const op_ptr& op);
    void on_result(const op_ptr& op, int rc, response&& r);
    void retry_or_finish(const op_ptr& op, const boost::system::error_code& ec);
    void finish(const op_ptr& op, const boost::system::error_code& ec, response&& r);
    void leave_to_cleanup(const op_ptr& op, const boost::system::error_code& ec);
    void keep_guaranteed(const op_ptr& op, const boost::system::error_code& ec);
    void run_guaranteed_deletes();
    void delete_guaranteed(const std::string& path, std::int32_t version);
    void prepare_protected_retry(const op_ptr& op, const boost::system::error_code& ec);
    /// Lists `parent` for protected-create recovery, after a sync (see the definition for why).
    int list_after_sync(const std::string& parent, inflight* t);
    void on_protected_listed(const inflight& f, int rc, const struct String_vector* strings);
    void on_protected_found(const inflight& f, int rc, const struct Stat* stat);
    void forget_protected(const op_ptr& op, std::string_view prefix);
    void look_for_orphans();
    void look_for(const cleanup_queue::orphan& o);
    void on_orphans_listed(const inflight& f, int rc, const struct String_vector* strings);
    void start_submitted();
    struct drain_handler;
    struct step_handler;
    handler_slot& free_step_slot() noexcept;

    /// Sends f's request through the depot: its record, the C callback's context, names this
    /// connection (claim).
    inflight* track(request_depot::record f);
    static std::pair<connection*, request_depot::record> claim(const void* data);

    std::string full_path(std::string_view user_path) const;
    void to_user_path(std::string& full) const;

    // C callbacks (network thread, inside zookeeper_process).
    static void on_string_stat(int rc, const char* value, const struct Stat* stat, const void* data);
    static void on_void(int rc, const void* data);
    static void on_stat(int rc, const struct Stat* stat, const void* data);
    static void on_data(int rc, const char* value, int len, const struct Stat* stat, const void* data);
    static void on_children(int rc, const struct String_vector* strings, const struct Stat* stat,
                            const void* data);
    static void on_multi(int rc, const void* data);
    static void on_watch(zhandle_t* zh, int type, int state, const char* path, void* ctx);
    static void on_parent_created(int rc, const char* value, const struct Stat* stat, const void* data);
    static void on_guaranteed_delete(int rc, const void* data);

    client_options options_;
    std::string ns_;  // "/name_space" or ""
    acl_storage default_acl_;  // options_.default_acl for the C client, built once (every create uses it)
    std::string protected_path_;  // a protected create's path as sent (issue_create's buffer, kept for the next)

    // The submission queue's drain, posted from any thread, is built here rather than on the
    // heap (declared before io_: a post still queued when io_ goes is freed into it).
    handler_slot drain_slot_;
    // Likewise the steps other threads queue (run_on_network: a lock's acquire, its release): a
    // caller waits on its step, so a few rooms serve a few blocked callers at once.
    std::array<handler_slot, 2> step_slots_;
    boost::asio::io_context io_{1};
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
    boost::asio::thread_pool callbacks_{1};
    // Everything for the callback thread goes through this strand, never to the pool itself: a
    // one-thread pool keeps what its own thread posts in that thread's private queue until the
    // running handler returns, so an event posted meanwhile from another thread would run first
    // (a selector's "term ended", posted by the term's thread, before "term gained", posted by
    // the callback handler that started it). The strand's queue keeps the order of the posts.
    boost::asio::strand<boost::asio::thread_pool::executor_type> callback_order_{callbacks_.get_executor()};
    // The strand type-erased once: too large for any_io_executor's own storage, it is put on the
    // heap when erased, and shared by every copy of the erased one (a copy per post was a heap
    // allocation per post).
    const boost::asio::any_io_executor callback_executor_{callback_order_};
    std::thread network_thread_;
    std::thread::id network_thread_id_;

    // Network thread state.
    session_machine machine_;
    zk_reactor reactor_{io_, options_, *this};  // the C handle, its socket and its deadline
    bool new_session_pending_ = false;  // a reset to a new session is posted
    bool closing_ = false;
    boost::asio::steady_timer suspend_timer_{io_};
    boost::asio::steady_timer handshake_timer_{io_};
    boost::asio::steady_timer reopen_timer_{io_};
    request_depot depot_;  // the requests in flight, waiting for a connection, sleeping before a retry
    watch_registry watches_;
    std::vector<op_ptr> batch_;  // the batch start_submitted drains from the submission queue
    cleanup_queue cleanup_;  // failed guaranteed deletes, orphans of protected creates
    // Recipes' observers: called on the network thread, in order with each change.
    listener_registry<unique_function<void(connection_state)>> observers_;

    // Shared state.
    std::atomic<connection_state> state_{connection_state::latent};
    std::atomic<std::int64_t> session_id_{0};
    std::atomic<std::int64_t> negotiated_ms_{0};
    // Tests' fault injection (install_reply_faults): made once, under mutex_, and kept for the
    // connection's life; the network thread reads the pointer for each reply.
    std::unique_ptr<reply_faults> reply_faults_owned_;
    std::atomic<reply_faults*> reply_faults_{nullptr};
    // The requests submitted, not yet taken by the network thread, and the gate start() opens and
    // close() shuts.
    basic_submission_queue<op_ptr> submissions_;
    mutable std::mutex mutex_;  // guards password_, reply_faults_owned_, and the condition below
    std::condition_variable state_changed_;
    std::string password_;
    // The users' listeners: called on the callback thread; a removed one is not called again.
    listener_registry<std::function<void(connection_state)>> listeners_;
};

}  // namespace zkr::detail
