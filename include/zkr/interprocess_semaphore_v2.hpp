// zkr::interprocess_semaphore_v2: at most N leases held at once across processes.
#pragma once

#include <zkr/detail/lock_ops.hpp>
#include <zkr/hold_state.hpp>
#include <zkr/lease.hpp>
#include <zkr/subscription.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace zkr {

class client;
class shared_count;

/// How a semaphore lays out its nodes in ZooKeeper.
enum class semaphore_layout {
    /// zkr's: one weighted node per acquire (see interprocess_semaphore_v2).
    zkr,
    /// Apache Curator's InterProcessSemaphoreV2: an inner mutex at `path/locks` and one node per
    /// lease at `path/leases`, so that zkr and Curator processes share one semaphore.
    curator,
};

/// How a semaphore is made (interprocess_semaphore_v2, interprocess_semaphore_mutex).
struct semaphore_options {
    /// zkr's own layout, or Curator's for a semaphore shared with Java services on Curator.
    semaphore_layout layout = semaphore_layout::zkr;
};

/**
 * A counting semaphore shared by every process that uses the same path: at most max_leases
 * leases are held at once.
 *
 * Each acquire creates one protected ephemeral-sequential node under `path` whose name carries the
 * number of leases it asks for and the maximum: "_c_<uuid>-m<max>-w<qty>-lease-<seq>". The
 * create and the listing go out in one round trip; the nodes hold in sequence order while their
 * weights sum to at most the maximum. So waiters are served in arrival order, an acquire of qty
 * leases is all or nothing, and two clients that each ask for qty = max never deadlock: one goes
 * first. Only the first waiter watches the holders; later waiters each watch the waiter ahead.
 *
 * Uncontended: one round trip to acquire, one to return (Curator: five and one).
 *
 * Every process must use the same maximum. A process that meets a node made with another maximum
 * fails its acquire with errc::max_mismatch (its node is removed), so two processes that disagree
 * never hold at the same time. With a shared_count, the maximum is read from that node and may
 * change at run time; a grown maximum wakes the waiters that now fit. Holds beyond a shrunk
 * maximum are kept until returned, and nobody else is granted until the leases in use fit it:
 * grants under a shared count go in queue order (a node holds once the node ahead of it has
 * marked its own grant, which costs a write per grant and a read per waiter).
 *
 * Connection loss and session loss: as for locks (see lease). Waiters carry on through connection
 * loss and queue again with a new node when their session is lost. close() of the client ends
 * every waiting acquire with errc::closed.
 *
 * With semaphore_options::layout = semaphore_layout::curator it speaks Curator's
 * InterProcessSemaphoreV2 instead, and a fleet of zkr and Curator processes on one path never has
 * more than max_leases holders. An acquire takes the inner mutex `path/locks` (Curator's
 * InterProcessMutex, as zkr's mutex), makes one node per lease under `path/leases`
 * ("_c_<uuid>-lease-<seq>"), waits until fewer than max_leases nodes are ahead of each, and lets
 * the mutex go (without waiting for its delete). What the zkr layout gives and this one does not:
 * - Cost: two round trips uncontended (the mutex, then the lease) and a background delete, where
 *   the zkr layout takes one; still fewer than Curator's five.
 * - acquire_many(qty) makes qty nodes, one after the other, and returns each lease on its own
 *   node. It stays all or nothing, and two zkr processes asking for several leases never deadlock
 *   (the inner mutex is held until all qty hold, where Curator lets it go between leases). A
 *   Curator process that asks for several leases can still deadlock with another acquirer: that is
 *   Curator's protocol.
 * - No check that every process uses the same maximum (Curator's nodes do not say): a process with
 *   a larger one lets more in.
 * - Closing the client or losing the session while waiting queues the lease again without the
 *   inner mutex: still at most max_leases holders (a node holds only with fewer than max_leases
 *   nodes ahead of it), but that waiter may pass others.
 * A live maximum shared with Curator processes is a shared_count in Curator's format
 * (shared_count_options, count_format::int32_big_endian); one in zkr's text format works among zkr
 * processes only.
 */
class interprocess_semaphore_v2 {
public:
    /// Throws invalid_argument unless max_leases >= 1, invalid_path for a bad path.
    interprocess_semaphore_v2(client& c, std::string path, std::int32_t max_leases, semaphore_options options = {});
    /// The maximum is count.count(), kept current by its watch; count must outlive this object.
    /// Every process must use the same count node (a different one is a max_mismatch).
    interprocess_semaphore_v2(client& c, std::string path, shared_count& count, semaphore_options options = {});
    ~interprocess_semaphore_v2();

    /// Blocks until one lease is held.
    lease acquire();
    /// One lease within the timeout, or nullopt (and no node left behind). Zero tries once.
    std::optional<lease> acquire(std::chrono::milliseconds timeout);
    /// qty leases at once (all or nothing), one per element. invalid_argument unless
    /// 1 <= qty <= max_leases(). A name of its own: acquire(1) cannot be mistaken for it.
    std::vector<lease> acquire_many(std::int32_t qty);
    /// qty leases within the timeout (all or nothing), or nullopt (and no node left behind).
    std::optional<std::vector<lease>> acquire_many(std::int32_t qty, std::chrono::milliseconds timeout);

    /// Completes with (error_code, std::vector<lease>) on the handler's associated executor
    /// (default: the client's callback thread); an empty vector without error means the timeout
    /// passed. Bad qty or timeout throw at once.
    template <typename Token>
    auto async_acquire(std::int32_t qty, std::chrono::milliseconds timeout, Token&& token);
    /// Waits for ever.
    template <typename Token>
    auto async_acquire(std::int32_t qty, Token&& token);

    /// The maximum in force now.
    std::int32_t max_leases() const;
    /// Ends every acquire of this object still waiting with errc::cancelled; their nodes are
    /// removed. Leases already held stay held.
    void cancel();
    /// What the nodes of later acquires carry (default "<host>:<pid>"), as `zkr status` shows it.
    void set_node_data(std::string data);
    /// The semaphore's nodes in queue order, holders first, as full paths (without the client's
    /// namespace). Throws zkr::error on a connection problem.
    std::vector<std::string> participant_nodes() const;
    /// listener(state) runs on the client's callback thread for every change of every lease taken
    /// through this object from now on (doubtful on connection loss, held again, lost, released).
    state_subscription add_hold_listener(std::function<void(hold_state)> listener);

private:
    template <typename Token>
    auto async_initiate_acquire(std::int32_t qty, std::optional<std::chrono::milliseconds> timeout, Token&& token);
    using leases_done = detail::unique_function<void(const boost::system::error_code&, std::vector<lease>)>;
    /// An async acquire of qty leases, taken at the call: where its handler runs by default (the
    /// client's callback thread), and its start, which refers to nothing of this object. start's
    /// done gets (error_code, leases) on the network thread, or inside the call (it must post).
    struct acquire_launch {
        boost::asio::any_io_executor callbacks;
        detail::unique_function<void(leases_done)> start;
    };
    /// Checks qty first: throws at once.
    acquire_launch prepare_acquire(std::int32_t qty, std::optional<std::chrono::milliseconds> timeout) const;

    struct limit;
    interprocess_semaphore_v2(client& c, std::string path, std::shared_ptr<limit> l, semaphore_options options);
    /// Throws invalid_argument unless 1 <= qty <= max_leases().
    void check_qty(std::int32_t qty) const;
    std::optional<std::vector<lease>> acquire_for(std::int32_t qty, std::optional<std::chrono::milliseconds> timeout);
    /// acquire_for in Curator's layout: the async acquire, waited for.
    std::optional<std::vector<lease>> acquire_gated_sync(std::int32_t qty, std::optional<std::chrono::milliseconds> timeout);
    /// The error to report for ec: a max_mismatch names the node that disagrees.
    boost::system::error_code explain(const boost::system::error_code& ec, std::string& message) const;

    /// The semaphore's path as the user gave it.
    std::string path_;
    /// The lease nodes' lock: on path (zkr layout) or path/leases (Curator's).
    std::unique_ptr<detail::lock_core> core_;
    /// Curator's layout only: the inner mutex on path/locks.
    std::unique_ptr<detail::lock_core> gate_;
    std::shared_ptr<limit> limit_;
    state_subscription count_subscription_;
};

template <typename Token>
auto interprocess_semaphore_v2::async_initiate_acquire(std::int32_t qty, std::optional<std::chrono::milliseconds> timeout,
                                                       Token&& token) {
    // The completion holds no pointer to this object: it may be destroyed before it runs.
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::vector<lease>)>(
        [launch = prepare_acquire(qty, timeout)](auto handler) mutable {
            // Posted: a closed or unstarted client answers inside this call.
            auto complete = detail::completion_on<true>(std::move(handler), launch.callbacks);
            launch.start(std::move(complete));
        },
        token);
}

template <typename Token>
auto interprocess_semaphore_v2::async_acquire(std::int32_t qty, std::chrono::milliseconds timeout, Token&& token) {
    return async_initiate_acquire(qty, detail::checked_timeout(timeout), std::forward<Token>(token));
}

template <typename Token>
auto interprocess_semaphore_v2::async_acquire(std::int32_t qty, Token&& token) {
    return async_initiate_acquire(qty, std::nullopt, std::forward<Token>(token));
}

}  // namespace zkr
