// zkr::cancellation_link: cancels an Asio object when a hold ends.
#pragma once

#include <boost/asio/any_io_executor.hpp>

#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>

namespace zkr {

/**
 * Ties an Asio operation, and so a coroutine awaiting it, to a hold: once `token`'s stop is
 * requested (a hold's stop_token(): the hold was lost or released), `cancel` runs on `ex`.
 *
 * Boost 1.74's Asio has no per-operation cancellation slots, so cancellation is the object's own
 * cancel(): give the timer's or socket's cancel as `cancel`, and the operation it has pending
 * completes with operation_aborted (a coroutine awaiting it with use_awaitable gets an exception).
 * Asio objects are not thread-safe, so `cancel` is posted to the object's executor (give a strand
 * when the io_context has several threads) instead of running where the stop is requested.
 *
 * Destroying the link detaches it: a cancel not yet run is dropped, so the link may be destroyed
 * with the object it cancels (declare it after that object). Thread-safe.
 */
class cancellation_link {
public:
    /// Posts `cancel` to `ex` once `token`'s stop is requested (at once if it already was).
    cancellation_link(std::stop_token token, boost::asio::any_io_executor ex, std::function<void()> cancel);
    ~cancellation_link();
    cancellation_link(const cancellation_link&) = delete;
    cancellation_link& operator=(const cancellation_link&) = delete;

private:
    struct target;
    struct poster {
        std::shared_ptr<target> t;
        void operator()() const noexcept;
    };
    std::shared_ptr<target> target_;
    std::stop_callback<poster> callback_;
};

}  // namespace zkr
