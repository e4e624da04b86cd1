// What the recipes' public templates (async_acquire, async_release) call: non-template starts on
// types that stay private to the recipes (recipes/queue/lock_core.hpp). Users never name these.
#pragma once

#include <zkr/detail/asio.hpp>
#include <zkr/detail/unique_function.hpp>
#include <zkr/lock_hold.hpp>
#include <zkr/multi_lock_hold.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace zkr::detail {

class hold;
class lock_core;
class lock_driver;

/// What an async acquire needs, taken when it is called: it may start later (use_awaitable starts
/// it when awaited), when its recipe object may be gone. Its completion refers to none of it.
struct acquire_start {
    std::shared_ptr<lock_driver> driver;
    /// Attaches the recipe's hold listeners to the granted hold (they do not keep the recipe alive).
    std::function<void(const std::shared_ptr<hold>&)> attach;
    std::string data;
    /// The node's name before the protect prefix and sequence; empty: the rule's.
    std::string node_name;
    std::optional<std::chrono::milliseconds> timeout;
    /// Where handlers without an associated executor run: the client's callback thread.
    boost::asio::any_io_executor callbacks;
};

acquire_start prepare_acquire(const lock_core& core, std::optional<std::chrono::milliseconds> timeout);
/// done gets (error_code, lock_hold) once, on the network thread or (a closed or unstarted client)
/// inside this call, so it must post; an empty lock_hold without error when the timeout passed.
void start_hold_acquire(acquire_start start, unique_function<void(const boost::system::error_code&, lock_hold)> done);

/// The lock's driver and callback executor, for an async release.
std::shared_ptr<lock_driver> driver_of(const lock_core& core);
boost::asio::any_io_executor callbacks_of(const lock_core& core);
/// Releases h at once; done gets the delete's outcome. Without h there is nothing to send: done
/// gets ec (clear for a nested level, or why there was nothing) inside this call, so it must post.
void start_release(lock_driver& driver, std::shared_ptr<hold> h, boost::system::error_code ec,
                   unique_function<void(const boost::system::error_code&)> done);

/// A multi-lock's async acquire, taken when it is called (recipes/locks/interprocess_multi_lock.cpp):
/// its members in path order, each ended with `cancelled` if its lock object is destroyed meanwhile.
struct multi_acquire;
std::shared_ptr<multi_acquire> prepare_multi_acquire(const std::vector<lock_core*>& members, std::optional<std::chrono::milliseconds> timeout);
boost::asio::any_io_executor callbacks_of(const multi_acquire& a);
/// Acquires the members one at a time under one deadline (from this call). done gets (error_code,
/// multi_lock_hold) once, on the network thread or inside this call, so it must post; an empty
/// hold without error when the timeout passed. On any failure the members taken are released.
void start_multi_acquire(std::shared_ptr<multi_acquire> a, unique_function<void(const boost::system::error_code&, multi_lock_hold)> done);

/// Throws zkr::error (invalid_argument) for a negative timeout; 0 tries once.
std::optional<std::chrono::milliseconds> checked_timeout(std::chrono::milliseconds t);

/// The async acquire of a one-holder lock: completes with (error_code, lock_hold) on the handler's
/// associated executor (default: the client's callback thread).
template <typename Token>
auto async_acquire_hold(const lock_core& core, std::optional<std::chrono::milliseconds> timeout, Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, lock_hold)>(
        [start = prepare_acquire(core, timeout)](auto handler) mutable {
            // Posted: a closed or unstarted client answers inside this call.
            auto complete = completion_on<true>(std::move(handler), start.callbacks);
            start_hold_acquire(std::move(start), std::move(complete));
        },
        token);
}

/// The async release of every recipe: take(ec) runs at initiation and hands over the hold to
/// release (null when there is nothing to send: ec says why, or is clear for a nested level); the
/// delete starts at once and the handler gets its outcome on its associated executor (default:
/// the client's callback thread).
template <typename Take, typename Token>
auto async_release_hold(const lock_core& core, Take take, Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
        [driver = driver_of(core), callbacks = callbacks_of(core), take = std::move(take)](auto handler) mutable {
            boost::system::error_code ec;
            std::shared_ptr<hold> h = take(ec);
            // Posted: without a hold, or with a closed client, the outcome is known inside this call.
            start_release(*driver, std::move(h), ec, completion_on<true>(std::move(handler), callbacks));
        },
        token);
}

}  // namespace zkr::detail
