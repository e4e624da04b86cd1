// zkr::interprocess_semaphore_v2: at most N leases held at once across processes.
#pragma once

#include <zkr/detail/lock_base.hpp>
#include <zkr/lease.hpp>
#include <zkr/shared_count.hpp>

#include <chrono>
#include <optional>
#include <vector>

namespace zkr {

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
 * maximum are kept until returned.
 *
 * Connection loss and session loss: as for locks (see lease). Waiters carry on through connection
 * loss and queue again with a new node when their session is lost. close() of the client ends
 * every waiting acquire with errc::closed.
 */
class interprocess_semaphore_v2 : public detail::lock_base {
public:
    /// Throws invalid_argument unless max_leases >= 1, invalid_path for a bad path.
    interprocess_semaphore_v2(client& c, std::string path, std::int32_t max_leases);
    /// The maximum is count.count(), kept current by its watch; count must outlive this object.
    /// Every process must use the same count node (a different one is a max_mismatch).
    interprocess_semaphore_v2(client& c, std::string path, shared_count& count);
    ~interprocess_semaphore_v2();

    /// Blocks until one lease is held.
    lease acquire();
    /// One lease within the timeout, or nullopt (and no node left behind). Zero tries once.
    std::optional<lease> acquire(std::chrono::milliseconds timeout);
    /// qty leases at once (all or nothing), one per element. invalid_argument unless
    /// 1 <= qty <= max_leases(). A name of its own: acquire(1) cannot be mistaken for it.
    std::vector<lease> acquire_many(std::int32_t qty);
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
    void cancel() { driver_->cancel(); }

    // From lock_base: set_node_data(data) for the nodes of later acquires, participant_nodes()
    // (holders and waiters in queue order), add_hold_listener(fn) for every lease taken from now on.

private:
    template <typename Token>
    auto async_initiate_acquire(std::int32_t qty, std::optional<std::chrono::milliseconds> timeout, Token&& token);
    static std::vector<lease> make_leases(std::shared_ptr<detail::lock_driver> driver, std::shared_ptr<detail::hold> h,
                                          std::int32_t qty, std::string data);

    struct limit;
    interprocess_semaphore_v2(client& c, std::string path, std::shared_ptr<limit> l);
    std::optional<std::chrono::milliseconds> checked_qty(std::int32_t qty) const;
    detail::acquire_request make_request(std::int32_t qty, std::optional<std::chrono::milliseconds> timeout) const;
    std::optional<std::vector<lease>> acquire_for(std::int32_t qty, std::optional<std::chrono::milliseconds> timeout);
    /// The error to report for ec: a max_mismatch names the node that disagrees.
    boost::system::error_code explain(const boost::system::error_code& ec, std::string& message) const;

    std::shared_ptr<limit> limit_;
    state_subscription count_subscription_;
};

template <typename Token>
auto interprocess_semaphore_v2::async_initiate_acquire(std::int32_t qty, std::optional<std::chrono::milliseconds> timeout,
                                                       Token&& token) {
    auto req = make_request(qty, timeout);
    // The completion holds no pointer to this object: it may be destroyed before it runs.
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::vector<lease>)>(
        [driver = driver_, attach = listener_attacher(), qty, req = std::move(req)](auto handler) mutable {
            // Posted: a closed or unstarted client answers inside this call.
            auto complete = detail::completion_on<true>(std::move(handler), detail::callback_executor(detail::connection_of(driver->get_client())));
            std::string data = req.data;
            driver->acquire(std::move(req), [driver, attach, qty, data = std::move(data), complete = std::move(complete)](
                                                const boost::system::error_code& ec, std::shared_ptr<detail::hold> hold) mutable {
                std::vector<lease> leases;
                if (hold) {
                    attach(hold);
                    leases = make_leases(driver, std::move(hold), qty, std::move(data));
                }
                complete(ec, std::move(leases));
            });
        },
        token);
}

template <typename Token>
auto interprocess_semaphore_v2::async_acquire(std::int32_t qty, std::chrono::milliseconds timeout, Token&& token) {
    return async_initiate_acquire(qty, checked_timeout(timeout), std::forward<Token>(token));
}

template <typename Token>
auto interprocess_semaphore_v2::async_acquire(std::int32_t qty, Token&& token) {
    return async_initiate_acquire(qty, std::nullopt, std::forward<Token>(token));
}

}  // namespace zkr
