// zkr::lock_hold: one hold of a lock or semaphore, owned by whoever has the object.
#pragma once

#include <zkr/detail/asio.hpp>
#include <zkr/detail/unique_function.hpp>
#include <zkr/error.hpp>
#include <zkr/hold_state.hpp>
#include <zkr/hold_view.hpp>
#include <zkr/multi_op.hpp>
#include <zkr/results.hpp>

#include <boost/asio/async_result.hpp>
#include <boost/system/error_code.hpp>

#include <cstdint>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

namespace zkr {

namespace detail {
struct hold_access;
}

/**
 * One hold of a lock, owned by this object rather than by a thread: what the async acquires
 * (interprocess_mutex::async_acquire, fair_lock::async_acquire) give, so that a coroutine that
 * resumes on another thread still owns its hold, and nobody else can release it. Move-only; an
 * empty lock_hold (default-constructed, released or moved from) owns nothing.
 *
 * The destructor releases (never throws, never waits for a connection: without one the node is
 * deleted in the background once the connection returns; the outcome is logged). release() and
 * async_release() report it. Any thread may release, once.
 *
 * Loss: state() is doubtful while the connection is suspended (or silent for 2/3 of the session
 * timeout, as after a pause of this process), lost once the session is lost, the client closed or
 * the node deleted (for a one-holder lock, also written) by someone else. stop_token() is
 * requested once the hold ends (lost or released), on the client's callback thread; tie work to
 * it (std::jthread, std::stop_callback, zkr::cancellation_link for Asio objects). Act on the
 * guarded resource only while state() is held, and pass fencing_token() to it. A lock_hold must
 * not outlive its client.
 */
class lock_hold {
public:
    /// Owns nothing.
    lock_hold() noexcept = default;
    /// Takes over other's hold; other then owns nothing.
    lock_hold(lock_hold&& other) noexcept = default;
    /// Releases the hold owned so far (as the destructor does), then takes other's.
    lock_hold& operator=(lock_hold&& other) noexcept;
    lock_hold(const lock_hold&) = delete;
    lock_hold& operator=(const lock_hold&) = delete;
    ~lock_hold();

    /// Releases the hold and waits for the delete's outcome, except on connection loss: then it
    /// returns at once with connection_loss and the node is deleted once the connection returns.
    /// Errors: lock_not_held when this object owns nothing (already released, moved from, empty);
    /// lock_lost when the hold had already ended (nothing was left to delete); connection_loss
    /// (pending, as above); closed. The object owns nothing afterwards, whatever the outcome.
    void release(boost::system::error_code& ec) noexcept;
    /// As release(ec), throwing zkr::error on any of those errors.
    void release();
    /// Releases without waiting: the object owns nothing when this returns, and the delete is sent
    /// before any request this thread issues next on the same client. The handler gets
    /// release(ec)'s outcome on its associated executor (default: the client's callback thread).
    /// Signature: void(boost::system::error_code).
    template <typename Token>
    auto async_release(Token&& token);

    /// False once released or moved from (or when empty).
    bool is_open() const noexcept { return static_cast<bool>(group_); }
    /// is_open().
    explicit operator bool() const noexcept { return is_open(); }

    /// The lock node's path (shared by the leases of one semaphore acquire).
    std::string node_path() const;
    /// The node's czxid: strictly increasing in grant order on this lock path.
    std::int64_t fencing_token() const;
    /// released once this object owns nothing.
    hold_state state() const;
    /// Whether the hold reads held (not doubtful, lost or released).
    bool is_valid() const { return state() == hold_state::held; }
    /// Requested once the hold ends (lost or released); already requested when this object owns
    /// nothing. Not requested for doubt: watch state() or a hold listener for that.
    std::stop_token stop_token() const noexcept;
    /// A view of this hold that another thread may read (see zkr::hold_view); of nothing when this
    /// object owns nothing.
    hold_view view() const noexcept;
    /// Runs ops atomically only while the hold's node exists on our session; lock_lost if not.
    std::vector<multi_result> guarded_multi(std::vector<multi_op> ops);
    /// As guarded_multi(ops), reporting through ec (lock_not_held when this object owns nothing).
    std::vector<multi_result> guarded_multi(std::vector<multi_op> ops, boost::system::error_code& ec);

    /// @cond INTERNAL
protected:
    struct group;  // what the handles of one acquire share (recipes/queue/hold_access.hpp)
    friend struct detail::hold_access;
    explicit lock_hold(std::shared_ptr<group> g) noexcept : group_(std::move(g)) {}
    const group& checked() const;

    std::shared_ptr<group> group_;
    /// @endcond

private:
    /// Where a handler without an associated executor runs: the client's callback thread (without
    /// a group there is no client: the system executor).
    static boost::asio::any_io_executor callbacks_of(const group* g);
    /// Releases g's share of the hold (its node once it was the last handle of its acquire);
    /// done gets the outcome (lock_not_held without g), possibly inside this call.
    static void release_share(std::shared_ptr<group> g, detail::unique_function<void(const boost::system::error_code&)> done);
};

template <typename Token>
auto lock_hold::async_release(Token&& token) {
    // Taken now, not when the operation is started (use_awaitable starts it when awaited).
    return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
        [g = std::move(group_)](auto handler) mutable {
            // Posted: without a group, or when this handle was not the last, the outcome is known now.
            auto complete = detail::completion_on<true>(std::move(handler), callbacks_of(g.get()));
            release_share(std::move(g), std::move(complete));
        },
        token);
}

}  // namespace zkr
