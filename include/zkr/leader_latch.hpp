// zkr::leader_latch: exactly one participant leads (Curator's LeaderLatch, with an epoch and a
// stop token per term).
#pragma once

#include <zkr/detail/asio.hpp>
#include <zkr/detail/unique_function.hpp>
#include <zkr/hold_state.hpp>
#include <zkr/multi_op.hpp>
#include <zkr/results.hpp>
#include <zkr/subscription.hpp>

#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

namespace zkr {

class client;

/**
 * A leader election: every participant that start()s joins one queue under `path`; the first one
 * leads until it leaves (close(), its session ends, or its node goes), and then the next one leads,
 * woken alone (each participant watches only the one ahead of it: no herd).
 *
 * Nodes are Curator's LeaderLatch's (`_c_<uuid>-latch-<seq>`, holding the participant's id), so a
 * Curator LeaderLatch and a zkr leader_latch on one path elect one leader between them.
 *
 * A term of leadership is a hold of the lock machine: fencing_token() is its epoch (the node's
 * czxid, rising strictly from term to term), stop_token() is requested when the term ends, and
 * has_leadership() is true only while the hold reads held.
 *
 * Connection loss: the term becomes doubtful (has_leadership() false, state() doubtful); it is
 * held again if the same session reconnects and our node is still ours, which leaves the term,
 * its epoch and its stop token as they were (listeners hear nothing). With
 * options::lose_on_doubt the term ends at the first doubt instead: listeners hear false, the stop
 * token is requested, and the latch queues again. That avoids a leader acting while it cannot know
 * whether it still leads, at the price of a new election (and a new epoch) for every short
 * disconnection. Session loss ends the term (listeners hear false, stop requested) and the latch
 * queues again with a new node on the new session; it never leads on the old session's node.
 *
 * Listeners and stop callbacks run on the client's callback thread, never on its network thread.
 */
class leader_latch {
public:
    /// How a latch treats doubt.
    struct options {
        /// End the term as soon as the hold is doubtful (connection suspended, or silent past the
        /// receive timeout), not only when it is lost. See above for the trade-off.
        bool lose_on_doubt = false;
    };

    /// id: what this participant's node holds, read by leader() and participants() (default
    /// "<host>:<pid>"). Throws invalid_path for a bad path.
    leader_latch(client& c, std::string path, std::string id = {});
    /// As above, with options.
    leader_latch(client& c, std::string path, std::string id, options o);
    leader_latch(const leader_latch&) = delete;
    leader_latch& operator=(const leader_latch&) = delete;
    /// close(), if started and not closed yet (errors logged).
    ~leader_latch();

    /// Joins the election (in the background: returns at once). Throws invalid_argument when
    /// started before (a closed latch cannot start again).
    void start();
    /// Leaves the election: a term in progress ends (listeners hear false, its stop is requested)
    /// and our node is deleted (in the background once the connection returns, if it is down).
    /// Throws invalid_argument when never started or already closed.
    void close();

    /// True while this participant leads and its hold reads held.
    bool has_leadership() const;
    /// Blocks until this participant leads. Throws zkr::error: closed when the latch is closed (or
    /// its client), invalid_argument when never started, and the error that ended the election
    /// otherwise (lock_kind_mismatch: another kind of lock on the path).
    void await_leadership();
    /// As above, for at most `timeout`: false when it passed.
    bool await_leadership(std::chrono::milliseconds timeout);

    /// The epoch of the current term (our node's czxid: strictly rising from term to term).
    /// Throws lock_not_held when this participant does not lead.
    std::int64_t fencing_token() const;
    /// Requested when the current term ends; already requested when this participant does not lead.
    std::stop_token stop_token() const;
    /// The current term's hold state: released when not leading.
    hold_state state() const;

    /// Runs ops atomically only while this participant leads: a check of its node, on its session,
    /// goes in the same multi (a leader's writes never land after its term ended). Throws
    /// zkr::error: lock_not_held when not leading, lock_lost when the term ended meanwhile.
    std::vector<multi_result> guarded_multi(std::vector<multi_op> ops);
    /// As guarded_multi(ops), with the failure in ec instead of an exception.
    std::vector<multi_result> guarded_multi(std::vector<multi_op> ops, boost::system::error_code& ec);

    /// Completes with (error_code, bool leading) once this participant leads (true), when the
    /// timeout passes first (false, no error), or with the error await_leadership() would throw
    /// (closed, invalid_argument before start(), the error that ended the election), on the
    /// handler's associated executor (default: the client's callback thread). Zero: whether it
    /// leads now. The latch must outlive the wait (closing it completes the wait with closed).
    template <typename Token>
    auto async_await_leadership(std::chrono::milliseconds timeout, Token&& token) {
        return boost::asio::async_initiate<Token, void(boost::system::error_code, bool)>(
            [self = impl_, callbacks = callback_executor(), timeout](auto handler) mutable {
                start_await(self, timeout, detail::completion_on<true>(std::move(handler), callbacks));
            },
            token);
    }

    /// listener(true) when a term starts, listener(false) when it ends; on the callback thread.
    state_subscription add_listener(std::function<void(bool is_leader)> listener);

    /// This participant's id.
    const std::string& id() const noexcept;
    /// The ids of every participant in queue order, the leader first (read from ZooKeeper now).
    std::vector<std::string> participants() const;
    /// The leader's id ("" when nobody leads).
    std::string leader() const;

private:
    struct impl;
    using await_done = detail::unique_function<void(const boost::system::error_code&, bool)>;
    static void start_await(const std::shared_ptr<impl>& self, std::chrono::milliseconds timeout, await_done done);
    boost::asio::any_io_executor callback_executor() const;
    std::shared_ptr<impl> impl_;
};

}  // namespace zkr
