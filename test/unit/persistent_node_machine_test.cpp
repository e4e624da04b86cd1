// The persistent node's machine (recipes/nodes/persistent_node_machine.hpp), event by event,
// without a server.
#include "../../recipes/nodes/persistent_node_machine.hpp"
#include "zk_actions.hpp"

#include <zkr/error.hpp>

#include "zkr_catch.hpp"

namespace {

using namespace zkr::detail;
using zkr::create_mode;
using zkr::errc;
using zkr::test::absent_reply;
using zkr::test::failed_reply;

using actions = std::vector<persistent_node_machine::action>;

template <typename T>
const T* find(const actions& all) {
    return zkr::test::find_action<T>(all);
}

zk::reply ok(zk::ticket id, std::string path = {}, std::int64_t owner = 0) {
    zk::reply r;
    r.id = id;
    r.path = std::move(path);
    zkr::stat st;
    st.ephemeral_owner = owner;
    r.stat = st;
    return r;
}

persistent_node_machine make(create_mode mode, bool protect = false) {
    return persistent_node_machine({.path = "/g/m", .mode = mode, .protect = protect}, "d0");
}

// A machine whose node exists as /g/m (session 7), its exists watch set; returns that watch's ticket.
zk::ticket made(persistent_node_machine& m) {
    auto a = m.resume(node_in::start{7});
    const auto* c = find<zk::create>(a);
    REQUIRE(c);
    a = m.resume(ok(c->id, "/g/m", 7));
    const auto* watch = find<zk::exists>(a);
    REQUIRE(watch);
    return watch->id;
}

}  // namespace

TEST_CASE("persistent node machine: creates with its mode, data and parents, says the path, then watches it") {
    auto m = persistent_node_machine({.path = "/g/m-", .mode = create_mode::ephemeral_sequential, .protect = true}, "hello");
    auto a = m.resume(node_in::start{7});
    const auto* c = find<zk::create>(a);
    REQUIRE(c);
    CHECK(c->path == "/g/m-");
    CHECK(c->data == "hello");
    CHECK(c->mode == create_mode::ephemeral_sequential);
    CHECK(c->protect);
    CHECK(c->parents);
    a = m.resume(ok(c->id, "/g/_c_x-m-0000000003", 7));
    REQUIRE(find<node_out::path_changed>(a));
    CHECK(find<node_out::path_changed>(a)->path == "/g/_c_x-m-0000000003");
    CHECK(find<node_out::first_created>(a));
    REQUIRE(find<zk::exists>(a));
    CHECK(find<zk::exists>(a)->watch);
    CHECK(find<zk::exists>(a)->path == "/g/_c_x-m-0000000003");
    CHECK(m.current_path() == "/g/_c_x-m-0000000003");
}

TEST_CASE("persistent node machine: deleted by anyone, it is made again, under a new name if sequential") {
    auto m = persistent_node_machine({.path = "/g/m-", .mode = create_mode::ephemeral_sequential}, "d");
    auto a = m.resume(node_in::start{7});
    a = m.resume(ok(find<zk::create>(a)->id, "/g/m-0000000001", 7));
    const auto watch = find<zk::exists>(a)->id;
    a = m.resume(zk::watch_fired{watch, zkr::watch_event_type::node_deleted});
    REQUIRE(find<node_out::path_changed>(a));
    CHECK(find<node_out::path_changed>(a)->path.empty());
    REQUIRE(find<zk::create>(a));
    a = m.resume(ok(find<zk::create>(a)->id, "/g/m-0000000002", 7));
    CHECK(find<node_out::path_changed>(a)->path == "/g/m-0000000002");
    CHECK_FALSE(find<node_out::first_created>(a));  // (once)
}

TEST_CASE("persistent node machine: an ephemeral node is made again on the session after an expiry") {
    auto m = make(create_mode::ephemeral);
    const auto watch = made(m);
    auto a = m.resume(zk::connection_changed{zkr::connection_state::lost, 0});
    CHECK(find<node_out::path_changed>(a));
    CHECK(m.current_path().empty());
    a = m.resume(zk::watch_fired{watch, zkr::watch_event_type::not_watching});
    CHECK(a.empty());
    a = m.resume(zk::connection_changed{zkr::connection_state::connected, 8});
    REQUIRE(find<zk::create>(a));
}

TEST_CASE("persistent node machine: a reconnection reads the node again, and a missing one is made again") {
    auto m = make(create_mode::persistent);
    made(m);
    m.resume(zk::connection_changed{zkr::connection_state::suspended, 7});
    auto a = m.resume(zk::connection_changed{zkr::connection_state::reconnected, 7});
    const auto* check = find<zk::exists>(a);
    REQUIRE(check);
    a = m.resume(absent_reply(check->id));
    REQUIRE(find<zk::create>(a));
    CHECK(m.current_path().empty());
}

TEST_CASE("persistent node machine: node_exists adopts our session's node and writes its data, and waits out another session's") {
    SECTION("ours: a create retried after its reply was lost") {
        auto m = make(create_mode::ephemeral);
        auto a = m.resume(node_in::start{7});
        a = m.resume(failed_reply(find<zk::create>(a)->id, errc::node_exists));
        const auto* check = find<zk::exists>(a);
        REQUIRE(check);
        CHECK(check->path == "/g/m");
        a = m.resume(ok(check->id, {}, 7));
        CHECK(m.current_path() == "/g/m");
        REQUIRE(find<zk::set_data>(a));
        CHECK(find<zk::set_data>(a)->data == "d0");
    }
    SECTION("another session's: not taken over; made once it goes") {
        auto m = make(create_mode::ephemeral);
        auto a = m.resume(node_in::start{7});
        a = m.resume(failed_reply(find<zk::create>(a)->id, errc::node_exists));
        const auto check = find<zk::exists>(a)->id;
        a = m.resume(ok(check, {}, 99));
        REQUIRE(find<node_out::taken>(a));  // (the class logs it)
        CHECK(find<node_out::taken>(a)->owner == 99);
        CHECK_FALSE(find<zk::create>(a));
        CHECK_FALSE(find<zk::set_data>(a));
        CHECK(m.current_path().empty());
        a = m.resume(zk::watch_fired{check, zkr::watch_event_type::node_deleted});
        REQUIRE(find<zk::create>(a));
    }
}

TEST_CASE("persistent node machine: a node an earlier session of this client left is waited out, by a running node and by a close") {
    // The client gave session 7 up as lost (a server restarted past the session timeout) while the
    // server kept it, with the node: the new session meets it. ZooKeeper cannot delete it only if
    // session 7 still owns it, so it is waited out: the server ends session 7 within its timeout.
    auto m = make(create_mode::ephemeral);
    made(m);
    m.resume(zk::connection_changed{zkr::connection_state::lost, 7});
    auto a = m.resume(zk::connection_changed{zkr::connection_state::connected, 8});
    a = m.resume(failed_reply(find<zk::create>(a)->id, errc::node_exists));
    const auto check = find<zk::exists>(a)->id;
    a = m.resume(ok(check, {}, 7));
    REQUIRE(find<node_out::taken>(a));
    CHECK(find<node_out::taken>(a)->earlier_session);
    CHECK_FALSE(find<zk::remove>(a));
    CHECK(m.current_path().empty());
    SECTION("running: made once it goes") {
        a = m.resume(zk::watch_fired{check, zkr::watch_event_type::node_deleted});
        REQUIRE(find<zk::create>(a));
    }
    SECTION("closing: the close ends only once it goes, deleting nothing") {
        a = m.resume(node_in::close{});
        CHECK_FALSE(find<zk::remove>(a));
        CHECK_FALSE(find<node_out::closed>(a));
        REQUIRE(find<zk::exists>(a));  // the plain path, read: it may be ours
        const auto read = find<zk::exists>(a)->id;
        a = m.resume(ok(read, {}, 7));
        CHECK(a.empty());  // waited out
        a = m.resume(zk::watch_fired{read, zkr::watch_event_type::node_deleted});
        const auto* again = find<zk::exists>(a);
        REQUIRE(again);
        a = m.resume(absent_reply(again->id));
        CHECK(find<node_out::closed>(a));
    }
    SECTION("another process's is not this client's") {
        auto n = make(create_mode::ephemeral);
        a = n.resume(node_in::start{8});
        a = n.resume(failed_reply(find<zk::create>(a)->id, errc::node_exists));
        a = n.resume(ok(find<zk::exists>(a)->id, {}, 7));
        REQUIRE(find<node_out::taken>(a));
        CHECK_FALSE(find<node_out::taken>(a)->earlier_session);
    }
}

TEST_CASE("persistent node machine: while closing, a read of an earlier incarnation's path is not taken for the read of the node to delete") {
    // A protected node's read of its first name is still under way (the session ended, the client
    // retries it) when a close meets the new incarnation's create, whose delete then fails.
    auto m = make(create_mode::ephemeral, /*protect=*/true);
    auto a = m.resume(node_in::start{7});
    a = m.resume(ok(find<zk::create>(a)->id, "/g/_c_a-m", 7));
    const auto old_read = find<zk::exists>(a)->id;  // of /g/_c_a-m
    m.resume(zk::connection_changed{zkr::connection_state::lost, 7});
    a = m.resume(zk::connection_changed{zkr::connection_state::connected, 8});
    const auto create = find<zk::create>(a)->id;
    CHECK(m.resume(node_in::close{}).empty());  // the create's reply says what to delete
    a = m.resume(ok(create, "/g/_c_b-m", 8));
    REQUIRE(find<zk::remove>(a));
    CHECK(find<zk::remove>(a)->path == "/g/_c_b-m");
    CHECK(find<zk::remove>(a)->once);
    CHECK(find<zk::remove>(a)->session == 8);
    a = m.resume(failed_reply(find<zk::remove>(a)->id, errc::connection_loss));
    CHECK_FALSE(find<zk::exists>(a));  // the old read is still under way
    a = m.resume(absent_reply(old_read));  // the first name is gone: says nothing of the second
    CHECK_FALSE(find<node_out::closed>(a));
    REQUIRE(find<zk::exists>(a));
    CHECK(find<zk::exists>(a)->path == "/g/_c_b-m");
    a = m.resume(ok(find<zk::exists>(a)->id, {}, 8));
    REQUIRE(find<zk::remove>(a));
    a = m.resume(ok(find<zk::remove>(a)->id));
    CHECK(find<node_out::closed>(a));
}

TEST_CASE("persistent node machine: set_data writes the node now and its next incarnation, and a write of older data is followed by the newest") {
    auto m = make(create_mode::persistent);
    made(m);
    auto a = m.resume(node_in::set_data{"d1"});
    const auto* w = find<zk::set_data>(a);
    REQUIRE(w);
    CHECK(w->data == "d1");
    CHECK(w->path == "/g/m");
    const auto first = w->id;
    a = m.resume(node_in::set_data{"d2"});
    CHECK_FALSE(find<zk::set_data>(a));  // one write at a time
    a = m.resume(ok(first));
    REQUIRE(find<zk::set_data>(a));
    CHECK(find<zk::set_data>(a)->data == "d2");
    // Deleted: the next create carries the newest data.
    auto n = make(create_mode::persistent);
    auto b = n.resume(node_in::start{7});
    const auto create = find<zk::create>(b)->id;
    n.resume(node_in::set_data{"d9"});  // while the create of d0 is in flight
    b = n.resume(ok(create, "/g/m"));
    REQUIRE(find<zk::set_data>(b));
    CHECK(find<zk::set_data>(b)->data == "d9");
}

TEST_CASE("persistent node machine: close deletes the node, and a create in flight is deleted when it lands") {
    SECTION("made") {
        auto m = make(create_mode::persistent);
        made(m);
        auto a = m.resume(node_in::close{});
        const auto* r = find<zk::remove>(a);
        REQUIRE(r);
        CHECK(r->path == "/g/m");
        a = m.resume(failed_reply(r->id, errc::connection_loss));
        CHECK_FALSE(find<node_out::closed>(a));
        // Whether it took is unknown: read before deleting again (a node made there meanwhile
        // must not be deleted in its place).
        a = m.resume(zk::connection_changed{zkr::connection_state::reconnected, 7});
        CHECK_FALSE(find<zk::remove>(a));
        REQUIRE(find<zk::exists>(a));
        auto there = ok(find<zk::exists>(a)->id);
        there.stat->version = 4;
        a = m.resume(there);
        REQUIRE(find<zk::remove>(a));
        CHECK(find<zk::remove>(a)->version == 4);
        a = m.resume(ok(find<zk::remove>(a)->id));
        CHECK(find<node_out::closed>(a));
        CHECK(m.closed());
        CHECK(m.resume(zk::connection_changed{zkr::connection_state::reconnected, 7}).empty());  // nothing more
    }
    SECTION("in flight") {
        auto m = make(create_mode::persistent);
        auto a = m.resume(node_in::start{7});
        const auto create = find<zk::create>(a)->id;
        CHECK(m.resume(node_in::close{}).empty());
        a = m.resume(ok(create, "/g/m"));
        REQUIRE(find<zk::remove>(a));
        CHECK(find<zk::remove>(a)->path == "/g/m");
        CHECK_FALSE(find<zk::exists>(a));
    }
    SECTION("ephemeral, the session gone meanwhile: read again on the next session, waited out if the server kept it") {
        for (const bool kept : {false, true}) {
            auto m = make(create_mode::ephemeral);
            made(m);
            auto a = m.resume(node_in::close{});
            a = m.resume(failed_reply(find<zk::remove>(a)->id, errc::session_expired));
            CHECK_FALSE(find<node_out::closed>(a));
            REQUIRE(find<zk::exists>(a));  // (the client sends it on the next session)
            CHECK(find<zk::exists>(a)->path == "/g/m");
            const auto read = find<zk::exists>(a)->id;
            CHECK(m.resume(zk::connection_changed{zkr::connection_state::lost, 7}).empty());
            CHECK(m.resume(zk::connection_changed{zkr::connection_state::connected, 8}).empty());
            if (!kept) {
                a = m.resume(absent_reply(read));  // gone with its session
                CHECK(find<node_out::closed>(a));
                continue;
            }
            // The client gave session 7 up; the server kept it: waited out, never deleted.
            a = m.resume(ok(read, {}, 7));
            CHECK_FALSE(find<zk::remove>(a));
            CHECK_FALSE(find<node_out::closed>(a));
            a = m.resume(zk::watch_fired{read, zkr::watch_event_type::node_deleted});
            a = m.resume(absent_reply(find<zk::exists>(a)->id));
            CHECK(find<node_out::closed>(a));
        }
    }
    SECTION("a create retried after its reply was lost meets node_exists: the node is read, and deleted if ours") {
        auto m = make(create_mode::ephemeral);
        auto a = m.resume(node_in::start{7});
        const auto create = find<zk::create>(a)->id;
        CHECK(m.resume(node_in::close{}).empty());
        a = m.resume(failed_reply(create, errc::node_exists));
        const auto* read = find<zk::exists>(a);
        REQUIRE(read);
        a = m.resume(ok(read->id, {}, 7));
        REQUIRE(find<zk::remove>(a));
        CHECK(find<node_out::closed>(m.resume(ok(find<zk::remove>(a)->id))));
        // Another session's is left alone.
        auto n = make(create_mode::ephemeral);
        a = n.resume(node_in::start{7});
        const auto other = find<zk::create>(a)->id;
        n.resume(node_in::close{});
        a = n.resume(failed_reply(other, errc::connection_loss));
        a = n.resume(ok(find<zk::exists>(a)->id, {}, 99));
        CHECK_FALSE(find<zk::remove>(a));
        CHECK(find<node_out::closed>(a));
    }
    SECTION("never started") {
        auto m = make(create_mode::persistent);
        CHECK(find<node_out::closed>(m.resume(node_in::close{})));
        CHECK(m.resume(node_in::start{7}).empty());
    }
}

TEST_CASE("persistent node machine: a final create error gives up, and others are tried again") {
    for (const auto e : {errc::no_auth, errc::no_node, errc::unimplemented, errc::invalid_acl}) {
        auto m = make(create_mode::persistent_with_ttl);
        auto a = m.resume(node_in::start{7});
        a = m.resume(failed_reply(find<zk::create>(a)->id, e));
        REQUIRE(find<node_out::gave_up>(a));
        CHECK(find<node_out::gave_up>(a)->ec == e);
        CHECK(m.resume(zk::connection_changed{zkr::connection_state::reconnected, 7}).empty());
    }
    auto m = make(create_mode::persistent);
    auto a = m.resume(node_in::start{7});
    a = m.resume(failed_reply(find<zk::create>(a)->id, errc::system_error));
    const auto* t = find<zk::after>(a);
    REQUIRE(t);
    a = m.resume(zk::timer_due{t->id});
    CHECK(find<zk::create>(a));
    // A connection failure heard while connected (the state came first) is tried again after a pause.
    a = m.resume(failed_reply(find<zk::create>(a)->id, errc::connection_loss));
    CHECK(find<zk::after>(a));
    // Heard while disconnected: the reconnection carries on.
    m.resume(zk::connection_changed{zkr::connection_state::suspended, 7});
    auto n = make(create_mode::persistent);
    auto b = n.resume(node_in::start{7});
    n.resume(zk::connection_changed{zkr::connection_state::suspended, 7});
    b = n.resume(failed_reply(find<zk::create>(b)->id, errc::connection_loss));
    CHECK(b.empty());
    b = n.resume(zk::connection_changed{zkr::connection_state::reconnected, 7});
    CHECK(find<zk::create>(b));
}

TEST_CASE("persistent node machine: a read-only connection does nothing, and the next read-write one carries on") {
    auto m = make(create_mode::persistent);
    made(m);
    m.resume(zk::connection_changed{zkr::connection_state::suspended, 7});
    CHECK(m.resume(zk::connection_changed{zkr::connection_state::read_only, 7}).empty());
    CHECK(find<zk::exists>(m.resume(zk::connection_changed{zkr::connection_state::reconnected, 7})));
}

TEST_CASE("persistent node machine: a TTL node is touched every half TTL while it exists, and not once it is gone") {
    auto m = persistent_node_machine({.path = "/g/t", .mode = create_mode::persistent_with_ttl, .ttl = std::chrono::milliseconds(4000)}, "d");
    auto a = m.resume(node_in::start{7});
    CHECK(find<zk::create>(a)->ttl == std::chrono::milliseconds(4000));
    a = m.resume(ok(find<zk::create>(a)->id, "/g/t"));
    const auto* touch = find<zk::after>(a);
    REQUIRE(touch);
    CHECK(touch->delay == std::chrono::milliseconds(2000));
    CHECK(m.touch_timer() == touch->id);
    const auto watch = find<zk::exists>(a)->id;
    a = m.resume(zk::timer_due{touch->id});
    REQUIRE(find<zk::set_data>(a));  // the touch: the data again
    CHECK(find<zk::set_data>(a)->data == "d");
    REQUIRE(find<zk::after>(a));  // and the next
    const auto next = find<zk::after>(a)->id;
    a = m.resume(zk::watch_fired{watch, zkr::watch_event_type::node_deleted});  // the server removed it
    CHECK(find<zk::create>(a));
    a = m.resume(zk::timer_due{next});
    CHECK_FALSE(find<zk::set_data>(a));  // nothing to touch while it is missing
    CHECK_FALSE(find<zk::after>(a));
    CHECK(m.touch_timer() == 0);
    // A plain node has no touch.
    auto p = make(create_mode::persistent);
    auto b = p.resume(node_in::start{7});
    b = p.resume(ok(find<zk::create>(b)->id, "/g/m"));
    CHECK_FALSE(find<zk::after>(b));
}

TEST_CASE("persistent node machine: a closed client ends it: an ephemeral node is gone with the session, a close finishes at once") {
    auto m = make(create_mode::ephemeral);
    made(m);
    auto a = m.resume(zk::connection_changed{zkr::connection_state::closed, 0});
    REQUIRE(find<node_out::path_changed>(a));
    CHECK(m.current_path().empty());
    CHECK(m.resume(zk::connection_changed{zkr::connection_state::reconnected, 8}).empty());  // nothing more
    a = m.resume(node_in::close{});
    REQUIRE(find<node_out::closed>(a));
    CHECK_FALSE(find<node_out::closed>(a)->ec);
    // Closing when the client closes: a persistent node stays, and the close says so.
    auto p = make(create_mode::persistent);
    made(p);
    auto b = p.resume(node_in::close{});
    REQUIRE(find<zk::remove>(b));
    b = p.resume(zk::connection_changed{zkr::connection_state::closed, 0});
    REQUIRE(find<node_out::closed>(b));
    CHECK(find<node_out::closed>(b)->ec == errc::closed);
}
