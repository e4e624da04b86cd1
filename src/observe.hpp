// Hands an event to the client's observer (client_options::observer) on the callback thread:
// never the network thread, one at a time, in the order they were handed over. Callers test
// options.observer first, so that without an observer no event is even made.
#pragma once

#include <zkr/client_options.hpp>
#include <zkr/observer.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include <exception>

namespace zkr::detail {

inline void deliver(observer& o, const operation_event& e) { o.on_operation(e); }
inline void deliver(observer& o, const session_event& e) { o.on_session(e); }
inline void deliver(observer& o, const hold_event& e) { o.on_hold(e); }
inline void deliver(observer& o, const leadership_event& e) { o.on_leadership(e); }

template <typename Event>
void post_to_observer(const client_options& options, const boost::asio::any_io_executor& callbacks, Event event) {
    boost::asio::post(callbacks, [o = options.observer, log = options.logger, e = std::move(event)] {
        try {
            deliver(*o, e);
        } catch (const std::exception& ex) {
            log->error("the client's observer threw: {}", ex.what());
        } catch (...) {
            log->error("the client's observer threw");
        }
    });
}

}  // namespace zkr::detail
