// zkr::leader_selector: run a function on a thread of its own while this process leads (Curator's
// LeaderSelector, with a stop token instead of thread interruption).
#pragma once

#include <zkr/hold_state.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

namespace zkr {

class client;

/**
 * A leader election in which leading means running `take_leadership`: every participant that
 * start()s queues under `path`; the first one runs take_leadership(token) on a thread of its own,
 * and leads until it returns, when its node is deleted and the next participant leads (woken alone:
 * each one watches only the one ahead of it).
 *
 * Nodes are Curator's LeaderSelector's: an InterProcessMutex's (`_c_<uuid>-lock-<seq>`, holding
 * the participant's id), so a Curator LeaderSelector and a zkr leader_selector on one path take
 * turns. (A LeaderLatch's nodes are another kind: do not mix the two on one path.)
 *
 * The token's stop is requested as soon as the term can no longer be trusted: the hold lost (the
 * session ended, the node deleted by someone else, the client closed), close(),
 * interrupt_leadership(), and with options::lose_on_doubt already when the hold turns doubtful
 * (connection suspended, or silent past the receive timeout). take_leadership must then return
 * promptly: until it does, this process still runs it, whatever the token says. A term that
 * ends before its thread gets to call take_leadership (lost, closed or interrupted in between)
 * does not call it at all, and ends as after a return. fencing_token() (the node's czxid, rising
 * strictly from term to term) lets the resources it writes refuse a stale leader.
 *
 * After take_leadership returns (or throws: logged and told to options::on_failure), the term
 * ends and the node is deleted; with options::requeue the participant queues again at the back
 * (after options::requeue_backoff when it threw), otherwise it leaves the election until
 * requeue(). A session loss while waiting queues again with a new node, as every zkr waiter
 * does.
 */
class leader_selector {
public:
    /// What happens after a term, and on doubt.
    struct options {
        /// Queue again after each term (Curator's autoRequeue()).
        bool requeue = false;
        /// Request the term's stop as soon as the hold is doubtful, not only when it is lost.
        bool lose_on_doubt = false;
        /// Told on the client's callback thread, with the failure: when take_leadership throws
        /// (its exception; the term ends as after a return) and when the participant leaves the
        /// election on an error (a zkr::error: another kind of lock on the path, say). Without
        /// it a failure is only logged. (The observer's leadership_event says `failure` too.)
        std::function<void(std::exception_ptr)> on_failure;
        /// With requeue: after a term whose take_leadership threw, wait this long before queuing
        /// again, doubled for each such term in a row up to max_requeue_backoff; a term that
        /// returns resets it. Zero: queue again at once.
        std::chrono::milliseconds requeue_backoff{100};
        /// The longest wait requeue_backoff doubles up to.
        std::chrono::milliseconds max_requeue_backoff{10'000};
    };

    /// id: what this participant's node holds (default "<host>:<pid>"). Throws zkr::error:
    /// invalid_path for a bad path, invalid_argument for an empty take_leadership.
    leader_selector(client& c, std::string path, std::function<void(std::stop_token)> take_leadership, std::string id = {});
    /// As above, with options.
    leader_selector(client& c, std::string path, std::function<void(std::stop_token)> take_leadership, std::string id,
                    options o);
    leader_selector(const leader_selector&) = delete;
    leader_selector& operator=(const leader_selector&) = delete;
    /// close() if started, then waits for a running take_leadership to return (it is asked to stop).
    ~leader_selector();

    /// Joins the election in the background. Throws invalid_argument when started before.
    void start();
    /// Joins again after a term ended (without options::requeue). Throws invalid_argument when
    /// not started, closed, or already queued or leading.
    void requeue();
    /// Leaves the election: a waiting node is removed, a running term is asked to stop (its node is
    /// deleted once take_leadership returns). Does not wait for it. A term whose call had not
    /// begun when close() ran is ended without calling take_leadership; a call that had begun,
    /// however late its function's first line runs, finds its stop token requested from the
    /// moment close() returns. Throws invalid_argument when never started or already closed.
    void close();

    /// Asks the running take_leadership to stop (its token); the selector stays in the election.
    /// A term granted whose call had not begun yet ends without calling it.
    void interrupt_leadership();
    /// True while take_leadership runs for this participant, has not been asked to stop, and its
    /// hold reads held.
    bool has_leadership() const;
    /// The current term's epoch (our node's czxid). Throws lock_not_held when not leading.
    std::int64_t fencing_token() const;
    /// The current term's hold state: released when not leading.
    hold_state state() const;

    /// This participant's id.
    const std::string& id() const noexcept;
    /// The ids of every participant in queue order, the leader first (read from ZooKeeper now).
    std::vector<std::string> participants() const;
    /// The leader's id ("" when nobody leads).
    std::string leader() const;

private:
    struct impl;
    std::shared_ptr<impl> impl_;
};

}  // namespace zkr
