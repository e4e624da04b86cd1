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
