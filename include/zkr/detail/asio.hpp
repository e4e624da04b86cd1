// The one place zkr includes Boost.Asio, so the toolchain workarounds live in one spot.
#pragma once

// Boost 1.74's awaitable.hpp uses std::exchange without including <utility> (GCC 12, C++20).
#include <utility>

// Clang 14 with libstdc++: Asio 1.74 does not detect C++20 coroutines by itself.
#if defined(__clang__) && !defined(BOOST_ASIO_HAS_CO_AWAIT) && defined(__cpp_impl_coroutine)
#define BOOST_ASIO_HAS_CO_AWAIT 1
#endif

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/system/error_code.hpp>

namespace zkr::detail {

/// The end of every async operation of zkr: keeps the handler's associated executor (default:
/// `fallback`) busy until the outcome is in, then runs the handler there with the outcome, once.
/// Post: the handler is always queued. Otherwise dispatched: a handler bound to the network thread
/// runs inline there (the lock engine relies on that: a reply drives the next request without a
/// hop), and any other executor, not running on the completing thread, queues it. Dispatch only for
/// operations that never complete inside their initiating function.
template <bool Post, typename Handler>
auto completion_on(Handler handler, const boost::asio::any_io_executor& fallback) {
    auto ex = boost::asio::get_associated_executor(handler, fallback);
    return [h = std::move(handler), work = boost::asio::make_work_guard(ex)](auto&&... outcome) mutable {
        auto run = [h = std::move(h), ... o = std::forward<decltype(outcome)>(outcome)]() mutable { std::move(h)(std::move(o)...); };
        if constexpr (Post) boost::asio::post(work.get_executor(), std::move(run));
        else boost::asio::dispatch(work.get_executor(), std::move(run));
        work.reset();
    };
}

}  // namespace zkr::detail
