// zkr::multi_lock_hold: every member of a multi-lock, held together and owned by whoever has the
// object (what interprocess_multi_lock::async_acquire gives).
#pragma once

#include <zkr/detail/asio.hpp>
#include <zkr/detail/unique_function.hpp>
#include <zkr/hold_state.hpp>
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
class multi_hold;
struct multi_acquire;
}  // namespace detail

/**
 * Every member of one interprocess_multi_lock acquire, owned by this object rather than by a
 * thread, so that a coroutine that resumes on another thread still owns them. Move-only; an empty
 * multi_lock_hold (default-constructed, released or moved from) owns nothing.
 *
 * Release: release() and async_release() send every member's delete at once and report the first
 * failure in path order (lock_lost when a member's hold had already ended, connection_loss when a
 * delete waits for the connection, lock_not_held when this object owns nothing). The destructor
 * and a move-assignment release without waiting and never throw (the outcome is logged). Any
 * thread may release, once. A multi_lock_hold must not outlive its client; it may outlive the
 * multi-lock and its member objects.
 *
 * Loss: as each member's (see lock_hold). state() is the worst of the members' (lost once one is
 * lost, doubtful while one is doubtful); stop_token() is requested as soon as one member's hold
 * ends (lost or released), on the client's callback thread.
 */
class multi_lock_hold {
public:
    /// Owns nothing.
    multi_lock_hold() noexcept = default;
    /// Takes over other's members; other then owns nothing.
    multi_lock_hold(multi_lock_hold&& other) noexcept = default;
    /// Releases the members owned so far (as the destructor does), then takes other's.
    multi_lock_hold& operator=(multi_lock_hold&& other) noexcept;
    multi_lock_hold(const multi_lock_hold&) = delete;
    multi_lock_hold& operator=(const multi_lock_hold&) = delete;
    /// Releases every member without waiting; never throws.
    ~multi_lock_hold();

    /// Releases every member and waits for the deletes' outcomes (connection_loss at once for a
    /// delete that waits for the connection: that node is deleted once it returns). Errors as
    /// above. The object owns nothing afterwards, whatever the outcome. Not on the client's
    /// network thread (a completion without an executor of its own): use async_release there.
    void release(boost::system::error_code& ec) noexcept;
    /// As release(ec), throwing zkr::error on any of those errors.
    void release();
    /// Releases without waiting: the object owns nothing when this returns. The handler gets
    /// release(ec)'s outcome on its associated executor (default: the client's callback thread).
    /// Signature: void(boost::system::error_code).
    template <typename Token>
    auto async_release(Token&& token);

    /// False once released or moved from (or when empty).
    bool is_open() const noexcept { return static_cast<bool>(held_); }
    /// is_open().
    explicit operator bool() const noexcept { return is_open(); }
    /// The worst of the members' states; released once this object owns nothing.
    hold_state state() const;
    /// Whether every member's hold reads held.
    bool is_valid() const { return state() == hold_state::held; }
    /// Requested once a member's hold ends (lost or released); already requested when this object
    /// owns nothing.
    std::stop_token stop_token() const noexcept;
    /// The members' fencing tokens, in path order. Throws lock_not_held when this object owns nothing.
    std::vector<std::int64_t> fencing_tokens() const;
    /// The members' nodes, in path order. Throws lock_not_held when this object owns nothing.
    std::vector<std::string> node_paths() const;
    /// Runs ops as one transaction that commits only while every member's node still exists on its
    /// session (interprocess_multi_lock::guarded_multi). Throws zkr::error: lock_not_held,
    /// lock_lost, invalid_argument (members on more than one client), or the failure of an op.
    std::vector<multi_result> guarded_multi(std::vector<multi_op> ops);
    /// As guarded_multi(ops), reporting through ec.
    std::vector<multi_result> guarded_multi(std::vector<multi_op> ops, boost::system::error_code& ec);

private:
    friend struct detail::multi_acquire;
    explicit multi_lock_hold(std::shared_ptr<detail::multi_hold> held) noexcept : held_(std::move(held)) {}
    /// The client's callback thread (without members: the system executor).
    static boost::asio::any_io_executor callbacks_of(const detail::multi_hold* held);
    /// Releases every member of held; done gets the first failure (lock_not_held without held),
    /// possibly inside this call.
    static void release_all(std::shared_ptr<detail::multi_hold> held,
                            detail::unique_function<void(const boost::system::error_code&)> done);

    std::shared_ptr<detail::multi_hold> held_;
};

template <typename Token>
auto multi_lock_hold::async_release(Token&& token) {
    // Taken now, not when the operation is started (use_awaitable starts it when awaited).
    return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
        [held = std::move(held_)](auto handler) mutable {
            // Posted: without members the outcome is known now.
            auto complete = detail::completion_on<true>(std::move(handler), callbacks_of(held.get()));
            release_all(std::move(held), std::move(complete));
        },
        token);
}

}  // namespace zkr
