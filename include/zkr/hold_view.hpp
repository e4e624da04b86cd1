// zkr::hold_view: a read-only view of one hold that reads the same from any thread.
#pragma once

#include <zkr/hold_state.hpp>

#include <cstdint>
#include <memory>
#include <stop_token>
#include <string>

namespace zkr {

namespace detail {
class hold;
struct hold_access;
}

/**
 * A read-only view of one hold, to hand to the work done under it: a job thread, a task posted to
 * a pool, a coroutine resumed elsewhere. interprocess_mutex::state(), fencing_token() and
 * stop_token() read the *calling thread's* hold, so a job thread that asks the mutex sees nothing
 * held; a view, taken once by the holder (interprocess_mutex::view(), fair_lock::view(),
 * lock_hold::view()), reads that one hold from any thread.
 *
 * Copyable and cheap; owns no hold: releasing stays with the owner. Once the hold is released the
 * view reads released (releasing while a delete waits for the connection), and its stop token is
 * requested.
 *
 * Loss: state() is doubtful while the connection is suspended (or silent for 2/3 of the session
 * timeout), lost once the session is lost, the client closed, or the node deleted (for a
 * one-holder lock, also written) by someone else; stop_token() is requested once the hold ends.
 * Check is_valid() before each step of the work and pass fencing_token() to the resource.
 */
class hold_view {
public:
    /// Views nothing: reads released, and its stop token is requested.
    hold_view() noexcept = default;

    /// The hold's state now, read from any thread (released for a view of nothing).
    hold_state state() const noexcept;
    /// held: act on the guarded resource only then.
    bool is_valid() const noexcept { return state() == hold_state::held; }
    /// The hold's fencing token (its node's czxid); the same whatever its state. Throws
    /// zkr::error (lock_not_held) on a view of nothing.
    std::int64_t fencing_token() const;
    /// The hold's lock node ("" for a view of nothing).
    std::string node_path() const;
    /// Requested once the hold ends (lost or released), on the client's callback thread.
    std::stop_token stop_token() const noexcept;
    /// Whether this views a hold (not a default-constructed view of nothing).
    explicit operator bool() const noexcept { return static_cast<bool>(hold_); }

private:
    friend struct detail::hold_access;
    explicit hold_view(std::shared_ptr<const detail::hold> h) noexcept : hold_(std::move(h)) {}

    std::shared_ptr<const detail::hold> hold_;
};

}  // namespace zkr
