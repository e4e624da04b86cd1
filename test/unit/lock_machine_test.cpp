// The lock state machine, event by event, without a server.
#include "machine_script.hpp"

#include "zkr_catch.hpp"

namespace {

using namespace zkr;
using namespace zkr::detail;

using zkr::test::count_actions;
using zkr::test::find_action;

const lowest_n_rule one{1};
constexpr std::int64_t session = 77;

std::string node(int seq) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "_c_%d-lock-%010d", seq, seq);
    return buf;
}

std::vector<std::string> nodes(const std::vector<int>& seqs) {
    std::vector<std::string> out;
    for (int q : seqs) out.push_back(node(q));
    return out;
}

// A machine whose node is `ours` in a queue of `queue` (sequence numbers), after its listing.
struct queued : zkr::test::queued_machine {
    queued(int ours, const std::vector<int>& queue) : queued_machine(one, node(ours), nodes(queue), 1000 + ours, session) {}
};

}  // namespace

TEST_CASE("lock machine: a free lock is granted on the first listing, with the node's czxid as token") {
    queued q(3, {3});
    const auto* g = find_action<lock_out::granted>(q.last);
    REQUIRE(g);
    CHECK(g->path == "/l/" + node(3));
    CHECK(g->token == 1003);
    CHECK(g->session == session);
    CHECK(q.m.state() == hold_state::held);
    CHECK(find_action<lock_out::own_watch_later>(q.last));  // the own-node watch waits: short holds cost nothing
}

TEST_CASE("lock machine: a waiter watches only its predecessor, and its deletion grants with no request") {
    queued q(5, {1, 3, 5, 7});
    const auto* w = find_action<lock_out::watch_node>(q.last);
    REQUIRE(w);
    CHECK(count_actions<lock_out::watch_node>(q.last) == 1);
    CHECK(w->name == node(3));
    REQUIRE(find_action<lock_out::waiting>(q.last));
    CHECK(find_action<lock_out::waiting>(q.last)->ahead == 2);  // the observer's position
    CHECK(q.m.resume(lock_in::node_read{w->ticket, {}, 0}).empty());
    // 3 was a waiter that gave up: 1 still holds, so we list again rather than hold.
    auto a = q.m.resume(lock_in::node_changed{w->ticket, watch_event_type::node_deleted});
    CHECK_FALSE(find_action<lock_out::granted>(a));
    const auto* relist = find_action<lock_out::list>(a);
    REQUIRE(relist);
    a = q.m.resume(lock_in::listed{relist->ticket, {}, {node(1), node(5), node(7)}});
    const auto* w1 = find_action<lock_out::watch_node>(a);
    REQUIRE(w1);
    CHECK(w1->name == node(1));
    a = q.m.resume(lock_in::node_changed{w1->ticket, watch_event_type::node_deleted});
    CHECK(find_action<lock_out::granted>(a));
    CHECK(count_actions<lock_out::list>(a) == 0);
}

TEST_CASE("lock machine: replies of an abandoned attempt are dropped, and its late node removed") {
    lock_machine m({&one, std::nullopt});
    const auto a = m.resume(lock_in::start{true, session});
    const auto create = find_action<lock_out::create>(a)->ticket;
    const auto list = find_action<lock_out::list>(a)->ticket;
    const auto done = m.resume(lock_in::deadline{});
    REQUIRE(find_action<lock_out::not_granted>(done));
    CHECK_FALSE(find_action<lock_out::not_granted>(done)->ec);  // timed out
    CHECK_FALSE(m.finished());                           // its create is still out
    CHECK(m.resume(lock_in::listed{list, {}, {node(1)}}).empty());
    const auto late = m.resume(lock_in::created{create, {}, "/l/" + node(1), 1001, session});
    const auto* rm = find_action<lock_out::remove_node>(late);
    REQUIRE(rm);
    CHECK(rm->path == "/l/" + node(1));
    CHECK(m.finished());
}

// (Its node, if the create landed, is the connection's to remove: src/protected_create.hpp.)
TEST_CASE("lock machine: a create that gave up after it may have landed ends the acquire, and asks for nothing") {
    lock_machine m({&one, std::nullopt});
    const auto a = m.resume(lock_in::start{true, session});
    const auto create = find_action<lock_out::create>(a)->ticket;
    const auto out = m.resume(lock_in::created{create, make_error_code(errc::connection_loss)});
    CHECK(out.size() == 1);
    REQUIRE(find_action<lock_out::not_granted>(out));
    CHECK(find_action<lock_out::not_granted>(out)->ec == errc::connection_loss);
}

// Found by the simulation with read-only servers (seed 322000973): a create whose reply was lost,
// retried on a read-only server, fails with not_read_only, and the node its first attempt made
// stayed ahead of every waiter for the life of the session. The connection removes it now (the
// world models that, test/sim/lock_sim.cpp), as it does for a create whose retries gave up.
TEST_CASE("lock machine: a create refused by a read-only server ends the acquire, and asks for nothing") {
    lock_machine m({&one, std::nullopt});
    const auto a = m.resume(lock_in::start{true, session});
    const auto create = find_action<lock_out::create>(a)->ticket;
    const auto out = m.resume(lock_in::created{create, make_error_code(errc::not_read_only)});
    CHECK(out.size() == 1);
    REQUIRE(find_action<lock_out::not_granted>(out));
    CHECK(find_action<lock_out::not_granted>(out)->ec == errc::not_read_only);
}

// Found by the simulation with an operator acting during a create's recovery (seed 7580022747):
// the create's reply was lost, the pipelined listing came first (the old queue: a holder, then our
// node), the operator deleted the queue, and the recovery made our node again in the new queue,
// under the same name (a queue made anew restarts its sequence). Deciding on the early listing,
// the machine watched the old holder, found it gone and held beside the new queue's holder.
TEST_CASE("lock machine: a create whose reply comes after its listing lists again, never deciding on the older listing") {
    lock_machine m({&one, std::nullopt});
    auto a = m.resume(lock_in::start{true, session});
    const auto create = find_action<lock_out::create>(a)->ticket;
    const auto list = find_action<lock_out::list>(a)->ticket;
    CHECK(m.resume(lock_in::listed{list, {}, nodes({0, 1})}).empty());  // came first: the create was retried
    a = m.resume(lock_in::created{create, {}, "/l/" + node(1), 9, session});
    CHECK_FALSE(find_action<lock_out::watch_node>(a));
    CHECK_FALSE(find_action<lock_out::granted>(a));
    const auto* again = find_action<lock_out::list>(a);
    REQUIRE(again);
    // The fresh listing: the new queue, where another's node 0 holds ahead of our namesake.
    a = m.resume(lock_in::listed{again->ticket, {}, {"_c_other-lock-0000000000", node(1)}});
    CHECK_FALSE(find_action<lock_out::granted>(a));
    const auto* w = find_action<lock_out::watch_node>(a);
    REQUIRE(w);
    CHECK(w->name == "_c_other-lock-0000000000");
}

// The release was pending (no connection) when a new session came: the node went with the old
// session, so the release is done, with nothing to delete.
TEST_CASE("lock machine: a release pending when a new session comes is done, and deletes nothing") {
    queued q(1, {1});
    q.m.resume(lock_in::connection{connection_state::suspended, session});
    REQUIRE(find_action<lock_out::release_done>(q.m.resume(lock_in::release{})));
    REQUIRE(q.m.state() == hold_state::releasing);
    const auto a = q.m.resume(lock_in::connection{connection_state::reconnected, session + 1});
    CHECK_FALSE(find_action<lock_out::delete_own>(a));
    CHECK(q.m.state() == hold_state::released);
    CHECK(q.m.finished());
}

TEST_CASE("lock machine: a release without a connection answers at once and deletes on reconnection") {
    queued q(1, {1});
    REQUIRE(find_action<lock_out::granted>(q.last));
    q.m.resume(lock_in::connection{connection_state::suspended, session});
    CHECK(q.m.state() == hold_state::doubtful);
    auto a = q.m.resume(lock_in::release{});
    REQUIRE(find_action<lock_out::release_done>(a));
    CHECK(find_action<lock_out::release_done>(a)->ec == errc::connection_loss);
    CHECK_FALSE(find_action<lock_out::delete_own>(a));
    CHECK(q.m.state() == hold_state::releasing);
    CHECK_FALSE(q.m.finished());
    a = q.m.resume(lock_in::connection{connection_state::reconnected, session});
    const auto* del = find_action<lock_out::delete_own>(a);
    REQUIRE(del);
    a = q.m.resume(lock_in::deleted{del->ticket, {}});
    CHECK(q.m.state() == hold_state::released);
    CHECK_FALSE(find_action<lock_out::release_done>(a));  // the caller heard already
    CHECK(q.m.finished());
}

// A read-only server refuses the delete (not_read_only): the node stays, owned by our live session,
// so the release is pending as without a connection, and the delete goes again once a read-write
// server answers. Before, the hold read released and its node blocked every waiter.
TEST_CASE("lock machine: a release refused by a read-only server is sent again on a read-write connection") {
    queued q(1, {1});
    REQUIRE(find_action<lock_out::granted>(q.last));
    q.m.resume(lock_in::connection{connection_state::read_only, session});
    CHECK(q.m.state() == hold_state::doubtful);
    auto a = q.m.resume(lock_in::release{});
    const auto* refused = find_action<lock_out::delete_own>(a);
    REQUIRE(refused);
    a = q.m.resume(lock_in::deleted{refused->ticket, make_error_code(errc::not_read_only)});
    REQUIRE(find_action<lock_out::release_done>(a));
    CHECK(find_action<lock_out::release_done>(a)->ec == errc::not_read_only);  // the caller hears why
    CHECK(q.m.state() == hold_state::releasing);
    CHECK_FALSE(q.m.finished());
    a = q.m.resume(lock_in::connection{connection_state::reconnected, session});
    const auto* del = find_action<lock_out::delete_own>(a);
    REQUIRE(del);
    q.m.resume(lock_in::deleted{del->ticket, {}});
    CHECK(q.m.state() == hold_state::released);
    CHECK(q.m.finished());
}

TEST_CASE("lock machine: a hold is lost when a new session comes, and a try never waits for a connection") {
    queued q(1, {1});
    q.m.resume(lock_in::connection{connection_state::suspended, session});
    auto a = q.m.resume(lock_in::connection{connection_state::reconnected, session + 1});
    REQUIRE(find_action<lock_out::hold_changed>(a));
    CHECK(find_action<lock_out::hold_changed>(a)->cause == lost_cause::session_ended);
    CHECK(q.m.state() == hold_state::lost);
    CHECK(find_action<lock_out::release_done>(q.m.resume(lock_in::release{}))->ec == errc::lock_lost);

    lock_machine t({&one, std::chrono::milliseconds(0)});
    a = t.resume(lock_in::start{false, 0});
    REQUIRE(a.size() == 1);
    CHECK(std::get<lock_out::not_granted>(a[0]).ec == errc::not_connected);
}

TEST_CASE("lock machine: a doubtful hold is held again only once its node is re-read on the same session") {
    queued q(1, {1});
    q.m.resume(lock_in::connection{connection_state::suspended, session});
    auto a = q.m.resume(lock_in::connection{connection_state::reconnected, session});
    CHECK(q.m.state() == hold_state::doubtful);
    const auto* w = find_action<lock_out::watch_own>(a);
    REQUIRE(w);
    q.m.resume(lock_in::own_read{w->ticket, {}, session});
    CHECK(q.m.state() == hold_state::held);
    // The same re-read finding another owner's node (or none) ends the hold.
    q.m.resume(lock_in::connection{connection_state::suspended, session});
    a = q.m.resume(lock_in::connection{connection_state::reconnected, session});
    q.m.resume(lock_in::own_read{find_action<lock_out::watch_own>(a)->ticket, {}, std::nullopt});
    CHECK(q.m.state() == hold_state::lost);
}

// Issue 43: `zkr revoke` wrote "__REVOKE__" into a revocable holder's node, and a plain waiter
// behind it took the data change for the holder's release and held beside it. Nothing but the
// holder's own release lets a waiter hold: not a revoker's write, not an operator's.
TEST_CASE("lock machine: a write to the node ahead is no release, whoever wrote it: the waiter watches it again and holds only once it goes") {
    for (const auto& ahead : {std::vector<int>{2}, std::vector<int>{1, 2}}) {  // the holder just ahead, or a waiter
        auto queue = ahead;
        queue.push_back(3);
        queued q(3, queue);
        const auto* w = find_action<lock_out::watch_node>(q.last);
        REQUIRE(w);
        CHECK(w->name == node(2));
        q.m.resume(lock_in::node_read{w->ticket, {}, 0});
        auto a = q.m.resume(lock_in::node_changed{w->ticket, watch_event_type::node_data_changed});
        CHECK_FALSE(find_action<lock_out::granted>(a));
        CHECK(q.m.phase() == lock_phase::waiting);
        // Watched again (a holder just ahead), or listed (a waiter ahead that may have been granted).
        const auto* again = find_action<lock_out::watch_node>(a);
        const auto* list = find_action<lock_out::list>(a);
        REQUIRE((again || list));
        if (list) {
            a = q.m.resume(lock_in::listed{list->ticket, {}, {node(1), node(2), node(3)}});
            CHECK_FALSE(find_action<lock_out::granted>(a));
            again = find_action<lock_out::watch_node>(a);
            REQUIRE(again);
        }
        CHECK(again->name == node(2));
        // Only its deletion moves us: with nothing else ahead we hold, else we list first.
        a = q.m.resume(lock_in::node_changed{again->ticket, watch_event_type::node_deleted});
        if (ahead.size() == 1) {
            CHECK(find_action<lock_out::granted>(a));
        } else {
            CHECK_FALSE(find_action<lock_out::granted>(a));
            CHECK(find_action<lock_out::list>(a));
        }
    }
}

TEST_CASE("lock machine: a holder or a waiter whose node someone else wrote holds or waits on: a write is no news") {
    queued q(1, {1});
    REQUIRE(find_action<lock_out::granted>(q.last));
    auto a = q.m.resume(lock_in::own_watch_due{find_action<lock_out::own_watch_later>(q.last)->ticket});
    REQUIRE(find_action<lock_out::watch_own>(a));
    const auto own = find_action<lock_out::watch_own>(a)->ticket;
    // Written before our watch was set (version 1), then again while it was set.
    a = q.m.resume(lock_in::own_read{own, {}, session, 1});
    CHECK(q.m.state() == hold_state::held);
    CHECK(a.empty());
    a = q.m.resume(lock_in::own_changed{own, watch_event_type::node_data_changed});
    CHECK(q.m.state() == hold_state::held);
    CHECK_FALSE(find_action<lock_out::remove_node>(a));
    REQUIRE(find_action<lock_out::watch_own>(a));  // watched again
    // A release is the delete alone.
    a = q.m.resume(lock_in::release{});
    REQUIRE(find_action<lock_out::delete_own>(a));

    queued r(3, {1, 3});
    REQUIRE(find_action<lock_out::waiting>(r.last));
    a = r.m.resume(lock_in::own_watch_due{find_action<lock_out::own_watch_later>(r.last)->ticket});
    REQUIRE(find_action<lock_out::watch_own>(a));
    const auto waiter_own = find_action<lock_out::watch_own>(a)->ticket;
    r.m.resume(lock_in::own_read{waiter_own, {}, session, 0});
    a = r.m.resume(lock_in::own_changed{waiter_own, watch_event_type::node_data_changed});
    CHECK_FALSE(find_action<lock_out::remove_node>(a));
    CHECK_FALSE(find_action<lock_out::create>(a));
    CHECK(r.m.phase() == lock_phase::waiting);
}

TEST_CASE("lock machine: a revocable hold reads its node's data at its grant with its one watch, and a request is told once and written over") {
    zkr::test::queued_machine q(one, node(1), nodes({1}), 1001, session, {}, /*revocable=*/true);
    REQUIRE(find_action<lock_out::granted>(q.last));
    // One watch, set at once and reading the data: no delayed exists beside it.
    CHECK(count_actions<lock_out::watch_own>(q.last) == 1);
    CHECK_FALSE(find_action<lock_out::own_watch_later>(q.last));
    const auto* w = find_action<lock_out::watch_own>(q.last);
    REQUIRE(w);
    CHECK(w->read_data);
    // The request, written before the grant was heard: told, and our data written back at the version read.
    const auto first = w->ticket;
    auto a = q.m.resume(lock_in::own_read{first, {}, session, 3, /*revocation_requested=*/true});
    CHECK(count_actions<lock_out::revocation_requested>(a) == 1);
    const auto* back = find_action<lock_out::touch_own>(a);
    REQUIRE(back);
    CHECK(back->version == 3);
    CHECK(q.m.state() == hold_state::held);  // a request, not a loss
    // Our own write fires the watch; read again, a second request (or the same one) is not told again.
    a = q.m.resume(lock_in::own_changed{first, watch_event_type::node_data_changed});
    REQUIRE(find_action<lock_out::watch_own>(a));
    CHECK(find_action<lock_out::watch_own>(a)->read_data);
    const auto again = find_action<lock_out::watch_own>(a)->ticket;
    a = q.m.resume(lock_in::own_read{again, {}, session, 5, true});
    CHECK_FALSE(find_action<lock_out::revocation_requested>(a));
    CHECK_FALSE(find_action<lock_out::touch_own>(a));
    // The same watch tells of a deletion: lost.
    a = q.m.resume(lock_in::own_changed{again, watch_event_type::node_deleted});
    CHECK(q.m.state() == hold_state::lost);

    // A plain hold ignores the request (its read is an exists: the machine never learns the data).
    queued p(1, {1});
    a = p.m.resume(lock_in::own_watch_due{find_action<lock_out::own_watch_later>(p.last)->ticket});
    REQUIRE(find_action<lock_out::watch_own>(a));
    CHECK_FALSE(find_action<lock_out::watch_own>(a)->read_data);
    const auto plain = find_action<lock_out::watch_own>(a)->ticket;
    a = p.m.resume(lock_in::own_read{plain, {}, session, 1, true});
    CHECK_FALSE(find_action<lock_out::revocation_requested>(a));

    // A revocable waiter is never asked: a request to a waiter's node is no news until it holds.
    zkr::test::queued_machine r(one, node(3), nodes({1, 3}), 1003, session, {}, true);
    a = r.m.resume(lock_in::own_watch_due{find_action<lock_out::own_watch_later>(r.last)->ticket});
    REQUIRE(find_action<lock_out::watch_own>(a));
    CHECK_FALSE(find_action<lock_out::watch_own>(a)->read_data);
    const auto waiter_own = find_action<lock_out::watch_own>(a)->ticket;
    a = r.m.resume(lock_in::own_read{waiter_own, {}, session, 1, true});
    CHECK_FALSE(find_action<lock_out::revocation_requested>(a));
    CHECK(r.m.phase() == lock_phase::waiting);
}

TEST_CASE("lock machine: a waiter whose queue and parent were deleted queues again instead of listing for ever") {
    queued q(3, {1, 2, 3});
    const auto* w = find_action<lock_out::watch_node>(q.last);
    REQUIRE(w);
    // The node ahead is gone (with the whole queue), and 1 may still hold: list once.
    auto a = q.m.resume(lock_in::node_changed{w->ticket, watch_event_type::node_deleted});
    const auto* l = find_action<lock_out::list>(a);
    REQUIRE(l);
    a = q.m.resume(lock_in::listed{l->ticket, make_error_code(errc::no_node), {}});
    CHECK(find_action<lock_out::create>(a));  // queued again: the create makes the parents again
    CHECK(q.m.phase() == lock_phase::queuing);
}

TEST_CASE("lock machine: an untimed waiter whose session is lost waits on, and queues again on the new session") {
    queued q(3, {1, 3});
    const auto* w = find_action<lock_out::watch_node>(q.last);
    REQUIRE(w);
    q.m.resume(lock_in::node_read{w->ticket, {}, 0});
    q.m.resume(lock_in::connection{connection_state::suspended, session});
    auto a = q.m.resume(lock_in::connection{connection_state::lost, session});
    CHECK(a.empty());
    CHECK(q.m.resume(lock_in::node_changed{w->ticket, watch_event_type::not_watching}).empty());
    CHECK(q.m.phase() == lock_phase::waiting);
    a = q.m.resume(lock_in::connection{connection_state::connected, session + 1});
    REQUIRE(find_action<lock_out::remove_node>(a));  // the old session's node
    CHECK(find_action<lock_out::remove_node>(a)->path == "/l/" + node(3));
    const auto* create = find_action<lock_out::create>(a);
    const auto* list = find_action<lock_out::list>(a);
    REQUIRE(create);
    REQUIRE(list);
    q.m.resume(lock_in::created{create->ticket, {}, "/l/" + node(5), 1005, session + 1});
    a = q.m.resume(lock_in::listed{list->ticket, {}, {node(5)}});
    REQUIRE(find_action<lock_out::granted>(a));
    CHECK(find_action<lock_out::granted>(a)->session == session + 1);
}

// Found by the simulation's progress check: a waiter behind us may have listed us as a waiter and
// watch only us, for our grant. In a lock of several holders it may hold with us; if our grant
// left no signal (we were first in our own listing, nothing ahead to tell it about), it waited
// until some unrelated release.
TEST_CASE("lock machine: a grant in a lock of several holders always signals the waiter behind") {
    const lowest_n_rule two{2};
    lock_machine m({&two, std::nullopt});
    auto a = m.resume(lock_in::start{true, session});
    const auto create = find_action<lock_out::create>(a)->ticket;
    const auto list = find_action<lock_out::list>(a)->ticket;
    m.resume(lock_in::created{create, {}, "/l/" + node(3), 1003, session});
    a = m.resume(lock_in::listed{list, {}, {node(3), node(4)}});  // first in the queue: nothing ahead
    REQUIRE(find_action<lock_out::granted>(a));
    REQUIRE(find_action<lock_out::touch_own>(a));
    CHECK(find_action<lock_out::touch_own>(a)->path == "/l/" + node(3));
    // A one-holder lock needs no signal: the waiter behind waits for our node to go.
    queued q(3, {3, 4});
    REQUIRE(find_action<lock_out::granted>(q.last));
    CHECK_FALSE(find_action<lock_out::touch_own>(q.last));
}

// A node of our own session that no acquire of this client has (the engine says "stray"): the
// process forgot it, so nobody else would ever delete it. The waiter behind it deletes it, and its
// deletion is the event that grants.
TEST_CASE("lock machine: a stray node of our own session ahead of us is deleted, and its deletion grants") {
    queued q(5, {2, 5});
    const auto* w = find_action<lock_out::watch_node>(q.last);
    REQUIRE(w);
    REQUIRE(w->name == node(2));
    CHECK(q.m.resume(lock_in::node_read{w->ticket, {}, 0}).empty());  // another's node: it waits
    queued r(5, {2, 5});
    const auto* w2 = find_action<lock_out::watch_node>(r.last);
    REQUIRE(w2);
    const auto a = r.m.resume(lock_in::node_read{w2->ticket, {}, 0, /*stray=*/true});
    const auto* rm = find_action<lock_out::remove_node>(a);
    REQUIRE(rm);
    CHECK(rm->path == "/l/" + node(2));
    CHECK_FALSE(find_action<lock_out::granted>(a));  // not before the deletion is seen
    CHECK(find_action<lock_out::granted>(r.m.resume(lock_in::node_changed{w2->ticket, watch_event_type::node_deleted})));
}

TEST_CASE("lock machine: the acquire's timeout leaves as a timer action, once, and a try or an untimed acquire asks for none") {
    using std::chrono::milliseconds;
    lock_machine timed({&one, milliseconds(250)});
    const auto a = timed.resume(lock_in::start{true, session});
    REQUIRE(count_actions<lock_out::deadline_after>(a) == 1);
    CHECK(find_action<lock_out::deadline_after>(a)->delay == milliseconds(250));
    CHECK(find_action<lock_out::create>(a));
    lock_machine untimed({&one, std::nullopt}), try_only({&one, milliseconds(0)});
    CHECK(count_actions<lock_out::deadline_after>(untimed.resume(lock_in::start{true, session})) == 0);
    CHECK(count_actions<lock_out::deadline_after>(try_only.resume(lock_in::start{true, session})) == 0);
    // A grant ends the acquire: a late deadline changes nothing.
    timed.resume(lock_in::created{find_action<lock_out::create>(a)->ticket, {}, "/l/" + node(1), 1001, session});
    const auto listed = timed.resume(lock_in::listed{find_action<lock_out::list>(a)->ticket, {}, {node(1)}});
    REQUIRE(find_action<lock_out::granted>(listed));
    CHECK(timed.resume(lock_in::deadline{}).empty());
    CHECK(timed.state() == hold_state::held);
}

// Found by the simulation once its world had read-only servers (seed 290000877): a waiter told
// that its connection is read-only learnt from the read-only server that its predecessor was gone,
// and its hold read held. The quorum may have ended our session meanwhile: a hold granted on a
// read-only connection reads doubtful, and is held only once re-validated on a read-write one.
TEST_CASE("lock machine: a grant on a read-only connection reads doubtful, and held once re-validated on the quorum") {
    queued q(5, {3, 5});
    const auto* w = find_action<lock_out::watch_node>(q.last);
    REQUIRE(w);
    q.m.resume(lock_in::connection{connection_state::read_only, session});
    auto a = q.m.resume(lock_in::node_read{w->ticket, make_error_code(errc::no_node), 0});
    REQUIRE(find_action<lock_out::granted>(a));
    CHECK(q.m.state() == hold_state::doubtful);
    a = q.m.resume(lock_in::connection{connection_state::reconnected, session});
    const auto* check = find_action<lock_out::watch_own>(a);
    REQUIRE(check);
    CHECK(q.m.state() == hold_state::doubtful);  // not before our node is seen on our session
    q.m.resume(lock_in::own_read{check->ticket, {}, session, 0});
    CHECK(q.m.state() == hold_state::held);
}

TEST_CASE("lock machine: a lost hold says why: its node deleted, its session lost, the client closed") {
    auto own_read_after = [](queued& q, std::optional<std::int64_t> owner) {
        const auto* later = find_action<lock_out::own_watch_later>(q.last);
        REQUIRE(later);
        const auto a = q.m.resume(lock_in::own_watch_due{later->ticket});
        return q.m.resume(lock_in::own_read{find_action<lock_out::watch_own>(a)->ticket, {}, owner, 0});  // exists: no node
    };
    queued deleted(1, {1});
    auto a = own_read_after(deleted, std::nullopt);
    REQUIRE(find_action<lock_out::hold_changed>(a));
    CHECK(find_action<lock_out::hold_changed>(a)->cause == lost_cause::node_deleted);

    queued expired(1, {1});
    a = expired.m.resume(lock_in::connection{connection_state::lost, session});
    REQUIRE(find_action<lock_out::hold_changed>(a));
    CHECK(find_action<lock_out::hold_changed>(a)->cause == lost_cause::session_ended);

    queued closed(1, {1});
    a = closed.m.resume(lock_in::connection{connection_state::closed, session});
    REQUIRE(find_action<lock_out::hold_changed>(a));
    CHECK(find_action<lock_out::hold_changed>(a)->state == hold_state::lost);
    CHECK(find_action<lock_out::hold_changed>(a)->cause == lost_cause::client_closed);
}

namespace {
// A semaphore under a shared count: its grants are marked, in queue order.
struct shared_count_semaphore {
    std::int64_t max = 3;
    std::string tag = shared_count_max_tag("/count");
    lease_rule rule{[this] { return max; }, tag};
    std::string lease(int seq) const {
        return "_c_" + std::to_string(seq) + "-" + tag + "-w1-lease-" + std::to_string(1000000000 + seq);
    }
};
}  // namespace

// Seed 6006018025: B, granted under a count of 3 behind A, which had not decided yet; the count
// shrank to 1; A, deciding then, held too. Two leases under a count of 1.
TEST_CASE("lock machine: under a shared count a node holds only once the node ahead marked its grant, so a shrink never over-grants") {
    shared_count_semaphore s;
    const auto a_node = s.lease(1), b_node = s.lease(2);
    zkr::test::queued_machine b(s.rule, b_node, {a_node, b_node}, 2002, session);
    CHECK_FALSE(find_action<lock_out::granted>(b.last));  // fits the count, but A has not said it holds
    const auto* w = find_action<lock_out::watch_node>(b.last);
    REQUIRE(w);
    CHECK(w->name == a_node);
    CHECK(b.m.resume(lock_in::node_read{w->ticket, {}, 0}).empty());  // not marked yet: wait
    s.max = 1;
    CHECK_FALSE(find_action<lock_out::granted>(b.m.resume(lock_in::reevaluate{})));
    // A decides under the smaller count: it holds (nothing ahead) and marks its grant.
    zkr::test::queued_machine a(s.rule, a_node, {a_node, b_node}, 2001, session);
    REQUIRE(find_action<lock_out::granted>(a.last));
    REQUIRE(find_action<lock_out::touch_own>(a.last));
    CHECK(find_action<lock_out::touch_own>(a.last)->mark_grant);  // its data with the mark, not a bare write
    // B hears the mark: 2 leases would exceed 1, so it waits for A's release, and holds then.
    auto next = b.m.resume(lock_in::node_changed{w->ticket, watch_event_type::node_data_changed});
    CHECK_FALSE(find_action<lock_out::granted>(next));
    const auto* again = find_action<lock_out::watch_node>(next);
    REQUIRE(again);
    CHECK(again->name == a_node);
    next = b.m.resume(lock_in::node_changed{again->ticket, watch_event_type::node_deleted});
    REQUIRE(find_action<lock_out::granted>(next));
    CHECK(find_action<lock_out::touch_own>(next));  // marked, though nothing is ahead any more
}

TEST_CASE("lock machine: under a shared count a node whose predecessor marked its grant before we watched holds at once") {
    shared_count_semaphore s;
    zkr::test::queued_machine b(s.rule, s.lease(2), {s.lease(1), s.lease(2)}, 2002, session);
    const auto* w = find_action<lock_out::watch_node>(b.last);
    REQUIRE(w);
    const auto a = b.m.resume(lock_in::node_read{w->ticket, {}, 1, false, /*marked=*/true});
    REQUIRE(find_action<lock_out::granted>(a));
    CHECK(count_actions<lock_out::list>(a) == 0);  // the view says so: no listing
}

// Seed 28548085651: an operator wrote into A's node while A waited; B, behind it, took the write for
// A's grant mark and held under a count of 2; the count went to 1 and A was granted: two holders.
// Only the mark's data says a node holds: neither a version above 0 nor a data change does.
TEST_CASE("lock machine: under a shared count a write into the node ahead that is not its grant mark never lets us hold") {
    shared_count_semaphore s;
    zkr::test::queued_machine b(s.rule, s.lease(2), {s.lease(1), s.lease(2)}, 2002, session);
    const auto* w = find_action<lock_out::watch_node>(b.last);
    REQUIRE(w);
    // Written before we read it: version 1, and not the mark.
    CHECK_FALSE(find_action<lock_out::granted>(b.m.resume(lock_in::node_read{w->ticket, {}, 1, false, false})));
    // Written again while we watch: we read it again, and hold on nothing but that read.
    auto next = b.m.resume(lock_in::node_changed{w->ticket, watch_event_type::node_data_changed});
    CHECK_FALSE(find_action<lock_out::granted>(next));
    const auto* again = find_action<lock_out::watch_node>(next);
    REQUIRE(again);
    CHECK(again->name == s.lease(1));
    CHECK_FALSE(find_action<lock_out::granted>(b.m.resume(lock_in::node_read{again->ticket, {}, 2, false, false})));
    // A is granted and marks it: the next read shows the mark, and we hold.
    next = b.m.resume(lock_in::node_changed{again->ticket, watch_event_type::node_data_changed});
    const auto* third = find_action<lock_out::watch_node>(next);
    REQUIRE(third);
    CHECK(find_action<lock_out::granted>(b.m.resume(lock_in::node_read{third->ticket, {}, 3, false, true})));
}

TEST_CASE("lock machine: under a shared count a try that fits reads the node ahead, and holds only if it marked its grant") {
    shared_count_semaphore s;
    // (version, marked): marked; never written; written by someone else, which is no grant.
    for (const auto& [version, marked] : {std::pair{1, true}, std::pair{0, false}, std::pair{1, false}}) {
        lock_machine m({&s.rule, std::chrono::milliseconds(0)});
        auto a = m.resume(lock_in::start{true, session});
        const auto create = find_action<lock_out::create>(a)->ticket;
        const auto list = find_action<lock_out::list>(a)->ticket;
        m.resume(lock_in::created{create, {}, "/l/" + s.lease(2), 2002, session});
        a = m.resume(lock_in::listed{list, {}, {s.lease(1), s.lease(2)}});
        CHECK_FALSE(find_action<lock_out::not_granted>(a));
        const auto* w = find_action<lock_out::watch_node>(a);
        REQUIRE(w);
        a = m.resume(lock_in::node_read{w->ticket, {}, version, false, marked});
        CAPTURE(version, marked);
        CHECK(static_cast<bool>(find_action<lock_out::granted>(a)) == marked);
        if (!marked) {
            CHECK(find_action<lock_out::not_granted>(a));
            CHECK(find_action<lock_out::remove_node>(a));  // a try leaves nothing
        }
    }
}
