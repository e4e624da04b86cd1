// The read-write lock's rule (recipes/queue/read_write_rule.hpp): one queue of readers and writers.
#include "../../recipes/queue/read_write_rule.hpp"
#include "machine_script.hpp"

#include "zkr_catch.hpp"

using zkr::read_write_rule;
using names = std::vector<std::string>;

namespace {
const std::string r1 = "_c_a-__READ__0000000001", w2 = "_c_b-__WRIT__0000000002", r3 = "_c_c-__READ__0000000003",
                  w4 = "_c_d-__WRIT__0000000004", r5 = "_c_e-__READ__0000000005";
using zkr::test::reader;
using zkr::test::writer;
}  // namespace

TEST_CASE("read-write rule: readers share until a writer, a writer holds alone at the head") {
    const names q = {r1, w2, r3, w4, r5};
    CHECK(reader.decide(q, 0).holds);
    CHECK(reader.holders(q) == 1);
    CHECK(reader.holders({r1, r3, w2}) == 2);
    CHECK(writer.holders({w2, r3}) == 1);
    CHECK(writer.holders({}) == 0);
    // A writer waits on the node just ahead of it, a reader or a writer.
    CHECK_FALSE(writer.decide(q, 1).holds);
    CHECK(writer.decide(q, 1).watch == names{r1});
    CHECK(writer.decide(q, 3).watch == names{r3});
    CHECK(writer.decide({w2, r3}, 0).holds);
    // A reader behind a writer waits on the last writer ahead of it, never on readers.
    CHECK_FALSE(reader.decide(q, 2).holds);
    CHECK(reader.decide(q, 2).watch == names{w2});
    CHECK(reader.decide(q, 4).watch == names{w4});
    // Nobody awaits a grant: every waiter needs a node gone.
    for (std::size_t i = 1; i < q.size(); ++i) CHECK_FALSE((i % 2 ? writer : reader).decide(q, i).await_grant);
    CHECK_FALSE(reader.grants_awaited());
}

TEST_CASE("read-write rule: a writer that the reader's owner holds does not block it (the downgrade), any other writer does") {
    const zkr::decision_context ours_w2{{w2}};
    CHECK(reader.decide({w2, r3}, 1, ours_w2).holds);
    CHECK(reader.decide({r1, w2, r3}, 2, ours_w2).holds);
    CHECK_FALSE(reader.decide({w2, r3}, 1).holds);  // without the context, w2 is someone else's
    const auto d = reader.decide({r1, w2, r3, w4, r5}, 4, ours_w2);
    CHECK_FALSE(d.holds);
    CHECK(d.watch == names{w4});
    // The writer's decision ignores the context: a held reader of ours ahead of our writer is an
    // upgrade, which the recipe refuses before it queues (it could never reach the head).
    CHECK_FALSE(writer.decide({r1, w2}, 1, zkr::decision_context{{r1}}).holds);
}

TEST_CASE("read-write rule: both sides share one queue of Curator's names, a writer first at one sequence, and a writer's departure needs a listing") {
    CHECK(reader.node_name() == "__READ__");
    CHECK(writer.node_name() == "__WRIT__");
    const names children = {w4, "_c_x-lock-0000000009", r3, "__READ__0000000007", r1};
    const auto q = reader.queue(children);
    CHECK(q.sorted == names{r1, r3, w4});
    CHECK(q.other_kind == "_c_x-lock-0000000009");  // a mutex's node: the two would not exclude each other
    CHECK(writer.queue(children).sorted == q.sorted);
    // A downgrade's read node has its writer's sequence: the writer sorts first, and both hold.
    const std::string down = "_c_z-__READ__0000000002";
    CHECK(reader.queue({down, r3, w2}).sorted == names{w2, down, r3});
    CHECK(reader.holders({w2, down, r3}) == 2);
    // Only a writer's departure may hide a newcomer ahead (a downgrade's read node), which only a
    // waiting writer must see.
    CHECK(writer.joins_ahead_of(w2));
    CHECK_FALSE(writer.joins_ahead_of(r1));
    CHECK_FALSE(reader.joins_ahead_of(w2));
    CHECK_FALSE(reader.joins_ahead_of(r1));
}

TEST_CASE("read-write rule: a downgrade's reader holds only while its writer is listed") {
    const std::string down = "_c_z-__READ__0000000002";
    const zkr::decision_context ours_w2{{w2}};
    CHECK(reader.decide({w2, down, w4}, 1, ours_w2).holds);
    const auto gone = reader.decide({down, w4}, 0, ours_w2);  // the writer went first: w4 may hold
    CHECK_FALSE(gone.holds);
    CHECK(gone.error == zkr::errc::lock_lost);
    // A reader of a later sequence behind an owner's writer that is gone is no downgrade.
    CHECK(reader.decide({r3}, 0, ours_w2).holds);
}

namespace {
using namespace zkr::detail;
constexpr std::int64_t our_session = 77;
using zkr::test::queued_machine;
}  // namespace

TEST_CASE("lock machine on the read-write rule: a reader behind a writer holds when it goes with no listing, and a write to it is no release") {
    queued_machine q(reader, r3, {w2, r3, w4}, 1, our_session);
    const auto* w = zkr::test::find_action<lock_out::watch_node>(q.last);
    REQUIRE(w);
    CHECK(w->name == w2);
    auto a = q.m.resume(lock_in::node_changed{w->ticket, zkr::watch_event_type::node_data_changed});
    CHECK_FALSE(zkr::test::find_action<lock_out::granted>(a));  // a write (a revocation request, say) is no release
    const auto* again = zkr::test::find_action<lock_out::watch_node>(a);
    REQUIRE(again);
    // Only read nodes join ahead (a downgrade's), and a reader shares with them: no listing.
    a = q.m.resume(lock_in::node_changed{again->ticket, zkr::watch_event_type::node_deleted});
    CHECK(zkr::test::find_action<lock_out::granted>(a));
    CHECK_FALSE(zkr::test::find_action<lock_out::list>(a));
    CHECK_FALSE(zkr::test::find_action<lock_out::touch_own>(a));  // the writer behind waits for our node to go, not for our grant
    CHECK(zkr::test::find_action<lock_out::delete_own>(q.m.resume(lock_in::release{})));
}

TEST_CASE("lock machine on the read-write rule: a writer behind a writer lists when it goes (a downgrade's reader may have joined ahead)") {
    queued_machine q(writer, w4, {w2, w4}, 1, our_session);
    const auto* w = zkr::test::find_action<lock_out::watch_node>(q.last);
    REQUIRE(w);
    CHECK(w->name == w2);
    auto a = q.m.resume(lock_in::node_changed{w->ticket, zkr::watch_event_type::node_deleted});
    CHECK_FALSE(zkr::test::find_action<lock_out::granted>(a));
    const auto* list = zkr::test::find_action<lock_out::list>(a);
    REQUIRE(list);
    const std::string down = "_c_z-__READ__0000000002";  // w2's downgrade
    a = q.m.resume(lock_in::listed{list->ticket, {}, {down, w4}});
    CHECK_FALSE(zkr::test::find_action<lock_out::granted>(a));  // behind the downgrade's reader
    const auto* watch_down = zkr::test::find_action<lock_out::watch_node>(a);
    REQUIRE(watch_down);
    CHECK(watch_down->name == down);
}

TEST_CASE("lock machine on the read-write rule: a writer behind readers only watches them all, and holds with no listing as they go") {
    queued_machine q(writer, w4, {r1, r3, w4}, 1, our_session);
    std::vector<lock_out::watch_node> watches;
    for (const auto& a : q.last)
        if (const auto* w = std::get_if<lock_out::watch_node>(&a)) watches.push_back(*w);
    REQUIRE(watches.size() == 2);
    CHECK(watches[0].name == r1);
    CHECK(watches[1].name == r3);
    // A reader's node written (by anyone) is no release: watch it again.
    auto a = q.m.resume(lock_in::node_changed{watches[1].ticket, zkr::watch_event_type::node_data_changed});
    CHECK_FALSE(zkr::test::find_action<lock_out::granted>(a));
    const auto* again = zkr::test::find_action<lock_out::watch_node>(a);
    REQUIRE(again);
    // Each reader's going is decided from the view: no listing.
    a = q.m.resume(lock_in::node_changed{again->ticket, zkr::watch_event_type::node_deleted});
    CHECK_FALSE(zkr::test::find_action<lock_out::granted>(a));
    CHECK_FALSE(zkr::test::find_action<lock_out::list>(a));
    a = q.m.resume(lock_in::node_changed{watches[0].ticket, zkr::watch_event_type::node_deleted});
    CHECK(zkr::test::find_action<lock_out::granted>(a));
    CHECK_FALSE(zkr::test::find_action<lock_out::list>(a));
    CHECK(zkr::test::find_action<lock_out::delete_own>(q.m.resume(lock_in::release{})));
}

TEST_CASE("lock machine on the read-write rule: a writer behind a writer watches only the node just ahead") {
    queued_machine q(writer, w4, {r1, w2, r3, w4}, 1, our_session);
    const auto* w = zkr::test::find_action<lock_out::watch_node>(q.last);
    REQUIRE(w);
    CHECK(w->name == r3);
    CHECK(zkr::test::count_actions<lock_out::watch_node>(q.last) == 1);
}

TEST_CASE("lock machine on the read-write rule: a reader behind its owner's own writer holds at once, with no watch") {
    queued_machine q(reader, r3, {w2, r3}, 1, our_session, zkr::decision_context{{w2}});
    CHECK(zkr::test::find_action<lock_out::granted>(q.last));
    CHECK_FALSE(zkr::test::find_action<lock_out::watch_node>(q.last));
    queued_machine other(reader, r3, {w2, r3}, 1, our_session);
    CHECK_FALSE(zkr::test::find_action<lock_out::granted>(other.last));
    REQUIRE(zkr::test::find_action<lock_out::watch_node>(other.last));
    CHECK(zkr::test::find_action<lock_out::watch_node>(other.last)->name == w2);
}

// Seed 969178907535: a downgrade's read node has a fixed name (its writer's sequence). Its create
// was retried, the listing taken before it listed the first attempt's node of that name in the old
// queue, and the operator deleted that queue meanwhile: the reader must not decide on that listing.
TEST_CASE("lock machine on the read-write rule: a downgrade's reader never decides on a listing taken before its create") {
    zkr::detail::lock_machine m({&reader, std::nullopt, zkr::decision_context{{w2}}});
    auto a = m.resume(lock_in::start{true, our_session});
    const auto create = zkr::test::find_action<lock_out::create>(a)->ticket;
    const auto list = zkr::test::find_action<lock_out::list>(a)->ticket;
    const std::string ours = "_c_f-__READ__0000000002";  // the writer's sequence
    CHECK(m.resume(lock_in::listed{list, {}, {w2, ours}}).empty());  // came first: the create was retried
    a = m.resume(lock_in::created{create, {}, "/l/" + ours, 9, our_session});
    CHECK_FALSE(zkr::test::find_action<lock_out::granted>(a));
    const auto* again = zkr::test::find_action<lock_out::list>(a);
    REQUIRE(again);
    // The fresh listing: the queue was made anew, our writer is gone, another's writer is ahead.
    a = m.resume(lock_in::listed{again->ticket, {}, {"_c_g-__WRIT__0000000000", ours}});
    CHECK_FALSE(zkr::test::find_action<lock_out::granted>(a));
}
