#include "session_machine.hpp"

#include "zkr_catch.hpp"

using zkr::connection_state;
using zkr::detail::handle_event;
using zkr::detail::session_machine;

TEST_CASE("first connection is reported once as connected") {
    session_machine m;
    CHECK_FALSE(m.on_handle(handle_event::connecting).notify);
    auto a = m.on_handle(handle_event::connected);
    CHECK(a.notify == connection_state::connected);
    CHECK_FALSE(m.on_handle(handle_event::connected).notify);
}

TEST_CASE("connection loss suspends, return within the timeout reconnects") {
    session_machine m;
    m.on_handle(handle_event::connected);
    auto a = m.on_handle(handle_event::connecting);
    CHECK(a.notify == connection_state::suspended);
    CHECK(a.start_suspend_timer);
    CHECK(a.abandon_requests);
    CHECK_FALSE(m.on_handle(handle_event::connecting).notify);  // further attempts say nothing
    a = m.on_handle(handle_event::connected);
    CHECK(a.notify == connection_state::reconnected);
    CHECK(a.cancel_suspend_timer);
}

TEST_CASE("suspended past the session timeout is lost, then a new session reconnects") {
    session_machine m;
    m.on_handle(handle_event::connected);
    m.on_handle(handle_event::connecting);
    auto a = m.on_suspend_timeout();
    CHECK(a.notify == connection_state::lost);
    CHECK(a.new_session);
    CHECK(m.on_handle(handle_event::connected).notify == connection_state::reconnected);
    CHECK_FALSE(m.on_suspend_timeout().notify);  // a stale timer does nothing
}

TEST_CASE("expiry is lost once, and asks for a new session") {
    session_machine m;
    m.on_handle(handle_event::connected);
    m.on_handle(handle_event::connecting);
    auto a = m.on_handle(handle_event::expired);
    CHECK(a.notify == connection_state::lost);
    CHECK(a.new_session);
    CHECK(a.cancel_suspend_timer);
    a = m.on_handle(handle_event::expired);
    CHECK_FALSE(a.notify);
}

TEST_CASE("read-only servers") {
    session_machine m;
    CHECK(m.on_handle(handle_event::connected_read_only).notify == connection_state::read_only);
    CHECK(m.on_handle(handle_event::connected).notify == connection_state::reconnected);
}

TEST_CASE("nothing after close") {
    session_machine m;
    m.on_handle(handle_event::connected);
    m.on_close();
    CHECK_FALSE(m.on_handle(handle_event::connecting).notify);
    CHECK_FALSE(m.on_handle(handle_event::expired).new_session);
    CHECK(m.state() == connection_state::closed);
}
