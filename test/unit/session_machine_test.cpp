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

TEST_CASE("a handshake the server does not answer in time drops that connection, once") {
    session_machine m;
    CHECK_FALSE(m.on_handle(handle_event::connecting).start_handshake_timer);  // no socket yet
    auto a = m.on_handle(handle_event::associating);
    CHECK(a.start_handshake_timer);
    CHECK_FALSE(a.notify);
    a = m.on_handshake_timeout();
    CHECK(a.drop_connection);
    CHECK_FALSE(a.notify);  // a drop before the first connection reports nothing
    CHECK_FALSE(m.on_handshake_timeout().drop_connection);
    // The C client moves on: the next server's handshake gets a timer of its own.
    CHECK_FALSE(m.on_handle(handle_event::connecting).cancel_handshake_timer);
    CHECK(m.on_handle(handle_event::associating).start_handshake_timer);
    a = m.on_handle(handle_event::connected);
    CHECK(a.cancel_handshake_timer);
    CHECK(a.notify == connection_state::connected);
    CHECK_FALSE(m.on_handshake_timeout().drop_connection);  // a stale timer drops nothing
}

TEST_CASE("a handshake after a connection loss suspends and is timed") {
    session_machine m;
    m.on_handle(handle_event::connected);
    auto a = m.on_handle(handle_event::associating);  // dropped and already at the next handshake
    CHECK(a.notify == connection_state::suspended);
    CHECK(a.start_suspend_timer);
    CHECK(a.start_handshake_timer);
    a = m.on_handle(handle_event::connecting);  // the server closed it
    CHECK(a.cancel_handshake_timer);
    CHECK_FALSE(a.notify);
    CHECK_FALSE(m.on_handshake_timeout().drop_connection);
    m.on_handle(handle_event::associating);
    a = m.on_handle(handle_event::expired);
    CHECK(a.cancel_handshake_timer);
    CHECK(a.notify == connection_state::lost);
    m.on_handle(handle_event::associating);
    m.on_close();
    CHECK_FALSE(m.on_handshake_timeout().drop_connection);
}
